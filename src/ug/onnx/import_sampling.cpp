// Spatial sampling: GridSample (nearest, linear and cubic over 1 to 3 spatial dims, the three
// padding modes) and AffineGrid, torch's grid_sample and affine_grid
// (nn/functional/grid_sample.h) with ONNX's checks of their attributes.
#include "ug/nn/functional/grid_sample.h"
#include "ug/onnx/op_table.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

Outputs grid_sample_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t r = x.dim() - 2;
  if (r < 1 || r > 3) c.fail("X must have 1 to 3 spatial dims, got shape ", x.shape());
  if (!is_floating(x.dtype())) c.fail<TypeError>("X must be a floating-point tensor, got ", x.dtype());
  const Tensor& grid = c.input(1);
  if (grid.dim() != r + 2 || grid.size(0) != x.size(0) || grid.size(-1) != r)
    c.fail("grid must have shape [", x.size(0), ", ..., ", r, "] with ", r, " dims between, got ", grid.shape(),
           " for X of shape ", x.shape());
  std::string mode = c.attr_string("mode", c.opset() < 20 ? "bilinear" : "linear");
  if (c.opset() < 20 && (mode == "bilinear" || mode == "bicubic")) mode = mode.substr(2);
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    c.fail("mode must be nearest, ", c.opset() < 20 ? "bilinear or bicubic" : "linear or cubic", ", got \"", mode,
           "\"");
  const std::string padding = c.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    c.fail("padding_mode must be zeros, border or reflection, got \"", padding, "\"");
  const std::string torch_mode = mode == "nearest" ? mode : "bi" + mode;
  return {nn::functional::grid_sample(x, grid.to(x.dtype()), torch_mode, padding, c.attr_int("align_corners", 0) != 0)};
}

Outputs affine_grid_op(const OpContext& c) {
  const Tensor& theta = c.input(0);
  const std::vector<int64_t> size = *c.ints_input(1);
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  if (r != 2 && r != 3) c.fail("size must be [N, C, H, W] or [N, C, D, H, W], got ", size.size(), " values");
  if (theta.dim() != 3 || theta.size(0) != size[0] || theta.size(1) != r || theta.size(2) != r + 1)
    c.fail("theta must have shape [", size[0], ", ", r, ", ", r + 1, "], got ", theta.shape());
  if (!is_floating(theta.dtype())) c.fail<TypeError>("theta must be a floating-point tensor, got ", theta.dtype());
  int64_t points = 1;
  for (size_t i = 2; i < size.size(); ++i) {
    if (size[i] < 0) c.fail("size has a negative dim ", size[i]);
    points *= size[i];
  }
  if (points * (r + 1) > c.max_elements()) c.fail("asks for ", points, " points, over LoadLimits::max_elements");
  return {nn::functional::affine_grid(theta, Dims(size.begin(), size.end()), c.attr_int("align_corners", 0) != 0)};
}

}  // namespace

void add_sampling_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"GridSample", grid_sample_op, 2, 2, 1, 16, {}});
  ops.push_back({"AffineGrid", affine_grid_op, 2, 2, 1, 20, {}});
}

}  // namespace ug::onnx
