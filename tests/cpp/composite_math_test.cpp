// A few of torch's products, builders and elementwise helpers composed of other ops
// (ug/ops/composite_math.h) in C++; tests/python/test_composite_math.py checks all of them
// against torch under every transform.
#include <cmath>
#include <limits>

#include "test_util.h"
#include "ug/ops/composite_math.h"

namespace ug {
namespace {

TEST(CompositeMath, ProductsAndBuilders) {
  const Tensor a = arange(6.0).reshape({2, 3}), b = arange(12.0).reshape({3, 4});
  test::expect_values(tensordot(a, b, 1), {20, 23, 26, 29, 56, 68, 80, 92}, 0);
  test::expect_values(mv(a, tensor({1.0, 0.0, -1.0})), {-2, -2}, 0);
  test::expect_values(block_diag({tensor({1.0, 2.0}), full({}, 3.0)}), {1, 2, 0, 0, 0, 3}, 0);
  test::expect_values(diag_embed(tensor({1.0, 2.0}), 1), {0, 1, 0, 0, 0, 2, 0, 0, 0}, 0);
  test::expect_values(combinations(tensor({5.0, 6.0, 7.0})), {5, 6, 5, 7, 6, 7}, 0);
  test::expect_values(tril_indices(3, 3, -1), {1, 2, 2, 0, 0, 1}, 0);
  // the two rows of a move together: variance 1 each, covariance -1
  test::expect_values(cov(tensor({{1.0, 2.0, 3.0}, {3.0, 2.0, 1.0}})), {1, -1, -1, 1}, 0);
  test::expect_values(diff(tensor({1.0, 4.0, 9.0, 16.0}), 2), {2, 2}, 0);
  EXPECT_THROW(tensordot(a, b, 2), RuntimeError);
  EXPECT_THROW(mv(a, tensor({1.0, 2.0})), RuntimeError);
}

TEST(CompositeMath, Elementwise) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const Tensor x = tensor({-0.0, 0.0, -2.0, nan, inf}).to(DType::Float64);
  test::expect_values(signbit(x).to(DType::Float64), {1, 0, 1, 0, 0}, 0);
  test::expect_values(fmax(x, full({5}, 1.0, {.dtype = DType::Float64})), {1, 1, 1, 1, inf}, 0);
  // erfc(10) = 2.088487583762545e-45: 1 - erf(10) would be 0
  EXPECT_NEAR(erfc(full({}, 10.0, {.dtype = DType::Float64})).item<double>() / 2.088487583762545e-45, 1.0, 1e-14);
  EXPECT_FALSE(is_nonzero(zeros({1})));
  EXPECT_THROW(is_nonzero(zeros({2})), RuntimeError);
}

}  // namespace
}  // namespace ug
