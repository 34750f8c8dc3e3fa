// url.h - where a client connects, parsed from a URL.
//
//   redis://[user:pass@]host:port[/db]
//   unix:///path/to.sock[?db=N]
//   memory://
//   redis+cluster://[user:pass@]host:port[,host:port...]
//   redis+sentinel://[user:pass@]host:port[,host:port...]/master-name[/db]
//       [?sentinel_user=U&sentinel_password=P]
//   rediss://, rediss+cluster://, rediss+sentinel://: the same over TLS
//
// Cluster: the hosts are seeds (any reachable one yields the slot map); the
// credentials apply to every node. Sentinel: the hosts are sentinels (port
// 26379 by default); the credentials in the userinfo are the data nodes', the
// sentinels' own (if any) go in the query. With TLS every connection uses it:
// to the seeds and to every node CLUSTER SLOTS names; to the sentinels and to
// the master they name.
#pragma once

#include <string>
#include <vector>

namespace polylimit {

struct HostPort {
  std::string host;  // IPv6 literals without brackets
  int port = 0;
  std::string describe() const;  // host:port, [v6]:port
};

struct Endpoint {
  enum class Kind { kTcp, kUnix, kMemory, kCluster, kSentinel };
  Kind kind = Kind::kMemory;
  std::string host;               // kTcp; IPv6 literals without brackets
  int port = 6379;                // kTcp
  std::string path;               // kUnix
  std::string user;               // ACL user; empty: password-only AUTH
  std::string password;           // empty: no AUTH
  int db = 0;                     // SELECT after connect when non-zero
  std::vector<HostPort> seeds;    // kCluster: seed nodes; kSentinel: sentinels
  std::string master_name;        // kSentinel
  std::string sentinel_user;      // kSentinel: ACL user for the sentinels
  std::string sentinel_password;  // kSentinel: empty: no AUTH to the sentinels
  bool tls = false;               // rediss://, rediss+cluster://, rediss+sentinel://

  // host:port, the socket path or the seed list, for messages.
  std::string describe() const;
};

// Throws Error(kInvalidArgument) naming what is wrong with the URL.
Endpoint parse_url(const std::string& url);

// The URL with every secret replaced by "***", for any string (it never
// fails, and a URL that does not parse is redacted too; when in doubt, more
// is hidden):
//  - the password of the userinfo: user:***@host; a userinfo without ':' is
//    all ***. The userinfo ends at the last '@' before the '?' (so an
//    unencoded '/' or '#' in a password stays hidden; the parser splits at
//    the same '@' and rejects a '/' or '?' before it);
//  - the value of every query parameter but sentinel_user and db
//    (sentinel_password=***), with any unknown '&' items after it;
//  - text that is not a well-formed "scheme://" is searched from its start.
// Idempotent. The one redaction every message, repr, toString and log line
// that quotes a URL goes through, in every language (the C ABI exports it as
// polylimit_redact_url).
std::string redact_url(const std::string& url);

}  // namespace polylimit
