// What `ug serve` needs of a model: the name, shape and dtype of its input and outputs, and a
// forward over a batch. One implementation per model format; open_model picks it by file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/nn/module.h"

namespace ug::serve {

/** A named tensor of the model's interface; shape[0] is the batch dimension (-1: any size). */
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
};

class ServedModel {
 public:
  virtual ~ServedModel() = default;

  /** "unigrad" or "onnx". */
  virtual std::string format() const = 0;
  /** The architecture's name and settings, e.g. mlp {classes: 10, hidden: 128, in_features: 784}. */
  virtual std::string architecture() const = 0;
  virtual std::map<std::string, std::variant<int64_t, std::string>> settings() const = 0;
  virtual const TensorSpec& input() const = 0;
  virtual const std::vector<TensorSpec>& outputs() const = 0;

  /** The first output for a batch shaped like input(), without recording gradients. Safe to
   *  call from several threads at once. */
  virtual Tensor predict(const Tensor& batch) = 0;

  /** One sample's shape: input().shape without the batch dimension. */
  std::vector<int64_t> sample_shape() const;
  int64_t sample_numel() const;
  std::vector<int64_t> output_sample_shape() const;
};

/** A model that is an nn::Module (a unigrad model, an imported ONNX graph): predict runs its
 *  forward without grad. The first output's per-sample shape comes from one forward on a
 *  sample of zeros, which also warms the allocator and kernels. */
class ModuleModel : public ServedModel {
 public:
  const TensorSpec& input() const override { return input_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Tensor predict(const Tensor& batch) override;

 protected:
  /** `input`'s first dim is the batch (any size); `outputs` has at least the first output's name. */
  ModuleModel(std::shared_ptr<nn::Module> module, TensorSpec input, std::vector<TensorSpec> outputs);

 private:
  std::shared_ptr<nn::Module> module_;
  TensorSpec input_;
  std::vector<TensorSpec> outputs_;
};

/** The model in `path`: an .onnx file (ug::onnx::load), or a model.safetensors written by
 *  `ug train` or ug::models::save_model. */
std::unique_ptr<ServedModel> open_model(const std::string& path);

}  // namespace ug::serve
