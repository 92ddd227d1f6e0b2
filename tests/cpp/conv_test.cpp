// Convolutions and poolings from C++: a convolution against direct loops, "same" padding,
// the transpose as the input gradient, pooling values and indices, gradients by autograd,
// and errors for bad shapes.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "test_util.h"
#include "ug/ops/conv.h"
#include "ug/ops/pool.h"

namespace {

using ug::Tensor;
using ug::test::small_ints;
using ug::test::values;

Tensor seq(std::initializer_list<int64_t> dims, double scale = 0.25) {
  return ug::arange(ug::numel_of(ug::Shape(dims)), {.dtype = ug::float64}).mul(scale).sin().reshape(ug::Dims(dims));
}

/** conv2d by direct loops, stride s and padding p in both dims, one group. */
std::vector<double> reference_conv(const Tensor& x, const Tensor& w, int64_t s, int64_t p) {
  std::vector<double> vx = values(x), vw = values(w), out;
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), O = w.size(0), kh = w.size(2),
                kw = w.size(3);
  const int64_t Ho = (H + 2 * p - kh) / s + 1, Wo = (W + 2 * p - kw) / s + 1;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                const int64_t h = i * s - p + a, v = j * s - p + b;
                if (h >= 0 && h < H && v >= 0 && v < W)
                  acc += vx[((n * C + c) * H + h) * W + v] * vw[((o * C + c) * kh + a) * kw + b];
              }
          out.push_back(acc);
        }
  return out;
}

TEST(Conv, MatchesDirectLoops) {
  Tensor x = seq({2, 3, 7, 6}), w = seq({4, 3, 3, 2}, 0.7);
  for (int64_t s : {1, 2})
    for (int64_t p : {0, 1}) {
      Tensor y = ug::conv2d(x, w, {}, {s}, p);
      ug::test::expect_values(y, reference_conv(x, w, s, p), 1e-12);
    }
}

TEST(Conv, SamePaddingKeepsTheSizeAndBiasAdds) {
  Tensor x = seq({1, 2, 5, 6}), w = seq({3, 2, 4, 3}), b = ug::tensor({1.0, 2.0, 3.0}, {.dtype = ug::float64});
  Tensor y = ug::conv2d(x, w, b, {1}, "same");
  EXPECT_EQ(y.shape(), ug::test::shape({1, 3, 5, 6}));
  Tensor y0 = ug::conv2d(x, w, {}, {1}, "same");
  ug::test::expect_values(y - y0, values(b.view({1, 3, 1, 1}).expand({1, 3, 5, 6})), 1e-12);
  EXPECT_EQ(ug::conv2d(x, w, {}, {1}, "valid").shape(), ug::test::shape({1, 3, 2, 4}));
  EXPECT_EQ(ug::conv1d(seq({2, 5}), seq({4, 2, 3}), {}, {2}, 1).shape(), ug::test::shape({4, 3}));  // unbatched
}

TEST(Conv, TransposeIsTheInputGradient) {
  Tensor x = seq({2, 4, 6, 5}).requires_grad_(), w = seq({6, 2, 3, 3}, 0.3);
  Tensor g = seq({2, 6, 3, 3}, 0.9);
  Tensor y = ug::conv2d(x, w, {}, {2}, 1, {1}, 2);
  ASSERT_EQ(y.shape(), g.shape());
  (y * g).sum().backward();
  Tensor t = ug::conv_transpose2d(g, w, {}, {2}, {1}, {1, 0}, 2);
  EXPECT_EQ(t.shape(), x.shape());
  ug::test::expect_values(x.grad(), values(t), 1e-12);
}

TEST(Conv, GradientsPassGradcheck) {
  Tensor x = seq({1, 2, 5, 4}).requires_grad_(), w = seq({2, 1, 2, 3}, 0.6).requires_grad_();
  Tensor b = seq({2}).requires_grad_();
  auto f = [](const ug::Tensors& in) {
    return ug::Tensors{ug::conv2d(in[0], in[1], in[2], {1, 2}, {1, 0}, {2, 1}, 2)};
  };
  EXPECT_TRUE(ug::autograd::gradcheck(f, {x, w, b}));
  EXPECT_TRUE(ug::autograd::gradgradcheck(f, {x, w, b}));
}

TEST(Conv, BFloat16ResultsAreTheExactSumsRoundedOnce) {
  // Exact float32 sums: the output and both gradients of a bfloat16 convolution equal the
  // float64 ones rounded once to bfloat16, whichever kernel runs (cpu_conv_bf16.cpp on the
  // AVX512-BF16 GEMM or widened blocks). Gives the sanitizer build the bf16 kernels: padding,
  // strides, dilation, groups, the 1x1 case, the bias column, several column blocks.
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride, pad, dil, groups;
    bool bias;
  };
  for (const Case& c :
       {Case{{3, 6, 11, 9}, {8, 3, 3, 3}, 2, 1, 1, 2, true}, Case{{2, 4, 9, 10}, {4, 1, 3, 3}, 1, 2, 2, 4, false},
        Case{{2, 5, 6, 7}, {3, 5, 1, 1}, 1, 0, 1, 1, true}, Case{{2, 5, 6, 7}, {3, 5, 1, 1}, 1, 0, 1, 1, false},
        Case{{1, 64, 40, 40}, {13, 64, 3, 3}, 1, 1, 1, 1, true}}) {
    auto make = [](const std::vector<int64_t>& d, int64_t step) { return small_ints({d[0], d[1], d[2], d[3]}, step); };
    const Tensor x16 = make(c.x, 7), w16 = make(c.w, 5), b16 = small_ints({c.w[0]}, 3);
    std::vector<std::vector<double>> got, want;
    for (ug::DType dtype : {ug::bfloat16, ug::float64}) {
      Tensor x = x16.to(dtype).detach().requires_grad_(), w = w16.to(dtype).detach().requires_grad_();
      std::optional<Tensor> b;
      if (c.bias) b = b16.to(dtype);
      Tensor y = ug::conv2d(x, w, b, {c.stride}, c.pad, {c.dil}, c.groups);
      Tensor g = small_ints({y.size(0), y.size(1), y.size(2), y.size(3)}, 2).to(dtype);
      y.backward(g);
      auto& out = dtype == ug::bfloat16 ? got : want;
      for (const Tensor& t : {y, x.grad(), w.grad()}) {
        EXPECT_EQ(t.dtype(), dtype);
        out.push_back(values(t.to(ug::bfloat16)));
      }
    }
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "result " << i;
  }
}

TEST(Conv, Float32KernelsGiveTheExactSums) {
  // Small integers make every float32 sum exact, so float32 convolutions (on AVX-512 CPUs the
  // direct kernel of cpu_conv_direct.cpp: forward, unit-stride input gradients, weight
  // gradients over 128+ output pixels) must equal the float64 ones (the GEMM paths) exactly.
  // Gives the sanitizer build the direct kernel: partial channel blocks, tile remainders, the
  // unrolled 1x1, 3x3 and 7x7 windows, strides, input channels past one block, samples summed.
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride, pad;
  };
  for (const Case& c : {Case{{2, 17, 9, 8}, {20, 17, 3, 3}, 1, 1}, Case{{1, 3, 23, 21}, {70, 3, 7, 7}, 2, 3},
                        Case{{2, 24, 12, 12}, {33, 24, 1, 1}, 2, 0}, Case{{3, 16, 7, 7}, {16, 16, 3, 3}, 1, 1},
                        Case{{1, 130, 12, 12}, {18, 130, 3, 3}, 1, 0}}) {
    auto make = [](const std::vector<int64_t>& d, int64_t step) { return small_ints({d[0], d[1], d[2], d[3]}, step); };
    std::vector<std::vector<double>> got, want;
    for (ug::DType dtype : {ug::float32, ug::float64}) {
      Tensor x = make(c.x, 7).to(dtype).detach().requires_grad_(), w = make(c.w, 5).to(dtype).detach().requires_grad_();
      Tensor y = ug::conv2d(x, w, small_ints({c.w[0]}, 3).to(dtype), {c.stride}, c.pad);
      y.backward(small_ints({y.size(0), y.size(1), y.size(2), y.size(3)}, 2).to(dtype));
      for (const Tensor& t : {y, x.grad(), w.grad()}) (dtype == ug::float32 ? got : want).push_back(values(t));
    }
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "result " << i;
  }
}

TEST(Pool, MaxValuesIndicesAndGradient) {
  Tensor x = ug::tensor({{{1.0, 5.0, 2.0}, {4.0, 3.0, 6.0}, {0.0, 9.0, 7.0}}}, {.dtype = ug::float64}).requires_grad_();
  auto [y, idx] = ug::max_pool2d_with_indices(x, {2}, {1});
  ug::test::expect_tensor(y, {1, 2, 2}, {5, 6, 9, 9});
  ug::test::expect_tensor(idx, {1, 2, 2}, {1, 5, 7, 7});
  y.sum().backward();
  ug::test::expect_tensor(x.grad(), {1, 3, 3}, {0, 1, 0, 0, 0, 1, 0, 2, 0});
  auto [y2, i2] = ug::max_pool2d_with_indices(x.detach(), {2}, {2}, {0}, {1}, /*ceil_mode=*/true);
  ug::test::expect_tensor(y2, {1, 2, 2}, {5, 6, 9, 7});
}

TEST(Pool, AverageCountsPaddingAsAsked) {
  Tensor x = ug::ones({1, 1, 3, 3}, {.dtype = ug::float64});
  ug::test::expect_values(ug::avg_pool2d(x, {2}, {2}, {1}), {0.25, 0.5, 0.5, 1.0}, 1e-12);
  ug::test::expect_values(ug::avg_pool2d(x, {2}, {2}, {1}, false, false), {1, 1, 1, 1}, 1e-12);
  ug::test::expect_values(ug::avg_pool2d(x, {2}, {2}, {1}, false, true, 2), {0.5, 1, 1, 2}, 1e-12);
  std::vector<double> v = values(seq({1, 5}));  // adaptive windows of 5 into 2: [0, 3) and [2, 5)
  ug::test::expect_values(ug::adaptive_avg_pool1d(seq({1, 5}), {2}),
                          {(v[0] + v[1] + v[2]) / 3, (v[2] + v[3] + v[4]) / 3}, 1e-12);
}

TEST(Conv, BadShapesRaise) {
  Tensor x = ug::zeros({1, 3, 8, 8}), w = ug::zeros({6, 2, 5, 5});
  EXPECT_THROW(ug::conv2d(x, w), ug::ValueError);                        // 3 channels, weight wants 2
  EXPECT_THROW(ug::conv2d(x, ug::zeros({6, 3, 9, 9})), ug::ValueError);  // kernel larger than the input
  EXPECT_THROW(ug::conv2d(x, ug::zeros({6, 3, 3, 3}), {}, {2}, "same"), ug::ValueError);
  EXPECT_THROW(ug::conv2d(x, ug::zeros({6, 3, 3, 3}, {.dtype = ug::float64})), ug::TypeError);
  EXPECT_THROW(ug::max_pool2d(x, {3}, {}, {2}), ug::ValueError);
}

}  // namespace
