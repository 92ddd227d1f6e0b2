// ug serve's request bodies on arbitrary bytes: decode_json (its own reader of plain JSON and
// nlohmann's SAX reader behind it) and decode_float32. The first byte picks the sample shape
// and the format. A decoded body must hold whole rows.
#include <cstdlib>
#include <vector>

#include "expected_errors.h"
#include "ug/serve/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::vector<int64_t> shapes[] = {{3}, {2, 2}, {1, 2, 2}, {784}};
  const std::vector<int64_t>& shape = shapes[data[0] & 3];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  int64_t sample = 1;
  for (int64_t d : shape) sample *= d;
  expect_clean_failure([&] {
    const ug::serve::Inputs in =
        data[0] & 4 ? ug::serve::decode_float32(body, shape) : ug::serve::decode_json(body, shape);
    if (in.rows < 1 || static_cast<int64_t>(in.values.size()) != in.rows * sample) std::abort();
  });
  return 0;
}
