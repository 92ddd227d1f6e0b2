// ug::data::parse_npz (libzip over a memory buffer, then the .npy parser) on arbitrary bytes.
#include "expected_errors.h"
#include "ug/data/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  expect_clean_failure([&] { ug::data::parse_npz({reinterpret_cast<const char*>(data), size}); });
  return 0;
}
