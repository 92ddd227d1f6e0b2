// Autograd from C++: hand-computed gradients of small expressions (the articles' example
// y = x^2 + 2x + 1 at x = 3 in every style), accumulation, retained and freed graphs,
// hooks, grad modes, GradientTape, the functional transforms, in-place checks, memory
// released after backward, and central finite differences in float64 for a few ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ug/ug.h"
#include "test_util.h"

namespace {

using ug::Dims;
using ug::Tensor;
using ug::Tensors;

using ug::test::values;

double value(const Tensor& t) { return t.item<double>(); }

/** For results of transcendental kernels, which may differ from libm in the last bit. */
void expect_close(const Tensor& t, const std::vector<double>& want) {
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * std::abs(want[i])) << "at " << i;
}

Tensor f64(const ug::NestedList& v) { return ug::tensor(v, {.dtype = ug::float64}); }

Tensor poly(const Tensor& x) { return x.pow(2) + 2 * x + 1; }  // the articles' y = x^2 + 2x + 1

// ---- imperative backward --------------------------------------------------------------

TEST(Autograd, ArticlesExampleBackwardAndSecondDerivative) {
  Tensor x = ug::scalar_tensor(3.0).requires_grad_();
  poly(x).backward();
  EXPECT_EQ(value(x.grad()), 8.0);

  Tensor x2 = ug::scalar_tensor(3.0).requires_grad_();
  Tensor dy = ug::autograd::grad({poly(x2)}, {x2}, {}, {}, /*create_graph=*/true)[0];
  EXPECT_EQ(value(dy), 8.0);
  EXPECT_TRUE(dy.requires_grad());
  EXPECT_EQ(value(ug::autograd::grad({dy}, {x2})[0]), 2.0);
  EXPECT_FALSE(x2.grad().defined());  // autograd::grad leaves .grad alone
}

TEST(Autograd, SmallExpressionsByHand) {
  // f = sum(a * b + exp(c)): df/da = b, df/db = a, df/dc = exp(c).
  Tensor a = f64({1.0, 2.0}).requires_grad_();
  Tensor b = f64({3.0, -4.0}).requires_grad_();
  Tensor c = f64({0.0, 1.0}).requires_grad_();
  (a * b + c.exp()).sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3.0, -4.0}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{1.0, 2.0}));
  expect_close(c.grad(), {1.0, std::exp(1.0)});

  // Broadcasting sums the gradient back: d/dw sum(x @ w + bias) with x 2x2, bias of shape (2).
  Tensor x = f64({{1.0, 2.0}, {3.0, 4.0}});
  Tensor w = f64({{1.0, 0.0}, {0.0, 1.0}}).requires_grad_();
  Tensor bias = f64({0.5, -0.5}).requires_grad_();
  (x.matmul(w) + bias).sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{4.0, 4.0, 6.0, 6.0}));  // column sums of x
  EXPECT_EQ(values(bias.grad()), (std::vector<double>{2.0, 2.0}));
}

TEST(Autograd, LeafFlagsAndDetach) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2;
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  EXPECT_TRUE(y.grad_fn());
  EXPECT_FALSE(y.detach().requires_grad());
  EXPECT_TRUE(y.detach().is_leaf());
  EXPECT_THROW(ug::tensor({1, 2}).requires_grad_(), ug::RuntimeError);  // integer dtype
  EXPECT_THROW(y.requires_grad_(false), ug::RuntimeError);              // not a leaf
}

TEST(Autograd, GradientsAccumulateAcrossCalls) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  for (int i = 0; i < 3; ++i) (x * x).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6.0, 12.0}));
  x.set_grad(Tensor());
  (x * 5).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{5.0, 5.0}));
}

TEST(Autograd, BackwardWithCreateGraphMakesADifferentiableGrad) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  (x * x * x).sum().backward({}, {}, /*create_graph=*/true);
  Tensor g = x.grad();
  EXPECT_EQ(values(g), (std::vector<double>{3.0, 12.0}));
  ASSERT_TRUE(g.requires_grad());
  x.set_grad(Tensor());
  g.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6.0, 12.0}));
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor y = (x.exp() * 2).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  expect_close(x.grad(), {4 * std::exp(1.0), 4 * std::exp(2.0)});
  EXPECT_THROW(y.backward(), ug::RuntimeError);
}

TEST(Autograd, BackwardErrors) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  EXPECT_THROW((x * 2).backward(), ug::RuntimeError);  // more than one element, no gradient given
  (x * 2).backward(f64({1.0, 10.0}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2.0, 20.0}));
  EXPECT_THROW(f64({1.0}).sum().backward(), ug::RuntimeError);  // nothing requires grad

  Tensor w = f64({1.0}).requires_grad_();
  Tensor y = (x * 2).sum();
  EXPECT_THROW(ug::autograd::grad({y}, {x, w}, {}, true), ug::RuntimeError);  // w is unused
  Tensors g = ug::autograd::grad({y}, {x, w}, {}, {}, false, /*allow_unused=*/true);
  EXPECT_EQ(values(g[0]), (std::vector<double>{2.0, 2.0}));
  EXPECT_FALSE(g[1].defined());
}

TEST(Autograd, BackwardWithInputsAccumulatesOnlyIntoThem) {
  // torch's backward(inputs=...): y = x^2 w, so x.grad gets 2 x w and w (not asked for) nothing.
  Tensor x = f64({1.0, 2.0}).requires_grad_(), w = f64({3.0, 4.0}).requires_grad_();
  ug::autograd::backward({(x * w * x).sum()}, {}, {}, false, {x});
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6.0, 16.0}));
  EXPECT_FALSE(w.grad().defined());
  (x * w * x).sum().backward({}, {}, false, {x});  // Tensor::backward takes them too; accumulates
  EXPECT_EQ(values(x.grad()), (std::vector<double>{12.0, 32.0}));
  EXPECT_FALSE(w.grad().defined());

  // A non-leaf input gets its gradient too, once even when it retains its grad.
  for (bool retain : {false, true}) {
    Tensor h = x * w;
    if (retain) h.retain_grad();
    ug::autograd::backward({(h * x).sum()}, {}, {}, false, {h});
    EXPECT_EQ(values(h.grad()), (std::vector<double>{1.0, 2.0})) << retain;
  }
  EXPECT_EQ(values(x.grad()), (std::vector<double>{12.0, 32.0}));
  EXPECT_FALSE(w.grad().defined());

  Tensor unused = f64({1.0}).requires_grad_();
  ug::autograd::backward({(x * 2).sum()}, {}, {}, false, {unused, x});  // an unused input is skipped
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_EQ(values(x.grad()), (std::vector<double>{14.0, 34.0}));
  try {
    ug::autograd::backward({(x * 2).sum()}, {}, {}, false, {f64({1.0})});
    ADD_FAILURE() << "an input that does not require grad must raise";
  } catch (const ug::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("[backward] input 0 does not require grad"), std::string::npos) << e.what();
  }
}

// ---- hooks and retain_grad ------------------------------------------------------------

TEST(Autograd, HooksAndRetainGrad) {
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x * 2;
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  std::vector<double> seen;
  y.register_hook([&seen](const Tensor& g) {
    seen = values(g);
    return Tensor();  // keep the gradient as it is
  });
  x.register_hook([](const Tensor& g) { return g * 10; });
  const size_t removed = x.register_hook([](const Tensor& g) { return g * 1000; });
  x.remove_hook(removed);
  (y * y).sum().backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{4.0, 8.0, 12.0}));  // d/dy sum(y^2) = 2y
  EXPECT_EQ(seen, (std::vector<double>{4.0, 8.0, 12.0}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{80.0, 160.0, 240.0}));  // 10 * 2 * 2y
  EXPECT_THROW(f64({1.0}).register_hook([](const Tensor& g) { return g; }), ug::RuntimeError);
}

TEST(Autograd, LeafHooksRunUnderAutogradGrad) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  x.register_hook([](const Tensor& g) { return g * 10; });
  EXPECT_EQ(values(ug::autograd::grad({(x * x).sum()}, {x})[0]), (std::vector<double>{20.0, 40.0}));
}

TEST(Autograd, PostAccumulateGradHooksSeeTheSumInGrad) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  std::vector<std::vector<double>> seen;
  ug::autograd::register_post_accumulate_grad_hook(
      x, [&seen](const Tensor& leaf) { seen.push_back(values(leaf.grad())); });
  const size_t removed = ug::autograd::register_post_accumulate_grad_hook(x, [](const Tensor&) { FAIL(); });
  ug::autograd::remove_post_accumulate_grad_hook(x, removed);
  (x * x).sum().backward();
  (x * 3).sum().backward();
  (x * x).sum().backward({}, {}, false, {x});  // backward(inputs=...) accumulates too
  ug::autograd::grad({(x * x).sum()}, {x});    // returns the gradient: .grad untouched, no call
  EXPECT_EQ(seen, (std::vector<std::vector<double>>{{2.0, 4.0}, {5.0, 7.0}, {7.0, 11.0}}));
  EXPECT_THROW(ug::autograd::register_post_accumulate_grad_hook(x * 2, [](const Tensor&) {}), ug::RuntimeError);
}

TEST(Autograd, HookOnANonLeafReplacesTheGradient) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor y = x * 3;
  y.register_hook([](const Tensor& g) { return g * 0.5; });
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1.5, 1.5}));
}

// ---- grad modes -----------------------------------------------------------------------

TEST(Autograd, NoGradAndEnableGradGuards) {
  Tensor x = f64({1.0}).requires_grad_();
  ASSERT_TRUE(ug::GradMode::is_enabled());
  {
    ug::NoGradGuard no_grad;
    EXPECT_FALSE(ug::GradMode::is_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
    {
      ug::EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE(ug::GradMode::is_enabled());
    x.add_(1);  // a leaf may change in place when nothing records
  }
  EXPECT_TRUE(ug::GradMode::is_enabled());
  EXPECT_EQ(value(x), 2.0);
  EXPECT_THROW(x.add_(1), ug::RuntimeError);  // but not while recording
}

// ---- GradientTape ---------------------------------------------------------------------

TEST(GradientTape, ArticlesExampleWithWatch) {
  Tensor x = ug::scalar_tensor(3.0);
  ug::GradientTape tape;
  Tensor y;
  {
    auto recording = tape.record();
    tape.watch(x);
    y = poly(x);
  }
  EXPECT_EQ(value(tape.gradient(y, x)), 8.0);  // the one-target, one-source overload
  EXPECT_FALSE(x.requires_grad());             // watching lends requires_grad only while recording
}

TEST(GradientTape, NonPersistentTapeAnswersOnce) {
  Tensor x = f64({1.0, 2.0});
  ug::GradientTape tape;
  Tensor y;
  {
    auto recording = tape.record();
    tape.watch(x);
    y = (x * x).sum();
  }
  EXPECT_EQ(values(tape.gradient(Tensors{y}, Tensors{x})[0]), (std::vector<double>{2.0, 4.0}));
  EXPECT_THROW(tape.gradient(Tensors{y}, Tensors{x}), ug::RuntimeError);
}

TEST(GradientTape, PersistentTapeAnswersAgain) {
  Tensor w = f64({1.0, 2.0});
  Tensor unused = f64({5.0});
  ug::GradientTape tape(/*persistent=*/true);
  Tensor squares, y, z;
  {
    auto recording = tape.record();
    tape.watch(w);
    tape.watch(unused);
    squares = w * w;
    y = squares.sum();
    z = y * 3;
    auto paused = tape.stop_recording();
    EXPECT_FALSE((w * 2).requires_grad());
  }
  EXPECT_EQ(values(tape.gradient(Tensors{y}, Tensors{w})[0]), (std::vector<double>{2.0, 4.0}));
  Tensors g = tape.gradient(Tensors{z}, Tensors{w, unused});
  EXPECT_EQ(values(g[0]), (std::vector<double>{6.0, 12.0}));
  EXPECT_FALSE(g[1].defined());
  // output_gradients weight the targets: 2w * (1, 3).
  Tensors weighted = tape.gradient(Tensors{squares}, Tensors{w}, Tensors{f64({1.0, 3.0})});
  EXPECT_EQ(values(weighted[0]), (std::vector<double>{2.0, 12.0}));
  EXPECT_FALSE(w.grad().defined());
}

TEST(GradientTape, NestedTapesGiveTheSecondDerivative) {
  Tensor x = ug::scalar_tensor(3.0, {.dtype = ug::float64});
  ug::GradientTape outer, inner;
  Tensor dy;
  {
    auto outer_recording = outer.record();
    outer.watch(x);
    Tensor y;
    {
      auto inner_recording = inner.record();
      inner.watch(x);
      y = x * x * x;
    }
    dy = inner.gradient(Tensors{y}, Tensors{x})[0];
  }
  EXPECT_EQ(value(dy), 27.0);                                          // 3x^2
  EXPECT_EQ(value(outer.gradient(Tensors{dy}, Tensors{x})[0]), 18.0);  // 6x
  EXPECT_FALSE(x.requires_grad());
}

// ---- functional transforms ------------------------------------------------------------

TEST(Transforms, GradAndValueAndGrad) {
  Tensor x = ug::scalar_tensor(3.0);
  EXPECT_EQ(value(ug::grad(poly)(x)), 8.0);
  auto [y, dy] = ug::value_and_grad(poly)(x);
  EXPECT_EQ(value(y), 16.0);
  EXPECT_EQ(value(dy), 8.0);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_THROW(ug::grad([](const Tensor& v) { return v * 2; })(f64({1.0, 2.0})), ug::TypeError);
}

TEST(Transforms, GradComposes) {
  Tensor x = ug::scalar_tensor(3.0);
  EXPECT_EQ(value(ug::grad(ug::grad(poly))(x)), 2.0);
  EXPECT_EQ(value(ug::grad(ug::grad(ug::grad(poly)))(x)), 0.0);
  auto cube = [](const Tensor& v) { return v * v * v; };
  EXPECT_EQ(value(ug::grad(ug::grad(cube))(ug::scalar_tensor(2.0))), 12.0);  // 6x
}

TEST(Transforms, TransformsArePure) {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor g = ug::grad([](const Tensor& v) { return (v * v).sum(); })(x);
  EXPECT_EQ(values(g), (std::vector<double>{2.0, 4.0}));
  EXPECT_FALSE(x.grad().defined());
  Tensor w = f64({3.0});
  ug::grad([&w](const Tensor& v) { return (v * w).sum(); })(f64({1.0}));
  EXPECT_FALSE(w.requires_grad());
}

TEST(Transforms, Hessian) {
  // f = x0^2 x1 + sum(x^3): H = [[2 x1 + 6 x0, 2 x0], [2 x0, 6 x1]].
  auto f = [](const Tensor& x) { return x[0] * x[0] * x[1] + x.pow(3).sum(); };
  Tensor h = ug::hessian(f, f64({1.0, 2.0}));
  EXPECT_EQ(h.shape(), ug::Shape({2, 2}));
  EXPECT_EQ(values(h), (std::vector<double>{10.0, 2.0, 2.0, 12.0}));
}

TEST(Transforms, HessianOfOneArgumentOfSeveralOutputs) {
  // f(x, c) = (c * sum(x^3), x0 x1): H0 = c diag(6 x), H1 = [[0, 1], [1, 0]]; c is held fixed.
  ug::TensorFn f = [](const Tensors& a) { return Tensors{a[1] * a[0].pow(3).sum(), (a[0][0] * a[0][1]).reshape({1})}; };
  Tensors h = ug::hessian(f, {f64({1.0, 2.0}), f64({0.5})}, 0);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].shape(), ug::Shape({1, 2, 2}));
  EXPECT_EQ(values(h[0]), (std::vector<double>{3.0, 0.0, 0.0, 6.0}));
  EXPECT_EQ(h[1].shape(), ug::Shape({1, 2, 2}));
  EXPECT_EQ(values(h[1]), (std::vector<double>{0.0, 1.0, 1.0, 0.0}));
  EXPECT_THROW(ug::hessian([](const Tensor& x) { return x * 2; }, f64({1.0, 2.0})), ug::ValueError);
}

TEST(Transforms, JacrevAndJacfwd) {
  // f_i = x_i * sum(x): J_ij = [i == j] * sum(x) + x_i.
  ug::TensorFn f = [](const Tensors& a) { return Tensors{a[0] * a[0].sum()}; };
  const std::vector<double> want{7, 1, 1, 2, 8, 2, 3, 3, 9};
  for (const Tensor& j : {ug::jacrev(f, {f64({1.0, 2.0, 3.0})})[0], ug::jacfwd(f, {f64({1.0, 2.0, 3.0})})[0]}) {
    EXPECT_EQ(j.shape(), ug::Shape({3, 3}));
    EXPECT_EQ(values(j), want);
  }
  // The second argument: d(a * b)/db = diag(a).
  ug::TensorFn g = [](const Tensors& a) { return Tensors{a[0] * a[1]}; };
  Tensors args{f64({2.0, 5.0}), f64({1.0, 1.0})};
  EXPECT_EQ(values(ug::jacrev(g, args, 1)[0]), (std::vector<double>{2, 0, 0, 5}));
  EXPECT_EQ(values(ug::jacfwd(g, args, 1)[0]), (std::vector<double>{2, 0, 0, 5}));
}

TEST(Transforms, VjpAndJvp) {
  ug::TensorFn f = [](const Tensors& a) { return Tensors{a[0] * a[0]}; };
  auto [out, pullback] = ug::vjp(f, {f64({1.0, 2.0})});
  EXPECT_EQ(values(out[0]), (std::vector<double>{1.0, 4.0}));
  EXPECT_EQ(values(pullback({f64({1.0, 10.0})})[0]), (std::vector<double>{2.0, 40.0}));
  EXPECT_EQ(values(pullback({f64({1.0, 1.0})})[0]), (std::vector<double>{2.0, 4.0}));  // callable again
  auto [primal_out, tangent_out] = ug::jvp(f, {f64({1.0, 2.0})}, {f64({3.0, 1.0})});
  EXPECT_EQ(values(primal_out[0]), (std::vector<double>{1.0, 4.0}));
  EXPECT_EQ(values(tangent_out[0]), (std::vector<double>{6.0, 4.0}));  // 2x * t
}

TEST(Transforms, JvpFollowsWritesIntoViews) {
  // y = 2x; early = y[0]; y[1] *= x[0]; y.mul_(3): the tangents (t = 1) as the values'
  // derivatives, torch.func.jvp's: y = [6 x0, 6 x0 x1], early = 6 x0.
  ug::TensorFn f = [](const Tensors& a) {
    Tensor y = a[0] * 2;
    Tensor early = y.select(0, 0);
    y.select(0, 1).mul_(a[0].select(0, 0));
    y.mul_(3);
    return Tensors{y, early};
  };
  auto [out, tangents] = ug::jvp(f, {f64({2.0, 5.0})}, {f64({1.0, 1.0})});
  EXPECT_EQ(values(out[0]), (std::vector<double>{12.0, 60.0}));
  EXPECT_EQ(values(tangents[0]), (std::vector<double>{6.0, 42.0}));  // d(6 x0 x1) = 6 x1 + 6 x0
  EXPECT_EQ(values(tangents[1]), (std::vector<double>{6.0}));        // the early view's, read anew
}

// ---- in-place checks and memory -------------------------------------------------------

TEST(Autograd, InPlaceChangeOfASavedTensorThrowsAtBackward) {
  Tensor w = f64({1.0, 2.0}).requires_grad_();
  Tensor a = f64({3.0, 4.0});
  Tensor y = (w * a).sum();  // mul saves a for w's gradient
  a.add_(1);
  EXPECT_THROW(y.backward(), ug::RuntimeError);

  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor e = x.exp();
  Tensor z = e * 2;
  e.add_(1);  // exp's backward needs its output as it was
  EXPECT_THROW((e * z).sum().backward(), ug::RuntimeError);
}

TEST(Autograd, InPlaceWritesIntoViewsReachTheBaseAndEveryViewOfIt) {
  // y = 2x; y[0] *= x[1]; a view taken before a write through another view reads the new
  // elements, and its gradient says so (torch: x.grad = [2 + 2 x1, 2 + 2 x0, 2], doubled by a).
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x * 2;
  Tensor a = y.slice(0, 0, 2);
  y.select(0, 0).mul_(x.select(0, 1));  // y0 = 2 x0 x1 = 4
  (a.sum() + y.sum()).backward();       // 2 (y0 + y1) + y2
  EXPECT_EQ(values(x.grad()), (std::vector<double>{8.0, 8.0, 2.0}));

  Tensor w = f64({1.0, 2.0}).requires_grad_();
  EXPECT_THROW(w.select(0, 0).mul_(2), ug::RuntimeError);  // a view of a leaf that requires grad
}

TEST(Autograd, AWriteIntoAViewOfATensorWithoutGradGivesItHistory) {
  // buf = zeros(2, 2); buf[:, 0] += w; buf[1] *= w: buf = [[w0, 0], [w1 w0, 0]], as torch's
  // CopySlices gives it
  Tensor w = f64({3.0, 5.0}).requires_grad_();
  Tensor buf = ug::zeros({2, 2}, {.dtype = ug::float64});
  buf.select(1, 0).add_(w);
  EXPECT_TRUE(buf.requires_grad());
  buf.select(0, 1).mul_(w);
  buf.sum().backward();  // w0 + w1 w0: (1 + w1, w0)
  EXPECT_EQ(values(w.grad()), (std::vector<double>{6.0, 3.0}));
}

TEST(Autograd, GraphMemoryIsReleasedAfterBackward) {
  ug::Allocator& allocator = ug::allocator_for(ug::Device());
  Tensor x = ug::randn({256, 256}).requires_grad_();
  const int64_t base = allocator.stats().allocated;
  const auto block = [](const Tensor& t) {
    return static_cast<int64_t>(ug::CachingCpuAllocator::round_size(t.nbytes()));
  };
  Tensor y = (x.exp() * x.sin()).tanh().sum();
  EXPECT_GT(allocator.stats().allocated, base + 3 * block(x));  // exp, sin and tanh are saved
  y.backward();
  EXPECT_EQ(allocator.stats().allocated, base + block(x.grad()) + block(y));  // saved tensors freed
  y = Tensor();
  EXPECT_EQ(allocator.stats().allocated, base + block(x.grad()));
}

// ---- finite differences ---------------------------------------------------------------

/** Checks d(sum(f(inputs) * w))/d(inputs) against central differences, for random w. The
 *  inputs must be float64. */
void expect_matches_finite_differences(const ug::TensorFn& f, const Tensors& inputs) {
  constexpr double eps = 1e-6;
  Tensors leaves;
  for (const Tensor& t : inputs) leaves.push_back(t.detach().clone().requires_grad_());
  Tensor out = f(leaves)[0];
  Tensor w = ug::randn(Dims(out.shape().begin(), out.shape().end()), {.dtype = ug::float64});
  Tensors analytic = ug::autograd::grad({(out * w).sum()}, leaves);
  auto objective = [&] {
    ug::NoGradGuard no_grad;
    return value((f(leaves)[0] * w).sum());
  };
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::vector<double> want = values(analytic[i]);
    double* p = leaves[i].data_ptr<double>();
    for (int64_t k = 0; k < leaves[i].numel(); ++k) {
      const double saved = p[k];
      p[k] = saved + eps;
      const double plus = objective();
      p[k] = saved - eps;
      const double minus = objective();
      p[k] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      EXPECT_NEAR(want[k], numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << "input " << i << ", element " << k;
    }
  }
}

Tensor random64(const Dims& shape) { return ug::randn(shape, {.dtype = ug::float64}); }

class FiniteDifferences : public ::testing::Test {
 protected:
  void SetUp() override { ug::manual_seed(0); }
};

TEST_F(FiniteDifferences, ExpAndTanh) {
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].exp()}; }, {random64({3, 4})});
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].tanh()}; }, {random64({3, 4})});
  // A non-contiguous input.
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].t().tanh() * a[0].t().exp()}; },
                                    {random64({4, 3})});
}

TEST_F(FiniteDifferences, Matmul) {
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].matmul(a[1])}; },
                                    {random64({3, 4}), random64({4, 2})});
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].matmul(a[1])}; },
                                    {random64({2, 3, 4}), random64({4})});
}

TEST_F(FiniteDifferences, Softmax) {
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].softmax(1)}; }, {random64({3, 5})});
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].softmax(0)}; }, {random64({3, 5})});
}

TEST_F(FiniteDifferences, SumOverDims) {
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].sum({0, 2})}; }, {random64({2, 3, 4})});
  expect_matches_finite_differences([](const Tensors& a) { return Tensors{a[0].sum({1}, true) * a[0]}; },
                                    {random64({2, 3, 4})});
}

TEST_F(FiniteDifferences, GatherAndIndexSelect) {
  Tensor index = ug::tensor({{0, 2, 2}, {1, 0, 3}}, {.dtype = ug::int64});
  expect_matches_finite_differences([&](const Tensors& a) { return Tensors{a[0].gather(1, index)}; },
                                    {random64({2, 4})});
  Tensor rows = ug::tensor({2, 0, 2}, {.dtype = ug::int64});  // a repeated index accumulates
  expect_matches_finite_differences([&](const Tensors& a) { return Tensors{a[0].index_select(0, rows)}; },
                                    {random64({3, 2})});
}

TEST_F(FiniteDifferences, Cat) {
  expect_matches_finite_differences(
      [](const Tensors& a) {
        return Tensors{ug::cat({a[0], a[1].exp(), a[0]}, 1)};
      },
      {random64({2, 3}), random64({2, 1})});
}

}  // namespace

// ---- vmap --------------------------------------------------------------------------------

TEST(Vmap, BatchedRunMatchesPerExampleCalls) {
  ug::manual_seed(3);
  Tensor xs = ug::randn({5, 3, 4}, {.dtype = ug::float64});
  Tensor w = ug::randn({4, 2}, {.dtype = ug::float64});
  ug::TensorFn f = [](const Tensors& a) {
    Tensor h = (a[0].matmul(a[1]) + 1).tanh();
    return Tensors{h.softmax(-1).sum({0}), h.transpose(0, 1).reshape({-1}).cumsum(0)};
  };
  const int64_t before = ug::vmap_fallbacks();
  Tensors batched = ug::vmap(f, {xs, w}, {0, std::nullopt}, {});
  EXPECT_EQ(ug::vmap_fallbacks(), before);  // every op above has a batching rule
  for (int64_t b = 0; b < 5; ++b) {
    Tensors one = f({xs.select(0, b), w});
    for (size_t k = 0; k < one.size(); ++k) ug::test::expect_values(batched[k].select(0, b), values(one[k]), 1e-12);
  }
}

TEST(Vmap, InPlaceOpsOnBatchedValuesWriteThePhysicalTensor) {
  ug::manual_seed(6);
  Tensor xs = ug::randn({5, 3, 4}, {.dtype = ug::float64});
  Tensor w = ug::randn({4}, {.dtype = ug::float64});
  ug::TensorFn f = [&w](const Tensors& a) {
    Tensor h = a[0] * 2;
    h.add_(w).mul_(a[0]).tanh_();             // a batched value written with batched and unbatched ones
    h.select(0, 1).copy_(a[0].select(0, 2));  // through a view
    h.select(1, 0).fill_(0.5);
    h.masked_fill_(a[0] > 1.0, -1.0);  // a batched mask
    return Tensors{h.clamp_(-0.8, 0.9)};
  };
  const int64_t before = ug::vmap_fallbacks();
  Tensor batched = ug::vmap(f, {xs}, {0}, {})[0];
  EXPECT_EQ(ug::vmap_fallbacks(), before);  // each write has its batching rule
  for (int64_t b = 0; b < 5; ++b) ug::test::expect_values(batched.select(0, b), values(f({xs.select(0, b)})[0]), 0);
  // A mapped argument written in place is written in the caller's tensor, as torch.func.vmap does.
  Tensor arg = xs.clone();
  ug::vmap([](const Tensors& a) { return Tensors{Tensor(a[0]).mul_(3.0)}; }, {arg}, {1}, {});
  ug::test::expect_values(arg, values(xs * 3.0), 0);
  // One value per example cannot go into a tensor shared by all: refused, as torch does.
  Tensor shared = ug::zeros({3, 4}, {.dtype = ug::float64});
  EXPECT_THROW(ug::vmap([&shared](const Tensors& a) { return Tensors{shared.add_(a[0])}; }, {xs}, {0}, {}),
               ug::RuntimeError);
  ug::test::expect_values(shared, values(ug::zeros({3, 4}, {.dtype = ug::float64})), 0);
}

TEST(Vmap, ChecksOfInputValuesReadEveryExampleAtOnce) {
  ug::manual_seed(8);
  Tensor table = ug::randn({10, 3}, {.dtype = ug::float64});
  Tensor ids = ug::randint(0, 10, {4, 5});
  Tensor logits = ug::randn({4, 5, 3}, {.dtype = ug::float64});
  Tensor classes = ug::randint(0, 3, {4, 5});
  ug::TensorFn f = [&table](const Tensors& a) {
    namespace F = ug::nn::functional;
    return Tensors{ug::embedding(a[0], table), table.index_select(0, a[0]), F::cross_entropy(a[1], a[2])};
  };
  const int64_t before = ug::vmap_fallbacks();
  Tensors batched = ug::vmap(f, {ids, logits, classes}, {0, 0, 0}, {});
  EXPECT_EQ(ug::vmap_fallbacks(), before);  // the index and class checks batch
  for (int64_t b = 0; b < 4; ++b) {
    Tensors one = f({ids.select(0, b), logits.select(0, b), classes.select(0, b)});
    for (size_t k = 0; k < one.size(); ++k) ug::test::expect_values(batched[k].select(0, b), values(one[k]), 1e-15);
  }
  // A bad index in the last example alone raises the op's error.
  Tensor bad = ids.clone();
  bad.select(0, 3).select(0, 2).fill_(10);
  EXPECT_THROW(ug::vmap(f, {bad, logits, classes}, {0, 0, 0}, {}), ug::IndexError);
}

TEST(Vmap, UnbatchedOutputsAndAxisSize) {
  ug::manual_seed(5);
  Tensor xs = ug::randn({4, 3}, {.dtype = ug::float64});
  Tensor w = ug::randn({3}, {.dtype = ug::float64});
  ug::TensorFn f = [&w](const Tensors& a) { return Tensors{a[0] * w, w.sum()}; };
  // out_axes nullopt: an output that does not depend on the batch comes back as it is.
  Tensors out = ug::vmap(f, {xs}, {0}, {0, std::nullopt});
  EXPECT_EQ(out[1].shape(), ug::Shape{});
  EXPECT_DOUBLE_EQ(out[1].item<double>(), w.sum().item<double>());
  // ... and one that does is refused, in the batched run and in the per-example loop alike.
  ug::TensorFn batched_second = [](const Tensors& a) { return Tensors{a[0], a[0].sum()}; };
  EXPECT_THROW(ug::vmap(batched_second, {xs}, {0}, {0, std::nullopt}), ug::ValueError);
  ug::TensorFn looped = [](const Tensors& a) { return Tensors{a[0], a[0] * a[0].max().item<double>()}; };
  EXPECT_THROW(ug::vmap(looped, {xs}, {0}, {0, std::nullopt}), ug::ValueError);
  // axis_size: the batch size when no argument is mapped, checked against mapped ones.
  Tensors tiled = ug::vmap([](const Tensors& a) { return Tensors{a[0] * 2}; }, {w}, {std::nullopt}, {}, 5);
  EXPECT_EQ(tiled[0].shape(), (ug::Shape{5, 3}));
  for (int64_t b = 0; b < 5; ++b) ug::test::expect_values(tiled[0].select(0, b), values(w * 2), 0);
  EXPECT_THROW(ug::vmap(f, {xs}, {0}, {}, 3), ug::ValueError);
  EXPECT_THROW(ug::vmap(f, {xs}, {std::nullopt}, {}), ug::ValueError);
}

TEST(Vmap, PerExampleGradientsAndFallback) {
  ug::manual_seed(4);
  Tensor xs = ug::randn({6, 3}, {.dtype = ug::float64});
  Tensor w = ug::randn({3}, {.dtype = ug::float64});
  ug::TensorFn per_example_grad = [&w](const Tensors& a) {
    auto [out, grads] =
        ug::value_and_grad([&a](const Tensors& p) { return Tensors{(a[0] * p[0]).sin().sum()}; }, {w}, {0});
    return Tensors{grads[0]};
  };
  Tensors g = ug::vmap(per_example_grad, {xs}, {0}, {});
  for (int64_t b = 0; b < 6; ++b)
    ug::test::expect_values(g[0].select(0, b), values(xs.select(0, b) * (xs.select(0, b) * w).cos()), 1e-12);
  // A data-dependent op has no batching rule: vmap maps example by example instead.
  const int64_t before = ug::vmap_fallbacks();
  Tensors picked = ug::vmap([](const Tensors& a) { return Tensors{a[0] * a[0].max().item<double>()}; }, {xs}, {0}, {});
  EXPECT_EQ(ug::vmap_fallbacks(), before + 1);
  for (int64_t b = 0; b < 6; ++b)
    ug::test::expect_values(picked[0].select(0, b), values(xs.select(0, b) * xs.select(0, b).max().item<double>()),
                            1e-12);
}

TEST(Vmap, RandomnessSaysWhatDrawsFromTheGlobalGeneratorDo) {
  Tensor xs = ug::zeros({4, 3});
  ug::TensorFn noisy = [](const Tensors& a) { return Tensors{a[0] + ug::rand({3})}; };
  EXPECT_THROW(ug::vmap(noisy, {xs}, {0}, {}), ug::RuntimeError);  // Randomness::Error, torch's default
  ug::manual_seed(9);
  Tensor alone = ug::rand({3});
  ug::manual_seed(9);
  Tensor same = ug::vmap(noisy, {xs}, {0}, {}, std::nullopt, std::nullopt, ug::Randomness::Same)[0];
  for (int64_t b = 0; b < 4; ++b) EXPECT_TRUE(ug::equal(same.select(0, b), alone));
  // Different: one draw of [4, 3], as an unbatched draw of that shape from the same seed
  ug::manual_seed(9);
  Tensor all = ug::rand({4, 3});
  ug::manual_seed(9);
  Tensor different = ug::vmap(noisy, {xs}, {0}, {}, std::nullopt, std::nullopt, ug::Randomness::Different)[0];
  EXPECT_TRUE(ug::equal(different, all));
  // a key's draws follow the key under any randomness
  Tensor key = ug::random::key(1);
  Tensor keyed =
      ug::vmap([&key](const Tensors& a) { return Tensors{a[0] + ug::random::normal(key, {3})}; }, {xs}, {0}, {})[0];
  for (int64_t b = 0; b < 4; ++b) EXPECT_TRUE(ug::equal(keyed.select(0, b), ug::random::normal(key, {3})));
}

TEST(Vmap, GradOfVmapOfGrad) {
  // d/dxs sum_b sum_i d f(xs[b]) / dx_i: the sum over examples of the Hessian times ones,
  // for f(x) = sum(exp(x) + x^3) (exp's rule reads its saved output): exp(x) + 6x per element.
  // Once zeros: the gradient found inside vmap was cut off from the outer grad's input.
  ug::manual_seed(5);
  Tensor xs = ug::randn({4, 3}, {.dtype = ug::float64});
  auto f = [](const Tensor& x) { return (x.exp() + x * x * x).sum(); };
  auto outer = [&f](const Tensor& v) {
    ug::TensorFn per_example = [&f](const Tensors& a) { return Tensors{ug::grad(f)(a[0])}; };
    return ug::vmap(per_example, {v}, {0}, {})[0].sum();
  };
  const int64_t before = ug::vmap_fallbacks();
  Tensor g = ug::grad(outer)(xs);
  EXPECT_EQ(ug::vmap_fallbacks(), before);
  expect_close(g, values(xs.exp() + xs * 6));
}

TEST(Lax, DynamicSliceAndUpdateTakeTensorStarts) {
  // The C++ form of jax.lax.dynamic_slice / dynamic_update_slice (the Python tests compare them
  // with JAX under grad, vmap and jit; these check the C++ API and the clamping).
  Tensor x = ug::arange(12, {.dtype = ug::float32}).reshape({3, 4});
  Tensor block = ug::lax::dynamic_slice(x, {ug::scalar_tensor(1), ug::scalar_tensor(3)}, {2, 2});
  ug::test::expect_tensor(block, {2, 2}, {6, 7, 10, 11});  // column start 3 clamped to 2
  Tensor last = ug::lax::dynamic_slice(x, {ug::scalar_tensor(-1), ug::scalar_tensor(0)}, {1, 2});
  ug::test::expect_tensor(last, {1, 2}, {8, 9});  // -1 counts from the end
  Tensor updated = ug::lax::dynamic_update_slice(x, ug::zeros({1, 2}), {ug::scalar_tensor(2), ug::scalar_tensor(1)});
  ug::test::expect_tensor(updated, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 11});
  EXPECT_THROW(ug::lax::dynamic_slice(x, {ug::scalar_tensor(0)}, {1, 1}), ug::ValueError);
}

TEST(Vmap, CollectivesOverANamedAxis) {
  // The C++ form of jax.vmap(f, axis_name="i") with jax.lax's collectives inside (the Python
  // tests compare every collective with JAX; these check the C++ API reaches them).
  ug::manual_seed(6);
  Tensor xs = ug::randn({4, 3}, {.dtype = ug::float64});
  ug::TensorFn f = [](const Tensors& a) {
    const Tensor& x = a[0];
    return Tensors{x / ug::lax::psum(x, "i"),
                   x - ug::lax::pmean(x, "i"),
                   ug::lax::pmax(x, "i"),
                   ug::lax::all_gather(x, "i", 1),
                   ug::lax::ppermute(x, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}),
                   ug::lax::axis_index("i").to(ug::float64) * ug::lax::axis_size("i")};
  };
  Tensors out = ug::vmap(f, {xs}, {0}, {0, 0, std::nullopt, 0, 0, 0}, std::nullopt, std::string("i"));
  ug::test::expect_values(out[0], values(xs / xs.sum({0})), 1e-12);
  ug::test::expect_values(out[1], values(xs - xs.mean({0})), 1e-12);
  ug::test::expect_values(out[2], values(xs.amax({0})), 0);
  for (int64_t b = 0; b < 4; ++b) {
    ug::test::expect_values(out[3].select(0, b), values(xs.transpose(0, 1)), 0);
    ug::test::expect_values(out[4].select(0, b), values(xs.select(0, (b + 3) % 4)), 0);
    EXPECT_EQ(out[5].select(0, b).item<double>(), 4.0 * b);
  }
  // Per-example gradients transpose psum to psum, as JAX does: the gradient of psum(x^2) is
  // psum(1) * 2x, the axis size times the derivative of the example's own term.
  ug::TensorFn per_example = [](const Tensors& a) {
    auto [v, g] = ug::value_and_grad([](const Tensors& p) { return Tensors{ug::lax::psum(p[0] * p[0], "i").sum()}; },
                                     {a[0]}, {0});
    return Tensors{g[0]};
  };
  Tensor g = ug::vmap(per_example, {xs}, {0}, {}, std::nullopt, std::string("i"))[0];
  ug::test::expect_values(g, values(8 * xs), 1e-12);
  EXPECT_THROW(ug::lax::psum(xs, "i"), ug::ValueError);  // no vmap binds the name
  EXPECT_THROW(ug::vmap(f, {xs}, {0}, {}, std::nullopt, std::string("j")), ug::ValueError);
}

// ---- custom_function ---------------------------------------------------------------------

namespace {

/** exp with a hand-written derivative that reads its saved output (torch's Function example). */
Tensor custom_exp(const Tensor& x, bool with_jvp) {
  Tensor y = x.detach().exp();
  ug::CustomJvp jvp;
  if (with_jvp) jvp = [y](const Tensors& t) { return Tensors{t[0] * y}; };
  return ug::custom_function(
      "Exp", {x}, {y}, [](const Tensors& saved, const Tensors& g) { return Tensors{g[0] * saved[0]}; }, jvp, {y})[0];
}

}  // namespace

TEST(CustomFunction, GradientsHigherDerivativesAndForwardMode) {
  Tensor x = ug::tensor({0.5, -1.0, 2.0}, {.dtype = ug::float64}).requires_grad_();
  Tensor y = custom_exp(x, false);
  ug::test::expect_values(y, {std::exp(0.5), std::exp(-1.0), std::exp(2.0)}, 1e-12);
  // The saved output comes back as the node's own: the second derivative goes through it.
  Tensor g = ug::autograd::grad({y.sum()}, {x}, {}, {}, true)[0];
  Tensor gg = ug::autograd::grad({g.pow(2).sum()}, {x})[0];
  ug::test::expect_values(gg, {2 * std::exp(1.0), 2 * std::exp(-2.0), 2 * std::exp(4.0)}, 1e-12);
  auto [out, tangent] = ug::jvp([](const Tensors& a) { return Tensors{custom_exp(a[0], true)}; }, {x.detach()},
                                {ug::ones({3}, {.dtype = ug::float64})});
  ug::test::expect_values(tangent[0], values(out[0]), 1e-12);
  EXPECT_THROW(ug::jvp([](const Tensors& a) { return Tensors{custom_exp(a[0], false)}; }, {x.detach()},
                       {ug::ones({3}, {.dtype = ug::float64})}),
               ug::ValueError);
}

TEST(CustomFunction, ChecksWhatTheRuleReturnsAndWhatItSaved) {
  Tensor x = ug::tensor({1.0, 2.0}, {.dtype = ug::float64}).requires_grad_();
  auto wrong_count = ug::custom_function("Two", {x}, {x.detach() * 2}, [](const Tensors&, const Tensors& g) {
    return Tensors{g[0], g[0]};
  });
  EXPECT_THROW(wrong_count[0].sum().backward(), ug::ValueError);
  auto wrong_shape = ug::custom_function("Sum", {x}, {x.detach().sum()},
                                         [](const Tensors&, const Tensors& g) { return Tensors{g[0].reshape({1})}; });
  EXPECT_THROW(wrong_shape[0].backward(), ug::ValueError);
  Tensor y = custom_exp(x * 1, false);
  {
    ug::NoGradGuard no_grad;
    y.add_(1);  // the saved output changes before backward
  }
  EXPECT_ANY_THROW(y.sum().backward());
  Tensor recorded = x * 2;
  EXPECT_THROW(ug::custom_function("Bad", {x}, {recorded}, [](const Tensors&, const Tensors& g) { return g; }),
               ug::ValueError);
}

TEST(CustomFunction, CompiledProgramsRunTheRuleOrRefuseIt) {
  Tensor x = ug::tensor({0.5, 1.0}, {.dtype = ug::float64}).requires_grad_();
  // jit(grad(f)): the rule runs inside the trace, and the program holds what it computed.
  ug::JitFunction grad_of = ug::jit([](const Tensors& a) {
    return ug::value_and_grad([](const Tensors& p) { return Tensors{custom_exp(p[0], false).sum()}; }, a, {0}).second;
  });
  for (int run = 0; run < 2; ++run)
    ug::test::expect_values(grad_of({x.detach()})[0], {std::exp(0.5), std::exp(1.0)}, 1e-12);
  // Differentiated after the program returns, a rule the function linked itself (outputs
  // given) would be gone: refused.
  ug::JitFunction forward = ug::jit([](const Tensors& a) { return Tensors{custom_exp(a[0], false).sum()}; });
  EXPECT_THROW(forward({x}), ug::RuntimeError);
  {
    ug::NoGradGuard no_grad;
    EXPECT_NEAR(forward({x})[0].item<double>(), std::exp(0.5) + std::exp(1.0), 1e-12);
  }
  // Given the forward, the program calls the function back when autograd records through it,
  // in whichever mode it was traced: the rule (here 3x the true derivative) is applied.
  auto tripled = [](const Tensors& a) {
    return Tensors{
        ug::custom_function(
            "TripledExp", {a[0]},
            [](const Tensors& in) {
              Tensor e = in[0].exp();
              return ug::CustomForward{
                  {e}, [](const Tensors& saved, const Tensors& g) { return Tensors{g[0] * saved[0] * 3}; }, {}, {e}};
            })[0]
            .sum()};
  };
  ug::JitFunction compiled = ug::jit(tripled);
  {
    ug::NoGradGuard no_grad;
    EXPECT_NEAR(compiled({x})[0].item<double>(), std::exp(0.5) + std::exp(1.0), 1e-12);
  }
  for (int run = 0; run < 2; ++run) {
    Tensor w = x.detach().requires_grad_();
    compiled({w})[0].backward();
    ug::test::expect_values(w.grad(), {3 * std::exp(0.5), 3 * std::exp(1.0)}, 1e-12);
  }
  EXPECT_EQ(compiled.cache_info().traces, 1);
}
