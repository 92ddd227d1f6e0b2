#include "ug/serve/unigrad_model.h"

#include "ug/autograd/grad_mode.h"
#include "ug/core/error.h"
#include "ug/models/zoo.h"

namespace ug::serve {

namespace {

class UnigradModel final : public ServedModel {
 public:
  explicit UnigradModel(models::LoadedModel loaded) : loaded_(std::move(loaded)) {
    const Shape shape = models::input_shape(loaded_.arch);
    input_ = {.name = "input", .shape = {shape.begin(), shape.end()}, .dtype = DType::Float32};
    input_.shape[0] = -1;
    // One forward on zeros gives the output's shape, and warms the allocator and kernels.
    const Tensor out = predict(zeros(shape));
    outputs_ = {{.name = "output", .shape = {out.shape().begin(), out.shape().end()}, .dtype = out.dtype()}};
    outputs_[0].shape[0] = -1;
  }

  std::string format() const override { return "unigrad"; }
  std::string architecture() const override { return loaded_.arch.name; }
  std::map<std::string, std::variant<int64_t, std::string>> settings() const override {
    return {loaded_.arch.config.begin(), loaded_.arch.config.end()};
  }
  const TensorSpec& input() const override { return input_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }

  Tensor predict(const Tensor& batch) override {
    NoGradGuard no_grad;
    return loaded_.model->forward(batch).contiguous();
  }

 private:
  models::LoadedModel loaded_;
  TensorSpec input_;
  std::vector<TensorSpec> outputs_;
};

}  // namespace

std::unique_ptr<ServedModel> open_unigrad_model(const std::string& path) {
  return std::make_unique<UnigradModel>(models::load_model(path));
}

}  // namespace ug::serve
