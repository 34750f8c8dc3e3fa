// crc16.h - Redis Cluster key slots.
//
// A key's slot is CRC16/XMODEM (poly 0x1021, init 0, no reflection) of the
// key, or of its hash tag (the bytes between the first '{' and the next '}',
// when not empty), modulo 16384.
#pragma once

#include <cstdint>
#include <string_view>

namespace polylimit {

constexpr int kClusterSlots = 16384;

uint16_t crc16_xmodem(std::string_view data) noexcept;

// The part of a key that is hashed: its hash tag if it has a non-empty one.
std::string_view hash_tag(std::string_view key) noexcept;

int key_slot(std::string_view key) noexcept;

}  // namespace polylimit
