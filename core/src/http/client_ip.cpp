// client_ip.cpp - addresses, networks and the X-Forwarded-For walk.
#include "http/client_ip.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

#include "polylimit/errors.h"

namespace polylimit {
namespace http {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// inet_pton of a bounded text (the longest IPv6 text is 45 characters).
std::optional<IpAddress> pton(std::string_view text, bool v6) {
  if (text.empty() || text.size() > 45) return std::nullopt;
  char buf[46];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress a;
  a.v6 = v6;
  if (inet_pton(v6 ? AF_INET6 : AF_INET, buf, a.bytes.data()) != 1) return std::nullopt;
  if (v6) {
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(a.bytes.data(), kMapped, 12) == 0) {
      IpAddress v4;
      std::memcpy(v4.bytes.data(), a.bytes.data() + 12, 4);
      return v4;
    }
  }
  return a;
}

}  // namespace

std::optional<IpAddress> parse_address(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  if (text.front() == '[') {  // [v6] or [v6]:port
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':' || rest.size() == 1) return std::nullopt;
      for (char c : rest.substr(1))
        if (c < '0' || c > '9') return std::nullopt;
    }
    text = text.substr(1, close - 1);
    if (text.find(':') == std::string_view::npos) return std::nullopt;  // [1.2.3.4] is not IPv6
  } else {
    size_t colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
      // One colon: an IPv4 address and a port.
      std::string_view port = text.substr(colon + 1);
      if (port.empty()) return std::nullopt;
      for (char c : port)
        if (c < '0' || c > '9') return std::nullopt;
      return pton(text.substr(0, colon), false);
    }
  }
  size_t zone = text.find('%');
  if (zone != std::string_view::npos) {
    if (text.find(':') == std::string_view::npos || zone + 1 == text.size()) return std::nullopt;
    text = text.substr(0, zone);
  }
  return pton(text, text.find(':') != std::string_view::npos);
}

IpAddress masked(const IpAddress& a, int prefix) {
  IpAddress m = a;
  const int bits = a.bits();
  for (int i = 0; i < bits / 8; ++i) {
    int keep = prefix - i * 8;
    if (keep >= 8) continue;
    m.bytes[static_cast<size_t>(i)] &= keep <= 0 ? 0 : static_cast<uint8_t>(0xFF << (8 - keep));
  }
  return m;
}

bool Network::contains(const IpAddress& a) const {
  if (a.v6 != base.v6) return false;
  // Whole bytes, then the bits of the last partial byte (base has them cleared).
  const size_t whole = static_cast<size_t>(prefix / 8);
  if (std::memcmp(a.bytes.data(), base.bytes.data(), whole) != 0) return false;
  const int rest = prefix % 8;
  return rest == 0 || (a.bytes[whole] & static_cast<uint8_t>(0xFF << (8 - rest))) == base.bytes[whole];
}

Network parse_network(std::string_view text, const std::string& what) {
  std::string_view t = trim(text);
  size_t slash = t.find('/');
  std::string_view addr = slash == std::string_view::npos ? t : t.substr(0, slash);
  // A network is written bare: no port, brackets or zone.
  std::optional<IpAddress> a;
  if (addr.find_first_of("[]%") == std::string_view::npos) a = pton(addr, addr.find(':') != std::string_view::npos);
  if (!a) throw_invalid(what + ": \"" + std::string(text) + "\" is not an address or a network (CIDR)");
  Network n;
  bool mapped = !a->v6 && addr.find(':') != std::string_view::npos;
  n.prefix = a->bits();
  if (slash != std::string_view::npos) {
    std::string_view len = t.substr(slash + 1);
    int p = 0;
    bool ok = !len.empty() && len.size() <= 3;
    for (size_t i = 0; ok && i < len.size(); ++i) {
      ok = len[i] >= '0' && len[i] <= '9';
      p = p * 10 + (len[i] - '0');
    }
    if (mapped) p -= 96;  // ::ffff:a.b.c.d/104 is a.b.c.d/8
    if (!ok || p < 0 || p > a->bits())
      throw_invalid(what + ": \"" + std::string(text) + "\" has a prefix length out of range");
    n.prefix = p;
  }
  n.base = masked(*a, n.prefix);
  return n;
}

bool in_any(const IpAddress& a, const std::vector<Network>& networks) {
  for (const auto& n : networks)
    if (n.contains(a)) return true;
  return false;
}

std::optional<IpAddress> resolve_client(std::string_view peer, std::string_view forwarded,
                                        const std::vector<Network>& trusted) {
  std::optional<IpAddress> client = parse_address(peer);
  if (!client || trusted.empty() || !in_any(*client, trusted)) return client;
  std::string_view rest = forwarded;
  while (!rest.empty()) {
    size_t comma = rest.rfind(',');
    std::string_view hop = comma == std::string_view::npos ? rest : rest.substr(comma + 1);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(0, comma);
    if (trim(hop).empty()) continue;  // "a,,b" and a trailing comma: empty hops are skipped
    std::optional<IpAddress> a = parse_address(hop);
    if (!a) break;  // not an address: nothing left of it can be believed
    client = a;
    if (!in_any(*a, trusted)) break;
  }
  return client;
}

std::string format_address(const IpAddress& a) {
  if (!a.v6) {
    std::string out;
    out.reserve(15);
    for (int i = 0; i < 4; ++i) {
      if (i) out += '.';
      unsigned b = a.bytes[static_cast<size_t>(i)];
      if (b >= 100) out += static_cast<char>('0' + b / 100);
      if (b >= 10) out += static_cast<char>('0' + b / 10 % 10);
      out += static_cast<char>('0' + b % 10);
    }
    return out;
  }
  uint16_t g[8];
  for (int i = 0; i < 8; ++i) g[i] = static_cast<uint16_t>(a.bytes[2 * i] << 8 | a.bytes[2 * i + 1]);
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    if (g[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && g[j] == 0) ++j;
    if (j - i > best_len && j - i >= 2) {
      best = i;
      best_len = j - i;
    }
    i = j;
  }
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    static const char kHex[] = "0123456789abcdef";
    bool digits = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      int nibble = (g[i] >> shift) & 0xF;
      if (nibble == 0 && !digits && shift > 0) continue;
      digits = true;
      out += kHex[nibble];
    }
  }
  return out;
}

}  // namespace http
}  // namespace polylimit
