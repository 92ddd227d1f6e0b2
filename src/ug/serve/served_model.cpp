#include "ug/serve/served_model.h"

#include <numeric>

#include "ug/serve/onnx_model.h"
#include "ug/serve/unigrad_model.h"

namespace ug::serve {

std::vector<int64_t> ServedModel::sample_shape() const {
  const std::vector<int64_t>& shape = input().shape;
  return {shape.begin() + 1, shape.end()};
}

int64_t ServedModel::sample_numel() const {
  const std::vector<int64_t> shape = sample_shape();
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::vector<int64_t> ServedModel::output_sample_shape() const {
  const std::vector<int64_t>& shape = outputs().front().shape;
  return {shape.begin() + 1, shape.end()};
}

std::unique_ptr<ServedModel> open_model(const std::string& path) {
  const bool onnx = path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
  return onnx ? open_onnx_model(path) : open_unigrad_model(path);
}

}  // namespace ug::serve
