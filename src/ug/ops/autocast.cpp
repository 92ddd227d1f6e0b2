#include "ug/ops/autocast.h"

#include <any>
#include <array>
#include <unordered_map>

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

void refresh() {
  detail::active = false;
  for (const Region& r : regions) detail::active |= r.enabled;
}

}  // namespace

bool is_enabled(DeviceType device) { return regions[static_cast<int>(device)].enabled; }
DType get_dtype(DeviceType device) { return regions[static_cast<int>(device)].dtype; }

void set_enabled(DeviceType device, bool enabled) {
  regions[static_cast<int>(device)].enabled = enabled;
  refresh();
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

/** One saved tensor: kept as given until a 16-bit copy of it replaces it (then `low`). */
struct Saved {
  Tensor kept, low;
  uint32_t version = 0;  // of what is held, when it was saved
  const char* op = nullptr;
};

/** float32 tensors saved under LowPrecisionSaves that no 16-bit copy has replaced yet, by
 *  storage. Weak: a backward that ran, or a graph dropped, frees them; an entry whose holders
 *  are all gone is swept. A live holder keeps its storage alive, so a storage found here
 *  through a live holder is that holder's. */
thread_local std::unordered_map<const Storage*, std::vector<std::weak_ptr<Saved>>> pending;
thread_local size_t sweep_at = 64;

/** The float32 copies autocast made of the running op's 16-bit inputs (op call, input). */
thread_local std::vector<std::pair<Tensor, Tensor>>* upcasts = nullptr;

void sweep() {
  std::erase_if(pending, [](const auto& entry) {
    for (const auto& w : entry.second)
      if (!w.expired()) return false;
    return true;
  });
  sweep_at = std::max<size_t>(64, 2 * pending.size());
}

std::any pack(const Tensor& t) {
  auto saved = std::make_shared<Saved>();
  saved->op = ug::detail::current_op;
  for (const auto& [copy, input] : *upcasts)
    if (same_view(t, copy)) {
      saved->low = input.detach();
      saved->version = input.version();
      return saved;
    }
  saved->kept = t;
  saved->version = t.version();
  if (t.dtype() == DType::Float32) {
    if (pending.size() >= sweep_at) sweep();
    pending[t.storage().get()].push_back(saved);
  }
  return saved;
}

Tensor unpack(const std::any& packed) {
  const Saved& s = *std::any_cast<const std::shared_ptr<Saved>&>(packed);
  const Tensor& held = s.kept.defined() ? s.kept : s.low;
  if (held.version() != s.version)
    fail<RuntimeError>(
        "[backward] one of the tensors needed for gradient computation has been modified by an in-place "
        "operation: a ",
        held.dtype(), " tensor of shape ", held.shape(), " saved by ", s.op ? s.op : "an op", " is at version ",
        held.version(), "; expected version ", s.version, ". Use out-of-place ops (or clone()) before changing it.");
  return s.kept.defined() ? s.kept : s.low.to(DType::Float32);
}

/** out, the 16-bit cast of t, replaces t wherever t was saved pending one. */
void share(const Tensor& t, const Tensor& out) {
  auto it = pending.find(t.storage().get());
  if (it == pending.end()) return;
  std::erase_if(it->second, [&](const std::weak_ptr<Saved>& w) {
    auto saved = w.lock();
    if (!saved) return true;
    if (!saved->kept.defined() || !same_view(saved->kept, t) || saved->kept.version() != saved->version) return false;
    saved->low = out.detach();
    saved->version = saved->low.version();
    saved->kept = Tensor();
    return true;
  });
  if (it->second.empty()) pending.erase(it);
}

}  // namespace

struct LowPrecisionSaves::State {
  SavedTensorHooksGuard hooks;
  std::vector<std::pair<Tensor, Tensor>> copies;
  std::vector<std::pair<Tensor, Tensor>>* outer;
  State() : hooks(the_hooks()), outer(std::exchange(upcasts, &copies)) {}
  ~State() { upcasts = outer; }
  static std::shared_ptr<const SavedTensorHooks> the_hooks() {
    static const auto hooks = std::make_shared<const SavedTensorHooks>(SavedTensorHooks{pack, unpack});
    return hooks;
  }
};

LowPrecisionSaves::LowPrecisionSaves(const std::vector<const Tensor*>& inputs) {
  bool low = false;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    if (batching::level(*t) > 0) return;
    low |= eligible(*t) && is_low(t->dtype());
  }
  if (low && !saved_tensor_hooks_installed() && !forward::active() && !graph::detail::current_capture)
    state_ = std::make_unique<State>();
}

LowPrecisionSaves::~LowPrecisionSaves() = default;

Tensor cast(const Tensor& t, DType dtype) {
  if (!eligible(t) || t.dtype() == dtype) return t;
  Tensor out = t.to(dtype);
  if (upcasts && is_low(t.dtype())) upcasts->emplace_back(out, t);
  else if (is_low(dtype) && !pending.empty()) share(t, out);
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
    : device_(device), was_enabled_(autocast::is_enabled(device)), was_dtype_(autocast::get_dtype(device)) {
  autocast::set_dtype(device, dtype);
  autocast::set_enabled(device, enabled);
}

AutocastGuard::~AutocastGuard() {
  autocast::set_dtype(device_, was_dtype_);
  autocast::set_enabled(device_, was_enabled_);
  if (!autocast::detail::active) autocast::pending.clear();  // 16-bit copies are shared within a region
}

}  // namespace ug
