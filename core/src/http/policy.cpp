// policy.cpp - the HTTP request policy (http_policy.h): the document's
// parser, and the per-request steps every language's middleware takes.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "http/client_ip.h"
#include "polylimit/errors.h"
#include "polylimit/http_policy.h"
#include "polylimit/rate_spec.h"
#include "util/json.h"
#include "util/sha256.h"
#include "util/toml.h"

namespace polylimit {
namespace http {
namespace {

enum class Part { kIp, kApiKey, kHeader, kUser, kTenant, kRoute, kApp };
enum Outcome { kAllowed, kDenied, kMissingKey, kInvalid, kForbidden, kErrors };

constexpr size_t kIdentityMax = 128;  // longer user / tenant ids are keyed by their SHA-256

bool credential(Part p) { return p == Part::kApiKey || p == Part::kUser || p == Part::kTenant; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

// Shell-style: '*' matches any run of characters ('/' too), '?' one.
bool glob(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// `upper` (an upper-case method) equals `method` in any case.
bool same_method(const std::string& upper, std::string_view method) {
  if (upper.size() != method.size()) return false;
  for (size_t i = 0; i < upper.size(); ++i) {
    char c = method[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != upper[i]) return false;
  }
  return true;
}

// The path rules match: `raw` with its dot segments removed (RFC 3986,
// 5.2.4; "%2e" is a dot too), so that "/static/../admin" cannot pass for an
// exempt "/static/*". Most paths have none and are returned as they are.
std::string_view matched_path(std::string_view raw, std::string& buf) {
  bool dots = false;
  for (size_t i = 0; i + 1 < raw.size() && !dots; ++i)
    dots = raw[i] == '/' && (raw[i + 1] == '.' || (raw[i + 1] == '%' && i + 3 < raw.size() && raw[i + 2] == '2' &&
                                                   (raw[i + 3] == 'e' || raw[i + 3] == 'E')));
  if (!dots) return raw;
  // Segments, with "%2e" read as '.', then the dot segments resolved.
  std::vector<std::string> out;
  size_t i = 0;
  bool trailing = false;
  while (i < raw.size()) {
    size_t slash = raw.find('/', i + 1);
    std::string_view seg =
        raw.substr(i + (raw[i] == '/' ? 1 : 0),
                   (slash == std::string_view::npos ? raw.size() : slash) - i - (raw[i] == '/' ? 1 : 0));
    std::string dec;
    for (size_t k = 0; k < seg.size(); ++k) {
      if (seg[k] == '%' && k + 2 < seg.size() && seg[k + 1] == '2' && (seg[k + 2] == 'e' || seg[k + 2] == 'E')) {
        dec += '.';
        k += 2;
      } else {
        dec += seg[k];
      }
    }
    trailing = dec == "." || dec == "..";
    if (dec == "..") {
      if (!out.empty()) out.pop_back();
    } else if (dec != ".") {
      out.push_back(std::string(seg));
    }
    if (slash == std::string_view::npos) break;
    i = slash;
    trailing = trailing || slash + 1 == raw.size();
  }
  buf.clear();
  for (const auto& seg : out) buf += "/" + seg;
  if (trailing || buf.empty()) buf += "/";
  return buf;
}

std::string_view present(const Request& r, int header) {
  if (header < 0 || static_cast<size_t>(header) >= r.header_count) return {};
  return r.headers[header];
}

}  // namespace

struct KeyPart {
  Part kind;
  int header = -1;   // kApiKey, kHeader: the index in header_names
  std::string name;  // kHeader: the lower-case header name
};

using OutcomeCounters = std::array<std::atomic<uint64_t>, kOutcomeCount>;

// Counters outlive a policy: a reloaded policy's rule of the same name
// counts on (LivePolicy), so a reload never resets a metric.
struct Policy::Counters {
  std::mutex mutex;  // guards `rules` (insertions at parse time)
  std::map<std::string, std::unique_ptr<OutcomeCounters>> rules;
  OutcomeCounters unmatched{};  // forbidden before a rule

  OutcomeCounters* rule(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = rules[name];
    if (!slot) slot = std::make_unique<OutcomeCounters>();
    return slot.get();
  }
};

struct Policy::Plans {
  std::string prefix = "pl";       // of the document's limiters: "<prefix>:<rule>"
  std::vector<std::string> names;  // in the document's order (TOML: by name)
  int default_plan = -1;
  // tenant -> plan; the keys view tenant_ids (no allocation per lookup).
  std::deque<std::string> tenant_ids;
  std::unordered_map<std::string_view, int> tenants;
  ResolverSettings resolver;
  std::vector<LimiterOptions> to_make;  // the document's limiters, in index order (after the app's)
  std::vector<int> made_for;            // the plan each of them is for, or -1

  int find(std::string_view name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<int>(i);
    return -1;
  }
};

struct Policy::Rule {
  std::string name;
  std::vector<std::string> paths;    // globs; empty with routes empty: every path
  std::vector<std::string> routes;   // route templates, exactly
  std::vector<std::string> methods;  // upper case; empty: every method
  int limiter = -1;                  // -1: the rule exempts what it matches
  // What a check of this rule is on: one limiter (the application's, or the
  // document's limit), or one per plan (in plan order) for a plan's limit.
  struct Variant {
    int limiter = -1;
    std::vector<LimitParams> limits;
    HeaderTemplate headers;  // the rate-limit headers' parts named after the rule
  };
  std::vector<Variant> variants;
  bool by_plan = false;
  // The key: alternatives (the first that is present), each a composition.
  std::vector<std::vector<KeyPart>> key;
  bool key_is_credential = false;
  bool key_needs_app = false;
  int64_t cost = 1;
  int cost_header = -1;
  int64_t cost_max = 0;
  bool skip_missing = false;
  // count_when: which statuses count; empty ranges: every status.
  std::vector<std::pair<int, int>> counted;
  OutcomeCounters* outcomes = nullptr;  // in Policy::counters_

  const Variant* variant(int limiter_index) const {
    for (const auto& v : variants)
      if (v.limiter == limiter_index) return &v;
    return variants.empty() ? nullptr : &variants[0];
  }
};

struct Policy::Lists {
  std::vector<Network> networks;
  std::vector<std::string> api_key_hashes;  // sha256 hex
  std::vector<std::string> users;
  std::vector<std::string> tenants;

  bool empty() const { return networks.empty() && api_key_hashes.empty() && users.empty() && tenants.empty(); }
};

struct Policy::Settings {
  std::vector<Network> trusted;
  int ipv4_prefix = 32;
  int ipv6_prefix = 64;
  int forwarded_header = -1;
  int api_key_header = -1;  // the lists' API key header
  std::vector<std::string> exempt;
  bool send_headers = true;
  bool on_error_allow = false;
};

Policy::Policy() = default;
Policy::~Policy() = default;

// ---- the document -----------------------------------------------------------

class PolicyParser {
 public:
  PolicyParser(Policy& p, std::vector<std::vector<LimitParams>> limiters) : p_(p), limiters_(std::move(limiters)) {}

  void parse(const json::Value& doc) {
    if (!doc.is_object()) fail(doc, "policy", "must be an object");
    known(doc, "policy",
          {"version", "trusted_proxies", "ipv4_prefix", "ipv6_prefix", "api_key_header", "exempt", "allow", "deny",
           "rules", "send_headers", "on_error", "prefix", "plans", "default_plan", "tenants", "resolver"});
    auto& s = *p_.settings_;
    plans(doc);
    if (const auto* v = doc.find("version"); v != nullptr && !(v->is_integer() && v->integer() == 1))
      fail(*v, "version", "must be 1");
    for (const auto& t : strings(doc.find("trusted_proxies"), "trusted_proxies"))
      s.trusted.push_back(parse_network(t.first, at(t.second, "trusted_proxies")));
    s.ipv4_prefix = int_in(doc.find("ipv4_prefix"), "ipv4_prefix", 0, 32, 32);
    s.ipv6_prefix = int_in(doc.find("ipv6_prefix"), "ipv6_prefix", 0, 128, 64);
    if (!s.trusted.empty()) s.forwarded_header = header("X-Forwarded-For");
    std::string api_header = "X-API-Key";
    if (const auto* v = doc.find("api_key_header")) api_header = header_name(*v, "api_key_header");
    for (const auto& e : strings(doc.find("exempt"), "exempt")) s.exempt.push_back(e.first);
    s.send_headers = boolean(doc.find("send_headers"), "send_headers", true);
    if (const auto* v = doc.find("on_error")) {
      std::string e = choice(*v, "on_error", {"unavailable", "allow"});
      s.on_error_allow = e == "allow";
    }
    p_.allow_ = lists(doc.find("allow"), "allow", api_header);
    p_.deny_ = lists(doc.find("deny"), "deny", api_header);
    const json::Value* rules = doc.find("rules");
    if (rules == nullptr || !rules->is_array()) fail(rules ? *rules : doc, "rules", "must be a list of rules");
    for (size_t i = 0; i < rules->array().size(); ++i) rule(rules->array()[i], "rules[" + std::to_string(i) + "]");
  }

 private:
  [[noreturn]] static void fail(const json::Value& v, const std::string& field, const std::string& what) {
    throw_invalid("policy line " + std::to_string(v.line()) + ": " + field + ": " + what);
  }
  static std::string at(const json::Value& v, const std::string& field) {
    return "policy line " + std::to_string(v.line()) + ": " + field;
  }

  static void known(const json::Value& obj, const std::string& where, std::initializer_list<const char*> names) {
    for (const auto& m : obj.object()) {
      bool ok = false;
      for (const char* n : names) ok = ok || m.first == n;
      if (!ok) {
        std::string list;
        for (const char* n : names) list += (list.empty() ? "" : ", ") + std::string(n);
        fail(m.second, where, "unknown field \"" + m.first + "\"; known: " + list);
      }
    }
  }

  static std::vector<std::pair<std::string, const json::Value&>> strings(const json::Value* v,
                                                                         const std::string& field) {
    std::vector<std::pair<std::string, const json::Value&>> out;
    if (v == nullptr) return out;
    if (!v->is_array()) fail(*v, field, std::string("must be a list of strings, not ") + v->type_name());
    for (const auto& item : v->array()) {
      if (!item.is_string() || item.string().empty()) fail(item, field, "must hold non-empty strings");
      out.emplace_back(item.string(), item);
    }
    return out;
  }

  static int int_in(const json::Value* v, const std::string& field, int lo, int hi, int def) {
    if (v == nullptr) return def;
    if (!v->is_integer() || v->integer() < lo || v->integer() > hi)
      fail(*v, field, "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return static_cast<int>(v->integer());
  }

  static bool boolean(const json::Value* v, const std::string& field, bool def) {
    if (v == nullptr) return def;
    if (!v->is_bool()) fail(*v, field, std::string("must be true or false, not ") + v->type_name());
    return v->boolean();
  }

  static std::string choice(const json::Value& v, const std::string& field, std::initializer_list<const char*> names) {
    std::string list;
    for (const char* n : names) {
      if (v.is_string() && v.string() == n) return n;
      list += (list.empty() ? "\"" : " or \"") + std::string(n) + "\"";
    }
    fail(v, field, "must be " + list);
  }

  // A header name: an RFC 9110 token.
  static std::string header_name(const json::Value& v, const std::string& field) {
    if (!v.is_string() || v.string().empty()) fail(v, field, "must be a header name");
    for (char c : v.string())
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr))
        fail(v, field, "\"" + v.string() + "\" is not a header name");
    return v.string();
  }

  // The index of a header in header_names (added once).
  int header(const std::string& name) {
    std::string l = lower(name);
    auto& names = p_.header_names_;
    auto it = std::find(names.begin(), names.end(), l);
    if (it != names.end()) return static_cast<int>(it - names.begin());
    names.push_back(l);
    return static_cast<int>(names.size() - 1);
  }

  std::unique_ptr<Policy::Lists> lists(const json::Value* v, const std::string& field, const std::string& api_header) {
    auto out = std::make_unique<Policy::Lists>();
    if (v == nullptr) return out;
    if (!v->is_object()) fail(*v, field, "must be an object of ips, api_keys, users, tenants");
    known(*v, field, {"ips", "api_keys", "users", "tenants"});
    for (const auto& t : strings(v->find("ips"), field + ".ips"))
      out->networks.push_back(parse_network(t.first, at(t.second, field + ".ips")));
    for (const auto& t : strings(v->find("api_keys"), field + ".api_keys")) {
      // "sha256:<hex>" keeps the secret out of the document; a plain key is hashed here.
      const std::string& k = t.first;
      if (k.rfind("sha256:", 0) == 0) {
        std::string hex = lower(k.substr(7));
        if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
          fail(t.second, field + ".api_keys", "a \"sha256:\" entry needs 64 hex digits");
        out->api_key_hashes.push_back(hex);
      } else {
        out->api_key_hashes.push_back(sha256_hex(k));
      }
    }
    for (const auto& t : strings(v->find("users"), field + ".users")) out->users.push_back(t.first);
    for (const auto& t : strings(v->find("tenants"), field + ".tenants")) out->tenants.push_back(t.first);
    if (!out->api_key_hashes.empty() && p_.settings_->api_key_header < 0)
      p_.settings_->api_key_header = header(api_header);
    return out;
  }

  std::vector<KeyPart> composition(const json::Value& v, const std::string& field, Policy::Rule& r) {
    if (!v.is_string() || v.string().empty()) fail(v, field, "a key is a name such as \"ip\" or \"user+route\"");
    std::vector<KeyPart> parts;
    std::string_view rest = v.string();
    while (true) {
      size_t plus = rest.find('+');
      std::string_view name = rest.substr(0, plus);
      KeyPart part{Part::kIp, -1, {}};
      size_t colon = name.find(':');
      std::string_view kind = name.substr(0, colon);
      std::string arg = colon == std::string_view::npos ? std::string() : std::string(name.substr(colon + 1));
      auto header_arg = [&](const char* def) {
        std::string h = arg.empty() ? def : arg;
        if (h.empty()) fail(v, field, "\"" + std::string(kind) + "\" needs a header name: \"header:X-Tenant\"");
        for (char c : h)
          if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr))
            fail(v, field, "\"" + h + "\" is not a header name");
        part.name = lower(h);
        part.header = header(h);
      };
      if (kind == "ip" && arg.empty()) {
        part.kind = Part::kIp;
      } else if (kind == "api_key") {
        part.kind = Part::kApiKey;
        header_arg("X-API-Key");
      } else if (kind == "header") {
        part.kind = Part::kHeader;
        header_arg("");
      } else if (kind == "user" && arg.empty()) {
        part.kind = Part::kUser;
      } else if (kind == "tenant" && arg.empty()) {
        part.kind = Part::kTenant;
      } else if (kind == "route" && arg.empty()) {
        part.kind = Part::kRoute;
      } else if (kind == "app" && arg.empty()) {
        part.kind = Part::kApp;
        r.key_needs_app = true;
      } else {
        fail(v, field,
             "unknown key part \"" + std::string(name) +
                 "\"; use ip, api_key, api_key:<Header>, header:<Header>, user, tenant, route or app");
      }
      r.key_is_credential = r.key_is_credential || credential(part.kind);
      parts.push_back(std::move(part));
      if (plus == std::string_view::npos) break;
      rest.remove_prefix(plus + 1);
    }
    return parts;
  }

  void rule(const json::Value& v, const std::string& where) {
    if (!v.is_object()) fail(v, where, "a rule is an object");
    known(v, where,
          {"name", "paths", "routes", "methods", "limiter", "limit", "algorithm", "key", "credential", "cost",
           "on_missing_key", "count_when"});
    auto r = std::make_unique<Policy::Rule>();
    const json::Value* name = v.find("name");
    if (name == nullptr) fail(v, where, "a rule needs a \"name\" (it names the rule in headers and metrics)");
    if (!name->is_string()) fail(*name, where + ".name", "must be a string of 1 to 64 characters");
    check_name(name->string(), *name, where + ".name");
    for (const auto& other : p_.rules_)
      if (other->name == name->string()) fail(*name, where + ".name", "\"" + name->string() + "\" names two rules");
    r->name = name->string();
    const std::string field = where + " (\"" + r->name + "\")";
    for (const auto& t : strings(v.find("paths"), field + ".paths")) r->paths.push_back(t.first);
    for (const auto& t : strings(v.find("routes"), field + ".routes")) r->routes.push_back(t.first);
    for (const auto& t : strings(v.find("methods"), field + ".methods")) r->methods.push_back(upper(t.first));
    const json::Value* limiter = v.find("limiter");
    const json::Value* limit = v.find("limit");
    if (limiter != nullptr && limit != nullptr)
      fail(*limit, field, "a rule has a \"limit\" or a \"limiter\", not both");
    if (limiter == nullptr && limit == nullptr)
      fail(v, field,
           "a rule needs a \"limit\" (\"10/minute\", \"plan\", or \"none\" to exempt what it matches) or a "
           "\"limiter\" (an index)");
    if (limit != nullptr) {
      document_limit(v, *limit, field, *r);
    } else {
      if (const json::Value* alg = v.find("algorithm"))
        fail(*alg, field + ".algorithm", "is the limiter's own with \"limiter\"; give it with \"limit\"");
      if (!limiter->is_null()) {
        if (!limiter->is_integer() || limiter->integer() < 0 ||
            static_cast<size_t>(limiter->integer()) >= limiters_.size())
          fail(*limiter, field + ".limiter",
               "must be the index of one of the " + std::to_string(limiters_.size()) + " limiters given, or null");
        r->limiter = static_cast<int>(limiter->integer());
        Policy::Rule::Variant var;
        var.limiter = r->limiter;
        var.limits = limiters_[static_cast<size_t>(r->limiter)];
        var.headers = header_template(var.limits, r->name);
        r->variants.push_back(std::move(var));
      }
    }
    const json::Value* key = v.find("key");
    if (key == nullptr) {
      r->key.push_back({KeyPart{Part::kIp, -1, {}}});
    } else if (key->is_array()) {
      if (key->array().empty()) fail(*key, field + ".key", "a list of alternatives needs at least one");
      for (const auto& alt : key->array()) r->key.push_back(composition(alt, field + ".key", *r));
    } else {
      r->key.push_back(composition(*key, field + ".key", *r));
    }
    // "credential": whether a missing key is a missing credential (401),
    // whatever its parts say (an application's key that is an API token).
    if (const json::Value* c = v.find("credential")) r->key_is_credential = boolean(c, field + ".credential", false);
    if (const json::Value* cost = v.find("cost")) {
      if (cost->is_integer()) {
        if (cost->integer() < 1 || cost->integer() > bounds::kLimit.max)
          fail(*cost, field + ".cost", "must be from 1 to " + std::to_string(bounds::kLimit.max));
        r->cost = cost->integer();
      } else if (cost->is_object()) {
        known(*cost, field + ".cost", {"header", "default", "max"});
        const json::Value* h = cost->find("header");
        if (h == nullptr) fail(*cost, field + ".cost", "needs a \"header\"");
        r->cost_header = header(header_name(*h, field + ".cost.header"));
        const json::Value* def = cost->find("default");
        r->cost = def == nullptr ? 1 : int_in(def, field + ".cost.default", 1, 1000000, 1);
        const json::Value* max = cost->find("max");
        r->cost_max = max == nullptr ? bounds::kLimit.max : int_in(max, field + ".cost.max", 1, 1000000, 1);
        if (r->cost > r->cost_max) fail(*cost, field + ".cost", "default is above max");
      } else {
        fail(*cost, field + ".cost", "must be a number or {\"header\": ..., \"default\": ..., \"max\": ...}");
      }
    }
    if (const json::Value* m = v.find("on_missing_key"))
      r->skip_missing = choice(*m, field + ".on_missing_key", {"reject", "skip"}) == "skip";
    if (const json::Value* c = v.find("count_when")) count_when(*c, field + ".count_when", *r);
    r->outcomes = p_.counters_->rule(r->name);
    p_.rules_.push_back(std::move(r));
  }

  // "all", "failures" (>= 400), "successes" (< 400), or a list of statuses
  // (401), classes ("5xx") and ranges ("400-499").
  static void count_when(const json::Value& v, const std::string& field, Policy::Rule& r) {
    if (v.is_string() && v.string() == "all") return;
    if (v.is_string() && v.string() == "failures") {
      r.counted.emplace_back(400, 999);
      return;
    }
    if (v.is_string() && v.string() == "successes") {
      r.counted.emplace_back(100, 399);
      return;
    }
    if (!v.is_array() || v.array().empty())
      fail(v, field, "must be \"all\", \"failures\", \"successes\" or a list of statuses, such as [401, \"5xx\"]");
    for (const auto& item : v.array()) {
      if (item.is_integer() && item.integer() >= 100 && item.integer() <= 999) {
        int s = static_cast<int>(item.integer());
        r.counted.emplace_back(s, s);
        continue;
      }
      const std::string s = item.is_string() ? item.string() : std::string();
      auto num = [](std::string_view t) {
        int n = 0;
        if (t.size() != 3) return -1;
        for (char c : t) {
          if (c < '0' || c > '9') return -1;
          n = n * 10 + (c - '0');
        }
        return n >= 100 ? n : -1;
      };
      if (s.size() == 3 && s[0] >= '1' && s[0] <= '5' && (s.substr(1) == "xx" || s.substr(1) == "XX")) {
        int c = (s[0] - '0') * 100;
        r.counted.emplace_back(c, c + 99);
      } else if (s.size() == 7 && s[3] == '-' && num(s.substr(0, 3)) > 0 && num(s.substr(4)) >= num(s.substr(0, 3))) {
        r.counted.emplace_back(num(s.substr(0, 3)), num(s.substr(4)));
      } else {
        fail(item, field, "\"" + s + "\" is not a status (401), a class (\"5xx\") or a range (\"400-499\")");
      }
    }
  }

  // "prefix", "plans", "default_plan", "tenants", "resolver".
  void plans(const json::Value& doc) {
    auto& pl = *p_.plans_;
    if (const auto* v = doc.find("prefix")) {
      if (!v->is_string() || v->string().empty() || v->string().size() > kMaxPrefixLength - 65)
        fail(*v, "prefix", "must be a string of 1 to " + std::to_string(kMaxPrefixLength - 65) + " characters");
      pl.prefix = v->string();
    }
    const json::Value* plans = doc.find("plans");
    const json::Value* def = doc.find("default_plan");
    const json::Value* tenants = doc.find("tenants");
    const json::Value* resolver = doc.find("resolver");
    if (plans == nullptr) {
      for (const auto* v : {def, tenants, resolver})
        if (v != nullptr) fail(*v, "policy", "\"default_plan\", \"tenants\" and \"resolver\" need \"plans\"");
      return;
    }
    if (!plans->is_object() || plans->object().empty())
      fail(*plans, "plans", "must name at least one plan: {\"free\": {\"api\": \"10/minute\"}}");
    for (const auto& m : plans->object()) {
      check_name(m.first, m.second, "plans");
      if (!m.second.is_object()) fail(m.second, "plans." + m.first, "a plan is a table of named limits");
      pl.names.push_back(m.first);
      plan_entries_.push_back(&m.second);
    }
    if (def == nullptr) fail(*plans, "default_plan", "is needed with plans: the plan of a tenant no one names");
    if (!def->is_string() || (pl.default_plan = pl.find(def->string())) < 0)
      fail(*def, "default_plan", "must name one of the plans (" + plan_list() + ")");
    if (tenants != nullptr) {
      if (!tenants->is_object()) fail(*tenants, "tenants", "must map tenant ids to plans: {\"acme\": \"pro\"}");
      for (const auto& m : tenants->object()) {
        int i = m.second.is_string() ? pl.find(m.second.string()) : -1;
        if (i < 0) fail(m.second, "tenants." + m.first, "must name one of the plans (" + plan_list() + ")");
        pl.tenant_ids.push_back(m.first);
        pl.tenants.emplace(pl.tenant_ids.back(), i);
      }
    }
    if (resolver != nullptr) {
      if (!resolver->is_object())
        fail(*resolver, "resolver", "must be a table of timeout_ms, cache_ttl_ms, cache_size");
      known(*resolver, "resolver", {"timeout_ms", "cache_ttl_ms", "cache_size"});
      auto& r = pl.resolver;
      r.enabled = true;
      r.timeout_ms = int_in(resolver->find("timeout_ms"), "resolver.timeout_ms", 1, 60000, 50);
      r.cache_ttl_ms = int_in(resolver->find("cache_ttl_ms"), "resolver.cache_ttl_ms", 0, 86400000, 60000);
      r.cache_size =
          static_cast<size_t>(int_in(resolver->find("cache_size"), "resolver.cache_size", 1, 10000000, 10000));
    }
  }

  std::string plan_list() const {
    std::string out;
    for (const auto& n : p_.plans_->names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  // Rule and plan names: printable ASCII, no space, quote or backslash (they
  // go into headers and metrics), 1 to 64 characters.
  static void check_name(const std::string& name, const json::Value& at, const std::string& field) {
    if (name.empty() || name.size() > 64) fail(at, field, "a name must have 1 to 64 characters");
    for (char c : name)
      if (c < 0x21 || c > 0x7e || c == '"' || c == '\\')
        fail(at, field, "\"" + name + "\" may hold printable ASCII but no space, '\"' or '\\'");
  }

  // A rule's "limit": a rate spec ("10/minute", "10/s; 1000/h"), "plan" (the
  // tenant's plan's limit named like the rule), "plan:<name>", or "none".
  void document_limit(const json::Value& v, const json::Value& limit, const std::string& field, Policy::Rule& r) {
    Algorithm algorithm = Algorithm::kSlidingLog;
    const json::Value* alg = v.find("algorithm");
    if (alg != nullptr) {
      std::string list;
      bool found = false;
      for (size_t a = 0; a < sizeof(kAlgorithmNames) / sizeof(kAlgorithmNames[0]) && !found; ++a) {
        const char* n = kAlgorithmNames[a];
        list += (list.empty() ? "" : ", ") + std::string(n);
        if (alg->is_string() && alg->string() == n) {
          algorithm = static_cast<Algorithm>(static_cast<int>(a));
          found = true;
        }
      }
      if (!found) fail(*alg, field + ".algorithm", "must be one of " + list);
    }
    if (!limit.is_string() || limit.string().empty())
      fail(limit, field + ".limit", "must be a rate such as \"10/minute\", \"plan\", \"plan:<limit>\" or \"none\"");
    const std::string& text = limit.string();
    if (text == "none") {
      if (alg != nullptr) fail(*alg, field + ".algorithm", "means nothing for a rule whose limit is \"none\"");
      return;
    }
    auto& pl = *p_.plans_;
    auto add = [&](const std::string& spec, const json::Value& at, const std::string& where, int plan) {
      Policy::Rule::Variant var;
      try {
        var.limits = parse_rate_spec(spec, algorithm);
      } catch (const Error& e) {
        fail(at, where, e.what());
      }
      LimiterOptions o;
      o.limits = var.limits;
      o.prefix = pl.prefix + ":" + r.name;
      var.limiter = static_cast<int>(limiters_.size() + pl.to_make.size());
      pl.to_make.push_back(std::move(o));
      pl.made_for.push_back(plan);
      var.headers = header_template(var.limits, r.name);
      r.variants.push_back(std::move(var));
    };
    if (text == "plan" || text.rfind("plan:", 0) == 0) {
      const std::string entry = text == "plan" ? r.name : text.substr(5);
      if (pl.names.empty()) fail(limit, field + ".limit", "\"" + text + "\" needs \"plans\"");
      for (size_t i = 0; i < pl.names.size(); ++i) {
        const json::Value* spec = plan_entries_[i]->find(entry);
        if (spec == nullptr)
          fail(*plan_entries_[i], "plans." + pl.names[i],
               "has no \"" + entry + "\" limit, which rule \"" + r.name + "\" takes from every plan");
        if (!spec->is_string())
          fail(*spec, "plans." + pl.names[i] + "." + entry, "must be a rate such as \"10/minute\"");
        add(spec->string(), *spec, "plans." + pl.names[i] + "." + entry, static_cast<int>(i));
      }
      r.by_plan = true;
      r.limiter = r.variants[static_cast<size_t>(pl.default_plan)].limiter;
      return;
    }
    add(text, limit, field + ".limit", -1);
    r.limiter = r.variants[0].limiter;
  }

  Policy& p_;
  std::vector<std::vector<LimitParams>> limiters_;
  std::vector<const json::Value*> plan_entries_;  // plans' tables, by plan index
};

namespace {

// JSON when the first character that is not white space is '{'; else TOML.
json::Value read_document(std::string_view document) {
  size_t i = 0;
  while (i < document.size() && std::strchr(" \t\r\n", document[i]) != nullptr && document[i] != '\0') ++i;
  const bool is_json = i < document.size() && document[i] == '{';
  try {
    return is_json ? json::parse(document) : toml_reader::parse(document);
  } catch (const Error& e) {
    throw_invalid(std::string("policy ") + e.what());
  }
}

}  // namespace

std::shared_ptr<const Policy> Policy::parse(std::string_view document, std::vector<std::vector<LimitParams>> limiters) {
  return make(document, std::move(limiters), nullptr);
}

std::shared_ptr<Policy> Policy::make(std::string_view document, std::vector<std::vector<LimitParams>> limiters,
                                     const Policy* previous) {
  json::Value doc = read_document(document);
  static std::atomic<uint64_t> serial{0};
  auto p = std::make_shared<Policy>();
  p->id_ = serial.fetch_add(1, std::memory_order_relaxed) + 1;
  p->settings_ = std::make_unique<Policy::Settings>();
  p->plans_ = std::make_unique<Policy::Plans>();
  p->counters_ = previous != nullptr ? previous->counters_ : std::make_shared<Policy::Counters>();
  p->limiter_limits_ = limiters;
  PolicyParser(*p, std::move(limiters)).parse(doc);
  for (const auto& o : p->plans_->to_make) p->limiter_limits_.push_back(o.limits);
  p->limiters_.resize(p->limiter_limits_.size());
  return p;
}

std::shared_ptr<const Policy> Policy::load(std::string_view document, PolicySources sources, const Policy* previous) {
  std::vector<std::vector<LimitParams>> limits;
  for (size_t i = 0; i < sources.limiters.size(); ++i) {
    if (!sources.limiters[i]) throw_invalid("limiters[" + std::to_string(i) + "] is null");
    limits.push_back(sources.limiters[i]->limits());
  }
  auto p = make(document, std::move(limits), previous);
  for (size_t i = 0; i < sources.limiters.size(); ++i) p->limiters_[i] = sources.limiters[i];
  const auto& make = p->plans_->to_make;
  if (!make.empty() && !sources.client)
    throw_invalid("policy: its limits need a client to make their limiters on (none was given)");
  for (size_t i = 0; i < make.size(); ++i)
    p->limiters_[sources.limiters.size() + i] = std::make_shared<Limiter>(sources.client, make[i]);
  return p;
}

// ---- per request ------------------------------------------------------------

namespace {

bool listed(const Policy::Lists& l, const std::optional<IpAddress>& ip, std::string_view api_hash, const Request& r) {
  if (ip && in_any(*ip, l.networks)) return true;
  if (!api_hash.empty())
    for (const auto& h : l.api_key_hashes)
      if (h == api_hash) return true;
  if (r.user.data() != nullptr)
    for (const auto& u : l.users)
      if (u == r.user) return true;
  if (r.tenant.data() != nullptr)
    for (const auto& t : l.tenants)
      if (t == r.tenant) return true;
  return false;
}

void identity(std::string& out, const char* kind, std::string_view id) {
  out += kind;
  if (id.size() > kIdentityMax) {
    out += '#';
    out += sha256_hex(id);
  } else {
    out.append(id.data(), id.size());
  }
}

}  // namespace

Step Policy::prepare(const Request& r) const {
  Step step;
  const Settings& s = *settings_;
  // The client's address, computed at most once.
  bool resolved = false;
  std::optional<IpAddress> ip;
  auto client = [&]() -> const std::optional<IpAddress>& {
    if (!resolved) {
      ip = resolve_client(r.peer, present(r, s.forwarded_header), s.trusted);
      resolved = true;
    }
    return ip;
  };

  if (!deny_->empty() || !allow_->empty()) {
    std::string api_hash;
    std::string_view api = present(r, s.api_key_header);
    if (!api.empty()) api_hash = sha256_hex(api);
    const auto& addr = deny_->networks.empty() && allow_->networks.empty() ? std::optional<IpAddress>() : client();
    if (listed(*deny_, addr, api_hash, r)) {
      counters_->unmatched[kForbidden].fetch_add(1, std::memory_order_relaxed);
      step.action = Action::kRespond;
      step.status = 403;
      return step;
    }
    if (listed(*allow_, addr, api_hash, r)) return step;  // proceed, unchecked
  }
  std::string path_buf;
  const std::string_view path = matched_path(r.path, path_buf);
  for (const auto& e : s.exempt)
    if (glob(e, path)) return step;

  // The first rule whose paths (or routes) and methods match.
  const Rule* rule = nullptr;
  for (size_t i = 0; i < rules_.size() && rule == nullptr; ++i) {
    const Rule& c = *rules_[i];
    bool where = c.paths.empty() && c.routes.empty();
    for (const auto& p : c.paths) where = where || glob(p, path);
    for (const auto& t : c.routes) where = where || (!r.route.empty() && t == r.route);
    if (!where) continue;
    bool method = c.methods.empty();
    for (const auto& m : c.methods) method = method || same_method(m, r.method);
    if (!method) continue;
    rule = &c;
    step.rule = static_cast<int>(i);
  }
  if (rule == nullptr || rule->variants.empty()) return step;

  // The key: the first alternative whose parts are all present.
  bool found = false;
  for (const auto& alt : rule->key) {
    std::string key;
    bool complete = true;
    for (const auto& part : alt) {
      if (!key.empty()) key += '|';
      switch (part.kind) {
        case Part::kIp: {
          const auto& a = client();
          if (!a) {
            complete = false;
            break;
          }
          int prefix = a->v6 ? s.ipv6_prefix : s.ipv4_prefix;
          key += "ip:";
          key += format_address(prefix < a->bits() ? masked(*a, prefix) : *a);
          if (prefix < a->bits()) key += "/" + std::to_string(prefix);
          break;
        }
        case Part::kApiKey: {
          std::string_view v = present(r, part.header);
          if (v.empty())
            complete = false;
          else
            key += "apikey:" + sha256_hex(v);
          break;
        }
        case Part::kHeader: {
          std::string_view v = present(r, part.header);
          if (v.empty())
            complete = false;
          else
            key += "header:" + part.name + ":" + sha256_hex(v);
          break;
        }
        case Part::kUser:
          if (r.user.empty())
            complete = false;
          else
            identity(key, "user:", r.user);
          break;
        case Part::kTenant:
          if (r.tenant.empty())
            complete = false;
          else
            identity(key, "tenant:", r.tenant);
          break;
        case Part::kRoute: {
          // "<METHOD> <route>" (the route template, else the path); over
          // 128 bytes it is keyed by its SHA-256, as long ids are: a key
          // stays bounded whatever the client sends.
          std::string text = upper(r.method);
          text += ' ';
          const std::string_view route = r.route.empty() ? path : r.route;
          text.append(route.data(), route.size());
          key += "route:";
          if (text.size() > kIdentityMax) {
            key += '#';
            key += sha256_hex(text);
          } else {
            key += text;
          }
          break;
        }
        case Part::kApp:
          if (r.app_key.data() == nullptr) {
            step.action = Action::kNeedAppKey;
            return step;
          }
          if (r.app_key.empty())
            complete = false;
          else
            key.append(r.app_key.data(), r.app_key.size());
          break;
      }
      if (!complete) break;
    }
    if (complete) {
      step.key = std::move(key);
      found = true;
      break;
    }
  }
  if (!found) {
    if (rule->skip_missing) return step;
    (*rule->outcomes)[kMissingKey].fetch_add(1, std::memory_order_relaxed);
    step.action = Action::kRespond;
    step.status = rule->key_is_credential ? 401 : 400;
    return step;
  }

  // The cost: the application's, the header's, or the rule's.
  step.cost = rule->cost;
  if (r.cost > 0) {
    step.cost = r.cost;
  } else if (rule->cost_header >= 0) {
    std::string_view v = present(r, rule->cost_header);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    if (v.data() != nullptr && !v.empty()) {
      int64_t n = 0;
      bool ok = v.size() <= 7;  // the largest max, 1000000, has 7 digits
      for (size_t i = 0; ok && i < v.size(); ++i) {
        ok = v[i] >= '0' && v[i] <= '9';
        n = n * 10 + (v[i] - '0');
      }
      if (!ok || n < 1 || n > rule->cost_max) {
        (*rule->outcomes)[kInvalid].fetch_add(1, std::memory_order_relaxed);
        step.action = Action::kRespond;
        step.status = 400;
        step.cost = -1;  // tells respond() which 400
        return step;
      }
      step.cost = n;
    }
  }
  // The limit: the rule's, or its tenant's plan's: the application's
  // answer, else the document's tenants table, else (with a resolver) ask.
  const Rule::Variant* var = &rule->variants[0];
  if (rule->by_plan) {
    const Plans& pl = *plans_;
    int plan = -1;
    if (!r.plan.empty()) {
      plan = pl.find(r.plan);
    } else if (!r.tenant.empty()) {
      auto it = pl.tenants.find(r.tenant);
      if (it != pl.tenants.end()) {
        plan = it->second;
      } else if (r.plan.data() == nullptr && pl.resolver.enabled) {
        step.action = Action::kNeedPlan;
        step.key.clear();
        step.cost = 0;
        return step;
      }
    }
    if (plan < 0) plan = pl.default_plan;  // no tenant, or a plan no one defines
    step.plan = plan;
    var = &rule->variants[static_cast<size_t>(plan)];
  }
  step.limiter = var->limiter;
  step.action = Action::kCheck;
  return step;
}

Answer Policy::respond(const Step& step) const {
  Answer a;
  a.status = step.status;
  switch (step.status) {
    case 403: a.body = kBodyForbidden; break;
    case 401: a.body = kBodyNoCredential; break;
    case 400: a.body = step.cost < 0 ? kBodyBadCost : kBodyNoKey; break;
    default: a.body = kBodyUnavailable; break;
  }
  a.headers.push_back({"Content-Type", kContentType});
  return a;
}

Answer Policy::answer(const Step& step, const Decision* d) const {
  Answer a;
  const Rule* rule = step.rule >= 0 ? rules_[static_cast<size_t>(step.rule)].get() : nullptr;
  if (d == nullptr) {
    if (rule != nullptr) (*rule->outcomes)[kErrors].fetch_add(1, std::memory_order_relaxed);
    if (settings_->on_error_allow) return a;
    a.status = 503;
    a.body = kBodyUnavailable;
    a.headers.push_back({"Content-Type", kContentType});
    return a;
  }
  if (rule != nullptr) (*rule->outcomes)[d->allowed ? kAllowed : kDenied].fetch_add(1, std::memory_order_relaxed);
  if (d->allowed && !settings_->send_headers) return a;
  const Rule::Variant* var = rule != nullptr ? rule->variant(step.limiter) : nullptr;
  if (var != nullptr) {
    append_rate_limit_headers(*d, var->limits, var->headers, a.headers);
  } else {
    a.headers = rate_limit_headers(*d, {}, "default");
  }
  if (!d->allowed) {
    a.status = 429;
    a.body = kBodyTooManyRequests;
    a.headers.push_back({"Content-Type", kContentType});
  }
  return a;
}

bool Policy::counts(int rule, int status) const {
  if (rule < 0 || static_cast<size_t>(rule) >= rules_.size()) return true;
  const Rule& r = *rules_[static_cast<size_t>(rule)];
  if (r.counted.empty()) return true;
  for (const auto& range : r.counted)
    if (status >= range.first && status <= range.second) return true;
  return false;
}

bool Policy::counts_all(int rule) const {
  return rule < 0 || static_cast<size_t>(rule) >= rules_.size() || rules_[static_cast<size_t>(rule)]->counted.empty();
}

bool Policy::refund_due(const Step& step, const Decision& d, int status) const {
  // Only units Redis took: a denial took none, a shadowed would-be denial
  // none either, and a degraded decision came from the failure policy.
  if (step.action != Action::kCheck || !d.allowed || d.shadowed || d.degraded) return false;
  return !counts(step.rule, status);
}

size_t Policy::rule_count() const { return rules_.size(); }
const std::string& Policy::rule_name(int rule) const { return rules_.at(static_cast<size_t>(rule))->name; }
int Policy::rule_limiter(int rule) const { return rules_.at(static_cast<size_t>(rule))->limiter; }

size_t Policy::limiter_count() const { return limiter_limits_.size(); }
const std::shared_ptr<Limiter>& Policy::limiter(int index) const { return limiters_.at(static_cast<size_t>(index)); }
const std::vector<LimitParams>& Policy::limits(const Step& step) const {
  static const std::vector<LimitParams> none;
  if (step.limiter < 0 || static_cast<size_t>(step.limiter) >= limiter_limits_.size()) return none;
  return limiter_limits_[static_cast<size_t>(step.limiter)];
}
int Policy::step_limiter(const Step& step) const {
  if (step.rule < 0 || static_cast<size_t>(step.rule) >= rules_.size()) return -1;
  const Rule& r = *rules_[static_cast<size_t>(step.rule)];
  const Rule::Variant* v = r.variant(step.limiter);
  return v == nullptr ? -1 : v->limiter;
}
const std::vector<std::string>& Policy::plan_names() const { return plans_->names; }
const std::string& Policy::limiter_plan(int index) const {
  static const std::string none;
  const size_t first = limiter_limits_.size() - plans_->to_make.size();
  if (index < 0 || static_cast<size_t>(index) < first || static_cast<size_t>(index) >= limiter_limits_.size())
    return none;
  int plan = plans_->made_for[static_cast<size_t>(index) - first];
  return plan < 0 ? none : plans_->names[static_cast<size_t>(plan)];
}
const std::string& Policy::default_plan() const {
  static const std::string none;
  return plans_->default_plan < 0 ? none : plans_->names[static_cast<size_t>(plans_->default_plan)];
}
const ResolverSettings& Policy::resolver() const { return plans_->resolver; }

std::string Policy::metrics_prometheus() const {
  std::string out =
      "# HELP polylimit_http_requests_total Requests the HTTP policy decided, per rule and outcome.\n"
      "# TYPE polylimit_http_requests_total counter\n";
  auto line = [&](const std::string& rule, int outcome, uint64_t n) {
    out += "polylimit_http_requests_total{rule=\"" + rule + "\",outcome=\"" + kOutcomeNames[outcome] + "\"} " +
           std::to_string(n) + "\n";
  };
  for (const auto& r : rules_)
    for (int o = 0; o < kOutcomeCount; ++o) line(r->name, o, (*r->outcomes)[static_cast<size_t>(o)].load());
  // Requests refused before a rule matched (the deny list) count under "(lists)".
  line("(lists)", kForbidden, counters_->unmatched[kForbidden].load());
  return out;
}

}  // namespace http
}  // namespace polylimit
