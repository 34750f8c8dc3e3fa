// fuzz_http.cpp - the HTTP request policy: documents and requests.
//
// Byte 0 even: the rest is a policy document (TOML, or JSON when it starts
// with '{'). It parses, or it is refused with Error(kInvalidArgument) and a
// message that starts with "policy".
// Byte 0 odd: the rest is a request, fields separated by '\n' (peer,
// X-Forwarded-For, X-API-Key, path, method, user, X-Cost, route), decided by
// a fixed policy with proxies, lists, rules of every key kind and a rule
// by plan (the user field is the tenant too; byte 0's bit 1 says whether the
// plan is given, as X-Cost's field). Besides not crashing: a step is one of
// the five actions; a check names one of the policy's limiters; a check has a key of at
// most POLYLIMIT_HTTP_KEY_MAX bytes that never holds the API key; an
// address that parses formats to text that parses back to it; an answer's
// headers are "Name: value" lines.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#include "http/client_ip.h"
#include "polylimit/errors.h"
#include "polylimit/http_policy.h"
#include "polylimit/rate_spec.h"

using polylimit::Error;
using polylimit::ErrorCode;
namespace http = polylimit::http;

namespace {

const char kPolicy[] = R"({
  "trusted_proxies": ["10.0.0.0/8", "::1", "fd00::/8"],
  "deny": {"ips": ["203.0.113.0/24", "2001:db8:dead::/48"], "api_keys": ["revoked"], "users": ["mallory"]},
  "allow": {"ips": ["198.51.100.7"]},
  "exempt": ["/health*"],
  "ipv6_prefix": 56,
  "plans": {"free": {"p": "10/minute"}, "pro": {"p": "100/minute; 5/second"}},
  "default_plan": "free",
  "tenants": {"acme": "pro"},
  "resolver": {"timeout_ms": 20},
  "rules": [
    {"name": "plans", "paths": ["/p/*"], "limit": "plan:p", "key": "tenant", "algorithm": "gcra"},
    {"name": "login", "paths": ["/login"], "methods": ["POST"], "limiter": 0, "count_when": "failures"},
    {"name": "api", "paths": ["/api/*"], "limiter": 1, "key": ["api_key", "user", "ip"],
     "cost": {"header": "X-Cost", "default": 1, "max": 50}},
    {"name": "users", "routes": ["/users/{id}"], "limiter": 0, "key": "user+route"},
    {"name": "tenant", "paths": ["/t/*"], "limiter": 0, "key": "header:X-Tenant+ip", "on_missing_key": "skip"},
    {"name": "default", "limiter": 0}
  ]
})";

const http::Policy& policy() {
  static const auto p = http::Policy::parse(
      kPolicy, {polylimit::parse_rate_spec("5/minute"), polylimit::parse_rate_spec("10/second;100/minute")});
  return *p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 8192) return 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    try {
      http::Policy::parse(rest, {polylimit::parse_rate_spec("5/minute")});
    } catch (const Error& e) {
      const std::string message = e.what();
      FUZZ_CHECK(e.code() == ErrorCode::kInvalidArgument, "code %d: %s", static_cast<int>(e.code()), e.what());
      FUZZ_CHECK(message.rfind("policy", 0) == 0, "message '%s'", message.c_str());
    }
    return 0;
  }
  std::vector<std::string> f;
  size_t start = 0;
  while (f.size() < 8) {
    size_t nl = rest.find('\n', start);
    f.push_back(rest.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  f.resize(8);
  const auto& p = policy();
  // Header values in the policy's order.
  std::vector<std::string_view> headers(p.header_names().size());
  for (size_t i = 0; i < headers.size(); ++i) {
    const std::string& n = p.header_names()[i];
    if (n == "x-forwarded-for") headers[i] = f[1];
    if (n == "x-api-key") headers[i] = f[2];
    if (n == "x-cost") headers[i] = f[6];
    if (n == "x-tenant") headers[i] = f[7];
  }
  http::Request r;
  r.peer = f[0];
  r.path = f[3];
  r.method = f[4];
  r.user = f[5];
  r.route = f[7];
  r.tenant = f[5];
  if (data[0] & 2) r.plan = f[6];
  r.headers = headers.data();
  r.header_count = headers.size();
  const http::Step s = p.prepare(r);
  FUZZ_CHECK(static_cast<int>(s.action) >= 0 && static_cast<int>(s.action) <= 4, "action %d",
             static_cast<int>(s.action));
  FUZZ_CHECK(s.action != http::Action::kNeedPlan || (r.plan.data() == nullptr && !r.tenant.empty()),
             "need_plan with a plan given or no tenant");
  if (s.action == http::Action::kCheck) {
    FUZZ_CHECK(s.limiter >= 0 && static_cast<size_t>(s.limiter) < p.limiter_count() && p.step_limiter(s) == s.limiter,
               "limiter %d of %zu", s.limiter, p.limiter_count());
    FUZZ_CHECK(!s.key.empty() && s.key.size() <= 1024, "key of %zu bytes", s.key.size());
    FUZZ_CHECK(s.cost >= 1 && s.cost <= 50, "cost %lld", static_cast<long long>(s.cost));
    // The API key never shows in the key. Checked when it holds a byte no
    // other part of a key can bring: not in the fields a key may quote
    // (path, method, user, route) nor in the key's own texts (prefixes,
    // addresses, hex digests, separators).
    std::string possible = f[3] + f[4] + f[5] + f[7] + "ipapikeyheaderx-tenantuserroute:./|# 0123456789abcdef";
    std::string upper = possible;  // the method is upper-cased
    for (char& c : upper)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    possible += upper;
    const bool telling = f[2].find_first_not_of(possible) != std::string::npos;
    FUZZ_CHECK(!telling || !polylimit_fuzz::contains(s.key, f[2]), "the API key is in the key '%s'", s.key.c_str());
    polylimit::Decision d;
    d.allowed = (data[size - 1] & 1) != 0;
    d.limit = 5;
    d.remaining = static_cast<int64_t>(data[size - 1] >> 1) - 64;
    d.retry_after_ms = static_cast<int64_t>(size) * 977;
    d.reset_after_ms = static_cast<int64_t>(size) * 4099;
    const polylimit::Decision* decisions[] = {&d, nullptr};
    for (const auto* decision : decisions) {
      const http::Answer a = p.answer(s, decision);
      for (const auto& h : a.headers) {
        FUZZ_CHECK(!h.name.empty() && h.name.find_first_of(":\r\n ") == std::string::npos, "header name '%s'",
                   h.name.c_str());
        FUZZ_CHECK(h.value.find_first_of("\r\n") == std::string::npos, "header value '%s'", h.value.c_str());
      }
    }
  } else if (s.action == http::Action::kRespond) {
    FUZZ_CHECK(s.status == 400 || s.status == 401 || s.status == 403, "status %d", s.status);
    FUZZ_CHECK(!p.respond(s).body.empty(), "an empty body for %d", s.status);
  }
  if (auto a = http::parse_address(f[0])) {
    auto again = http::parse_address(http::format_address(*a));
    FUZZ_CHECK(again && *again == *a, "'%s' does not round-trip", f[0].c_str());
  }
  return 0;
}
