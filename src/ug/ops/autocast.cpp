#include "ug/ops/autocast.h"

#include <array>

#include "ug/core/error.h"

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
}

}  // namespace ug
