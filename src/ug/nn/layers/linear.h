// Linear (PyTorch), Dense (Keras and Gluon: units, activation, lazy input size), Identity, Flatten,
// Unflatten.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ug/nn/mixed_precision.h"
#include "ug/nn/module.h"

namespace ug::nn {

class LinearImpl : public Module {
  UG_CLONEABLE(LinearImpl)
 public:
  /** in_features < 0 makes a lazy layer whose weight is created by the first forward. dtype:
   *  the default floating dtype (get_default_dtype) unless given. */
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true, std::optional<DType> dtype = std::nullopt);
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  void load_lazy_shapes(const TensorDict& state, const std::string& prefix) override;
  std::string extra_repr() const override;
  Tensor& weight() { return parameter("weight"); }
  Tensor& bias() { return parameter("bias"); }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  /** Keras's layer.compute_dtype: the 16-bit dtype of the mixed-precision policy the layer was
   *  built under (nn/mixed_precision.h), which its forward runs in (autocast); none otherwise. */
  std::optional<DType> compute_dtype() const { return compute_dtype_; }
  /** The weight's dtype (known before a lazy layer has its weight). */
  DType weight_dtype() const { return dtype_; }

 protected:
  LinearImpl(std::string type_name, int64_t in_features, int64_t out_features, bool bias, DType dtype,
             std::optional<DType> compute_dtype);
  /** Creates the weight once the input size is known. */
  void materialize(int64_t in_features);
  /** A lazy layer's first forward (or load): its tensors for in_features, drawn as a Linear's;
   *  it becomes one (a LazyLinear prints as Linear). */
  void build(int64_t in_features);

 private:
  int64_t in_features_, out_features_;
  bool has_bias_;
  DType dtype_;
  std::optional<DType> compute_dtype_;
};
UG_MODULE(Linear);

/** Keras's layer.name: `name` if given, else the class's snake-case name ("Conv2D": "conv2d",
 *  "BatchNormalization": "batch_normalization") made unique as Keras does ("dense", "dense_1"). */
std::string keras_layer_name(const std::string& type_name, const std::string& name);

/** Keras's Dense: `Dense(128, "relu")`; the input size comes from the first call unless
 *  given. Keras's defaults: Glorot-uniform kernel, zero bias. Keras maps the last dim; with
 *  `flatten`, Gluon's Dense, every dim after the first is flattened into one first, so a
 *  (N, C, H, W) batch gives (N, units). Its dtype policy (Keras's dtype=: "float64",
 *  "mixed_bfloat16", ...; else the global policy when built) gives its weights' dtype and the
 *  dtype it computes in: under a mixed policy, float32 weights and the 16-bit dtype, its
 *  activation included. */
class DenseImpl : public LinearImpl {
  UG_CLONEABLE(DenseImpl)
 public:
  DenseImpl(int64_t units, const std::string& activation = "", int64_t input_dim = -1, bool use_bias = true,
            const std::string& dtype = "", bool flatten = false, const std::string& name = "");
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  std::string extra_repr() const override;
  /** The activation's name, "" for none. */
  const std::string& activation_name() const { return activation_name_; }
  bool flatten() const { return flatten_; }
  /** Keras's layer.dtype_policy. */
  const mixed_precision::Policy& dtype_policy() const { return policy_; }
  /** Keras's layer.name (keras_layer_name). */
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  mixed_precision::Policy policy_;
  std::string activation_name_, name_;
  bool flatten_;
  std::function<Tensor(const Tensor&)> activation_;
};
UG_MODULE(Dense);

class IdentityImpl : public Module {
  UG_CLONEABLE(IdentityImpl)
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};
UG_MODULE(Identity);

class FlattenImpl : public Module {
  UG_CLONEABLE(FlattenImpl)
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim_, end_dim_); }
  std::string extra_repr() const override;

 private:
  int64_t start_dim_, end_dim_;
};
UG_MODULE(Flatten);

/** Splits dim into unflattened_size (one entry may be -1, inferred). */
class UnflattenImpl : public Module {
  UG_CLONEABLE(UnflattenImpl)
 public:
  UnflattenImpl(int64_t dim, Dims unflattened_size);
  Tensor forward(const Tensor& x) override { return x.unflatten(dim_, sizes_); }
  std::string extra_repr() const override;

 private:
  int64_t dim_;
  Dims sizes_;
};
UG_MODULE(Unflatten);

}  // namespace ug::nn
