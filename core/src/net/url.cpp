// url.cpp - URL parsing for redis://, redis+cluster://, redis+sentinel://
// (and their TLS forms rediss://, rediss+cluster://, rediss+sentinel://),
// unix:// and memory://.
#include "polylimit/url.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

#include "polylimit/errors.h"

namespace polylimit {
namespace {

bool scheme_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'; }

// Where the text after the scheme starts: after "://" when what precedes it
// is a well-formed scheme, else 0 (then the whole string may hold a userinfo:
// "u:pw@h://x" or "redis:/u:pw@h" redact as much as possible).
size_t authority_start(const std::string& url) {
  const size_t sep = url.find("://");
  if (sep == std::string::npos || sep == 0) return 0;
  for (size_t i = 0; i < sep; ++i)
    if (!scheme_char(url[i])) return 0;
  return sep + 3;
}

// The '@' that ends the userinfo, or npos; the parser and the redaction split
// a URL at the same place, so that no part the parser quotes in a message can
// be a part of a password. It is the last '@' before the first '?' (a
// password may hold an unencoded '/' or '#'); with none there, the last '@'
// of all when no '=' or '&' comes between that '?' and the next '@' (a
// password holding a '?': "u:p?w@h"). `ambiguous`: an '@' after the '?' that
// was taken for the query's ("?sentinel_user=a@b"), so what looks like the
// port may still be the tail of a password.
size_t userinfo_end(const std::string& url, size_t start, bool* ambiguous = nullptr) {
  if (ambiguous) *ambiguous = false;
  const size_t q = url.find('?', start);
  const size_t limit = q == std::string::npos ? url.size() : q;
  if (limit > start) {
    const size_t at = url.rfind('@', limit - 1);
    if (at != std::string::npos && at >= start) return at;
  }
  if (q == std::string::npos) return std::string::npos;
  const size_t first = url.find('@', q + 1);
  if (first == std::string::npos) return std::string::npos;
  if (url.find_first_of("=&", q + 1) > first) return url.rfind('@');
  if (ambiguous) *ambiguous = true;
  return std::string::npos;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Query parameters whose value is not a secret; every other value is
// redacted.
bool public_parameter(const std::string& name) {
  const std::string n = lower(name);
  return n == "sentinel_user" || n == "db";
}

bool known_parameter(const std::string& name) { return public_parameter(name) || lower(name) == "sentinel_password"; }

// Where the secrets are in a URL: [begin, end) ranges, in order. When in
// doubt, more is secret:
//  - the password of the userinfo (all of a userinfo without ':');
//  - an '@' after the '?' that may end a userinfo (userinfo_end's
//    `ambiguous`): whatever follows the first ':' of the authority too;
//  - the value of every query parameter but sentinel_user and db, running on
//    over the '&'-separated items after it until a known parameter starts
//    (an unencoded '&' in "sentinel_password=a&b" does not show "b").
std::vector<std::pair<size_t, size_t>> secret_ranges(const std::string& url) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t start = authority_start(url);
  bool ambiguous = false;
  const size_t at = userinfo_end(url, start, &ambiguous);
  if (at != std::string::npos) {
    const size_t colon = url.find(':', start);
    out.emplace_back(colon != std::string::npos && colon < at ? colon + 1 : start, at);
  } else if (ambiguous) {
    const size_t end = std::min(url.find_first_of("/?", start), url.size());
    const size_t colon = url.find(':', start);
    if (colon != std::string::npos && colon < end) out.emplace_back(colon + 1, end);
  }
  const size_t q = url.find('?', at == std::string::npos ? start : at + 1);
  bool running = false;  // the last item's value was secret: unknown items go with it
  for (size_t p = q; p != std::string::npos && p < url.size();) {
    const size_t amp = std::min(url.find('&', p + 1), url.size());
    const size_t eq = std::min(url.find('=', p + 1), amp);
    const std::string name = url.substr(p + 1, eq - p - 1);
    if (running && !known_parameter(name)) {
      out.back().second = amp;
    } else {
      running = false;
      if (eq < amp && !public_parameter(name)) {
        out.emplace_back(eq + 1, amp);
        running = true;
      }
    }
    p = amp < url.size() ? amp : std::string::npos;
  }
  return out;
}

// The secrets, and the pieces of those that hold a separator (a parser that
// split the URL elsewhere may quote one piece).
std::vector<std::string> secrets_of(const std::string& url) {
  std::vector<std::string> out;
  for (auto [b, e] : secret_ranges(url)) {
    if (e <= b) continue;
    const std::string secret = url.substr(b, e - b);
    out.push_back(secret);
    for (size_t p = 0; p < secret.size();) {
      const size_t cut = std::min(secret.find_first_of("&=:/?@#,", p), secret.size());
      if (cut > p && cut - p < secret.size()) out.push_back(secret.substr(p, cut - p));
      p = cut + 1;
    }
  }
  return out;
}

// Every parse error quotes the URL redacted, and no part of its message can
// carry a secret either (a fragment quoted from the wrong place).
// A secret of one or two characters is hidden only inside the fragments the
// message quotes ("..." or '...'), so that "p" does not eat the words.
// Secrets are looked for in the message as it was, never in what hid
// another, and each run of hidden bytes becomes one "***": the message
// cannot grow with the number of secrets (replacing them one after another
// in the text so far tripled a message per repeated one-character secret).
[[noreturn]] void bad_url(const std::string& url, const std::string& why) {
  // The quoted fragment each byte of `why` is in (0: none).
  std::vector<int> fragment(why.size(), 0);
  int fragments = 0;
  for (size_t i = 0; i < why.size();) {
    const size_t open = why.find_first_of("\"'", i);
    if (open == std::string::npos) break;
    const size_t close = std::min(why.find(why[open], open + 1), why.size());
    ++fragments;
    for (size_t k = open + 1; k < close; ++k) fragment[k] = fragments;
    i = close + 1;
  }
  std::vector<bool> hidden(why.size(), false);
  for (const std::string& secret : secrets_of(url)) {
    const size_t n = secret.size();
    for (size_t p = why.find(secret); p != std::string::npos; p = why.find(secret, p + 1))
      if (n >= 3 || (fragment[p] != 0 && fragment[p + n - 1] == fragment[p]))
        std::fill(hidden.begin() + static_cast<std::ptrdiff_t>(p), hidden.begin() + static_cast<std::ptrdiff_t>(p + n),
                  true);
  }
  std::string detail;
  for (size_t i = 0; i < why.size(); ++i) {
    if (!hidden[i])
      detail += why[i];
    else if (i == 0 || !hidden[i - 1])
      detail += "***";
  }
  throw_invalid("url \"" + redact_url(url) + "\": " + detail);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes %XX escapes (user names and passwords may contain ':' or '@').
std::string percent_decode(const std::string& url, const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) bad_url(url, "bad percent escape in credentials");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// Parses a decimal in [lo, hi]; `what` names it in the message.
int parse_number(const std::string& url, const std::string& s, int lo, int hi, const char* what) {
  if (s.empty() || s.size() > 10) bad_url(url, std::string(what) + " \"" + s + "\" is not a number");
  long long v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      bad_url(url, std::string(what) + " \"" + s + "\" is not a number");
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi)
    bad_url(url, std::string(what) + " " + s + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<int>(v);
}

constexpr int kMaxDb = 1 << 20;

// user:pass, :pass or a lone password (as redis-cli -u reads it).
void parse_userinfo(const std::string& url, const std::string& userinfo, std::string& user, std::string& password) {
  size_t colon = userinfo.find(':');
  if (colon == std::string::npos) {
    password = percent_decode(url, userinfo);
  } else {
    user = percent_decode(url, userinfo.substr(0, colon));
    password = percent_decode(url, userinfo.substr(colon + 1));
  }
  if (password.empty()) bad_url(url, "empty password");
}

// host, host:port, [v6], [v6]:port.
HostPort parse_host_port(const std::string& url, const std::string& text, int default_port) {
  std::string host = text;
  std::string port;
  if (!host.empty() && host[0] == '[') {  // [::1]:6379
    size_t close = host.find(']');
    if (close == std::string::npos) bad_url(url, "unclosed '[' in host");
    std::string after = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!after.empty()) {
      if (after[0] != ':') bad_url(url, "expected ':' after ']'");
      port = after.substr(1);
      if (port.empty()) bad_url(url, "empty port");
    }
  } else {
    size_t colon = host.rfind(':');
    if (colon != std::string::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
      if (port.empty()) bad_url(url, "empty port");
    }
  }
  if (host.empty()) bad_url(url, "missing host");
  const bool bracketed = text[0] == '[';
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) bad_url(url, "control character in host");
    if (std::isspace(u) || c == '/' || c == '@' || c == ',' || c == '[' || c == ']' || c == '?' || c == '#')
      bad_url(url, "invalid character in host \"" + host + "\"");
    if (c == ':' && !bracketed)
      bad_url(url, "host \"" + host + "\" contains ':' (an IPv6 address goes in brackets: [::1]:6379)");
  }
  HostPort hp;
  hp.host = host;
  hp.port = port.empty() ? default_port : parse_number(url, port, 1, 65535, "port");
  return hp;
}

// Splits "userinfo@authority/path?query" (each part optional).
struct UrlParts {
  std::string userinfo, authority, path, query;
  bool has_userinfo = false, has_query = false;
};

// `start`: where the text after "scheme://" begins in `url`. The userinfo
// ends where the redaction says it does (userinfo_end).
UrlParts split_url(const std::string& url, size_t start) {
  UrlParts u;
  const size_t at = userinfo_end(url, start);
  std::string s = url.substr(start);
  if (at != std::string::npos) {
    u.userinfo = url.substr(start, at - start);
    u.has_userinfo = true;
    // Not quoted: this is the password, or the host and the password mixed.
    if (u.userinfo.find_first_of("/?") != std::string::npos)
      bad_url(url,
              "a '/' or '?' before the '@' of the credentials (percent-encode '/', '?' and '@' in user names "
              "and passwords: %2F, %3F, %40)");
    s = url.substr(at + 1);
  }
  size_t q = s.find('?');
  if (q != std::string::npos) {
    u.query = s.substr(q + 1);
    u.has_query = true;
    s = s.substr(0, q);
  }
  size_t slash = s.find('/');
  u.authority = s.substr(0, slash);
  if (slash != std::string::npos) u.path = s.substr(slash + 1);
  return u;
}

Endpoint parse_tcp(const std::string& url, size_t start) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kTcp;
  UrlParts u = split_url(url, start);
  if (u.has_query) bad_url(url, "query parameters are not supported for redis://");
  if (u.has_userinfo) parse_userinfo(url, u.userinfo, ep.user, ep.password);
  HostPort hp = parse_host_port(url, u.authority, 6379);
  ep.host = hp.host;
  ep.port = hp.port;
  if (!u.path.empty()) ep.db = parse_number(url, u.path, 0, kMaxDb, "database");
  return ep;
}

constexpr size_t kMaxSeeds = 64;

std::vector<HostPort> parse_host_list(const std::string& url, const std::string& authority, int default_port) {
  std::vector<HostPort> out;
  size_t pos = 0;
  for (;;) {
    size_t comma = authority.find(',', pos);
    std::string item = authority.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty()) bad_url(url, authority.empty() ? "missing host" : "empty entry in the host list");
    out.push_back(parse_host_port(url, item, default_port));
    if (out.size() > kMaxSeeds) bad_url(url, "more than " + std::to_string(kMaxSeeds) + " hosts");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

Endpoint parse_cluster(const std::string& url, size_t start) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kCluster;
  UrlParts u = split_url(url, start);
  if (u.has_query) bad_url(url, "query parameters are not supported for redis+cluster://");
  // A cluster has only database 0; "/0" or "/" is tolerated.
  if (!u.path.empty() && u.path != "0") bad_url(url, "redis+cluster:// has no database (Redis Cluster only has db 0)");
  if (u.has_userinfo) parse_userinfo(url, u.userinfo, ep.user, ep.password);
  ep.seeds = parse_host_list(url, u.authority, 6379);
  ep.host = ep.seeds[0].host;
  ep.port = ep.seeds[0].port;
  return ep;
}

Endpoint parse_sentinel(const std::string& url, size_t start) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kSentinel;
  UrlParts u = split_url(url, start);
  if (u.has_userinfo) parse_userinfo(url, u.userinfo, ep.user, ep.password);
  ep.seeds = parse_host_list(url, u.authority, 26379);
  ep.host = ep.seeds[0].host;
  ep.port = ep.seeds[0].port;
  std::string path = u.path;
  size_t slash = path.find('/');
  if (slash != std::string::npos) {
    ep.db = parse_number(url, path.substr(slash + 1), 0, kMaxDb, "database");
    path = path.substr(0, slash);
  }
  ep.master_name = percent_decode(url, path);
  if (ep.master_name.empty()) bad_url(url, "missing master name (redis+sentinel://host:port/master-name)");
  for (char c : ep.master_name)
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      bad_url(url, "invalid character in master name");
  if (u.has_query) {
    size_t pos = 0;
    for (;;) {
      size_t amp = u.query.find('&', pos);
      std::string item = u.query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
      size_t eq = item.find('=');
      std::string key = item.substr(0, eq);
      std::string value = eq == std::string::npos ? std::string() : percent_decode(url, item.substr(eq + 1));
      if (key == "sentinel_password") {
        if (value.empty()) bad_url(url, "empty sentinel_password");
        ep.sentinel_password = value;
      } else if (key == "sentinel_user") {
        ep.sentinel_user = value;
      } else {
        bad_url(url, "unknown query parameter \"" + key + "\" (expected sentinel_user or sentinel_password)");
      }
      if (amp == std::string::npos) break;
      pos = amp + 1;
    }
    if (!ep.sentinel_user.empty() && ep.sentinel_password.empty())
      bad_url(url, "sentinel_user needs sentinel_password");
  }
  return ep;
}

Endpoint parse_unix(const std::string& url, size_t start) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kUnix;
  // unix:// has no credentials; an '@' would make a part of the path look
  // like a password to the redaction.
  if (userinfo_end(url, start) != std::string::npos)
    bad_url(url, "unix:// takes no user name or password (and no '@' in the socket path)");
  const std::string rest = url.substr(start);
  std::string path = rest;
  size_t q = rest.find('?');
  if (q != std::string::npos) {
    path = rest.substr(0, q);
    std::string query = rest.substr(q + 1);
    if (query.compare(0, 3, "db=") != 0) bad_url(url, "only the ?db=N parameter is supported");
    ep.db = parse_number(url, query.substr(3), 0, kMaxDb, "database");
  }
  if (path.empty() || path[0] != '/') bad_url(url, "unix:// needs an absolute socket path (unix:///path)");
  // "unix:///" or "unix:///run/" name a directory, never a socket.
  if (path.back() == '/') bad_url(url, "the socket path '" + path + "' names a directory, not a socket file");
  for (char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) bad_url(url, "the socket path contains a control character");
  // sockaddr_un.sun_path holds 108 bytes with the terminating NUL.
  if (path.size() > 107)
    bad_url(url, "the socket path is " + std::to_string(path.size()) + " bytes long; at most 107 fit in sockaddr_un");
  ep.path = path;
  return ep;
}

}  // namespace

std::string HostPort::describe() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Endpoint::describe() const {
  switch (kind) {
    case Kind::kCluster:
    case Kind::kSentinel: {
      std::string out = kind == Kind::kCluster ? "cluster " : "sentinels ";
      for (size_t i = 0; i < seeds.size(); ++i) out += (i ? "," : "") + seeds[i].describe();
      if (kind == Kind::kSentinel) out += " master " + master_name;
      return out;
    }
    case Kind::kTcp:
      return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    case Kind::kUnix: return path;
    case Kind::kMemory: return "memory";
  }
  return "?";
}

Endpoint parse_url(const std::string& url) {
  size_t sep = url.find("://");
  if (sep == std::string::npos) bad_url(url, "expected scheme://..., e.g. redis://127.0.0.1:6379");
  const size_t start = authority_start(url);
  // Not quoted: with characters a scheme cannot hold it may be anything
  // ("user:password@host://...").
  if (start == 0) bad_url(url, "the scheme before \"://\" must be letters, digits, '+', '-' or '.'");
  std::string scheme = lower(url.substr(0, sep));
  // The TLS forms parse exactly like the plain ones.
  bool tls = false;
  if (scheme == "rediss" || scheme == "rediss+cluster" || scheme == "rediss+sentinel") {
    tls = true;
    scheme.erase(5, 1);
  }
  if (tls) {
    Endpoint ep = scheme == "redis"           ? parse_tcp(url, start)
                  : scheme == "redis+cluster" ? parse_cluster(url, start)
                                              : parse_sentinel(url, start);
    ep.tls = true;
    return ep;
  }
  if (scheme == "redis") return parse_tcp(url, start);
  if (scheme == "unix") return parse_unix(url, start);
  if (scheme == "memory") {
    if (start != url.size()) bad_url(url, "memory:// takes nothing after the scheme");
    return Endpoint{};
  }
  if (scheme == "redis+cluster") return parse_cluster(url, start);
  if (scheme == "redis+sentinel") return parse_sentinel(url, start);
  bad_url(url, "unknown scheme \"" + scheme +
                   "\" (expected redis, rediss, redis+cluster, rediss+cluster, redis+sentinel, rediss+sentinel, "
                   "unix or memory)");
}

std::string redact_url(const std::string& url) {
  std::string out;
  size_t done = 0;
  for (auto [b, e] : secret_ranges(url)) {
    if (e <= b) continue;
    out.append(url, done, b - done).append("***");
    done = e;
  }
  return out.append(url, done, std::string::npos);
}

}  // namespace polylimit
