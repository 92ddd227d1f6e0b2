// ug::linalg from C++: each decomposition checked by reconstruction on matrices conditioned by
// construction, derivatives through ug::grad, and the errors the ops raise. Values against
// torch (and worse-conditioned inputs) are in tests/python/test_linalg.py.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "test_util.h"
#include "ug/autograd/functional.h"
#include "ug/core/random.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"

namespace ug {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

/** Uniform [-1, 1) entries plus n I: rows diagonally dominant by more than 1 (cond_inf < 2n + 1). */
Tensor dominant(const Dims& shape) {
  manual_seed(7);
  return rand(shape, {.dtype = DType::Float64}) * 2 - 1 +
         eye(shape.back(), {}, {.dtype = DType::Float64}) * static_cast<double>(shape.back());
}

double max_abs(const Tensor& t) { return t.abs().amax().item<double>(); }

/** Backward-stable factorizations reproduce A to a few n eps |A|. */
void expect_reconstructs(const Tensor& product, const Tensor& a) {
  const double n = static_cast<double>(a.size(-1));
  EXPECT_LE(max_abs(product - a), 4 * n * kEps * max_abs(a) * n);
}

TEST(LinalgSolvers, InverseSolveAndDeterminant) {
  const Tensor a = dominant({3, 5, 5});
  const Tensor id = eye(5, {}, {.dtype = DType::Float64}).expand({3, 5, 5});
  expect_reconstructs(matmul(a, linalg::inv(a)), id);
  const Tensor b = rand({3, 5, 2}, {.dtype = DType::Float64});
  expect_reconstructs(matmul(a, linalg::solve(a, b)), b);
  expect_reconstructs(matmul(linalg::solve(a, b.mT(), /*left=*/false), a), b.mT());
  // det of a triangular matrix is the product of its diagonal.
  const Tensor t = triu(a);
  const Tensor want = t.diagonal(0, -2, -1).prod(-1);
  EXPECT_LE(max_abs(linalg::det(t) - want), 10 * kEps * max_abs(want));
  auto [sign, logabsdet] = linalg::slogdet(-t.narrow(1, 0, 3).narrow(2, 0, 3));
  test::expect_values(sign, {-1, -1, -1}, 0);
  EXPECT_EQ(linalg::det(zeros({2, 2}, {.dtype = DType::Float64})).item<double>(), 0.0);
}

TEST(LinalgSolvers, Decompositions) {
  const Tensor a = dominant({2, 4, 4});
  const Tensor spd = matmul(a, a.mT());
  const Tensor l = linalg::cholesky(spd);
  expect_reconstructs(matmul(l, l.mT()), spd);
  EXPECT_EQ(max_abs(triu(l, 1)), 0.0);
  auto [w, v] = linalg::eigh(spd);
  expect_reconstructs(matmul(v * w.unsqueeze(-2), v.mT()), spd);
  auto [u, s, vh] = linalg::svd(a.narrow(2, 0, 3), /*full_matrices=*/false);
  EXPECT_EQ(u.shape(), (Shape{2, 4, 3}));
  expect_reconstructs(matmul(u * s.unsqueeze(-2), vh), a.narrow(2, 0, 3));
  auto [q, r] = linalg::qr(a.narrow(1, 0, 3), "complete");
  EXPECT_EQ(q.shape(), (Shape{2, 3, 3}));
  expect_reconstructs(matmul(q, r), a.narrow(1, 0, 3));
  expect_reconstructs(matmul(q.mT(), q), eye(3, {}, {.dtype = DType::Float64}).expand({2, 3, 3}));
}

TEST(LinalgSolvers, LuAndLdlFamilies) {
  const Tensor a = dominant({2, 5, 5});
  auto [p, l, u] = linalg::lu(a);
  expect_reconstructs(matmul(p, matmul(l, u)), a);
  EXPECT_EQ(max_abs(triu(l, 1)), 0.0);
  EXPECT_EQ(max_abs(tril(u, -1)), 0.0);
  auto [lu, pivots] = linalg::lu_factor(a);
  EXPECT_EQ(pivots.dtype(), DType::Int32);
  const Tensor b = rand({2, 5, 3}, {.dtype = DType::Float64});
  expect_reconstructs(matmul(a, linalg::lu_solve(lu, pivots, b)), b);
  const Tensor sym = a + a.mT();
  auto [ld, ldl_pivots] = linalg::ldl_factor(sym);
  expect_reconstructs(matmul(sym, linalg::ldl_solve(ld, ldl_pivots, b)), b);
  EXPECT_THROW(linalg::lu_factor(zeros({3, 3}, {.dtype = DType::Float64})), linalg::LinAlgError);
  auto [lu0, piv0, info] = linalg::lu_factor_ex(zeros({3, 3}, {.dtype = DType::Float64}));
  EXPECT_EQ(info.item<int64_t>(), 1);
}

TEST(LinalgSolvers, DerivativesAreOps) {
  // d det(A) / dA = det(A) A^-T, and its own derivative exists (the rule is written with ops).
  const Tensor a = dominant({3, 3});
  auto det = [](const Tensor& x) { return linalg::det(x); };
  const Tensor g = grad(det)(a);
  const Tensor want = linalg::inv(a).mT() * linalg::det(a);
  EXPECT_LE(max_abs(g - want), 100 * kEps * max_abs(want));
  const Tensor gg = grad([&](const Tensor& x) { return grad(det)(x).sum(); })(a);
  EXPECT_EQ(gg.shape(), a.shape());
}

TEST(LinalgSolvers, ErrorsNameTheOp) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THROW(linalg::inv(ones({2, 3})), ValueError);
  EXPECT_THROW(linalg::det(ones({3, 3}, {.dtype = DType::Int64})), TypeError);
  const std::string singular = message([] { linalg::inv(zeros({2, 3, 3})); });
  EXPECT_NE(singular.find("[linalg.inv]"), std::string::npos) << singular;
  EXPECT_NE(singular.find("singular"), std::string::npos) << singular;
  EXPECT_NE(singular.find("batch element 0"), std::string::npos) << singular;
  const std::string not_pd = message([] { linalg::cholesky(-eye(3)); });
  EXPECT_NE(not_pd.find("[linalg.cholesky]"), std::string::npos) << not_pd;
  EXPECT_NE(not_pd.find("positive-definite"), std::string::npos) << not_pd;
  EXPECT_THROW(linalg::cholesky(-eye(3)), RuntimeError);
  EXPECT_THROW(linalg::qr(eye(3), "thin"), ValueError);
  EXPECT_THROW(linalg::solve(eye(3), ones({2, 3})), ValueError);
}

}  // namespace
}  // namespace ug
