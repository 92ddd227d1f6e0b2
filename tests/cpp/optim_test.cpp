// ug::optim from C++: hand-computed steps, param groups, the functional form against step(),
// state_dict round trips, schedulers and gradient clipping. The comparisons with torch are in
// tests/python/test_optim.py.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"
#include "ug/optim/optim.h"

namespace {

using ug::Tensor;
using ug::test::values;
namespace optim = ug::optim;

Tensor param(std::vector<double> v) {
  Tensor t = ug::zeros({static_cast<int64_t>(v.size())}, {.dtype = ug::float64});
  double* p = t.data_ptr<double>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  t.requires_grad_(true);
  return t;
}

TEST(Optim, SgdMomentumByHand) {
  Tensor w = param({1.0, -2.0});
  optim::SGD opt({w}, optim::SGDOptions(0.1).momentum(0.9));
  w.set_grad(ug::tensor({1.0, 1.0}, {.dtype = ug::float64}));
  opt.step();  // buf = g; w -= 0.1 * g
  EXPECT_EQ(values(w), (std::vector<double>{0.9, -2.1}));
  opt.step();  // buf = 0.9 * 1 + 1 = 1.9
  EXPECT_NEAR(values(w)[0], 0.9 - 0.19, 1e-15);
  EXPECT_EQ(values(opt.state(w).at("momentum_buffer")), (std::vector<double>{1.9, 1.9}));
}

TEST(Optim, AdamFirstStepIsLrTimesSign) {
  Tensor w = param({1.0, 1.0, 1.0});
  optim::Adam opt({w}, optim::AdamOptions(0.01).betas({0.9, 0.999}).eps(0));
  w.set_grad(ug::tensor({3.0, -0.5, 2.0}, {.dtype = ug::float64}));
  opt.step();
  ug::test::expect_values(w, {0.99, 1.01, 0.99}, 1e-12);
  EXPECT_EQ(opt.state(w).at("step").item<double>(), 1.0);
  EXPECT_FALSE(w.grad_fn());
}

TEST(Optim, ParamGroupsAndLrSetter) {
  Tensor a = param({1.0}), b = param({1.0});
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, optim::Hyper{{"lr", 0.5}});
  optim::SGD opt(std::move(groups), optim::SGDOptions(0.1));
  EXPECT_EQ(opt.param_groups()[0].lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.5);
  opt.param_groups()[0].lr() = 0.25;
  a.set_grad(ug::tensor({1.0}, {.dtype = ug::float64}));
  b.set_grad(ug::tensor({1.0}, {.dtype = ug::float64}));
  opt.step();
  EXPECT_EQ(values(a)[0], 0.75);
  EXPECT_EQ(values(b)[0], 0.5);
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optim, FunctionalUpdateEqualsStepAndLeavesInputs) {
  Tensor w = param({0.5, -1.5, 2.0});
  optim::AdamW opt({w}, optim::AdamWOptions(0.1).weight_decay(0.1));
  optim::AdamW fopt(std::vector<Tensor>{}, optim::AdamWOptions(0.1).weight_decay(0.1));
  optim::TensorDict params{{"w", w.detach().clone()}};
  optim::OptState state = fopt.init(params);
  for (int s = 0; s < 3; ++s) {
    Tensor g = ug::tensor({0.3 * s - 0.2, 1.0, -0.7}, {.dtype = ug::float64});
    w.set_grad(g);
    opt.step();
    const std::vector<double> before = values(params.at("w"));
    auto [updates, next] = fopt.update({{"w", g}}, state, params);
    EXPECT_EQ(values(params.at("w")), before);
    params = optim::apply_updates(params, updates);
    state = std::move(next);
  }
  ug::test::expect_values(params.at("w"), values(w), 1e-14);
  EXPECT_EQ(state.at("w").at("step").item<double>(), 3.0);
}

TEST(Optim, StateDictRoundTripContinuesIdentically) {
  auto run = [](optim::Adam& opt, Tensor& w, int from, int to) {
    for (int s = from; s < to; ++s) {
      w.set_grad(ug::tensor({std::sin(s), std::cos(s)}, {.dtype = ug::float64}));
      opt.step();
    }
  };
  Tensor ref = param({1.0, 2.0}), a = param({1.0, 2.0});
  optim::Adam ref_opt({ref}, optim::AdamOptions(0.1).amsgrad(true));
  optim::Adam a_opt({a}, optim::AdamOptions(0.1).amsgrad(true));
  run(ref_opt, ref, 0, 6);
  run(a_opt, a, 0, 3);
  Tensor b = a.detach().clone().requires_grad_(true);
  optim::Adam b_opt({b}, optim::AdamOptions(0.1).amsgrad(true));
  b_opt.load_state_dict(a_opt.state_dict());
  run(b_opt, b, 3, 6);
  EXPECT_EQ(values(b), values(ref));
}

TEST(Optim, AdamaxAndAdadeltaFirstStepByHand) {
  Tensor w = param({1.0, -1.0}), v = param({1.0, -1.0});
  optim::Adamax adamax({w}, optim::AdamaxOptions(0.1).eps(0));
  optim::Adadelta adadelta({v}, optim::AdadeltaOptions(1.0).rho(0.9).eps(1e-6));
  w.set_grad(ug::tensor({2.0, -4.0}, {.dtype = ug::float64}));
  v.set_grad(ug::tensor({2.0, -4.0}, {.dtype = ug::float64}));
  adamax.step();  // m = 0.1 g, u = |g|, w -= 0.1 / (1 - 0.9) * m / u = 0.1 sign(g)
  ug::test::expect_values(w, {0.9, -0.9}, 1e-15);
  EXPECT_EQ(values(adamax.state(w).at("exp_inf")), (std::vector<double>{2.0, 4.0}));
  adadelta.step();  // square_avg = 0.1 g^2, delta = sqrt(eps) / sqrt(square_avg + eps) * g
  const double d0 = std::sqrt(1e-6) / std::sqrt(0.4 + 1e-6) * 2, d1 = std::sqrt(1e-6) / std::sqrt(1.6 + 1e-6) * -4;
  ug::test::expect_values(v, {1.0 - d0, -1.0 - d1}, 1e-15);
  ug::test::expect_values(adadelta.state(v).at("acc_delta"), {0.1 * d0 * d0, 0.1 * d1 * d1}, 1e-18);
}

TEST(Optim, NAdamFirstStepByHandAndResumesFromStateDict) {
  Tensor w = param({1.0});
  optim::NAdam opt({w}, optim::NAdamOptions(0.1).eps(0));
  w.set_grad(ug::tensor({2.0}, {.dtype = ug::float64}));
  opt.step();
  // m = 0.2, v = 0.004, sqrt(v / (1 - 0.999)) = 2; mu_product = mu, kept in float32 as torch's.
  const double mu = 0.9 * (1 - 0.5 * std::pow(0.96, 0.004)), mu_next = 0.9 * (1 - 0.5 * std::pow(0.96, 0.008));
  const double mu_product = static_cast<float>(mu);
  ug::test::expect_values(w, {1 - 0.1 * (1 - mu) / (1 - mu_product) - 0.01 * mu_next / (1 - mu_product * mu_next)},
                          1e-15);
  EXPECT_EQ(opt.state(w).at("mu_product").item<double>(), mu_product);
  // Through a state dict its per-parameter number mu_product takes the parameter's dtype, as
  // torch's load_state_dict casts it; a second round trip changes nothing.
  Tensor a = w.detach().clone().requires_grad_(true), b = w.detach().clone().requires_grad_(true);
  optim::NAdam a_opt({a}, optim::NAdamOptions(0.1).eps(0)), b_opt({b}, optim::NAdamOptions(0.1).eps(0));
  a_opt.load_state_dict(opt.state_dict());
  b_opt.load_state_dict(a_opt.state_dict());
  EXPECT_EQ(a_opt.state(a).at("mu_product").dtype(), ug::float64);
  for (int s = 0; s < 3; ++s) {
    for (Tensor* t : {&a, &b}) t->set_grad(ug::tensor({std::sin(s)}, {.dtype = ug::float64}));
    a_opt.step();
    b_opt.step();
  }
  EXPECT_EQ(values(b), values(a));
  EXPECT_THROW(optim::NAdam({param({1.0})}, optim::NAdamOptions(-1.0)), ug::ValueError);
}

TEST(Optim, AsgdFirstStepsByHand) {
  Tensor w = param({1.0});
  optim::ASGD opt({w}, optim::ASGDOptions(0.1).lambd(0.5).alpha(1.0).t0(0));
  w.set_grad(ug::tensor({2.0}, {.dtype = ug::float64}));
  opt.step();
  // eta starts as lr kept in float32, as torch's: w = 1 * (1 - 0.5 eta) - eta * 2 (0.75 but for
  // that rounding); ax = w (mu was 1); then eta = 0.1 / (1 + 0.05), mu = 1.
  const double eta0 = static_cast<float>(0.1);
  ug::test::expect_values(w, {(1 - 0.5 * eta0) - eta0 * 2}, 1e-15);
  EXPECT_EQ(opt.state(w).at("eta").item<double>(), static_cast<float>(0.1 / 1.05));
  opt.step();
  const double eta = static_cast<float>(0.1 / 1.05), w2 = ((1 - 0.5 * eta0) - eta0 * 2) * (1 - 0.5 * eta) - eta * 2;
  ug::test::expect_values(w, {w2}, 1e-15);
  ug::test::expect_values(opt.state(w).at("ax"), {w2}, 1e-15);  // mu = 1 / max(1, 1 - 0)
}

TEST(Optim, LbfgsMinimizesAQuadraticWithAClosure) {
  // f(x) = sum((x - c)^2 * k): strong-Wolfe L-BFGS, its stopping tests tightened, reaches c
  // within one step (a gradient of at most 1e-10: |x - c| <= 1e-10 / (2 min k)).
  Tensor x = param({0.0, 0.0, 0.0});
  const Tensor c = ug::tensor({1.0, -2.0, 3.0}, {.dtype = ug::float64});
  const Tensor k = ug::tensor({1.0, 10.0, 0.5}, {.dtype = ug::float64});
  optim::LBFGS opt({x}, optim::LBFGSOptions(1).max_iter(50).tolerance_grad(1e-10).tolerance_change(0).line_search_fn(
                            "strong_wolfe"));
  int evals = 0;
  auto closure = [&] {
    ++evals;
    opt.zero_grad();
    Tensor loss = x.sub(c).mul(x.sub(c)).mul(k).sum();
    loss.backward();
    return loss;
  };
  const double first = opt.step(closure).item<double>();
  EXPECT_EQ(first, 1 + 40 + 4.5);
  ug::test::expect_values(x, {1.0, -2.0, 3.0}, 1e-10);
  EXPECT_EQ(static_cast<int>(opt.state(x).at("func_evals").item<double>()), evals);
  EXPECT_THROW(opt.step(nullptr), ug::ValueError);  // no closure
  EXPECT_THROW(optim::LBFGS({optim::ParamGroup({param({1.0})}), optim::ParamGroup({param({2.0})})}), ug::ValueError);
}

TEST(LrScheduler, CyclicTriangle) {
  Tensor w = param({1.0});
  optim::SGD opt({w}, optim::SGDOptions(0.5).momentum(0.9));
  optim::lr_scheduler::CyclicLR s(opt, {0.1}, {0.5}, {.step_size_up = 2});
  // Up over two steps, down over two: 0.1, 0.3, 0.5, 0.3, 0.1; momentum the other way.
  const std::vector<double> lrs = {0.1, 0.3, 0.5, 0.3, 0.1};
  for (double lr : lrs) {
    EXPECT_NEAR(s.get_last_lr()[0], lr, 1e-15);
    s.step();
  }
  EXPECT_NEAR(optim::hyper_get<double>(opt.param_groups()[0].options(), "momentum"), 0.85, 1e-15);
}

TEST(Optim, RejectsUnsupportedDtype) {
  Tensor q = ug::zeros({2}, {.dtype = ug::int64});
  optim::SGD opt({q});
  q.set_grad(ug::zeros({2}, {.dtype = ug::int64}));
  EXPECT_THROW(opt.step(), ug::TypeError);
}

// Keras's rules, one or two steps worked out from keras/src/optimizers/*.py; the step-by-step
// comparison with Keras itself is tests/python/test_keras_optimizers.py.
TEST(KerasOptim, AdamAddsEpsilonBeforeTheBiasCorrection) {
  Tensor w = param({0.0, 0.0});
  optim::keras::Adam opt(optim::keras::AdamOptions(0.01));
  opt.apply_gradients({{ug::tensor({1e-6, -2.0}, {.dtype = ug::float64}), w}});
  EXPECT_TRUE(opt.built());
  EXPECT_EQ(opt.iterations(), 1);
  // m = 0.1 g, v = 0.001 g^2, alpha = lr sqrt(1 - 0.999) / (1 - 0.9), w -= alpha m / (sqrt(v) + 1e-7)
  const double alpha = 0.01 * std::sqrt(1 - 0.999) / (1 - 0.9);
  for (size_t i = 0; i < 2; ++i) {
    const double g = i == 0 ? 1e-6 : -2.0;
    EXPECT_NEAR(values(w)[i], -alpha * 0.1 * g / (std::sqrt(0.001 * g * g) + 1e-7), 1e-15);
  }
  EXPECT_EQ(values(opt.state(w).at("velocity")), (std::vector<double>{1e-6 * 1e-6 * (1 - 0.999), 4.0 * (1 - 0.999)}));
}

TEST(KerasOptim, SgdRmspropAdagradByHand) {
  Tensor a = param({1.0}), b = param({1.0}), c = param({1.0});
  optim::keras::SGD sgd(optim::keras::SGDOptions(0.1).momentum(0.9).weight_decay(0.5));
  optim::keras::RMSprop rms(optim::keras::RMSpropOptions(0.1));
  optim::keras::Adagrad ada(optim::keras::AdagradOptions(0.1));
  sgd.build({a});
  rms.build({b});
  ada.build({c});
  for (Tensor* t : {&a, &b, &c}) t->set_grad(ug::tensor({2.0}, {.dtype = ug::float64}));
  sgd.step();
  rms.step();
  ada.step();
  // SGD: a -= a * 0.5 * 0.1 (decay), m = -0.1 * 2, a += m.
  EXPECT_NEAR(values(a)[0], 0.95 - 0.2, 1e-15);
  EXPECT_NEAR(values(sgd.state(a).at("momentum"))[0], -0.2, 1e-15);
  sgd.step();  // decay again; m = 0.9 * -0.2 - 0.2
  EXPECT_NEAR(values(a)[0], 0.75 * 0.95 - 0.38, 1e-15);
  // RMSprop: v = 0.1 * 4, b -= 0.1 * 2 / sqrt(v + 1e-7).
  EXPECT_NEAR(values(b)[0], 1 - 0.2 / std::sqrt(0.4 + 1e-7), 1e-15);
  // Adagrad: acc = 0.1 + 4, c -= 0.1 * 2 / sqrt(acc + 1e-7).
  EXPECT_NEAR(values(c)[0], 1 - 0.2 / std::sqrt(4.1 + 1e-7), 1e-15);
  EXPECT_EQ(sgd.iterations(), 2);
}

TEST(KerasOptim, OneIterationCountAndBuildOnce) {
  Tensor a = param({1.0}), b = param({1.0});
  optim::keras::Adam opt;
  EXPECT_THROW(opt.step(), ug::RuntimeError);  // no variables yet
  opt.build({a, b});
  opt.build({param({5.0})});  // built already: ignored, as in Keras
  EXPECT_EQ(opt.param_groups().front().params().size(), 2u);
  a.set_grad(ug::tensor({1.0}, {.dtype = ug::float64}));
  opt.step();
  opt.step();  // b has had no gradient so far
  b.set_grad(ug::tensor({1.0}, {.dtype = ug::float64}));
  opt.step();
  EXPECT_EQ(opt.iterations(), 3);
  EXPECT_EQ(opt.state(b).at("step").item<double>(), 3);  // Keras's step 3, not b's first
  EXPECT_THROW(optim::keras::Adam(optim::keras::AdamOptions().clipnorm(1.0).clipvalue(1.0)), ug::ValueError);
  EXPECT_THROW(optim::keras::SGD(optim::keras::SGDOptions().momentum(2)), ug::ValueError);
  EXPECT_EQ(static_cast<optim::Hyper>(optim::keras::AdamWOptions()).at("weight_decay"), optim::HyperValue(0.004));
}

TEST(KerasOptim, ClipnormScalesEachGradient) {
  Tensor w = param({0.0, 0.0});
  optim::keras::SGD opt(optim::keras::SGDOptions(1.0).clipnorm(1.0));
  opt.apply_gradients({{ug::tensor({3.0, 4.0}, {.dtype = ug::float64}), w}});  // norm 5 -> 1
  EXPECT_NEAR(values(w)[0], -0.6, 1e-15);
  EXPECT_NEAR(values(w)[1], -0.8, 1e-15);
}

TEST(LrScheduler, WarmupThenCosine) {
  Tensor w = param({0.0});
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  namespace sch = optim::lr_scheduler;
  auto warm = std::make_shared<sch::LinearLR>(opt, 0.5, 1.0, 2);
  auto cos = std::make_shared<sch::CosineAnnealingLR>(opt, 4);
  sch::SequentialLR seq(opt, {warm, cos}, {2});
  std::vector<double> lrs;
  for (int s = 0; s < 7; ++s) {
    lrs.push_back(seq.get_last_lr()[0]);
    seq.step();
  }
  const double pi = std::acos(-1.0);
  const std::vector<double> want = {0.5, 0.75, 1.0, (1 + std::cos(pi / 4)) / 2, 0.5, (1 + std::cos(3 * pi / 4)) / 2,
                                    0.0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(lrs[i], want[i], 1e-12) << i;
}

TEST(LrScheduler, StepLRAndPlateau) {
  Tensor w = param({0.0});
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  optim::lr_scheduler::StepLR step(opt, 2, 0.5);
  step.step();
  step.step();
  EXPECT_EQ(opt.param_groups()[0].lr(), 0.5);
  optim::lr_scheduler::ReduceLROnPlateau plateau(opt, {.patience = 1});
  for (double loss : {1.0, 1.0, 1.0}) plateau.step(loss);
  EXPECT_NEAR(opt.param_groups()[0].lr(), 0.05, 1e-15);
}

TEST(LrScheduler, SwaLRAnnealsToSwaLrThenHolds) {
  Tensor w = param({0.0});
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  optim::lr_scheduler::SWALR s(opt, {0.2}, 2, "linear");
  EXPECT_EQ(optim::hyper_get<double>(opt.param_groups()[0].options(), "swa_lr"), 0.2);
  std::vector<double> lrs;
  for (int i = 0; i < 4; ++i) {
    lrs.push_back(s.get_last_lr()[0]);
    s.step();
  }
  // linear: halfway after one of the two annealing epochs, then swa_lr
  const std::vector<double> want = {1.0, 0.6, 0.2, 0.2};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(lrs[i], want[i], 1e-15) << i;
  EXPECT_THROW(optim::lr_scheduler::SWALR(opt, {0.1}, 10, "exp"), ug::ValueError);
  EXPECT_THROW(optim::lr_scheduler::SWALR(opt, {0.1}, -1), ug::ValueError);
}

TEST(ClipGrad, NormAndValue) {
  Tensor a = param({0.0, 0.0}), b = param({0.0});
  a.set_grad(ug::tensor({3.0, 0.0}, {.dtype = ug::float64}));
  b.set_grad(ug::tensor({4.0}, {.dtype = ug::float64}));
  Tensor total = ug::nn::utils::clip_grad_norm_({a, b}, 1.0);
  EXPECT_DOUBLE_EQ(total.item<double>(), 5.0);
  ug::test::expect_values(a.grad(), {0.6, 0.0}, 1e-6);
  EXPECT_DOUBLE_EQ(ug::nn::utils::clip_grad_norm_({a, b}, 1.0, INFINITY).item<double>(), values(b.grad())[0]);
  b.set_grad(ug::tensor({NAN}, {.dtype = ug::float64}));
  EXPECT_THROW(ug::nn::utils::clip_grad_norm_({a, b}, 1.0, 2.0, true), ug::RuntimeError);
  a.set_grad(ug::tensor({-2.0, 0.5}, {.dtype = ug::float64}));
  ug::nn::utils::clip_grad_value_({a}, 1.0);
  EXPECT_EQ(values(a.grad()), (std::vector<double>{-1.0, 0.5}));
}

}  // namespace
