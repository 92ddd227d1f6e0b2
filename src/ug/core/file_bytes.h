// Tensors whose bytes come from a file (.npy, .npz, safetensors, ONNX raw data).
#pragma once

#include <cstdint>

#include "ug/core/tensor.h"

namespace ug {

/** Makes t's bytes valid for its dtype after they were read from outside: a bool byte other than
 *  0 and 1 (which C++ may not load as a bool) becomes 1, as NumPy and torch read any nonzero
 *  byte as True. t is contiguous, fresh from empty(). */
inline void canonicalize_read_bytes(const Tensor& t) {
  if (t.dtype() != DType::Bool) return;
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
}

}  // namespace ug
