// sha256.h - SHA-256 (FIPS 180-4) of a byte string, for bounding the length
// of Redis key names built from caller identifiers. Self-contained so the
// library needs no crypto library for it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace polylimit {

std::array<uint8_t, 32> sha256(std::string_view data);
// Lower-case hex of sha256(data): 64 characters.
std::string sha256_hex(std::string_view data);

}  // namespace polylimit
