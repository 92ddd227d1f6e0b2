// ug::onnx::load: an ONNX model as a trainable Module. The graph's floating-point initializers
// become parameters (under their ONNX names, "fc1.weight" as a child "fc1" with a parameter
// "weight"), its integer ones buffers; forward runs the nodes in order with ug ops, so
// autograd records through the imported graph and ug.optim can fine-tune it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/nn/module.h"

namespace ug::onnx {

/** A graph input or output: its name, its dims (-1 where symbolic or unknown) and dtype. */
struct ValueInfo {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype;
};

/** What a model may ask for at run time: tensors whose sizes come from values in the file
 *  (ConstantOfShape, Expand, Tile, Range, Pad, broadcasts, convolutions...) and every node's
 *  outputs stay within max_elements, so a hostile file cannot demand absurd allocations. */
struct LoadLimits {
  int64_t max_elements = int64_t(1) << 30;
  /** The most elements of all the intermediate values alive at once during forward. */
  int64_t max_live_elements = int64_t(1) << 32;
};

struct Graph;

/** A graph interpreter over ug ops. */
class OnnxModule : public nn::Module {
  UG_CLONEABLE(OnnxModule)
 public:
  /** Takes the graph's initializers as its parameters and buffers (see load). */
  explicit OnnxModule(Graph graph);
  ~OnnxModule() override;

  /** The graph inputs that are not initializers, in the order forward takes them. */
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  /** The opset of the default ONNX domain the model was written for (13 for an older model, which
   *  load converts to opset 13). */
  int64_t opset() const;

  /** Runs the graph: one tensor per input, checked against its dtype and fixed dims. */
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs);
  /** One input, the first output. */
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

 private:
  /** The tensor of initializer i as it is now (an optimizer or load_state_dict may have
   *  replaced it): the module at its dotted path, then its parameter or buffer there. */
  Tensor initializer(size_t i);

  std::shared_ptr<const Graph> graph_;
  std::vector<std::pair<std::string, std::string>> initializer_slots_;  // (module path, name)
};

/** Reads an ONNX file; external data is read relative to the file's folder. */
std::shared_ptr<OnnxModule> load(const std::string& path, const LoadLimits& limits = {});
/** Reads a serialized ModelProto. External data is refused unless base_dir names the folder
 *  its `location`s are relative to. */
std::shared_ptr<OnnxModule> load_bytes(std::string_view bytes, const std::string& base_dir = "",
                                       const LoadLimits& limits = {});

}  // namespace ug::onnx
