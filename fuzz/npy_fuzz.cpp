// ug::data::parse_npy on arbitrary bytes, and read_npy on the same bytes as a file.
#include "expected_errors.h"
#include "memory_file.h"
#include "ug/data/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  expect_clean_failure([&] { ug::data::parse_npy({reinterpret_cast<const char*>(data), size}); });
  MemoryFile file(data, size);
  expect_clean_failure([&] { ug::data::read_npy(file.path()); });
  return 0;
}
