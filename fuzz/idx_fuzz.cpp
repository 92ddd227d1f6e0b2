// ug::data::read_idx on arbitrary bytes, plain or gzip-compressed (zlib tells them apart).
#include "expected_errors.h"
#include "memory_file.h"
#include "ug/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  MemoryFile file(data, size);
  expect_clean_failure([&] { ug::data::read_idx(file.path()); });
  return 0;
}
