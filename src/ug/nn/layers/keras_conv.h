// Keras's convolution, pooling and batch-normalization layers (keras.layers.Conv2D, MaxPooling2D,
// GlobalAveragePooling2D, BatchNormalization, ...): channels last by default, built by the first
// call from the input's shape, kernels in Keras's layout ([k, in, out], [kh, kw, in, out]) so
// that Keras's weights load unchanged. Each permutes a channels-last input to channels first,
// runs ug's conv and pool ops, and permutes the result back. Python: ug.keras.layers.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ug/nn/layers/keras_dtype.h"
#include "ug/nn/module.h"

namespace ug::nn {

/** A Keras convolution's keyword arguments. A one-entry strides / dilation_rate applies to
 *  every spatial dim (Keras's int). padding: "valid", "same" (TensorFlow's: ceil(n / stride)
 *  outputs, an odd total padding puts the extra one after) or, for Conv1D, "causal".
 *  activation: a name ("relu", Dense's names), "" for none. Initializers: "glorot_uniform",
 *  "glorot_normal", "he_uniform", "he_normal", "zeros" or "ones", with Keras's fans. name: Keras's
 *  layer.name; "" gives a unique one from the class ("conv2d", "conv2d_1"). dtype: Keras's dtype
 *  policy of the layer ("float64", "mixed_bfloat16", ...); "" the global one when made. */
struct KerasConvOptions {
  Dims strides = {1};
  std::string padding = "valid";
  std::string data_format = "channels_last";
  Dims dilation_rate = {1};
  int64_t groups = 1;
  std::string activation = "";
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::string name = "";
  std::string dtype = "";
};

/** Conv1D and Conv2D: kernel [*kernel_size, in / groups, filters], bias [filters]. Its policy
 *  (nn/mixed_precision.h) gives the weights' dtype and the one it computes in, as Dense's: a
 *  mixed one keeps float32 weights and computes in its 16-bit dtype. */
class KerasConvImpl : public Module {
  UG_CLONEABLE(KerasConvImpl)
 public:
  KerasConvImpl(std::string type_name, int rank, int64_t filters, Dims kernel_size, KerasConvOptions options);
  Tensor forward(const Tensor& x) override;
  void reset_parameters() override;
  void load_lazy_shapes(const TensorDict& state, const std::string& prefix) override;
  std::string extra_repr() const override;
  /** Makes the kernel and bias for `channels` input channels (the first call does). */
  void build(int64_t channels);
  bool built() const { return built_; }
  /** A callable activation in place of a named one (Python's activation=fn). */
  void set_activation(std::function<Tensor(const Tensor&)> fn) { activation_ = std::move(fn); }
  Tensor& kernel() { return parameter("kernel"); }
  Tensor& bias() { return parameter("bias"); }
  int64_t filters() const { return filters_; }
  const Dims& kernel_size() const { return kernel_size_; }
  const KerasConvOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  void set_name(std::string name) { options_.name = std::move(name); }
  /** The mixed policy's 16-bit dtype the layer computes in; none where that is the weights'. */
  std::optional<DType> compute_dtype() const { return dtypes_.mixed(); }
  /** Keras's layer.dtype_policy. */
  const mixed_precision::Policy& dtype_policy() const { return dtypes_.policy(); }
  /** The weights' dtype (the policy's; the default dtype under the default global policy). */
  DType weight_dtype() const { return dtypes_.weights(); }

 private:
  int rank_;
  int64_t filters_;
  Dims kernel_size_;
  KerasConvOptions options_;
  std::function<Tensor(const Tensor&)> activation_;
  KerasDtype dtypes_;
  bool built_ = false;
};

/** keras.layers.Conv1D: a (batch, steps, channels) input. */
class Conv1DImpl : public KerasConvImpl {
  UG_CLONEABLE(Conv1DImpl)
 public:
  Conv1DImpl(int64_t filters, int64_t kernel_size, KerasConvOptions options = {})
      : KerasConvImpl("Conv1D", 1, filters, {kernel_size}, std::move(options)) {}
};

/** Declares the holder `Name` for `NameImpl` as UG_MODULE does, plus a constructor taking
 *  (args..., options) by value, so that braces work: `Conv2D(8, {3}, {.padding = "same"})`
 *  (the forwarding constructor cannot deduce a braced list). */
#define UG_KERAS_MODULE(Name, Params, Args)                           \
  class Name : public ::ug::nn::ModuleHolder<Name##Impl> {            \
   public:                                                            \
    using ::ug::nn::ModuleHolder<Name##Impl>::ModuleHolder;           \
    explicit Name Params : ::ug::nn::ModuleHolder<Name##Impl> Args {} \
  }

UG_KERAS_MODULE(Conv1D, (int64_t filters, int64_t kernel_size, KerasConvOptions options),
                (filters, kernel_size, std::move(options)));

/** keras.layers.Conv2D: a (batch, height, width, channels) input; a one-entry kernel_size is
 *  square. */
class Conv2DImpl : public KerasConvImpl {
  UG_CLONEABLE(Conv2DImpl)
 public:
  Conv2DImpl(int64_t filters, Dims kernel_size, KerasConvOptions options = {})
      : KerasConvImpl("Conv2D", 2, filters, std::move(kernel_size), std::move(options)) {}
};
UG_KERAS_MODULE(Conv2D, (int64_t filters, Dims kernel_size, KerasConvOptions options = {}),
                (filters, std::move(kernel_size), std::move(options)));

/** A Keras pooling's keyword arguments: strides empty for pool_size's; padding "valid" or
 *  "same" (TensorFlow's: a max never takes a padded position, an average divides by the
 *  window's positions inside the input). */
struct KerasPoolOptions {
  Dims strides = {};
  std::string padding = "valid";
  std::string data_format = "channels_last";
  std::string name = "";
};

/** MaxPooling1D/2D and AveragePooling1D/2D. */
class KerasPoolImpl : public Module {
  UG_CLONEABLE(KerasPoolImpl)
 public:
  KerasPoolImpl(std::string type_name, int rank, bool max, Dims pool_size, KerasPoolOptions options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  const Dims& pool_size() const { return pool_size_; }
  const KerasPoolOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  void set_name(std::string name) { options_.name = std::move(name); }

 private:
  int rank_;
  bool max_;
  Dims pool_size_;
  KerasPoolOptions options_;
};

#define UG_KERAS_POOL(Name, rank, max, default_pool)                                   \
  class Name##Impl : public KerasPoolImpl {                                            \
    UG_CLONEABLE(Name##Impl)                                                           \
   public:                                                                             \
    explicit Name##Impl(Dims pool_size = default_pool, KerasPoolOptions options = {})  \
        : KerasPoolImpl(#Name, rank, max, std::move(pool_size), std::move(options)) {} \
  };                                                                                   \
  UG_KERAS_MODULE(Name, (Dims pool_size, KerasPoolOptions options = {}), (std::move(pool_size), std::move(options)))

UG_KERAS_POOL(MaxPooling1D, 1, true, {2});
UG_KERAS_POOL(MaxPooling2D, 2, true, {2});
// Keras's average poolings have no default pool_size; C++ keeps Max's for symmetry.
UG_KERAS_POOL(AveragePooling1D, 1, false, {2});
UG_KERAS_POOL(AveragePooling2D, 2, false, {2});
#undef UG_KERAS_POOL

/** GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D: the mean or max over the spatial dims. */
class KerasGlobalPoolImpl : public Module {
  UG_CLONEABLE(KerasGlobalPoolImpl)
 public:
  KerasGlobalPoolImpl(std::string type_name, int rank, bool max, std::string data_format = "channels_last",
                      bool keepdims = false, std::string name = "");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  const std::string& data_format() const { return data_format_; }
  bool keepdims() const { return keepdims_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  int rank_;
  bool max_;
  std::string data_format_;
  bool keepdims_;
  std::string name_;
};

#define UG_KERAS_GLOBAL_POOL(Name, rank, max)                                                                    \
  class Name##Impl : public KerasGlobalPoolImpl {                                                                \
    UG_CLONEABLE(Name##Impl)                                                                                     \
   public:                                                                                                       \
    explicit Name##Impl(std::string data_format = "channels_last", bool keepdims = false, std::string name = "") \
        : KerasGlobalPoolImpl(#Name, rank, max, std::move(data_format), keepdims, std::move(name)) {}            \
  };                                                                                                             \
  UG_MODULE(Name)

UG_KERAS_GLOBAL_POOL(GlobalAveragePooling1D, 1, false);
UG_KERAS_GLOBAL_POOL(GlobalAveragePooling2D, 2, false);
UG_KERAS_GLOBAL_POOL(GlobalMaxPooling1D, 1, true);
UG_KERAS_GLOBAL_POOL(GlobalMaxPooling2D, 2, true);
#undef UG_KERAS_GLOBAL_POOL

/** keras.layers.BatchNormalization's keyword arguments (Keras's momentum is the share kept).
 *  dtype: the layer's dtype policy, as KerasConvOptions's. */
struct BatchNormalizationOptions {
  int64_t axis = -1;
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string beta_initializer = "zeros";
  std::string gamma_initializer = "ones";
  std::string moving_mean_initializer = "zeros";
  std::string moving_variance_initializer = "ones";
  std::string name = "";
  std::string dtype = "";
};

/** keras.layers.BatchNormalization: normalizes each entry of `axis` (channels last by default)
 *  over the other dims. Training uses the batch's mean and biased variance and moves
 *  moving_mean / moving_variance towards them by 1 - momentum; eval uses the moving ones.
 *  Weights in Keras's order: gamma, beta (parameters), moving_mean, moving_variance (buffers),
 *  each [input_shape[axis]], made by the first call in the policy's variable dtype. The input
 *  is cast to the policy's compute dtype, and a 16-bit one normalized in float32, as Keras's. */
class BatchNormalizationImpl : public Module {
  UG_CLONEABLE(BatchNormalizationImpl)
 public:
  explicit BatchNormalizationImpl(BatchNormalizationOptions options = {});
  Tensor forward(const Tensor& x) override;
  void load_lazy_shapes(const TensorDict& state, const std::string& prefix) override;
  std::string extra_repr() const override;
  /** Makes gamma, beta and the moving statistics for an input of this shape. */
  void build(const Shape& input_shape);
  bool built() const { return built_; }
  const BatchNormalizationOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  void set_name(std::string name) { options_.name = std::move(name); }
  std::optional<DType> compute_dtype() const { return dtypes_.mixed(); }
  const mixed_precision::Policy& dtype_policy() const { return dtypes_.policy(); }
  DType weight_dtype() const { return dtypes_.weights(); }

 private:
  void make(int64_t size);
  BatchNormalizationOptions options_;
  KerasDtype dtypes_;
  bool built_ = false;
};
UG_KERAS_MODULE(BatchNormalization, (BatchNormalizationOptions options), (std::move(options)));
#undef UG_KERAS_MODULE

}  // namespace ug::nn
