// Building tensors from Python data (nested lists, numbers, NumPy arrays) and handing
// tensors to NumPy without copying.
#pragma once

#include <optional>

#include "casters.h"

namespace ugpy {

/** ug.tensor(data): lists and numbers are copied; NumPy arrays and tensors too (like torch.tensor). */
ug::Tensor tensor_from_data(nb::handle data, std::optional<ug::DType> dtype, std::optional<ug::Device> device);
/** ug.from_numpy / ug.as_tensor: shares the array's memory (keeps the array alive). */
ug::Tensor from_numpy(nb::handle array);
/** Tensor.numpy(): a NumPy array over the tensor's memory (keeps the tensor alive). */
nb::object to_numpy(const ug::Tensor& t);
/** Tensor.tolist(). */
nb::object to_list(const ug::Tensor& t);
/** t.item() as a Python number; uint64 values past int64's range stay exact (a Scalar holds int64). */
nb::object item_to_python(const ug::Tensor& t);
/** t itself; raises (naming the Python line) when t is a value of a function being traced for
 *  ug.jit, where `what` (bool(), item(), ...) would freeze one trace's value into the program. */
const ug::Tensor& concrete(const ug::Tensor& t, const char* what);
/** t itself; notes the Python line when t is a traced value, whose shape Python now reads: a
 *  program made from it cannot run at other sizes (tf.function's reduce_retracing). */
const ug::Tensor& shape_read(const ug::Tensor& t);
/** A Python index expression (int, slice, None, ..., bool, tensor, list, tuple of these). */
std::vector<ug::TensorIndex> indices_from_python(nb::handle index);

}  // namespace ugpy
