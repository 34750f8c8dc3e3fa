// url.h - where a client connects, parsed from a URL.
//
//   redis://[user:pass@]host:port[/db]
//   unix:///path/to.sock[?db=N]
//   memory://
#pragma once

#include <string>

namespace redlimit {

struct Endpoint {
  enum class Kind { kTcp, kUnix, kMemory };
  Kind kind = Kind::kMemory;
  std::string host;      // kTcp; IPv6 literals without brackets
  int port = 6379;       // kTcp
  std::string path;      // kUnix
  std::string user;      // ACL user; empty: password-only AUTH
  std::string password;  // empty: no AUTH
  int db = 0;            // SELECT after connect when non-zero

  // host:port or the socket path, for messages.
  std::string describe() const;
};

// Throws Error(kInvalidArgument) naming what is wrong with the URL.
Endpoint parse_url(const std::string& url);

}  // namespace redlimit
