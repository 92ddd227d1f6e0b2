// Saving and loading tensors in the safetensors format (huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON header naming each tensor's dtype, shape and
// byte range, then the raw little-endian data. Files are byte-identical to the reference
// package's; loading runs no code and allocates no more than the file holds.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ug/core/tensor.h"
#include "ug/core/ordered_dict.h"

namespace ug::io {

using TensorDict = OrderedDict<Tensor>;
using Metadata = std::map<std::string, std::string>;

/** The whole file in memory: what save_file writes. */
std::string save_bytes(const TensorDict& tensors, const Metadata& metadata = {});

/** Writes atomically: a temporary file in the same directory, fsync, rename over path, fsync
 *  of the directory. A crash part-way leaves the previous file intact. */
void save_file(const TensorDict& tensors, const std::string& path, const Metadata& metadata = {});

/** Tensors in the order of their names. Every malformed input raises ValueError "[safetensors]".
 *  When metadata is given, the "__metadata__" table read in the same pass is stored there. */
TensorDict load_bytes(std::string_view data, Metadata* metadata = nullptr);
TensorDict load_file(const std::string& path, Metadata* metadata = nullptr);

/** The "__metadata__" table of a file (empty when absent); reads the header only. */
Metadata load_metadata(const std::string& path);

}  // namespace ug::io
