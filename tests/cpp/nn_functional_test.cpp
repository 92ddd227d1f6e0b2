// ug::nn::functional from C++: the fused paths (linear, layer_norm) against their composed
// definitions, the documented defaults, gradients (first and second order) and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ug/nn/functional.h"
#include "test_util.h"

namespace {

namespace F = ug::nn::functional;
using ug::Dims;
using ug::Tensor;
using ug::test::values;

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.shape(), b.shape());
  ug::test::expect_values(a, values(b), tol);
}

Tensor leaf(const Dims& shape, uint64_t seed, ug::DType dtype = ug::float32) {
  ug::manual_seed(seed);
  return ug::randn(shape, {.dtype = dtype}).requires_grad_();
}

TEST(NnFunctional, LinearMatchesMatmulPlusBiasWithGradients) {
  Tensor x = leaf({2, 3, 4}, 1), w = leaf({5, 4}, 2), b = leaf({5}, 3);
  Tensor y = F::linear(x, w, b);
  Tensor ref = x.matmul(w.t()) + b;
  expect_close(y, ref);
  auto g = ug::autograd::grad({(y * y).sum()}, {x, w, b});
  auto gr = ug::autograd::grad({(ref * ref).sum()}, {x, w, b});
  for (size_t i = 0; i < 3; ++i) expect_close(g[i], gr[i], 1e-4);
  EXPECT_THROW(F::linear(x, leaf({5, 3}, 4)), ug::ValueError);
}

TEST(NnFunctional, LayerNormFusedMatchesComposedAndDifferentiatesTwice) {
  Tensor x = leaf({4, 6}, 5, ug::float64), w = leaf({6}, 6, ug::float64), b = leaf({6}, 7, ug::float64);
  Tensor y = F::layer_norm(x, {6}, w, b);
  Tensor mu = x.mean(Dims{1}, true);
  Tensor ref = (x - mu) / (x.var(Dims{1}, 0, true) + 1e-5).sqrt() * w + b;
  expect_close(y, ref, 1e-10);
  auto f = [](const ug::Tensors& in) { return ug::Tensors{F::layer_norm(in[0], {6}, in[1], in[2]).tanh()}; };
  EXPECT_TRUE(ug::autograd::gradcheck(f, {x, w, b}));
  EXPECT_TRUE(ug::autograd::gradgradcheck(f, {x, w, b}));
  EXPECT_THROW(F::layer_norm(x, {5}), ug::ValueError);
}

TEST(NnFunctional, CrossEntropyOptionsAndStability) {
  Tensor logits = ug::tensor({{1e4, -1e4, 0.0}, {0.0, 0.0, 0.0}});
  Tensor target = ug::tensor({0, 2});
  Tensor loss = F::cross_entropy(logits, target);
  ug::test::expect_values(loss, {std::log(3.0) / 2}, 1e-5);
  Tensor smoothed = F::cross_entropy(logits, target, {.reduction = "none", .label_smoothing = 0.3});
  EXPECT_TRUE(std::isfinite(values(smoothed)[0]));
  EXPECT_THROW(F::cross_entropy(logits, ug::tensor({0, 3})), ug::IndexError);
  EXPECT_THROW(F::cross_entropy(logits, target, {.reduction = "avg"}), ug::ValueError);
  // ignored targets count neither in the sum nor in the mean's denominator
  Tensor ignored = F::cross_entropy(logits, ug::tensor({-100, 2}));
  ug::test::expect_values(ignored, {std::log(3.0)}, 1e-5);
}

TEST(NnFunctional, DropoutIsReproducibleAndIdentityWhenOff) {
  Tensor x = ug::ones({1000});
  ug::manual_seed(11);
  Tensor a = F::dropout(x, 0.25);
  ug::manual_seed(11);
  Tensor b = F::dropout(x, 0.25);
  EXPECT_EQ(values(a), values(b));
  for (double v : values(a)) EXPECT_TRUE(v == 0.0 || std::abs(v - 4.0 / 3.0) < 1e-6);
  EXPECT_EQ(values(F::dropout(x, 0.25, false)), values(x));
  EXPECT_THROW(F::dropout(x, 1.5), ug::ValueError);
}

TEST(NnFunctional, EmbeddingPaddingRowGetsNoGradient) {
  Tensor w = leaf({4, 2}, 8);
  Tensor idx = ug::tensor({1, 3, 1});
  Tensor out = F::embedding(idx, w, 1);
  EXPECT_EQ(out.shape(), ug::test::shape({3, 2}));
  out.sum().backward();
  ug::test::expect_tensor(w.grad(), {4, 2}, {0, 0, 0, 0, 0, 0, 1, 1});
  ug::test::expect_tensor(F::one_hot(ug::tensor({2, 0})), {2, 3}, {0, 0, 1, 1, 0, 0});
}

TEST(NnFunctional, AttentionCausalMaskAndBatchNormRunningStats) {
  Tensor q = leaf({2, 3, 4}, 9), k = leaf({2, 3, 4}, 10), v = leaf({2, 3, 4}, 11);
  Tensor causal = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  // the first query attends only to the first key
  expect_close(causal.select(1, 0), v.select(1, 0));
  Tensor rm = ug::zeros({3}), rv = ug::ones({3});
  Tensor x = ug::tensor({{1.0, 2.0, 3.0}, {3.0, 6.0, 9.0}});
  F::batch_norm(x, rm, rv, {}, {}, true, 0.5);
  ug::test::expect_values(rm, {1.0, 2.0, 3.0}, 1e-6);
  ug::test::expect_values(rv, {1.5, 4.5, 9.5}, 1e-5);  // 0.5 * 1 + 0.5 * unbiased var
}

}  // namespace
