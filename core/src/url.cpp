// url.cpp - URL parsing for redis://, unix:// and memory://.
#include "redlimit/url.h"

#include <cctype>
#include <cstdlib>

#include "redlimit/errors.h"

namespace redlimit {
namespace {

[[noreturn]] void bad_url(const std::string& url, const std::string& why) {
  throw_invalid("url \"" + url + "\": " + why);
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

Endpoint parse_tcp(const std::string& url, const std::string& rest) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kTcp;
  std::string authority = rest;
  std::string path;
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    authority = rest.substr(0, slash);
    path = rest.substr(slash + 1);
  }
  if (authority.find('?') != std::string::npos || path.find('?') != std::string::npos)
    bad_url(url, "query parameters are not supported for redis://");
  size_t at = authority.rfind('@');
  if (at != std::string::npos) {
    std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    size_t colon = userinfo.find(':');
    if (colon == std::string::npos) {
      // redis://secret@host: a lone word is the password (as redis-cli -u reads it).
      ep.password = percent_decode(url, userinfo);
    } else {
      ep.user = percent_decode(url, userinfo.substr(0, colon));
      ep.password = percent_decode(url, userinfo.substr(colon + 1));
    }
    if (ep.password.empty()) bad_url(url, "empty password");
  }
  std::string host = authority;
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
  for (char c : host) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/' || c == '@' || c == ',')
      bad_url(url, "invalid character in host \"" + host + "\"");
  }
  ep.host = host;
  if (!port.empty()) ep.port = parse_number(url, port, 1, 65535, "port");
  if (!path.empty()) ep.db = parse_number(url, path, 0, kMaxDb, "database");
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
  ep.path = path;
  return ep;
}

}  // namespace

std::string Endpoint::describe() const {
  switch (kind) {
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
  if (scheme == "redis") return parse_tcp(url, rest);
  if (scheme == "unix") return parse_unix(url, rest);
  if (scheme == "memory") {
    if (!rest.empty()) bad_url(url, "memory:// takes nothing after the scheme");
    return Endpoint{};
  }
  if (scheme == "redis+cluster" || scheme == "redis+sentinel")
    bad_url(url, "scheme " + scheme + " is not supported by this build yet");
  if (scheme == "rediss") bad_url(url, "TLS (rediss://) is not supported");
  bad_url(url, "unknown scheme \"" + scheme + "\" (expected redis, unix or memory)");
}

}  // namespace redlimit
