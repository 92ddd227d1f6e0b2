// The C++ forms of conv3d, conv_transpose3d, the 3-d pools (adaptive too), scatter_reduce's prod, amax and amin,
// embedding_bag, ctc_loss and histogramdd (the Python tests compare them with torch): checked against
// their definitions through other ops.
#include "test_util.h"

namespace ug {
namespace {

namespace F = nn::functional;
using test::expect_values;
using test::values;

TEST(TorchGaps, Conv3dOfOnePlaneKernelsIsConv2dPerPlane) {
  manual_seed(0);
  const Tensor x = randn({2, 4, 3, 5, 6}), w = randn({6, 2, 1, 3, 3}), b = randn({6});
  const Tensor y = conv3d(x, w, b, {1}, Dims{0, 1, 1}, {1}, 2);
  for (int64_t d = 0; d < 3; ++d)
    expect_values(y.select(2, d), values(conv2d(x.select(2, d), w.select(2, 0), b, {1}, 1, {1}, 2)), 1e-5);
  nn::Conv3d layer(4, 6, Dims{1, 3, 3}, Dims{1}, "same", Dims{1}, 2);
  expect_values(layer(x), values(conv3d(x, layer->parameter("weight"), layer->parameter("bias"), {1}, "same", {1}, 2)),
                0);
  EXPECT_EQ(conv3d(x[0], w, b, {1}, Dims{0, 1, 1}, {1}, 2).shape(), y[0].shape());
}

TEST(TorchGaps, Pool3dOfOneDeepWindowsIsPool2dPerPlane) {
  manual_seed(1);
  const Tensor x = randn({2, 3, 4, 6, 5});
  const Tensor mx = max_pool3d(x, {1, 2, 2}), avg = avg_pool3d(x, {1, 3, 3}, {1, 2, 2}, {0, 1, 1});
  for (int64_t d = 0; d < 4; ++d) {
    expect_values(mx.select(2, d), values(max_pool2d(x.select(2, d), {2})), 0);
    expect_values(avg.select(2, d), values(avg_pool2d(x.select(2, d), {3}, {2}, {1})), 1e-6);
  }
  EXPECT_EQ(nn::MaxPool3d(Dims{2})(x).shape(), Shape({2, 3, 2, 3, 2}));
  EXPECT_EQ(nn::AvgPool3d(Dims{2}, Dims{}, Dims{0}, true)(x).shape(), Shape({2, 3, 2, 3, 3}));
}

TEST(TorchGaps, ConvTranspose3dOfOnePlaneKernelsIsConvTranspose2dPerPlane) {
  manual_seed(4);
  const Tensor x = randn({2, 4, 3, 5, 4}), w = randn({4, 3, 1, 3, 2}), b = randn({6});
  const Tensor y = conv_transpose3d(x, w, b, Dims{1, 2, 1}, Dims{0, 1, 0}, Dims{0, 1, 0}, 2);
  for (int64_t d = 0; d < 3; ++d)
    expect_values(y.select(2, d),
                  values(conv_transpose2d(x.select(2, d), w.select(2, 0), b, Dims{2, 1}, Dims{1, 0}, Dims{1, 0}, 2)),
                  1e-5);
  nn::ConvTranspose3d layer(4, 6, Dims{1, 3, 2}, Dims{1, 2, 1}, Dims{0, 1, 0}, Dims{0, 1, 0}, 2);
  EXPECT_EQ(layer(x).shape(), y.shape());
}

TEST(TorchGaps, AdaptivePool3dOfWholeDepthIsPool2dOfTheDepthReduction) {
  manual_seed(5);
  const Tensor x = randn({2, 3, 4, 5, 7});
  expect_values(adaptive_avg_pool3d(x, {1, 2, 3}).select(2, 0), values(adaptive_avg_pool2d(x.mean({2}), {2, 3})), 1e-6);
  const auto [mx, at] = adaptive_max_pool3d_with_indices(x, {1, 2, 3});
  expect_values(mx.select(2, 0), values(adaptive_max_pool2d(x.amax({2}), {2, 3})), 0);
  expect_values(mx, values(x.reshape({2, 3, -1}).gather(2, at.reshape({2, 3, -1}))), 0);
}

TEST(TorchGaps, ScatterReduceProdAmaxAmin) {
  const Tensor x = tensor({1.0, 2.0, 3.0}), src = tensor({4.0, -1.0, 5.0, 0.5}), index = tensor({0, 0, 2, 2});
  expect_values(scatter_reduce(x, 0, index, src, "prod"), {-4.0, 2.0, 7.5}, 0);
  expect_values(scatter_reduce(x, 0, index, src, "amax", false), {4.0, 2.0, 5.0}, 0);
  expect_values(scatter_reduce(x, 0, index, src, "amin"), {-1.0, 2.0, 0.5}, 0);
}

TEST(TorchGaps, EmbeddingBagSumsItsBagsRows) {
  manual_seed(2);
  nn::EmbeddingBag bag(10, 3, std::nullopt, 2.0, false, "sum");
  const Tensor& w = bag->parameter("weight");
  const Tensor out = bag(tensor({1, 4, 4, 7, 2}), tensor({0, 3}));
  expect_values(out[0], values(w[1] + w[4] + w[4]), 1e-6);
  expect_values(out[1], values(w[7] + w[2]), 1e-6);
  expect_values(F::embedding_bag(tensor({{1, 4}, {7, 2}}), w, std::nullopt, {}, 2.0, false, "max")[1],
                values(maximum(w[7], w[2])), 0);
}

TEST(TorchGaps, CtcLossOfOneStepIsTheLabelsLogProbability) {
  manual_seed(3);
  const Tensor lp = randn({1, 2, 4}).log_softmax(2);  // one step: the only alignment is the label itself
  const Tensor loss = nn::CTCLoss(0, "none")(lp, tensor({{3}, {1}}), tensor({1, 1}), tensor({1, 1}));
  expect_values(loss, {-values(lp[0][0])[3], -values(lp[0][1])[1]}, 1e-6);
}

TEST(TorchGaps, HistogramddOfOneDimIsHistogram) {
  manual_seed(2);
  const Tensor x = randn({30, 1}), w = rand({30});
  const auto [hist, edges] = histogramdd(x, std::vector<int64_t>{5}, std::nullopt, w, true);
  const auto [want, want_edges] = histogram(x.reshape({-1}), 5, std::nullopt, w, true);
  ASSERT_EQ(edges.size(), 1u);
  expect_values(edges[0], values(want_edges), 0);
  expect_values(hist, values(want), 1e-6);
  // two dims: the counts of the points' bin pairs; the last bin holds its right edge
  const Tensor pts = tensor({0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 0.5, 2.0}).reshape({4, 2});
  const auto [h2, e2] = histogramdd(pts, std::vector<Tensor>{tensor({0.0, 1.0, 2.0}), tensor({0.0, 1.0, 2.0})});
  expect_values(h2, {1, 1, 0, 2}, 0);
}

TEST(TorchGaps, BatchNormResetRunningStats) {
  nn::BatchNorm1d bn(3);
  bn->momentum() = std::nullopt;  // a cumulative average, as torch's momentum=None
  bn->train();
  bn(randn({8, 3}));
  EXPECT_EQ(bn->buffer("num_batches_tracked").item<int64_t>(), 1);
  bn->reset_running_stats();
  expect_values(bn->buffer("running_var"), {1, 1, 1}, 0);
  EXPECT_EQ(bn->buffer("num_batches_tracked").item<int64_t>(), 0);
}

}  // namespace
}  // namespace ug
