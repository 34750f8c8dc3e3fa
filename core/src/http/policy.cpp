// policy.cpp - the HTTP request policy (http_policy.h): the document's
// parser, and the per-request steps every language's middleware takes.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <optional>
#include <utility>

#include "http/client_ip.h"
#include "polylimit/errors.h"
#include "polylimit/http_policy.h"
#include "util/json.h"
#include "util/sha256.h"

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

struct Policy::Rule {
  std::string name;
  std::vector<std::string> paths;    // globs; empty with routes empty: every path
  std::vector<std::string> routes;   // route templates, exactly
  std::vector<std::string> methods;  // upper case; empty: every method
  int limiter = -1;                  // -1: the rule exempts what it matches
  std::vector<LimitParams> limits;
  HeaderTemplate headers;  // the rate-limit headers' parts named after the rule
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
  mutable std::array<std::atomic<uint64_t>, kOutcomeCount> outcomes{};
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
  mutable std::array<std::atomic<uint64_t>, kOutcomeCount> unmatched{};  // forbidden before a rule
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
           "rules", "send_headers", "on_error"});
    auto& s = *p_.settings_;
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
    known(
        v, where,
        {"name", "paths", "routes", "methods", "limiter", "key", "credential", "cost", "on_missing_key", "count_when"});
    auto r = std::make_unique<Policy::Rule>();
    const json::Value* name = v.find("name");
    if (name == nullptr) fail(v, where, "a rule needs a \"name\" (it names the rule in headers and metrics)");
    if (!name->is_string() || name->string().empty() || name->string().size() > 64)
      fail(*name, where + ".name", "must be a string of 1 to 64 characters");
    for (char c : name->string())
      if (c < 0x21 || c > 0x7e || c == '"' || c == '\\')
        fail(*name, where + ".name", "\"" + name->string() + "\" may hold printable ASCII but no space, '\"' or '\\'");
    for (const auto& other : p_.rules_)
      if (other->name == name->string()) fail(*name, where + ".name", "\"" + name->string() + "\" names two rules");
    r->name = name->string();
    const std::string field = where + " (\"" + r->name + "\")";
    for (const auto& t : strings(v.find("paths"), field + ".paths")) r->paths.push_back(t.first);
    for (const auto& t : strings(v.find("routes"), field + ".routes")) r->routes.push_back(t.first);
    for (const auto& t : strings(v.find("methods"), field + ".methods")) r->methods.push_back(upper(t.first));
    const json::Value* limiter = v.find("limiter");
    if (limiter == nullptr) fail(v, field, "a rule needs a \"limiter\" (an index), or null to exempt what it matches");
    if (!limiter->is_null()) {
      if (!limiter->is_integer() || limiter->integer() < 0 ||
          static_cast<size_t>(limiter->integer()) >= limiters_.size())
        fail(*limiter, field + ".limiter",
             "must be the index of one of the " + std::to_string(limiters_.size()) + " limiters given, or null");
      r->limiter = static_cast<int>(limiter->integer());
      r->limits = limiters_[static_cast<size_t>(r->limiter)];
    }
    r->headers = header_template(r->limits, r->name);
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

  Policy& p_;
  std::vector<std::vector<LimitParams>> limiters_;
};

std::shared_ptr<const Policy> Policy::parse(std::string_view document, std::vector<std::vector<LimitParams>> limiters) {
  json::Value doc;
  try {
    doc = json::parse(document);
  } catch (const Error& e) {
    throw_invalid(std::string("policy ") + e.what());
  }
  auto p = std::make_shared<Policy>();
  p->settings_ = std::make_unique<Settings>();
  PolicyParser(*p, std::move(limiters)).parse(doc);
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
      s.unmatched[kForbidden].fetch_add(1, std::memory_order_relaxed);
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
  if (rule == nullptr || rule->limiter < 0) return step;

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
    rule->outcomes[kMissingKey].fetch_add(1, std::memory_order_relaxed);
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
        rule->outcomes[kInvalid].fetch_add(1, std::memory_order_relaxed);
        step.action = Action::kRespond;
        step.status = 400;
        step.cost = -1;  // tells respond() which 400
        return step;
      }
      step.cost = n;
    }
  }
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
    if (rule != nullptr) rule->outcomes[kErrors].fetch_add(1, std::memory_order_relaxed);
    if (settings_->on_error_allow) return a;
    a.status = 503;
    a.body = kBodyUnavailable;
    a.headers.push_back({"Content-Type", kContentType});
    return a;
  }
  if (rule != nullptr) rule->outcomes[d->allowed ? kAllowed : kDenied].fetch_add(1, std::memory_order_relaxed);
  if (d->allowed && !settings_->send_headers) return a;
  if (rule != nullptr) {
    append_rate_limit_headers(*d, rule->limits, rule->headers, a.headers);
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

std::string Policy::metrics_prometheus() const {
  std::string out =
      "# HELP polylimit_http_requests_total Requests the HTTP policy decided, per rule and outcome.\n"
      "# TYPE polylimit_http_requests_total counter\n";
  auto line = [&](const std::string& rule, int outcome, uint64_t n) {
    out += "polylimit_http_requests_total{rule=\"" + rule + "\",outcome=\"" + kOutcomeNames[outcome] + "\"} " +
           std::to_string(n) + "\n";
  };
  for (const auto& r : rules_)
    for (int o = 0; o < kOutcomeCount; ++o) line(r->name, o, r->outcomes[static_cast<size_t>(o)].load());
  // Requests refused before a rule matched (the deny list) count under "(lists)".
  line("(lists)", kForbidden, settings_->unmatched[kForbidden].load());
  return out;
}

}  // namespace http
}  // namespace polylimit
