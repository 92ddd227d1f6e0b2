// Automatic mixed precision (torch.autocast). Inside a region opened by AutocastGuard, an op
// whose OpDef carries an autocast policy (graph/op_def.h) casts its floating inputs first and
// runs on the cast copies; every other op runs on the dtypes it is given. An op body opts in
// with one line before its OpCall:
//
//   Tensor matmul(const Tensor& a, const Tensor& b) {
//     if (autocast::active()) [[unlikely]] return autocast::call(kMatmul, matmul, a, b);
//     graph::OpCall call(kMatmul);
//     ...
//
// call() casts the arguments and runs the op again with autocast off for the inner call, so
// the casts are ops of their own (recorded, differentiated, captured): gradients come back in
// the inputs' dtypes. float64 inputs are never cast, as in PyTorch. The state is per thread.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/graph/op_def.h"

namespace ug {

namespace autocast {

namespace detail {
/** True while some device type has an enabled region and no op is mid-cast. */
extern thread_local constinit bool active;
}  // namespace detail

inline bool active() { return detail::active; }
/** Whether an op with this definition casts now. */
inline bool applies(const graph::OpDef& def) { return detail::active && def.autocast() != graph::Autocast::None; }
bool is_enabled(DeviceType device = DeviceType::CPU);
/** The region's low dtype (bfloat16 on CPU, float16 on CUDA, unless set otherwise). */
DType get_dtype(DeviceType device = DeviceType::CPU);
/** torch.set_autocast_enabled / set_autocast_dtype. Enabling a region casts from then on, also
 *  inside an ExcludeGuard (a region opened in backward: torch's custom_bwd); disabling one
 *  never turns casting on. */
void set_enabled(DeviceType device, bool enabled);
void set_dtype(DeviceType device, DType dtype);

/** A device's region and whether ops cast, as a region (AutocastGuard, ug.autocast) finds
 *  them, to put back exactly when it ends: inside an ExcludeGuard, a region's end must leave
 *  casting off. */
struct RegionState {
  bool enabled;
  DType dtype;
  bool active;
};
RegionState region_state(DeviceType device);
void restore(DeviceType device, const RegionState& state);

/** Turns autocast off for the thread while it lives: the inner call of an autocast op, and
 *  the engine during backward (backward ops run in the dtypes the forward chose). */
class ExcludeGuard {
 public:
  ExcludeGuard() : saved_(detail::active) { detail::active = false; }
  ~ExcludeGuard() { detail::active = saved_; }
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;

 private:
  bool saved_;
};

/** Whether a tensor is one the region casts: defined, floating, not float64, and on a
 *  device type whose region is enabled. */
bool eligible(const Tensor& t);
/** t in `dtype` if the region casts it (a `to` op), else t; see LowPrecisionSaves. */
Tensor cast(const Tensor& t, DType dtype);
inline std::vector<Tensor> cast(const std::vector<Tensor>& ts, DType dtype) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast(t, dtype));
  return out;
}
inline std::optional<Tensor> cast(const std::optional<Tensor>& t, DType dtype) {
  return t ? std::optional<Tensor>(cast(*t, dtype)) : std::nullopt;
}
/** Arguments that are not tensors pass through. */
template <class T> const T& cast(const T& value, DType) { return value; }

inline void collect(std::vector<const Tensor*>& out, const Tensor& t) { out.push_back(&t); }
inline void collect(std::vector<const Tensor*>& out, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) out.push_back(&t);
}
inline void collect(std::vector<const Tensor*>& out, const std::optional<Tensor>& t) {
  if (t) out.push_back(&*t);
}
template <class T> void collect(std::vector<const Tensor*>&, const T&) {}

/** The dtype a policy casts the eligible tensors among `tensors` to. */
DType target(graph::Autocast policy, const std::vector<const Tensor*>& tensors);

/** What an autocast op saves for backward is not kept twice where autograd can remake it
 *  exactly: a copy autocast made of one of the op's inputs, saved by the op, is kept as that
 *  input and cast again in backward (the same conversion, so the same values, bit for bit):
 *  - a float32-policy op (layer_norm of a bfloat16 activation): the float32 copy of a 16-bit
 *    input is kept as that input;
 *  - a lower-precision op (linear): the 16-bit copy of a leaf (a parameter, the model's input,
 *    alive for the whole step anyway) is kept as the leaf, as a float32 step would keep it.
 *  Everything else (softmax's output, a product's copy of an activation) is kept as saved. A
 *  kept tensor changed in place before backward raises, as it would without autocast.
 *  Installed as saved-tensor hooks, and only where no other hooks are (activation
 *  checkpointing's) and outside forward mode, vmap and captures. */
class LowPrecisionSaves {
 public:
  LowPrecisionSaves(const std::vector<const Tensor*>& inputs, graph::Autocast policy);
  ~LowPrecisionSaves();
  LowPrecisionSaves(const LowPrecisionSaves&) = delete;
  LowPrecisionSaves& operator=(const LowPrecisionSaves&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/** Runs op(args...) with the tensor arguments cast as the policy says, autocast off inside.
 *  Composites without an OpDef of their own (the losses) name their policy directly. */
template <class Op, class... Args> auto call(graph::Autocast policy, Op&& op, const Args&... args) {
  std::vector<const Tensor*> tensors;
  (collect(tensors, args), ...);
  const DType dtype = target(policy, tensors);
  ExcludeGuard inner;
  LowPrecisionSaves saves(tensors, policy);
  return op(cast(args, dtype)...);
}
template <class Op, class... Args> auto call(const graph::OpDef& def, Op&& op, const Args&... args) {
  return call(def.autocast(), std::forward<Op>(op), args...);
}

}  // namespace autocast

/** An autocast region (torch.autocast): ops with a policy cast their floating inputs while
 *  it lives; nested guards override the outer region and restore it on exit.
 *
 *    { ug::AutocastGuard amp(ug::DeviceType::CPU, ug::DType::BFloat16); auto y = model(x); } */
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device = DeviceType::CPU, DType dtype = DType::BFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_;
  autocast::RegionState was_;
};

}  // namespace ug
