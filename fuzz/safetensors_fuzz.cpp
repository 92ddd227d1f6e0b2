// ug::io::load_bytes and load_metadata (the file path) on arbitrary bytes.
#include "expected_errors.h"
#include "memory_file.h"
#include "ug/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  expect_clean_failure([&] { ug::io::load_bytes(bytes); });
  MemoryFile file(data, size);
  expect_clean_failure([&] { ug::io::load_metadata(file.path()); });
  return 0;
}
