#include "ug/core/inference_mode.h"

namespace ug {

namespace {
thread_local bool t_inference = false;
}  // namespace

bool InferenceMode::is_enabled() { return t_inference; }
void InferenceMode::set_enabled(bool enabled) { t_inference = enabled; }

bool is_inference(const Tensor& t) {
  const TensorImpl& impl = t.impl().batch() ? *t.impl().batch()->physical : t.impl();
  return impl.storage() && impl.storage()->inference();
}

}  // namespace ug
