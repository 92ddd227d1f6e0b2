// torch's conveniences composed of other ops (ug/ops/composite.h) and the dtype limits
// (ug/core/type_info.h) in C++; tests/python/test_composite.py checks them against torch under
// every transform.
#include <cmath>
#include <limits>

#include "test_util.h"
#include "ug/core/type_info.h"
#include "ug/ops/composite.h"

namespace ug {
namespace {

TEST(Composite, TrianglesDiagonalsAndTrace) {
  const Tensor x = arange(1.0, 10.0).reshape({3, 3});
  test::expect_values(tril(x), {1, 0, 0, 4, 5, 0, 7, 8, 9}, 0);
  test::expect_values(triu(x, 1), {0, 2, 3, 0, 0, 6, 0, 0, 0}, 0);
  test::expect_values(diag(x, -1), {4, 8}, 0);
  test::expect_values(diag(diag(x)), {1, 0, 0, 0, 5, 0, 0, 0, 9}, 0);
  EXPECT_EQ(trace(x).item<double>(), 15.0);
  EXPECT_THROW(tril(arange(3.0)), ValueError);
}

TEST(Composite, GridsProductsAndNans) {
  auto grids = meshgrid({arange(2.0), arange(3.0)}, "xy");
  EXPECT_EQ(grids[0].shape(), (Shape{3, 2}));
  test::expect_values(grids[1], {0, 0, 1, 1, 2, 2}, 0);
  test::expect_values(addmm(ones({2, 2}), eye(2), full({2, 2}, 3.0), 0.5, 2.0), {6.5, 6.5, 6.5, 6.5}, 0);
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor v = tensor({std::nan(""), inf, -inf, 2.0});
  test::expect_values(nan_to_num(v, 0.0, 1.0), {0, 1, -finfo(DType::Float32).max, 2}, 0);
  EXPECT_EQ(nansum(v.narrow(0, 3, 1)).item<double>(), 2.0);
  EXPECT_EQ(finfo(DType::BFloat16).eps, 0.0078125);
  EXPECT_EQ(iinfo(DType::Int8).min, -128);
  EXPECT_THROW(finfo(DType::Int32), TypeError);
}

}  // namespace
}  // namespace ug
