// How tensors print (torch.set_printoptions): digits after the point, the element count past
// which the middle is elided, the items kept at each edge, the line width rows wrap at, and
// scientific notation forced on or off (unset: chosen from the values, as torch does).
#pragma once

#include <cstdint>
#include <optional>

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

}  // namespace ug
