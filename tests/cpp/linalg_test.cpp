// Matrix products and einsum: torch's shape rules for matmul, strict mm/bmm/dot checks,
// dtype promotion, strided operands, and einsum patterns checked against explicit loops.
#include <gtest/gtest.h>

#include <vector>

#include "ug/ops/binary.h"
#include "ug/ops/linalg.h"
#include "ug/ops/reduce.h"
#include "test_util.h"

namespace {

using ug::Tensor;
using ug::test::shape;
using ug::test::small_ints;
using ug::test::values;

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  ug::test::expect_values(t, want, tol);
}

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-4) {
  ASSERT_EQ(a.shape(), b.shape());
  expect_values(a, values(b), tol);
}

Tensor seq(std::initializer_list<int64_t> dims, double scale = 0.5) {
  ug::Dims d(dims);
  return ug::arange(ug::numel_of(ug::Shape(dims)), {.dtype = ug::float32}).mul(scale).sub(1.0).reshape(d);
}

/** Reference [..., M, K] @ [..., K, N] over equal batch shapes, by loops. */
std::vector<double> reference_bmm(const Tensor& a, const Tensor& b) {
  std::vector<double> va = values(a), vb = values(b), out;
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1), B = a.numel() / (M * K);
  for (int64_t s = 0; s < B; ++s)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += va[(s * M + i) * K + k] * vb[(s * K + k) * N + j];
        out.push_back(acc);
      }
  return out;
}

TEST(LinalgMatmul, TwoByTwo) {
  Tensor a = ug::tensor({{1.0, 2.0}, {3.0, 4.0}});
  Tensor b = ug::tensor({{5.0, 6.0}, {7.0, 8.0}});
  expect_values(a.matmul(b), {19, 22, 43, 50});
  expect_values(ug::mm(a, b), {19, 22, 43, 50});
  expect_values(a.matmul(b.t()), {17, 23, 39, 53});  // transposed operand read in place
  expect_values(a.t().matmul(b), {26, 30, 38, 44});
}

TEST(LinalgMatmul, VectorRules) {
  Tensor m = ug::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor v3 = ug::tensor({1.0, 0.0, -1.0});
  Tensor v2 = ug::tensor({1.0, 1.0});
  Tensor d = v3.matmul(v3);
  EXPECT_EQ(d.dim(), 0);
  expect_values(d, {2});
  Tensor mv = m.matmul(v3);
  EXPECT_EQ(mv.shape(), shape({2}));
  expect_values(mv, {-2, -2});
  Tensor vm = v2.matmul(m);
  EXPECT_EQ(vm.shape(), shape({3}));
  expect_values(vm, {5, 7, 9});
  Tensor batch = seq({4, 2, 3});
  EXPECT_EQ(batch.matmul(v3).shape(), shape({4, 2}));
  EXPECT_EQ(v2.matmul(batch).shape(), shape({4, 3}));
  expect_values(v2.matmul(batch), values(v2.unsqueeze(0).unsqueeze(0).expand({4, 1, 2}).matmul(batch)));
}

TEST(LinalgMatmul, BatchBroadcasting) {
  Tensor a = seq({2, 1, 3, 4});
  Tensor b = seq({5, 4, 2}, 0.25);
  Tensor out = a.matmul(b);
  EXPECT_EQ(out.shape(), shape({2, 5, 3, 2}));
  expect_values(out, reference_bmm(a.expand({2, 5, 3, 4}).contiguous(), b.expand({2, 5, 4, 2}).contiguous()));
  Tensor shared = seq({4, 2});
  Tensor folded = a.matmul(shared);  // the right matrix is shared by every batch
  EXPECT_EQ(folded.shape(), shape({2, 1, 3, 2}));
  expect_values(folded, reference_bmm(a, shared.expand({2, 1, 4, 2}).contiguous()));
  Tensor left = seq({3, 4}).matmul(seq({2, 4, 5}));
  EXPECT_EQ(left.shape(), shape({2, 3, 5}));
}

TEST(LinalgMatmul, StridedAndEmpty) {
  Tensor a = seq({3, 4, 2}).transpose(1, 2);  // [3, 2, 4], non-contiguous
  Tensor b = seq({3, 5, 4}).transpose(-1, -2);
  expect_values(a.matmul(b), reference_bmm(a.contiguous(), b.contiguous()));
  Tensor k0 = ug::zeros({2, 0}).matmul(ug::zeros({0, 3}));
  EXPECT_EQ(k0.shape(), shape({2, 3}));
  expect_values(k0, std::vector<double>(6, 0.0));
  EXPECT_EQ(ug::zeros({0, 3}).matmul(ug::zeros({3, 2})).shape(), shape({0, 2}));
  EXPECT_EQ(ug::zeros({2, 0, 3}).matmul(ug::zeros({3, 2})).shape(), shape({2, 0, 2}));
}

TEST(LinalgMatmul, BFloat16ProductsAcrossBlockEdgesAreExact) {
  // Exact sums: each element is the exact product rounded once to bfloat16, whichever kernel
  // runs (the AVX512-BF16 GEMM or the widened one); sizes cross the GEMM's 12-row, 32-column,
  // 96-row and 512-deep blocks, operands plain, transposed and batched.
  auto check = [](const Tensor& a, const Tensor& b) {
    Tensor out = a.matmul(b);
    EXPECT_EQ(out.dtype(), ug::bfloat16);
    std::vector<double> want = reference_bmm(a.to(ug::float32).contiguous(), b.to(ug::float32).contiguous());
    for (double& w : want) w = static_cast<float>(ug::BFloat16(static_cast<float>(w)));
    expect_values(out, want, 0.0);
  };
  check(small_ints({37, 513}, 7), small_ints({513, 70}, 5));
  check(small_ints({513, 37}, 7).t(), small_ints({70, 513}, 5).t());
  check(small_ints({97, 3}, 4), small_ints({3, 33}, 2));
  check(small_ints({3, 13, 50}, 7), small_ints({3, 50, 9}, 5));
  check(small_ints({3, 50, 13}, 7).transpose(1, 2), small_ints({3, 9, 50}, 5).transpose(1, 2));
}

TEST(LinalgMatmul, DtypesMustMatch) {
  Tensor i = ug::tensor({{1, 2}, {3, 4}}, {.dtype = ug::int32});
  Tensor f = ug::tensor({{1.0, 0.5}, {0.0, 1.0}}, {.dtype = ug::float32});
  EXPECT_THROW(i.matmul(f), ug::TypeError);  // PyTorch does not promote in matrix products
  Tensor ii = i.matmul(ug::tensor({{1, 1}, {1, 1}}, {.dtype = ug::int32}));
  EXPECT_EQ(ii.dtype(), ug::int32);
  expect_values(ii, {3, 3, 7, 7});
  Tensor h =
      ug::tensor({{1.0, 2.0}}, {.dtype = ug::float16}).matmul(ug::tensor({{3.0}, {4.0}}, {.dtype = ug::float16}));
  EXPECT_EQ(h.dtype(), ug::float16);
  expect_values(h, {11});
  Tensor bools = ug::tensor({{true}});
  EXPECT_THROW(bools.matmul(bools), ug::TypeError);
}

TEST(LinalgMatmul, Errors) {
  Tensor a = ug::zeros({2, 3}), b = ug::zeros({4, 5});
  EXPECT_THROW(a.matmul(b), ug::ValueError);
  try {
    a.matmul(b);
  } catch (const ug::ValueError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
  }
  EXPECT_THROW(ug::scalar_tensor(1.0).matmul(a), ug::ValueError);
  EXPECT_THROW(ug::zeros({2, 2, 3}).matmul(ug::zeros({3, 3, 4})), ug::ValueError);
  EXPECT_THROW(ug::zeros({3}).matmul(ug::zeros({4})), ug::ValueError);
}

TEST(LinalgStrict, MmBmmDotOuter) {
  EXPECT_THROW(ug::zeros({2, 3, 4}).mm(ug::zeros({4, 2})), ug::ValueError);
  EXPECT_THROW(ug::zeros({3}).mm(ug::zeros({3, 2})), ug::ValueError);
  EXPECT_THROW(ug::zeros({2, 3}).mm(ug::zeros({2, 3})), ug::ValueError);
  Tensor a = seq({2, 3, 4}), b = seq({2, 4, 5});
  expect_values(a.bmm(b), reference_bmm(a, b));
  EXPECT_THROW(a.bmm(seq({3, 4, 5})), ug::ValueError);
  EXPECT_THROW(a.bmm(seq({2, 5, 4})), ug::ValueError);
  EXPECT_THROW(seq({3, 4}).bmm(seq({4, 5})), ug::ValueError);
  Tensor u = ug::tensor({1.0, 2.0, 3.0}), v = ug::tensor({4.0, 5.0, 6.0});
  Tensor d = u.dot(v);
  EXPECT_EQ(d.dim(), 0);
  expect_values(d, {32});
  EXPECT_THROW(u.dot(ug::zeros({2})), ug::ValueError);
  EXPECT_THROW(u.dot(ug::zeros({3, 1})), ug::ValueError);
  Tensor o = u.outer(ug::tensor({1.0, -1.0}));
  EXPECT_EQ(o.shape(), shape({3, 2}));
  expect_values(o, {1, -1, 2, -2, 3, -3});
  EXPECT_THROW(u.outer(ug::zeros({2, 2})), ug::ValueError);
}

TEST(LinalgMultiDot, AnyOrderGivesTheChainsProductAndVectorEndsDropTheirDim) {
  // float64: the orders' roundings differ far below the tolerance
  Tensor a = seq({5, 2}).to(ug::float64), b = seq({2, 6}).to(ug::float64), c = seq({6, 1}).to(ug::float64),
         d = seq({1, 3}).to(ug::float64);
  expect_close(ug::linalg::multi_dot({a, b, c, d}), a.mm(b).mm(c).mm(d));
  Tensor u = ug::tensor({1.0, 2.0}), v = ug::tensor({3.0, -1.0, 0.5}), m = seq({2, 3});
  Tensor r = ug::linalg::multi_dot({u, m, v});
  EXPECT_EQ(r.dim(), 0);
  expect_close(r, u.unsqueeze(0).mm(m).mm(v.unsqueeze(1)).reshape({}));
  EXPECT_EQ(ug::linalg::multi_dot({u, m}).shape(), shape({3}));
  EXPECT_THROW(ug::linalg::multi_dot({a}), ug::ValueError);
  EXPECT_THROW(ug::linalg::multi_dot({a, u, b}), ug::ValueError);
  EXPECT_THROW(ug::linalg::multi_dot({a, c}), ug::ValueError);
  EXPECT_THROW(ug::linalg::multi_dot({a, b.to(ug::float32)}), ug::ValueError);
}

// ---- einsum ----------------------------------------------------------------------------------

TEST(LinalgEinsum, MatrixPatterns) {
  Tensor a = seq({2, 3}), b = seq({3, 4}, 0.3);
  expect_close(ug::einsum("ij,jk->ik", {a, b}), a.matmul(b));
  expect_close(ug::einsum("ij,jk", {a, b}), a.matmul(b));  // implicit output "ik"
  expect_close(ug::einsum("ij->ji", {a}), a.t());
  expect_close(ug::einsum("ji", {a}), a.t());  // implicit output is sorted: "ij"
  expect_close(ug::einsum("ij->", {a}), a.sum());
  expect_close(ug::einsum("ij->j", {a}), a.sum({0}));
  expect_close(ug::einsum("ij,kj->ik", {a, b.t()}), a.matmul(b));
  expect_close(ug::einsum(" i j , j k -> k i ", {a, b}), a.matmul(b).t());
}

TEST(LinalgEinsum, VectorsAndDiagonals) {
  Tensor u = ug::tensor({1.0, 2.0, 3.0}), v = ug::tensor({4.0, 5.0, 6.0});
  expect_values(ug::einsum("i,i->", {u, v}), {32});
  expect_values(ug::einsum("i,i", {u, v}), {32});
  expect_close(ug::einsum("i,j->ij", {u, v}), u.outer(v));
  expect_values(ug::einsum("i,i->i", {u, v}), {4, 10, 18});
  Tensor m = seq({3, 3});
  std::vector<double> mv = values(m);
  expect_values(ug::einsum("ii->i", {m}), {mv[0], mv[4], mv[8]});
  expect_values(ug::einsum("ii", {m}), {mv[0] + mv[4] + mv[8]});  // implicit: trace
  EXPECT_THROW(ug::einsum("ii->i", {seq({2, 3})}), ug::ValueError);
}

TEST(LinalgEinsum, BatchAndMultipleOperands) {
  Tensor a = seq({2, 3, 4}), b = seq({2, 4, 5}, 0.2), c = seq({5, 2}, 0.1);
  expect_close(ug::einsum("bij,bjk->bik", {a, b}), a.bmm(b));
  expect_close(ug::einsum("bij,bjk->bki", {a, b}), a.bmm(b).transpose(1, 2));
  expect_close(ug::einsum("bij,bjk,kl->bil", {a, b, c}), a.bmm(b).matmul(c), 1e-3);
  expect_close(ug::einsum("bij,bjk->", {a, b}), a.bmm(b).sum(), 1e-3);
  // A label summed inside one operand before the product.
  expect_close(ug::einsum("bij,bkl->bik", {a, b}), a.sum({2}).unsqueeze(2).mul(b.sum({2}).unsqueeze(1)));
}

TEST(LinalgEinsum, Ellipsis) {
  Tensor a = seq({2, 5, 3, 4}), b = seq({5, 4, 2}, 0.25);
  expect_close(ug::einsum("...ij,...jk->...ik", {a, b}), a.matmul(b), 1e-3);
  expect_close(ug::einsum("...ij,...jk", {a, b}), a.matmul(b), 1e-3);
  expect_close(ug::einsum("...ij->...ji", {a}), a.transpose(-1, -2));
  expect_close(ug::einsum("i...->...", {seq({3, 2})}), seq({3, 2}).sum({0}));
  expect_close(ug::einsum("...ij->ij", {a}), a.sum({0, 1}), 1e-3);
}

TEST(LinalgEinsum, PromotionAndErrors) {
  Tensor i = ug::tensor({1, 2}, {.dtype = ug::int32});
  Tensor f = ug::tensor({0.5, 0.25});
  Tensor r = ug::einsum("i,i->", {i, f});
  EXPECT_EQ(r.dtype(), ug::float32);
  expect_values(r, {1});
  Tensor ints = ug::einsum("i,j->ij", {i, i});
  EXPECT_EQ(ints.dtype(), ug::int32);
  expect_values(ints, {1, 2, 2, 4});
  Tensor a = seq({2, 3});
  EXPECT_THROW(ug::einsum("ij,jk->ik", {a, seq({4, 2})}), ug::ValueError);  // j: 3 vs 4
  EXPECT_THROW(ug::einsum("ij,jk->ik", {a}), ug::ValueError);
  EXPECT_THROW(ug::einsum("ijk->i", {a}), ug::ValueError);
  EXPECT_THROW(ug::einsum("ij->iz", {a}), ug::ValueError);
  EXPECT_THROW(ug::einsum("ij->ii", {a}), ug::ValueError);
  EXPECT_THROW(ug::einsum("i1->i", {a}), ug::ValueError);
  EXPECT_THROW(ug::einsum("i..j->ij", {a}), ug::ValueError);
  EXPECT_THROW(ug::einsum("i", {}), ug::ValueError);
}

}  // namespace
