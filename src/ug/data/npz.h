// NumPy's .npz archives (numpy.savez, numpy.savez_compressed): a zip file of .npy members,
// stored or deflate-compressed, read with libzip.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::data {

/** (name, array) in archive order; the name is the member's without ".npy", as np.load's keys. */
using NpzArrays = std::vector<std::pair<std::string, Tensor>>;

/** Every array in an .npz file. Each member is read as read_npy reads a file. A member whose
 *  declared size is more than its compressed bytes could expand to, a corrupt archive, a
 *  member that is not .npy, or a repeated name raises ValueError naming the file and member. */
NpzArrays read_npz(const std::string& path);

/** The same from the archive's bytes in memory; `name` labels the error messages. */
NpzArrays parse_npz(std::string_view bytes, const std::string& name = "<bytes>");

}  // namespace ug::data
