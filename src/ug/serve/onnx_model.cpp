#include "ug/serve/onnx_model.h"

#include "ug/autograd/grad_mode.h"
#include "ug/core/error.h"
#include "ug/onnx/import.h"

namespace ug::serve {

namespace {

TensorSpec spec_of(const onnx::ValueInfo& info) { return {.name = info.name, .shape = info.shape, .dtype = info.dtype}; }

class OnnxModel final : public ServedModel {
 public:
  explicit OnnxModel(std::shared_ptr<onnx::OnnxModule> module) : module_(std::move(module)) {
    if (module_->inputs().size() != 1)
      fail("[serve] the ONNX model has ", module_->inputs().size(), " inputs; ug serve serves models with one");
    input_ = spec_of(module_->inputs().front());
    if (input_.dtype != DType::Float32)
      fail<TypeError>("[serve] the ONNX model's input '", input_.name, "' is ", input_.dtype,
                      "; ug serve decodes float32 inputs");
    if (input_.shape.empty())
      fail("[serve] the ONNX model's input '", input_.name, "' is a scalar; ug serve needs a batch dimension");
    for (size_t d = 1; d < input_.shape.size(); ++d)
      if (input_.shape[d] < 0)
        fail("[serve] the ONNX model's input '", input_.name, "' has a symbolic dimension ", d,
             "; ug serve needs every dimension but the batch fixed");
    input_.shape[0] = -1;
    for (const onnx::ValueInfo& out : module_->outputs()) outputs_.push_back(spec_of(out));
    // One forward on a sample of zeros fills in the output shape where the file leaves it
    // symbolic, and warms the allocator and kernels.
    Shape sample(input_.shape.begin(), input_.shape.end());
    sample[0] = 1;
    const Tensor out = predict(zeros(sample));
    outputs_.front().shape.assign(out.shape().begin(), out.shape().end());
    outputs_.front().shape[0] = -1;
  }

  std::string format() const override { return "onnx"; }
  std::string architecture() const override { return "onnx"; }
  std::map<std::string, std::variant<int64_t, std::string>> settings() const override { return {}; }
  const TensorSpec& input() const override { return input_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }

  Tensor predict(const Tensor& batch) override {
    NoGradGuard no_grad;
    return module_->forward(batch).contiguous();
  }

 private:
  std::shared_ptr<onnx::OnnxModule> module_;
  TensorSpec input_;
  std::vector<TensorSpec> outputs_;
};

}  // namespace

std::unique_ptr<ServedModel> open_onnx_model(const std::string& path) {
  return std::make_unique<OnnxModel>(onnx::load(path));
}

}  // namespace ug::serve
