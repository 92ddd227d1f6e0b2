// How tensors print (torch.set_printoptions): digits after the point, the element count past
// which the middle is elided, the items kept at each edge, the line width rows wrap at, and
// scientific notation forced on or off (unset: chosen from the values, as torch does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ug {

struct PrintOptions {
  int precision = 4;
  int64_t threshold = 1000;
  int64_t edgeitems = 3;
  int64_t linewidth = 80;
  std::optional<bool> sci_mode;
};

/** The options every later print uses (process-wide, as torch's). */
void set_print_options(const PrintOptions& options);
PrintOptions print_options();

class Tensor;
/** Tensor::to_string() with more suffixes after the dtype and device ("grad_fn=<...>"): each
 *  goes on a new line where it would pass the line width, as torch wraps them. */
std::string tensor_string(const Tensor& t, const std::vector<std::string>& extra_suffixes);

}  // namespace ug
