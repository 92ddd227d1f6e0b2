#include "ug/ops/autocast.h"

#include <any>
#include <array>

#include "ug/core/batching.h"
#include "ug/core/error.h"
#include "ug/graph/capture.h"
#include "ug/graph/forward.h"
#include "ug/graph/node.h"
#include "ug/graph/saved_hooks_state.h"

namespace ug {

namespace autocast {

namespace detail {
thread_local constinit bool active = false;
}  // namespace detail

namespace {

struct Region {
  bool enabled = false;
  DType dtype;
};

/** Per device type; CUDA's default low dtype is float16, CPU's bfloat16, as in PyTorch. */
thread_local std::array<Region, kNumDeviceTypes> regions = {Region{false, DType::BFloat16},
                                                            Region{false, DType::Float16}};

bool any_enabled() {
  for (const Region& r : regions)
    if (r.enabled) return true;
  return false;
}

}  // namespace

bool is_enabled(DeviceType device) { return regions[static_cast<int>(device)].enabled; }
DType get_dtype(DeviceType device) { return regions[static_cast<int>(device)].dtype; }

void set_enabled(DeviceType device, bool enabled) {
  regions[static_cast<int>(device)].enabled = enabled;
  detail::active = enabled || (detail::active && any_enabled());
}

RegionState region_state(DeviceType device) {
  const Region& r = regions[static_cast<int>(device)];
  return {r.enabled, r.dtype, detail::active};
}

void restore(DeviceType device, const RegionState& state) {
  regions[static_cast<int>(device)] = {state.enabled, state.dtype};
  detail::active = state.active;
}

void set_dtype(DeviceType device, DType dtype) {
  if (dtype != DType::BFloat16 && dtype != DType::Float16)
    fail<TypeError>("[autocast] the low dtype must be bfloat16 or float16, got ", dtype);
  regions[static_cast<int>(device)].dtype = dtype;
}

bool eligible(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::Float64 &&
         regions[static_cast<int>(t.device().type)].enabled;
}

// ---- LowPrecisionSaves -------------------------------------------------------------------

namespace {

bool is_low(DType t) { return t == DType::BFloat16 || t == DType::Float16; }

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.storage_offset() == b.storage_offset() && a.dtype() == b.dtype() &&
         a.shape() == b.shape() && a.strides() == b.strides();
}

/** One saved tensor: as given (`kept`), or the tensor autocast cast it from (`source`), cast
 *  again to `dtype` in backward. */
struct Saved {
  Tensor kept, source;
  DType dtype = DType::Float32;
  uint32_t version = 0;  // of what is held, when it was saved
  const char* op = nullptr;
};

/** The copies autocast made for the running op that its backward may remake instead of
 *  keeping (op call, the tensor it was cast from): float32 copies of 16-bit inputs, and
 *  copies of leaves (parameters, inputs), which stay alive anyway. */
thread_local std::vector<std::pair<Tensor, Tensor>>* remakeable = nullptr;

std::any pack(const Tensor& t) {
  auto saved = std::make_shared<Saved>();
  saved->op = ug::detail::current_op;
  for (const auto& [copy, source] : *remakeable)
    if (same_view(t, copy)) {
      // A leaf keeps its own history (none) for a graph of the gradient; a 16-bit input is kept
      // detached, as what the op would have saved was a copy.
      saved->source = source.is_leaf() ? source : source.detach();
      saved->dtype = copy.dtype();
      saved->version = source.version();
      return saved;
    }
  saved->kept = t;
  saved->version = t.version();
  return saved;
}

Tensor unpack(const std::any& packed) {
  const Saved& s = *std::any_cast<const std::shared_ptr<Saved>&>(packed);
  const Tensor& held = s.kept.defined() ? s.kept : s.source;
  if (held.version() != s.version)
    fail<RuntimeError>(
        "[backward] one of the tensors needed for gradient computation has been modified by an in-place "
        "operation: a ",
        held.dtype(), " tensor of shape ", held.shape(), " saved by ", s.op ? s.op : "an op", " is at version ",
        held.version(), "; expected version ", s.version, ". Use out-of-place ops (or clone()) before changing it.");
  // The same conversion as the forward's cast: the same values, bit for bit.
  return s.kept.defined() ? s.kept : s.source.to(s.dtype);
}

}  // namespace

struct LowPrecisionSaves::State {
  SavedTensorHooksGuard hooks;
  std::vector<std::pair<Tensor, Tensor>> copies;
  std::vector<std::pair<Tensor, Tensor>>* outer;
  State() : hooks(the_hooks()), outer(std::exchange(remakeable, &copies)) {}
  ~State() { remakeable = outer; }
  static std::shared_ptr<const SavedTensorHooks> the_hooks() {
    static const auto hooks = std::make_shared<const SavedTensorHooks>(SavedTensorHooks{pack, unpack});
    return hooks;
  }
};

LowPrecisionSaves::LowPrecisionSaves(const std::vector<const Tensor*>& inputs, graph::Autocast policy) {
  bool remake = false;
  if (policy == graph::Autocast::None) return;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    if (batching::level(*t) > 0) return;
    // float32 ops: the copies of 16-bit inputs; lower-precision ops: the copies of leaves
    remake |= eligible(*t) && (policy == graph::Autocast::Float32 ? is_low(t->dtype()) : t->is_leaf());
  }
  if (remake && !saved_tensor_hooks_installed() && !forward::active() && !graph::detail::current_capture)
    state_ = std::make_unique<State>();
}

LowPrecisionSaves::~LowPrecisionSaves() = default;

Tensor cast(const Tensor& t, DType dtype) {
  if (!eligible(t) || t.dtype() == dtype) return t;
  Tensor out = t.to(dtype);
  if (remakeable && (is_low(t.dtype()) || t.is_leaf())) remakeable->emplace_back(out, t);
  return out;
}

DType target(graph::Autocast policy, const std::vector<const Tensor*>& tensors) {
  if (policy == graph::Autocast::Float32) return DType::Float32;
  for (const Tensor* t : tensors)
    if (t->defined()) return get_dtype(t->device().type);
  return get_dtype(DeviceType::CPU);
}

}  // namespace autocast

AutocastGuard::AutocastGuard(DeviceType device, DType dtype, bool enabled)
    : device_(device), was_(autocast::region_state(device)) {
  autocast::set_dtype(device, dtype);
  autocast::set_enabled(device, enabled);
}

AutocastGuard::~AutocastGuard() { autocast::restore(device_, was_); }

}  // namespace ug
