// Keras's Functional API in C++: Functional, a model that is a graph of layers (a layer may be
// used at several nodes, sharing its weights; a node may read several values), and the merge
// layers such graphs need: Add, Multiply, Concatenate, and Activation by Keras's name.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ug/nn/layers/keras_dtype.h"
#include "ug/nn/module.h"

namespace ug::nn {

/** A layer of several inputs (Keras's merge layers): merge(inputs); forward(x) merges one. */
class MergeImpl : public Module {
 public:
  /** name: Keras's layer.name; "" gives a unique one from the class ("add", "add_1"). */
  MergeImpl(const std::string& type_name, const std::string& name);
  virtual Tensor merge(const std::vector<Tensor>& inputs) = 0;
  Tensor forward(const Tensor& x) override { return merge({x}); }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_;
};

/** keras.layers.Add: the inputs' sum (broadcast). */
class AddImpl : public MergeImpl {
  UG_CLONEABLE(AddImpl)
 public:
  explicit AddImpl(const std::string& name = "") : MergeImpl("Add", name) {}
  Tensor merge(const std::vector<Tensor>& inputs) override;
};
UG_MODULE(Add);

/** keras.layers.Multiply: the inputs' elementwise product (broadcast). */
class MultiplyImpl : public MergeImpl {
  UG_CLONEABLE(MultiplyImpl)
 public:
  explicit MultiplyImpl(const std::string& name = "") : MergeImpl("Multiply", name) {}
  Tensor merge(const std::vector<Tensor>& inputs) override;
};
UG_MODULE(Multiply);

/** keras.layers.Concatenate(axis=-1): the inputs joined along axis. */
class ConcatenateImpl : public MergeImpl {
  UG_CLONEABLE(ConcatenateImpl)
 public:
  explicit ConcatenateImpl(int64_t axis = -1, const std::string& name = "")
      : MergeImpl("Concatenate", name), axis_(axis) {}
  Tensor merge(const std::vector<Tensor>& inputs) override;
  int64_t axis() const { return axis_; }
  std::string extra_repr() const override { return "axis=" + std::to_string(axis_); }

 private:
  int64_t axis_;
};
UG_MODULE(Concatenate);

/** A Keras operation on symbolic tensors (x + y, -x, x * 2, x[:, 0]) as a node's layer: fn on
 *  the node's inputs (one or several; constants live in fn), shown under Keras's class name
 *  (type_name: "Add", "GetItem") and named from it ("add_1", "get_item"). */
class OperationImpl : public MergeImpl {
  UG_CLONEABLE(OperationImpl)
 public:
  using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
  OperationImpl(const std::string& type_name, Fn fn, const std::string& name = "")
      : MergeImpl(type_name, name), fn_(std::move(fn)) {}
  Tensor merge(const std::vector<Tensor>& inputs) override { return fn_(inputs); }

 private:
  Fn fn_;
};
UG_MODULE(Operation);

/** keras.layers.Activation("relu"): the activation of that name (nn::activation's names). */
class KerasActivationImpl : public Module {
  UG_CLONEABLE(KerasActivationImpl)
 public:
  /** dtype: Keras's dtype policy of the layer ("" the global one): the input is cast to its
   *  compute dtype, as Keras's. */
  explicit KerasActivationImpl(const std::string& activation, const std::string& name = "",
                               const std::string& dtype = "");
  Tensor forward(const Tensor& x) override;
  const std::string& activation_name() const { return activation_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  std::string extra_repr() const override { return "activation=\"" + activation_ + "\""; }
  std::optional<DType> compute_dtype() const { return dtypes_.mixed(); }
  const mixed_precision::Policy& dtype_policy() const { return dtypes_.policy(); }
  DType weight_dtype() const { return dtypes_.weights(); }

 private:
  std::string activation_, name_;
  KerasDtype dtypes_;
  std::function<Tensor(const Tensor&)> fn_;
};
UG_MODULE(KerasActivation);

/** Keras's functional Model: `inputs` graph inputs (values 0 .. inputs-1), then one value per
 *  node, computed by its layer from the values it reads. Layers are children under their
 *  (Keras) names, in the order they were added; a layer may serve several nodes.
 *
 *    Functional model(1, "mlp");
 *    auto dense = model->add_layer("dense", Dense(128, "relu").ptr());
 *    auto out = model->add_layer("dense_1", Dense(10).ptr());
 *    model->set_outputs({model->add_node(out, {model->add_node(dense, {0}, {1, 128})}, {1, 10})});
 *
 *  A node's `shape` is what summary prints. */
class FunctionalImpl : public Module {
  UG_CLONEABLE(FunctionalImpl)
 public:
  struct Node {
    int64_t layer;
    std::vector<int64_t> inputs;  // the value ids it reads
    Shape shape;                  // its output's shape (summary prints the dims after the batch)
  };
  /** input_shapes (batch dim first, not printed) and input_names are what summary shows. */
  explicit FunctionalImpl(int64_t inputs = 1, std::string name = "functional", std::vector<Shape> input_shapes = {},
                          std::vector<std::string> input_names = {});
  /** Registers a layer under name; returns its index. Adding the same module again returns its index. */
  int64_t add_layer(const std::string& name, std::shared_ptr<Module> layer);
  /** A node running layer on the values `inputs` (ids of graph inputs or earlier nodes): its value id. */
  int64_t add_node(int64_t layer, std::vector<int64_t> inputs, Shape shape = {});
  /** keys: Keras's dict outputs ({"a": t1, "b": t2}), one per output; empty for a list. */
  void set_outputs(std::vector<int64_t> outputs, std::vector<std::string> keys = {});

  /** Evaluates the nodes in order on the graph's inputs, freeing each value after its last use. */
  std::vector<Tensor> forward_all(const std::vector<Tensor>& inputs);
  /** One input, one output. */
  Tensor forward(const Tensor& x) override;

  int64_t num_inputs() const { return num_inputs_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int64_t>& outputs() const { return outputs_; }
  /** Whether the outputs are a dict (keyed by output_names()). */
  bool dict_outputs() const { return !output_keys_.empty(); }
  /** Keras's output names: the dict's keys, else each output's layer name (an input's name
   *  for an output that is an input). fit's logs and per-output losses go by these. */
  std::vector<std::string> output_names() const;
  const std::vector<std::shared_ptr<Module>>& layers() const { return layers_; }
  const std::vector<std::string>& layer_names() const { return names_; }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  /** Keras's model.summary(): an InputLayer row per input, then a row per node with its output
   *  shape, its layer's parameters counted at the layer's first node. */
  std::string summary() const;

 protected:
  void rebind(const CloneMemo& memo) override {
    for (auto& m : layers_) memo.remap(m);
  }

 private:
  int64_t num_inputs_;
  std::string name_;
  std::vector<Shape> input_shapes_;
  std::vector<std::string> input_names_;
  std::vector<std::shared_ptr<Module>> layers_;
  std::vector<std::string> names_;
  std::vector<Node> nodes_;
  std::vector<int64_t> outputs_;
  std::vector<std::string> output_keys_;
  std::vector<int64_t> last_use_;  // per value id: the last node reading it (outputs: never freed)
};
UG_MODULE(Functional);

namespace detail {
/** One row of a Keras-style summary table, and the table (Module::summary's format). */
struct SummaryRow {
  std::string name, type;
  Shape shape;
  int64_t params;
};
std::string summary_table(const std::string& model, const std::vector<SummaryRow>& rows, int64_t total,
                          int64_t trainable);
}  // namespace detail

}  // namespace ug::nn
