// The C++ face of mixed precision and memory control: AutocastGuard, GradScaler, the memory
// limit, and the hooks that activation checkpointing and the profiler build on. Values are
// compared against what the same computation gives in float32 (autocast) or by hand.
#include <gtest/gtest.h>

#include "test_util.h"
#include "ug/graph/profiler.h"

namespace ug {
namespace {

TEST(Autocast, GuardLowersProductsAndRestores) {
  Tensor a = randn({4, 8}), b = randn({8, 3});
  {
    AutocastGuard amp(DeviceType::CPU, DType::BFloat16);
    EXPECT_TRUE(autocast::is_enabled());
    Tensor y = matmul(a, b);
    EXPECT_EQ(y.dtype(), DType::BFloat16);
    // The same product as casting by hand outside autocast: the casts are ordinary ops.
    Tensor by_hand;
    {
      AutocastGuard off(DeviceType::CPU, DType::BFloat16, false);
      by_hand = matmul(a.to(DType::BFloat16), b.to(DType::BFloat16));
    }
    EXPECT_EQ(test::values(y), test::values(by_hand));
    EXPECT_EQ(softmax(y, -1).dtype(), DType::Float32);
  }
  EXPECT_FALSE(autocast::is_enabled());
  EXPECT_EQ(matmul(a, b).dtype(), DType::Float32);
}

TEST(Autocast, GradientsInTheParametersDtype) {
  Tensor w = randn({3, 5}).requires_grad_(true);
  Tensor x = randn({2, 5});
  Tensor loss;
  {
    AutocastGuard amp;
    loss = linear(x, w).sum();
  }
  EXPECT_EQ(loss.dtype(), DType::Float32);
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::Float32);
  // d(sum(x w^T))/dw[i][j] = sum_b x[b][j]: the product of the bfloat16 copies, summed in
  // float32 and rounded to bfloat16 once, as the forward's product is.
  Tensor expected = x.to(DType::BFloat16).to(DType::Float32).sum(Dims{0}).to(DType::BFloat16);
  test::expect_values(w.grad()[0], test::values(expected), 0.0);
}

TEST(Autocast, ARegionThatEndsInsideAnExclusionLeavesCastingOff) {
  // Backward runs under an ExcludeGuard; a region opened there casts until it ends, then the
  // exclusion holds again (before, its end recounted the enabled regions and cast again).
  Tensor a = randn({4, 4});
  AutocastGuard outer(DeviceType::CPU, DType::BFloat16);
  {
    autocast::ExcludeGuard backward;
    { AutocastGuard off(DeviceType::CPU, DType::BFloat16, false); }
    EXPECT_EQ(matmul(a, a).dtype(), DType::Float32);
    {
      AutocastGuard custom_bwd(DeviceType::CPU, DType::BFloat16);
      EXPECT_EQ(matmul(a, a).dtype(), DType::BFloat16);
    }
    EXPECT_EQ(matmul(a, a).dtype(), DType::Float32);
  }
  EXPECT_EQ(matmul(a, a).dtype(), DType::BFloat16);
}

TEST(GradScaler, SkipsOverflowAndBacksOff) {
  Tensor w = ones({2}).requires_grad_(true);
  optim::SGD opt(std::vector<Tensor>{w}, optim::SGDOptions(1.0));
  amp::GradScaler scaler({.init_scale = 4.0, .growth_interval = 2});
  scaler.scale((w * 3.0).sum()).backward();
  {
    NoGradGuard no_grad;
    Tensor(w.grad()).fill_(std::numeric_limits<double>::infinity());
  }
  EXPECT_FALSE(scaler.step(opt).has_value());
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 2.0);
  test::expect_tensor(w, {2}, {1.0, 1.0});
  for (int i = 0; i < 2; ++i) {
    opt.zero_grad();
    scaler.scale((w * 3.0).sum()).backward();
    scaler.step(opt);
    scaler.update();
  }
  test::expect_tensor(w, {2}, {-5.0, -5.0});  // two steps of lr * 3
  EXPECT_EQ(scaler.get_scale(), 4.0);         // grew after growth_interval good steps
}

TEST(LossScaleOptimizer, UnscalesSkipsOverflowAndGrowsAsKeras) {
  // Keras's SGD (var -= lr * g) behind the scale: w = 1, gradient of 3 w per element.
  Tensor w = ones({2});
  optim::keras::LossScaleOptimizer opt(std::make_shared<optim::keras::SGD>(optim::keras::SGDOptions(1.0)), 4.0, 2);
  auto gradient = [&](double value) { return opt.scale_loss(full({2}, value)); };
  opt.apply_gradients({{gradient(3.0), w}});
  test::expect_tensor(w, {2}, {-2.0, -2.0});  // unscaled: 1 - 3
  opt.apply_gradients({{gradient(std::numeric_limits<double>::infinity()), w}});
  test::expect_tensor(w, {2}, {-2.0, -2.0});  // skipped
  EXPECT_EQ(opt.dynamic_scale().item<double>(), 2.0);
  EXPECT_EQ(opt.inner_optimizer().iterations(), 1);
  opt.apply_gradients({{gradient(1.0), w}});
  opt.apply_gradients({{gradient(1.0), w}});
  test::expect_tensor(w, {2}, {-4.0, -4.0});
  EXPECT_EQ(opt.dynamic_scale().item<double>(), 4.0);  // doubled after 2 finite steps
}

TEST(MemoryLimit, OverLimitRaisesNamingTheOp) {
  Allocator& a = allocator_for(Device{});
  Tensor x = randn({64, 64});
  a.set_limit(a.stats().allocated + 1024);
  try {
    Tensor y = matmul(x, x);
    a.set_limit(0);
    FAIL() << "no error";
  } catch (const OutOfMemoryError& e) {
    a.set_limit(0);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[matmul]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float32 tensor of shape [1, 64, 64]"), std::string::npos) << msg;
  }
  EXPECT_EQ(matmul(x, x).shape(), Shape({64, 64}));
  EXPECT_GE(a.stats().num_ooms, 1);
}

TEST(SavedTensorHooks, PackAndUnpackSeeEverySavedTensor) {
  int packed = 0, unpacked = 0;
  auto hooks = std::make_shared<SavedTensorHooks>(SavedTensorHooks{[&](const Tensor& t) -> std::any {
                                                                     ++packed;
                                                                     return t.detach().clone();
                                                                   },
                                                                   [&](const std::any& v) {
                                                                     ++unpacked;
                                                                     return std::any_cast<Tensor>(v);
                                                                   }});
  Tensor x = randn({3}).requires_grad_(true);
  Tensor y;
  {
    SavedTensorHooksGuard guard(hooks);
    y = (x * x).exp().sum();
  }
  y.backward();
  EXPECT_GT(packed, 0);
  EXPECT_EQ(packed, unpacked);
  Tensor expected = x.detach() * 2 * (x.detach() * x.detach()).exp();
  test::expect_values(x.grad(), test::values(expected), 1e-5);
}

TEST(Profiling, EveryOpCallBecomesASpan) {
  Tensor a = randn({4, 4});
  graph::profiling::start({.record_shapes = true});
  Tensor y = linear(a, a);
  std::vector<graph::profiling::OpEvent> events = graph::profiling::stop();
  ASSERT_FALSE(events.empty());
  const graph::profiling::OpEvent& outer = events.back();  // the outermost call ends last
  EXPECT_EQ(outer.name, "linear");
  EXPECT_EQ(outer.depth, 0);
  ASSERT_EQ(outer.input_shapes.size(), 3u);
  EXPECT_EQ(outer.input_shapes[0], Shape({4, 4}));
  EXPECT_EQ(outer.input_shapes[2], Shape({-1}));  // no bias
  EXPECT_LE(outer.start_ns, outer.end_ns);
  EXPECT_TRUE(graph::profiling::stop().empty());
  Tensor z = linear(a, a);  // profiling off: nothing collected
  graph::profiling::start({});
  EXPECT_TRUE(graph::profiling::stop().empty());
}

}  // namespace
}  // namespace ug
