// client_ip.h - the client's address of an HTTP request, resolved once for
// every language: parsing (ports, brackets, zones, IPv4-mapped IPv6),
// trusted proxies as networks, and the X-Forwarded-For walk
// (docs/integrations/contract.md, "The client's address").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace polylimit {
namespace http {

struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4: the first 4

  int bits() const { return v6 ? 128 : 32; }
  bool operator==(const IpAddress& o) const { return v6 == o.v6 && bytes == o.bytes; }
};

// An address as peers and forwarded hops write it: "1.2.3.4", "1.2.3.4:80",
// "::1", "[::1]:80", "fe80::1%eth0" (the zone is dropped), with surrounding
// spaces. An IPv4-mapped IPv6 address (::ffff:1.2.3.4) is the IPv4 address.
// Anything else (a host name, "unknown", an obfuscated RFC 7239 node) is
// none.
std::optional<IpAddress> parse_address(std::string_view text);

struct Network {
  IpAddress base;  // with the bits past the prefix cleared
  int prefix = 0;

  bool contains(const IpAddress& a) const;
};

// "10.0.0.0/8", "2001:db8::/32", or an address (a /32 or /128). An
// IPv4-mapped network (::ffff:10.0.0.0/104) is the IPv4 network. Throws
// Error(kInvalidArgument) naming `what` on anything else.
Network parse_network(std::string_view text, const std::string& what);

bool in_any(const IpAddress& a, const std::vector<Network>& networks);

// The client of a request from `peer` (the socket's other end) carrying the
// X-Forwarded-For value `forwarded` (repeated headers joined by ","). The
// header is read only when the peer is a trusted proxy; then hops are taken
// from the right, each trusted hop passing the question to the one before
// it. The client is the first untrusted hop; when the walk ends first (the
// chain is all trusted, or a hop is not an address), the client is the last
// address the walk reached. None when the peer itself is not an address.
std::optional<IpAddress> resolve_client(std::string_view peer, std::string_view forwarded,
                                        const std::vector<Network>& trusted);

// The canonical text of an address: dotted quad, or RFC 5952 IPv6 (lower
// case, the longest run of two or more zero groups as "::", the first on a
// tie), never an embedded IPv4 form.
std::string format_address(const IpAddress& a);

// `a` with the bits past `prefix` cleared.
IpAddress masked(const IpAddress& a, int prefix);

}  // namespace http
}  // namespace polylimit
