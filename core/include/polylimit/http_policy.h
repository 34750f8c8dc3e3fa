// http_policy.h - the HTTP request policy: what every language's middleware
// asks the core for each request (docs/integrations/contract.md).
//
// A Policy is parsed once from a JSON document (its rules, keys, lists and
// proxies) and is then immutable and safe to share between threads. Per
// request a middleware describes the request, calls prepare(), runs the
// check the Step asks for on the rule's limiter (its own blocking or
// asynchronous path), and turns the decision into the response with
// answer(). After the response, counts() says whether the request's units
// stay taken (count_when) or go back (a refund).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "polylimit/backend.h"
#include "polylimit/decision.h"
#include "polylimit/headers.h"
#include "polylimit/vocabulary.h"

namespace polylimit {
namespace http {

// One request as the middleware sees it. Strings are borrowed for the call.
struct Request {
  std::string_view method;
  std::string_view path;
  std::string_view route;  // the framework's route template; empty: unknown
  std::string_view peer;   // the socket's other end, e.g. "10.0.0.1:51234"
  // The values of the headers Policy::header_names() lists, in that order
  // (repeated headers joined by ", "); a null data() means the header is
  // absent. Fewer than header_names() values: the rest are absent.
  const std::string_view* headers = nullptr;
  size_t header_count = 0;
  // Identities the application supplies; null data(): none (anonymous).
  std::string_view user;
  std::string_view tenant;
  std::string_view app_key;  // the rule's key when its key is "app"
  int64_t cost = 0;          // > 0: this request's cost, instead of the rule's
};

enum class Action {
  kProceed = 0,     // no check: the request goes on, with no headers
  kCheck = 1,       // check `key` for `cost` on rule `rule`'s limiter, then answer()
  kRespond = 2,     // answer at once with respond(): 400, 401 or 403
  kNeedAppKey = 3,  // rule `rule` keys by the application's key: prepare again with Request::app_key
};

struct Step {
  Action action = Action::kProceed;
  int status = 0;  // kRespond: 400, 401 or 403
  int rule = -1;   // the rule that matched, or -1
  int64_t cost = 0;
  std::string key;
};

struct Answer {
  int status = 0;               // 0: the request goes on (with `headers`)
  std::string_view body;        // the response body (static storage); empty when going on
  std::vector<Header> headers;  // the rate-limit headers, and Content-Type with a body
};

class Policy {
 public:
  // Parses the policy document (docs/integrations/contract.md, "The policy
  // document"). `limiters[i]` are the limits of the limiter a rule names as
  // `"limiter": i` (they make the rate-limit headers). Throws
  // Error(kInvalidArgument) with the line and field, e.g.
  // `policy line 7: rules[1].key: unknown key part "ipv7"`.
  static std::shared_ptr<const Policy> parse(std::string_view document, std::vector<std::vector<LimitParams>> limiters);
  ~Policy();

  // The request headers the policy reads, lower case: a middleware passes
  // their values, in this order, in Request::headers.
  const std::vector<std::string>& header_names() const { return header_names_; }

  Step prepare(const Request& request) const;
  // A Step of kRespond as a response.
  Answer respond(const Step& step) const;
  // The response to a Step of kCheck: `decision` is the check's, nullptr
  // when the check failed (503, or on with no headers when on_error is
  // "allow").
  Answer answer(const Step& step, const Decision* decision) const;
  // Whether a request of rule `rule` answered with `status` keeps its units
  // (the rule's count_when); false means refund them. An admitted request's
  // refund applies only to units Redis took: not to a denial, a shadowed or
  // degraded decision (see refund_due).
  bool counts(int rule, int status) const;
  // Whether rule `rule` counts every status (count_when "all"): its
  // requests are never refunded.
  bool counts_all(int rule) const;
  // counts(), with the decision's own conditions: true when `step`'s units
  // should be refunded now that the response has `status`.
  bool refund_due(const Step& step, const Decision& decision, int status) const;

  size_t rule_count() const;
  const std::string& rule_name(int rule) const;
  // The index into the limiters given to parse(), of rule `rule`.
  int rule_limiter(int rule) const;

  // Requests decided per rule and outcome, in the Prometheus text format
  // (`polylimit_http_requests_total{rule=...,outcome=...}`): bounded by the
  // rules, never by keys.
  std::string metrics_prometheus() const;

  struct Rule;
  struct Lists;
  Policy();

 private:
  std::vector<std::string> header_names_;
  std::vector<std::unique_ptr<Rule>> rules_;
  std::unique_ptr<Lists> allow_, deny_;
  struct Settings;
  std::unique_ptr<Settings> settings_;
  friend class PolicyParser;
};

}  // namespace http
}  // namespace polylimit
