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

// Where the secrets are in a URL: [begin, end) ranges, in order. The
// password of the userinfo (all of a userinfo without ':'), and the value of
// every query parameter whose name contains "pass".
std::vector<std::pair<size_t, size_t>> secret_ranges(const std::string& url) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t end = std::min(url.find_first_of("/?", start), url.size());
  const size_t at = end > start ? url.rfind('@', end - 1) : std::string::npos;
  if (at != std::string::npos && at >= start) {
    const size_t colon = url.find(':', start);
    if (colon != std::string::npos && colon < at)
      out.emplace_back(colon + 1, at);
    else
      out.emplace_back(start, at);
  }
  for (size_t p = url.find('?', start); p != std::string::npos && p < url.size();) {
    const size_t amp = std::min(url.find('&', p + 1), url.size());
    const size_t eq = url.find('=', p + 1);
    if (eq != std::string::npos && eq < amp) {
      std::string name = url.substr(p + 1, eq - p - 1);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name.find("pass") != std::string::npos) out.emplace_back(eq + 1, amp);
    }
    p = amp < url.size() ? amp : std::string::npos;
  }
  return out;
}

std::vector<std::string> secrets_of(const std::string& url) {
  std::vector<std::string> out;
  for (auto [b, e] : secret_ranges(url))
    if (e > b) out.push_back(url.substr(b, e - b));
  return out;
}

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + with.size()))
    text.replace(p, what.size(), with);
  return text;
}

// Every parse error quotes the URL redacted, and no part of its message can
// carry a secret either (a fragment quoted from the wrong place).
[[noreturn]] void bad_url(const std::string& url, const std::string& why) {
  std::string message = "url \"" + redact_url(url) + "\": " + why;
  for (const std::string& secret : secrets_of(url)) {
    const size_t quoted = message.find('"', message.find('"') + 1);  // keep the redacted URL itself
    message = message.substr(0, quoted) + replace_all(message.substr(quoted), secret, "***");
  }
  throw_invalid(message);
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
    bad_url(url, std::string(what) + " " + s + " is out of range " + std::to_string(lo) + ".." +
                     std::to_string(hi));
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

UrlParts split_url(const std::string& rest) {
  UrlParts u;
  std::string s = rest;
  size_t q = s.find('?');
  if (q != std::string::npos) {
    u.query = s.substr(q + 1);
    u.has_query = true;
    s = s.substr(0, q);
  }
  size_t slash = s.find('/');
  u.authority = s.substr(0, slash);
  if (slash != std::string::npos) u.path = s.substr(slash + 1);
  size_t at = u.authority.rfind('@');
  if (at != std::string::npos) {
    u.userinfo = u.authority.substr(0, at);
    u.authority = u.authority.substr(at + 1);
    u.has_userinfo = true;
  }
  return u;
}

Endpoint parse_tcp(const std::string& url, const std::string& rest) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kTcp;
  UrlParts u = split_url(rest);
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

Endpoint parse_cluster(const std::string& url, const std::string& rest) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kCluster;
  UrlParts u = split_url(rest);
  if (u.has_query) bad_url(url, "query parameters are not supported for redis+cluster://");
  // A cluster has only database 0; "/0" or "/" is tolerated.
  if (!u.path.empty() && u.path != "0") bad_url(url, "redis+cluster:// has no database (Redis Cluster only has db 0)");
  if (u.has_userinfo) parse_userinfo(url, u.userinfo, ep.user, ep.password);
  ep.seeds = parse_host_list(url, u.authority, 6379);
  ep.host = ep.seeds[0].host;
  ep.port = ep.seeds[0].port;
  return ep;
}

Endpoint parse_sentinel(const std::string& url, const std::string& rest) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kSentinel;
  UrlParts u = split_url(rest);
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

Endpoint parse_unix(const std::string& url, const std::string& rest) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kUnix;
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
    case Kind::kUnix:
      return path;
    case Kind::kMemory:
      return "memory";
  }
  return "?";
}

Endpoint parse_url(const std::string& url) {
  size_t sep = url.find("://");
  if (sep == std::string::npos) bad_url(url, "expected scheme://..., e.g. redis://127.0.0.1:6379");
  std::string scheme = url.substr(0, sep);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string rest = url.substr(sep + 3);
  // The TLS forms parse exactly like the plain ones.
  bool tls = false;
  if (scheme == "rediss" || scheme == "rediss+cluster" || scheme == "rediss+sentinel") {
    tls = true;
    scheme.erase(5, 1);
  }
  if (tls) {
    Endpoint ep = scheme == "redis" ? parse_tcp(url, rest)
                  : scheme == "redis+cluster" ? parse_cluster(url, rest)
                                              : parse_sentinel(url, rest);
    ep.tls = true;
    return ep;
  }
  if (scheme == "redis") return parse_tcp(url, rest);
  if (scheme == "unix") return parse_unix(url, rest);
  if (scheme == "memory") {
    if (!rest.empty()) bad_url(url, "memory:// takes nothing after the scheme");
    return Endpoint{};
  }
  if (scheme == "redis+cluster") return parse_cluster(url, rest);
  if (scheme == "redis+sentinel") return parse_sentinel(url, rest);
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
