// ug::nn::Module: a tree of named parameters, buffers and child modules, as in PyTorch.
//
// A layer is a Module subclass (LinearImpl) that registers its tensors in its constructor and
// defines forward; its holder (Linear, declared with UG_MODULE) is a shared pointer with the
// layer's constructor arguments, so `Linear fc(784, 128); fc->forward(x)` or `fc(x)` reads
// like libtorch. Python subclasses the same class (python/src/bind_nn.cpp).
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/core/ordered_dict.h"
#include "ug/nn/clone.h"

namespace ug::nn {

class Module;

/** Flat, ordered name -> tensor maps ("fc1.weight"): state dicts and functional parameters. */
using TensorDict = OrderedDict<Tensor>;

class Module : public std::enable_shared_from_this<Module> {
 public:
  /** `type_name` names the layer in printouts and summaries ("Linear"). */
  explicit Module(std::string type_name = "Module");
  virtual ~Module() = default;
  Module& operator=(const Module&) = delete;

  const std::string& type_name() const { return type_name_; }
  void set_type_name(std::string name) { type_name_ = std::move(name); }

  // ---- registration -------------------------------------------------------------------
  /** Adds (or replaces) a parameter; it becomes a leaf that requires grad unless told not to.
   *  An undefined tensor registers an absent parameter (bias=False), skipped everywhere. */
  Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  /** A buffer is state that is not trained (BatchNorm's running mean); persistent buffers
   *  are part of the state dict. */
  Tensor& register_buffer(const std::string& name, Tensor t, bool persistent = true);
  std::shared_ptr<Module> register_module(const std::string& name, std::shared_ptr<Module> m);
  template <class M> std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    register_module(name, std::static_pointer_cast<Module>(m));
    return m;
  }
  template <class Holder, class = decltype(std::declval<Holder>().ptr())>
  Holder register_module(const std::string& name, Holder h) {
    register_module(name, std::static_pointer_cast<Module>(h.ptr()));
    return h;
  }
  /** Assigns to a registered parameter or buffer, or a child module; returns false when the
   *  name is none of them (Python's __setattr__ then stores a plain attribute). */
  bool has_parameter(const std::string& name) const { return parameters_.contains(name); }
  bool has_buffer(const std::string& name) const { return buffers_.contains(name); }
  bool has_module(const std::string& name) const { return children_.contains(name); }
  /** This module's own parameter, buffer or child by name (no dots); throws if absent. */
  Tensor& parameter(const std::string& name);
  Tensor& buffer(const std::string& name);
  std::shared_ptr<Module> child(const std::string& name) const;
  /** Removes an own parameter, buffer or child of that name, if any. */
  void unregister(const std::string& name);

  // ---- walking the tree ---------------------------------------------------------------
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /** This module first, then every descendant once, with dotted names ("" for this one). */
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();
  std::vector<std::shared_ptr<Module>> modules();
  /** The submodule at a dotted path ("encoder.layers.0"). */
  std::shared_ptr<Module> get_submodule(const std::string& path);

  // ---- state ----------------------------------------------------------------------------
  /** Parameters and persistent buffers by dotted name, sharing their data. */
  TensorDict state_dict() const;
  /** Copies values into the parameters and buffers in place (optimizers keep seeing them).
   *  strict: missing or unexpected keys are an error; shapes must always match. Returns the
   *  missing and unexpected keys (both empty when strict). */
  std::pair<std::vector<std::string>, std::vector<std::string>> load_state_dict(const TensorDict& state,
                                                                                bool strict = true);
  /** Called by load_state_dict on every module first: a lazy layer (its input size unknown) that
   *  has not run yet makes its tensors in the shapes of those under `prefix` in state, so that
   *  they load (torch's _lazy_load_hook). Other modules do nothing. */
  virtual void load_lazy_shapes(const TensorDict& /*state*/, const std::string& /*prefix*/) {}

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /** Clears every parameter's gradient: to none (the default) or to zeros. */
  void zero_grad(bool set_to_none = true);
  void requires_grad_(bool on = true);
  /** Converts floating parameters and buffers (dtype), or all of them (device), in place. */
  void to(DType dtype);
  void to(Device device);
  /** Calls fn on every submodule (children first) and then on this module. */
  void apply(const std::function<void(Module&)>& fn);
  /** The number of parameter elements (only those requiring grad when trainable_only). */
  int64_t num_parameters(bool trainable_only = false) const;

  // ---- copying --------------------------------------------------------------------------
  /** A deep copy (libtorch's clone, Python's copy.deepcopy): the same layer types and
   *  settings, copies of the parameters (tied ones stay tied), buffers and children, the
   *  same hooks and training mode. A layer says how to copy itself with UG_CLONEABLE. */
  std::shared_ptr<Module> clone() const;
  /** Replaces this module's own parameters, buffers and children by their copies in memo:
   *  the second half of a copy, after the member-wise first. */
  void copy_entries(CloneMemo& memo);

  // ---- forward ------------------------------------------------------------------------
  /** The one-input forward. Layers with one tensor in and one out override it; Sequential
   *  and the training loops call it. */
  virtual Tensor forward(const Tensor& x);
  /** forward with the forward pre-hooks and hooks around it. */
  Tensor operator()(const Tensor& x);
  /** A call of any other form (the Python front end's calls with several arguments or
   *  keywords) with the same hooks around it: `inputs` and the output of run(inputs) are the
   *  front end's own values, which C++ passes along and only the hooks' general forms read. */
  std::any call(std::any inputs, const std::function<std::any(const std::any& inputs)>& run);
  /** call() from a C++ layer calling a child with several tensors (TransformerEncoderLayer's
   *  self_attn): the hooks' general forms see the positional tensors and the outputs as
   *  tuples (None for an undefined tensor), as torch's hooks see them. */
  std::vector<Tensor> call(std::vector<Tensor> inputs,
                           const std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>& run);
  using ForwardPreHook = std::function<std::optional<Tensor>(Module&, const Tensor& input)>;
  using ForwardHook = std::function<std::optional<Tensor>(Module&, const Tensor& input, const Tensor& output)>;
  /** A hook's general form, for call(). */
  using AnyForwardPreHook = std::function<std::optional<std::any>(Module&, const std::any& inputs)>;
  using AnyForwardHook =
      std::function<std::optional<std::any>(Module&, const std::any& inputs, const std::any& output)>;
  /** Hooks may return a replacement input (pre) or output; they return an id for remove_hook.
   *  A hook runs, in registration order, on operator()'s calls and, when it has a general
   *  form, on call()'s; an empty form skips those calls. */
  size_t register_forward_pre_hook(ForwardPreHook hook, AnyForwardPreHook any_hook = {});
  size_t register_forward_hook(ForwardHook hook, AnyForwardHook any_hook = {});
  void remove_hook(size_t id);
  /** The ids of the hooks on this module now (pre-hooks first): a compiled call, which ran
   *  the hooks there were when it was traced, traces again when they change. */
  std::vector<size_t> hook_ids() const;

  // ---- printing -----------------------------------------------------------------------
  /** The arguments shown in a printout: "in_features=784, out_features=128, bias=True". */
  virtual std::string extra_repr() const { return ""; }
  /** PyTorch-style nested printout. */
  std::string to_string() const;
  /** A Keras-style table of layers, output shapes and parameter counts, from one forward
   *  pass on zeros of `input_shape` (batch included) with gradients off. */
  std::string summary(const Shape& input_shape, std::optional<DType> dtype = std::nullopt);

  // ---- functional use (Flax init/apply, torch.func.functional_call) ---------------------
  /** Fresh parameters drawn from `key` (a ug::random key), as a flat name -> tensor dict;
   *  the module's own parameters are left as they were. */
  TensorDict init(const Tensor& key);
  /** Runs fn with the given tensors standing in for the parameters and buffers of those
   *  names (others keep theirs), then restores the module, even if fn throws. */
  template <class F> auto functional_call(const TensorDict& params, F&& fn);
  /** forward(x) computed with `params` (model.apply(params, x)). */
  Tensor apply(const TensorDict& params, const Tensor& x);
  /** Re-draws this module's own parameters with PyTorch's default initialisation for the
   *  layer; called on construction and by init(). Modules without parameters do nothing. */
  virtual void reset_parameters() {}

 protected:
  /** Member-wise: the copy's registry still holds the original's entries until
   *  copy_entries replaces them. Only copies (UG_CLONEABLE, the Python front end) use it. */
  Module(const Module& other) = default;
  /** A member-wise copy of the most derived layer: what UG_CLONEABLE defines. */
  virtual std::shared_ptr<Module> copy_self() const;
  /** Points members that hold children (`Linear out_proj`) at their copies. */
  virtual void rebind(const CloneMemo&) {}
  /** The whole copy: copy_self, copy_entries, rebind. Python's modules override it. */
  virtual std::shared_ptr<Module> clone_into(CloneMemo& memo) const;
  friend class CloneMemo;

 private:
  struct Entry {
    Tensor value;
    bool persistent = true;
  };
  friend class ParameterSwap;
  /** The slot (parameter or buffer) at a dotted path, or null. */
  Tensor* find_tensor(const std::string& path);
  void collect_parameters(const std::string& prefix, bool recurse,
                          std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_buffers(const std::string& prefix, bool recurse, bool persistent_only,
                       std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_modules(const std::string& prefix, std::vector<std::pair<std::string, std::shared_ptr<Module>>>& out,
                       std::vector<const Module*>& seen);
  void print(std::string& out, int indent) const;

  std::string type_name_;
  bool training_ = true;
  OrderedDict<Tensor> parameters_;
  OrderedDict<Entry> buffers_;
  OrderedDict<std::shared_ptr<Module>> children_;
  template <class OnTensor, class OnAny> struct Hook {
    size_t id;
    OnTensor on_tensor;
    OnAny on_any;
  };
  std::vector<Hook<ForwardPreHook, AnyForwardPreHook>> pre_hooks_;
  std::vector<Hook<ForwardHook, AnyForwardHook>> hooks_;
  size_t next_hook_id_ = 0;
};

/** Sizes as a Python tuple, "(5, 5)" or "(5,)": how extra_repr shows them, as PyTorch does. */
std::string tuple_repr(const Dims& dims);
/** One size as an int, several as a tuple: how torch prints the sizes a layer keeps as given
 *  (MaxPool2d(3) prints kernel_size=3). */
std::string size_repr(const Dims& dims);

/** Puts the given tensors into a module's parameter and buffer slots of those (dotted)
 *  names, and puts the originals back when it goes out of scope. */
class ParameterSwap {
 public:
  ParameterSwap(Module& root, const TensorDict& values);
  ~ParameterSwap();
  ParameterSwap(const ParameterSwap&) = delete;
  ParameterSwap& operator=(const ParameterSwap&) = delete;

 private:
  std::vector<std::pair<Tensor*, Tensor>> saved_;
};

template <class F> auto Module::functional_call(const TensorDict& params, F&& fn) {
  ParameterSwap swap(*this, params);
  return fn();
}

/** A shared handle to a layer: `Linear fc(4, 2);` constructs a LinearImpl, `fc->weight` and
 *  `fc(x)` reach it. Empty holders come from `nullptr`. */
template <class Impl> class ModuleHolder {
 public:
  using ImplType = Impl;
  template <class... Args>
  requires(!(sizeof...(Args) == 1 &&
             (std::is_base_of_v<ModuleHolder, std::remove_cvref_t<Args>> && ...))) explicit ModuleHolder(Args&&... args)
      : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  ModuleHolder(std::nullptr_t) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  explicit operator bool() const { return static_cast<bool>(impl_); }
  template <class... Args> auto operator()(Args&&... args) {
    if constexpr (sizeof...(Args) == 1) return (*impl_)(std::forward<Args>(args)...);
    else return impl_->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

/** In a layer's class body: the layer is copied member by member (its children and tensors
 *  then deep-copied by Module::clone). Without it, clone refuses the layer by name. */
#define UG_CLONEABLE(Class)                                      \
 protected:                                                      \
  std::shared_ptr<::ug::nn::Module> copy_self() const override { \
    return std::shared_ptr<::ug::nn::Module>(new Class(*this));  \
  }                                                              \
                                                                 \
 public:

/** Declares the holder `Name` for `NameImpl`, as libtorch's TORCH_MODULE does. */
#define UG_MODULE(Name)                                     \
  class Name : public ::ug::nn::ModuleHolder<Name##Impl> {  \
   public:                                                  \
    using ::ug::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }

}  // namespace ug::nn
