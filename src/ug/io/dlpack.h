// DLPack (dmlc/dlpack, Debian's libdlpack-dev): the common in-memory tensor description that
// torch, JAX, TensorFlow, NumPy and CuPy exchange without copying. The C++ side of
// ug.from_dlpack / Tensor.__dlpack__, with ATen's names (at::toDLPack, at::fromDLPack).
#pragma once

#include <dlpack/dlpack.h>

#include "ug/core/tensor.h"

namespace ug {

/** A DLPack view of t's memory, no copy. The consumer owns the result and calls its deleter,
 *  which releases t's storage; until then t's memory stays alive. CPU tensors only. */
DLManagedTensor* to_dlpack(const Tensor& t);

/** A tensor over src's memory, no copy; src's deleter runs when the tensor's storage is freed.
 *  On error (an unsupported device, dtype or stride) src stays the caller's. */
Tensor from_dlpack(DLManagedTensor* src);

}  // namespace ug
