// CRC-32C (Castagnoli), the checksum of TFRecord framing. Debian packages no C/C++ CRC-32C
// library, and a table-driven one is a few lines.
#pragma once

#include <cstdint>
#include <string_view>

namespace ug::logging {

/** The CRC-32C of data: crc32c("123456789") == 0xe3069283. */
uint32_t crc32c(std::string_view data);

/** TFRecord's masked form, which keeps a CRC of data that itself holds CRCs well-spread. */
uint32_t masked_crc32c(std::string_view data);

}  // namespace ug::logging
