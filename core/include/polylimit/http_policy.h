// http_policy.h - the HTTP request policy: what every language's middleware
// asks the core for each request (docs/integrations/contract.md).
//
// A Policy is parsed once from a document, JSON or TOML (its rules, keys,
// lists, proxies, limits and plans), and is then immutable and safe to share
// between threads; a LivePolicy swaps in a new one on reload (docs/policy.md). Per
// request a middleware describes the request, calls prepare(), runs the
// check the Step asks for on the rule's limiter (its own blocking or
// asynchronous path), and turns the decision into the response with
// answer(). After the response, counts() says whether the request's units
// stay taken (count_when) or go back (a refund).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polylimit/backend.h"
#include "polylimit/client.h"
#include "polylimit/decision.h"
#include "polylimit/headers.h"
#include "polylimit/limiter.h"
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
  // The tenant's plan as the application's resolver gave it; null data():
  // not resolved (the document's tenants table, else kNeedPlan when the
  // document has a resolver, else its default plan). An unknown plan is the
  // default plan.
  std::string_view plan;
};

enum class Action {
  kProceed = 0,     // no check: the request goes on, with no headers
  kCheck = 1,       // check `key` for `cost` on rule `rule`'s limiter, then answer()
  kRespond = 2,     // answer at once with respond(): 400, 401 or 403
  kNeedAppKey = 3,  // rule `rule` keys by the application's key: prepare again with Request::app_key
  kNeedPlan = 4,    // rule `rule` takes the tenant's plan: resolve it, prepare again with Request::plan
};

struct Step {
  Action action = Action::kProceed;
  int status = 0;    // kRespond: 400, 401 or 403
  int rule = -1;     // the rule that matched, or -1
  int limiter = -1;  // kCheck: the limiter to check on (Policy::limiter)
  int plan = -1;     // kCheck on a plan's limit: the plan (Policy::plan_name)
  int64_t cost = 0;
  std::string key;
};

// What a policy's rules check on: the application's limiters (a rule's
// "limiter": i), and the client the document's own limits ("limit") are
// made on. A document with limits needs the client.
struct PolicySources {
  std::shared_ptr<Client> client;
  std::vector<std::shared_ptr<Limiter>> limiters;
};

// The application's plan resolver, as the document configures it: a binding
// calls its resolver for a kNeedPlan step with this deadline, and caches the
// answers (LivePolicy::cached_plan) for ttl_ms, at most `cache_size` tenants.
struct ResolverSettings {
  bool enabled = false;
  int64_t timeout_ms = 50;
  int64_t cache_ttl_ms = 60000;
  size_t cache_size = 10000;
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
  // Parses a document (JSON when its first character is '{', else TOML) and
  // makes the limiters its limits and plans need on sources.client; the
  // policy keeps them and the application's limiters alive. `previous`: the
  // policy this one replaces (rules of the same name keep their counters).
  static std::shared_ptr<const Policy> load(std::string_view document, PolicySources sources,
                                            const Policy* previous = nullptr);
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
  // The index into the limiters given to parse(), of rule `rule`; for a
  // rule with the document's own limit, its limiter (of the default plan).
  int rule_limiter(int rule) const;

  // The limiters a step names (Step::limiter): the application's first, in
  // their order, then the document's (load() only; parse() has none).
  size_t limiter_count() const;
  const std::shared_ptr<Limiter>& limiter(int index) const;
  // The limits a step is checked against (its limiter's).
  const std::vector<LimitParams>& limits(const Step& step) const;
  // The limiter a kCheck step is checked (and refunded) on: step.limiter
  // when it is one of its rule's, else the rule's (a step made by hand).
  int step_limiter(const Step& step) const;
  const std::vector<std::string>& plan_names() const;
  const std::string& default_plan() const;  // "" without plans
  // The plan a limiter is the limit of ("" for a rule's own or the application's).
  const std::string& limiter_plan(int index) const;
  const ResolverSettings& resolver() const;
  // A number no other policy of this process has (1, 2, ...).
  uint64_t id() const { return id_; }

  // Requests decided per rule and outcome, in the Prometheus text format
  // (`polylimit_http_requests_total{rule=...,outcome=...}`): bounded by the
  // rules, never by keys.
  std::string metrics_prometheus() const;

  struct Rule;
  struct Lists;
  struct Plans;
  struct Counters;
  Policy();

 private:
  std::vector<std::string> header_names_;
  std::vector<std::shared_ptr<Limiter>> limiters_;
  std::vector<std::vector<LimitParams>> limiter_limits_;
  std::unique_ptr<Plans> plans_;
  std::shared_ptr<Counters> counters_;
  uint64_t id_ = 0;
  std::vector<std::unique_ptr<Rule>> rules_;
  std::unique_ptr<Lists> allow_, deny_;
  struct Settings;
  std::unique_ptr<Settings> settings_;
  static std::shared_ptr<Policy> make(std::string_view document, std::vector<std::vector<LimitParams>> limiters,
                                      const Policy* previous);
  friend class PolicyParser;
};

// A policy that can be replaced while requests run: reload() swaps in a new
// one atomically (requests that took current() before finish on the old
// one); a document with an error is refused and the old policy stays. A
// policy opened from a file can watch it: a changed file is reloaded within
// the watch interval, and a refused one is remembered (last_error()).
class LivePolicy {
 public:
  LivePolicy(std::string_view document, PolicySources sources);
  // Reads `path`; watch_interval_ms > 0: a thread re-reads it whenever its
  // size, modification time or inode changes (checked at that interval).
  static std::unique_ptr<LivePolicy> open(const std::string& path, PolicySources sources, int watch_interval_ms);
  ~LivePolicy();
  LivePolicy(const LivePolicy&) = delete;
  LivePolicy& operator=(const LivePolicy&) = delete;

  std::shared_ptr<const Policy> current() const;
  // Throws Error(kInvalidArgument) naming the line and the problem; the old
  // policy stays in force.
  void reload(std::string_view document);
  // Reads the file again (open() only) and reloads it.
  void reload_file();
  // How many policies this has had: 1 after construction, +1 per reload.
  uint64_t generation() const;
  // The message of the last refused reload since the last accepted one; "".
  std::string last_error() const;

  // Whether the application gave a plan resolver: without one, a document
  // with a "resolver" table is refused (now, and by every later reload),
  // rather than placing every tenant it does not name on the default plan.
  // Throws Error(kInvalidArgument) when the current document has one.
  void set_has_resolver(bool has);

  // The plan resolver's answers (ResolverSettings of the current policy):
  // a cached plan younger than cache_ttl_ms, else nothing.
  std::optional<std::string> cached_plan(std::string_view tenant) const;
  void cache_plan(std::string_view tenant, std::string_view plan);

  // The current policy's metrics and polylimit_http_policy_reloads_total.
  std::string metrics_prometheus() const;

  struct State;

 private:
  LivePolicy();
  std::unique_ptr<State> state_;
};

}  // namespace http
}  // namespace polylimit
