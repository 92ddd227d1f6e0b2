#include "ug/nn/mixed_precision.h"

#include <mutex>

#include "ug/core/error.h"

namespace ug::mixed_precision {

namespace {

std::mutex mutex;
Policy global{};

}  // namespace

Policy policy(const std::string& name) {
  if (name == "mixed_float16") return {name, DType::Float16, DType::Float32};
  if (name == "mixed_bfloat16") return {name, DType::BFloat16, DType::Float32};
  if (name == "float32") return {name, DType::Float32, DType::Float32};
  if (name == "float64") return {name, DType::Float64, DType::Float64};
  if (name == "float16") return {name, DType::Float16, DType::Float16};
  if (name == "bfloat16") return {name, DType::BFloat16, DType::BFloat16};
  fail("[mixed_precision] unknown policy '", name,
       "': expected mixed_float16, mixed_bfloat16, float32, float64, float16 or bfloat16");
}

void set_global_policy(const std::string& name) {
  Policy p = policy(name);
  std::lock_guard lock(mutex);
  global = std::move(p);
}

Policy global_policy() {
  std::lock_guard lock(mutex);
  return global;
}

Policy layer_policy(const std::string& dtype) { return dtype.empty() ? global_policy() : policy(dtype); }

DType weight_dtype(const Policy& p, bool given) {
  return !given && p.name == "float32" ? get_default_dtype() : p.variable_dtype;
}

}  // namespace ug::mixed_precision
