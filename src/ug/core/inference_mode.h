// torch's inference mode as far as it marks tensors: memory allocated while it is on makes
// inference tensors, which is_inference() reports (views of them too, as torch's). Per thread,
// like grad mode. Unlike torch, unigrad puts no limits on using inference tensors later.
#pragma once

#include "ug/core/tensor.h"

namespace ug {

struct InferenceMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/** Whether t's memory was allocated in inference mode (torch's Tensor.is_inference()). */
bool is_inference(const Tensor& t);

}  // namespace ug
