#include "ug/log/crc32c.h"

#include <array>

namespace ug::logging {

namespace {

constexpr uint32_t kReversedPolynomial = 0x82f63b78;  // 0x1edc6f41 bit-reversed

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kReversedPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t c = 0xffffffffu;
  for (unsigned char byte : data) c = kTable[(c ^ byte) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t masked_crc32c(std::string_view data) {
  uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace ug::logging
