#include "ug/serve/served_model.h"

#include <numeric>

#include "ug/graph/grad_mode.h"

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

ModuleModel::ModuleModel(std::shared_ptr<nn::Module> module, TensorSpec input, std::vector<TensorSpec> outputs)
    : module_(std::move(module)), input_(std::move(input)), outputs_(std::move(outputs)) {
  Shape sample(input_.shape.begin(), input_.shape.end());
  sample[0] = 1;
  input_.shape[0] = -1;
  const Tensor out = predict(zeros(sample, {.dtype = input_.dtype}));
  outputs_.front().shape.assign(out.shape().begin(), out.shape().end());
  outputs_.front().shape[0] = -1;
  outputs_.front().dtype = out.dtype();
}

Tensor ModuleModel::predict(const Tensor& batch) {
  NoGradGuard no_grad;
  return module_->forward(batch).contiguous();
}

std::unique_ptr<ServedModel> open_model(const std::string& path) {
  const bool onnx = path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
  return onnx ? open_onnx_model(path) : open_unigrad_model(path);
}

}  // namespace ug::serve
