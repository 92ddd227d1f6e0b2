// NumPy's .npy files: a magic string, a version, a Python-literal header dict
// ({'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }) and the raw data.
#pragma once

#include <string>
#include <string_view>

#include "ug/core/tensor.h"

namespace ug::data {

/** The array in an .npy file as a tensor: float32/64, float16, int32/64, uint8 and bool,
 *  either byte order, C or Fortran order. A malformed or truncated file raises
 *  ug::ValueError naming the file and the problem. */
Tensor read_npy(const std::string& path);

/** The same from .npy bytes in memory (an .npz member, a network buffer); `name` labels
 *  the error messages. Never allocates more than the bytes describe. */
Tensor parse_npy(std::string_view bytes, const std::string& name = "<bytes>");

}  // namespace ug::data
