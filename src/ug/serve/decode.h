// Request bodies into float32 rows: JSON {"inputs": [[...], ...]} read with nlohmann's SAX
// interface (numbers go straight into the buffer, no DOM), or raw little-endian float32.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ug::serve {

/** `rows` samples of the model's input, back to back. */
struct Inputs {
  std::vector<float> values;
  int64_t rows = 0;
};

/** {"inputs": rows}, each row the sample shape nested or flattened. Anything else raises
 *  ValueError saying what was expected and what came. */
Inputs decode_json(std::string_view body, const std::vector<int64_t>& sample_shape);

/** N x sample size little-endian float32 values, N >= 1; ValueError otherwise. */
Inputs decode_float32(std::string_view body, const std::vector<int64_t>& sample_shape);

}  // namespace ug::serve
