// ug::onnx::load_bytes on arbitrary bytes; a model that loads is also run once on zeros (symbolic
// dims taken as 1, small inputs only), so that hostile attributes and shapes reach the op table.
// Tight limits keep every run within libFuzzer's memory and time limits.
#include <algorithm>

#include "expected_errors.h"
#include "ug/onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  expect_clean_failure([&] {
    auto model = ug::onnx::load_bytes(bytes, "", {.max_elements = 1 << 16, .max_live_elements = 1 << 18});
    std::vector<ug::Tensor> inputs;
    for (const auto& info : model->inputs()) {
      ug::Dims shape;
      int64_t numel = 1;
      for (int64_t d : info.shape) {
        shape.push_back(d < 0 ? 1 : d);
        if ((numel *= std::max<int64_t>(shape.back(), 1)) > (1 << 12)) return;  // zeros counted as ones
      }
      inputs.push_back(ug::zeros(shape, {.dtype = info.dtype}));
    }
    model->forward(inputs);
  });
  return 0;
}
