// crc16.cpp - CRC16/XMODEM with a table built at compile time.
#include "transport/crc16.h"

#include <array>

namespace polylimit {
namespace {

constexpr std::array<uint16_t, 256> make_table() {
  std::array<uint16_t, 256> t{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b) crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    t[static_cast<size_t>(i)] = crc;
  }
  return t;
}

constexpr std::array<uint16_t, 256> kTable = make_table();

}  // namespace

uint16_t crc16_xmodem(std::string_view data) noexcept {
  uint16_t crc = 0;
  for (unsigned char c : data) crc = static_cast<uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ c) & 0xff]);
  return crc;
}

std::string_view hash_tag(std::string_view key) noexcept {
  size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

int key_slot(std::string_view key) noexcept { return crc16_xmodem(hash_tag(key)) & (kClusterSlots - 1); }

}  // namespace polylimit
