// The C++ forms of the spatial rearrangements beyond what Python reaches (the Python tests
// compare those with torch): im2col and col2im over 1 and 3 spatial dims with uneven pads,
// checked as each other's adjoints, <im2col(x), y> = <x, col2im(y)>; grid_sample over one
// spatial dim, at pixel centres and halfway between them.
#include "test_util.h"

namespace ug {
namespace {

namespace F = nn::functional;
using test::expect_values;

TEST(NnSpatial, Col2imIsTheAdjointOfIm2colIn1dAnd3d) {
  manual_seed(0);
  struct Case {
    Dims image, block, dilation, stride, pads;
  };
  for (const Case& c :
       {Case{{9}, {3}, {2}, {2}, {1, 2}}, Case{{4, 5, 3}, {2, 3, 1}, {1, 1, 2}, {2, 1, 1}, {0, 1, 1, 1, 0, 2}}}) {
    Dims shape{2, 3};
    for (int64_t d : c.image) shape.push_back(d);
    const Tensor x = randn(shape, {.dtype = DType::Float64});
    const Tensor cols = F::im2col(x, c.block, c.dilation, c.stride, c.pads);
    const Tensor y = randn(cols.shape(), {.dtype = DType::Float64});
    const Tensor back = F::col2im(y, c.image, c.block, c.dilation, c.stride, c.pads);
    ASSERT_EQ(back.shape(), x.shape());
    const double lhs = (cols * y).sum().item<double>(), rhs = (x * back).sum().item<double>();
    // Both add the same products in other orders: n eps times their magnitudes apart at most.
    const double terms = (cols.abs() * y.abs()).sum().item<double>();
    EXPECT_NEAR(lhs, rhs, static_cast<double>(y.numel()) * 2.3e-16 * terms);
  }
}

TEST(NnSpatial, GridSampleIn1dReadsPixelsAndInterpolatesBetween) {
  const Tensor x = tensor({{{1.0, 4.0, -2.0, 8.0}}});  // [N = 1, C = 1, W = 4]
  // align_corners: -1 and 1 are the first and last pixels' centres, 1/3 apart per pixel.
  const Tensor at = tensor({{{-1.0}, {1.0 / 3.0}, {0.0}, {1.0}, {1.5}}});
  // 1.5 is 3.75 pixels in: a quarter of the last pixel and three of a zero past it.
  expect_values(F::grid_sample(x, at, "bilinear", "zeros", true), {1.0, -2.0, 1.0, 8.0, 2.0}, 1e-6);
  expect_values(F::grid_sample(x, at, "nearest", "border", true), {1.0, -2.0, -2.0, 8.0, 8.0}, 0);
}

TEST(NnSpatial, UnfoldLayerIsTheFunction) {
  const Tensor x = arange(0, 2 * 5 * 6, 1, {.dtype = DType::Float32}).reshape({1, 2, 5, 6});
  nn::Unfold unfold(Dims{2, 3}, Dims{1}, Dims{1}, Dims{2});
  EXPECT_EQ(unfold->extra_repr(), "kernel_size=(2, 3), dilation=1, padding=1, stride=2");
  expect_values(unfold(x), test::values(F::unfold(x, {2, 3}, {1}, {1}, {2})), 0);
  nn::Fold fold(Dims{5, 6}, Dims{1});
  expect_values(fold(x.reshape({1, 2, 30})), test::values(x), 0);
}

}  // namespace
}  // namespace ug
