// ug::jit and ug::compiler::Program: a traced function runs from its graph, is traced once
// per signature, reads closed-over parameters live, compiles a functional Adam step, runs the
// eager backward kernels in a compiled gradient, and saves an inference program that
// ug::onnx::load runs. The Python side (tests/python/test_jit.py and the op table's jit
// transform) covers the rest.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "test_util.h"
#include "ug/autograd/cond.h"
#include "ug/autograd/functional.h"
#include "ug/compiler/debug.h"
#include "ug/compiler/jit.h"
#include "ug/core/value_read.h"
#include "ug/graph/debugging.h"
#include "ug/nn/nn.h"
#include "ug/onnx/import.h"
#include "ug/optim/adam.h"
#include "ug/optim/functional.h"
#include "ug/optim/sgd.h"

namespace ug {
namespace {

using Tensors = std::vector<Tensor>;

TEST(Jit, RunsTheProgramAndTracesOncePerSignature) {
  int calls = 0;
  std::vector<std::string> warnings;
  JitFunction f = jit(
      [&](const Tensors& xs) {
        ++calls;
        return Tensors{(xs[0] * xs[1]).sum() + relu(xs[0]).mean()};
      },
      {.name = "f", .on_retrace = [&](const std::string& w) { warnings.push_back(w); }});
  manual_seed(0);
  Tensor x = randn({3, 4}), y = randn({3, 4});
  for (int i = 0; i < 3; ++i) f({x, y});
  Tensor x2 = randn({3, 4});
  EXPECT_NEAR(f({x2, y})[0].item<double>(), ((x2 * y).sum() + relu(x2).mean()).item<double>(), 1e-5);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(f.cache_info().hits, 3);
  EXPECT_EQ(f.explain({randn({2, 4}), y}), "miss: argument input 0 changed from float32[3, 4] to float32[2, 4]");
  f({randn({2, 4}), randn({2, 4})});
  EXPECT_TRUE(warnings.empty());
  f({randn({1, 4}), randn({1, 4})});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'f' is traced for the 3rd time"), std::string::npos) << warnings[0];
}

TEST(Jit, DisableJitGuardAndRunFunctionsEagerlyCallTheFunction) {
  int calls = 0;
  JitFunction f = jit([&](const Tensors& xs) {
    ++calls;
    return Tensors{xs[0] * 2};
  });
  Tensor x = ones({3});
  {
    DisableJitGuard eager;
    f({x});
    f({x});
    {
      DisableJitGuard compiled(false);
      f({x});  // traced here
    }
    EXPECT_TRUE(jit_disabled());
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(f.cache_info().traces, 1u);
  f({x});
  EXPECT_EQ(calls, 3);  // the program runs
  run_functions_eagerly(true);
  EXPECT_TRUE(functions_run_eagerly() && jit_disabled());
  test::expect_values(f({x})[0], {2, 2, 2}, 0);
  run_functions_eagerly(false);
  EXPECT_EQ(calls, 4);
  EXPECT_FALSE(jit_disabled());
}

TEST(Jit, AProgramReadsAsText) {
  compiler::Program program =
      compiler::Program::trace([](const Tensors& xs) { return Tensors{(matmul(xs[0], xs[1]).relu() * 2).exp().sum()}; },
                               {randn({3, 4}), randn({4, 5})});
  const std::string text = program.text();
  EXPECT_EQ(text.rfind("graph(%input_0: float32[3, 4], %input_1: float32[4, 5]) {\n", 0), 0u) << text;
  for (const char* line :
       {"= MatMul(%input_0, %input_1)", "= Relu(", "= Exp(", "= ReduceSum", "constant float32[] [2]"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  EXPECT_NE(text.find("  return %"), std::string::npos);
  EXPECT_EQ(program.text(true).find("= Exp("), std::string::npos) << "the chain runs fused";
}

TEST(Jit, ReduceRetracingMakesOneProgramForAnyBatchWhereNothingDependsOnIt) {
  manual_seed(0);
  Tensor w = randn({4, 3}).requires_grad_();
  int calls = 0;
  auto rows = [&](const Tensors& xs) {
    ++calls;
    return Tensors{relu(matmul(xs[0], w)).sum({1})};
  };
  JitFunction f = jit(rows, {.name = "rows", .reduce_retracing = true});
  for (int64_t n : {8, 5, 3, 11}) {
    Tensor x = randn({n, 4});
    EXPECT_TRUE(allclose(f({x})[0], relu(matmul(x, w)).sum({1}), 1e-6, 1e-6)) << n;
  }
  EXPECT_EQ(calls, 2);  // the second trace shows the program is the same for any batch
  EXPECT_EQ(f.cache_info().size, 1u);
  EXPECT_EQ(f.explain({randn({2, 4})}), "hit: a cached program runs");
  EXPECT_EQ(f.explain({randn({2, 5})}), "miss: argument input 0 changed from float32[?, 4] to float32[2, 5]");

  // A random draw's shape is the trace's: never generalized.
  std::vector<std::string> warnings;
  JitFunction g =
      jit([&](const Tensors& xs) { return Tensors{xs[0] + rand_like(xs[0])}; },
          {.name = "g", .reduce_retracing = true, .on_retrace = [&](const std::string& m) { warnings.push_back(m); }});
  for (int64_t n : {2, 3, 4}) EXPECT_EQ(g({zeros({n})})[0].size(0), n);
  EXPECT_EQ(g.cache_info().traces, 3);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("reduce_retracing could not make one program for both sizes: op 'random'"),
            std::string::npos)
      << warnings[0];
}

TEST(Jit, ReduceRetracingFoldsTheTraceAfterOneAtASizeEqualToAConstant) {
  // At a batch of 2, `x * 2`'s constant is read from the batch's size (a mean's count would be):
  // that trace folds into no other, the next one folds into the first, and takes its place.
  int calls = 0;
  JitFunction f = jit(
      [&](const Tensors& xs) {
        ++calls;
        return Tensors{xs[0] * 2.0};
      },
      {.name = "twice", .reduce_retracing = true, .on_retrace = [](const std::string&) {}});
  for (int64_t n : {3, 2, 4, 5, 2}) {
    Tensor x = randn({n, 3});
    EXPECT_TRUE(allclose(f({x})[0], x * 2.0)) << n;
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(f.cache_info().size, 1u);
}

TEST(Jit, ReadsClosedOverParametersLive) {
  manual_seed(0);
  nn::Linear lin(3, 2);
  JitFunction f = jit([&](const Tensors& xs) { return Tensors{lin->forward(xs[0])}; });
  Tensor x = randn({4, 3});
  EXPECT_TRUE(allclose(f({x})[0], lin->forward(x)));
  {
    NoGradGuard no_grad;
    lin->weight() *= 2.0;
  }
  EXPECT_TRUE(allclose(f({x})[0], lin->forward(x)));
}

TEST(Jit, CompilesTheFunctionalAdamStep) {
  manual_seed(0);
  optim::TensorDict params;
  // float64: the program sums the gradients in another order than the fused eager kernels.
  params.insert("w", randn({5, 3}, {.dtype = DType::Float64}));
  params.insert("b", zeros({3}, {.dtype = DType::Float64}));
  optim::Adam adam(std::vector<Tensor>{params.at("w"), params.at("b")}, optim::AdamOptions(1e-2));
  Tensor x = randn({8, 5}, {.dtype = DType::Float64}), y = randn({8, 3}, {.dtype = DType::Float64});
  auto loss_of = [&](const Tensors& p) { return Tensors{(matmul(x, p[0]) + p[1] - y).pow(2.0).mean()}; };
  // The step over flat tensors: w, b, then each parameter's state (step, exp_avg, exp_avg_sq).
  optim::OptState state0 = adam.init(params);
  auto step = [&](const Tensors& in) {
    optim::TensorDict p, g;
    p.insert("w", in[0]);
    p.insert("b", in[1]);
    optim::OptState st;
    size_t k = 2;
    for (const auto& [name, s] : state0) {
      optim::TensorDict d;
      for (const auto& [field, t] : s) d.insert(field, in[k++]);
      st.insert(name, d);
    }
    auto [loss, grads] = value_and_grad(loss_of, {in[0], in[1]}, {0, 1});
    g.insert("w", grads[0]);
    g.insert("b", grads[1]);
    auto [updates, next] = adam.update(g, st, p);
    optim::TensorDict np = optim::apply_updates(p, updates);
    Tensors out{np.at("w"), np.at("b")};
    for (const auto& [name, s] : next)
      for (const auto& [field, t] : s) out.push_back(t);
    out.push_back(loss[0]);
    return out;
  };
  Tensors flat{params.at("w"), params.at("b")};
  for (const auto& [name, s] : state0)
    for (const auto& [field, t] : s) flat.push_back(t);
  JitFunction compiled = jit(step);
  Tensors eager = flat, traced = flat;
  for (int i = 0; i < 10; ++i) {
    Tensors e = step(eager), c = compiled(traced);
    eager.assign(e.begin(), e.end() - 1);
    traced.assign(c.begin(), c.end() - 1);
  }
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(allclose(traced[i], eager[i], 1e-10, 1e-10)) << i;
  EXPECT_EQ(compiled.cache_info().traces, 1);
}

TEST(Jit, ACompiledGradientRunsTheEagerBackwardKernels) {
  // layer_norm's, gelu's and softmax's backward kernels are ops: the program calls each back
  // (one node each, no formula), so its gradients are the eager ones bit for bit.
  manual_seed(0);
  const Tensor c = randn({4, 6});
  auto loss_grads = [&c](const Tensors& in) {
    auto [value, grads] = value_and_grad(
        [&c](const Tensors& a) { return Tensors{(layer_norm(a[0].gelu(), {6}, a[1], a[2]).softmax(-1) * c).sum()}; },
        in, {0, 1, 2});
    grads.insert(grads.begin(), value[0]);
    return grads;
  };
  Tensors traced{randn({4, 6}), randn({6}), randn({6})}, other{randn({4, 6}), randn({6}), randn({6})};
  JitFunction compiled = jit(loss_grads);
  compiled(traced);
  const Tensors eager = loss_grads(other), run = compiled(other);
  ASSERT_EQ(run.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(equal(run[i], eager[i])) << i;
  const std::vector<std::string> types = compiler::Program::trace(loss_grads, traced).node_types();
  EXPECT_EQ(std::count(types.begin(), types.end(), "UgReplay"), 3);
  EXPECT_EQ(std::count(types.begin(), types.end(), "Erf"), 0);  // gelu_backward's formula
}

TEST(Jit, ComputesACheapActivationAgainForItsLateReader) {
  // gelu(x) is read at once and again after a chain during which x (an input) stays alive:
  // the program computes it a second time instead of holding it (compiler/remat.h), and the
  // copy is the same kernel on the same input.
  auto f = [](const Tensors& in) {
    Tensor h = in[0].gelu(), t = in[0];
    Tensor early = h.sum();
    for (int i = 0; i < 6; ++i) t = (t * 0.5).tanh();
    return Tensors{early + (h * t).sum()};
  };
  manual_seed(0);
  const Tensor x = randn({1 << 14});
  const compiler::Program program = compiler::Program::trace(f, {x});
  EXPECT_EQ(program.stats().recomputed, 1u);
  const std::vector<std::string> types = program.node_types();
  EXPECT_EQ(std::count(types.begin(), types.end(), "Gelu"), 2);
  EXPECT_TRUE(equal(program({x})[0], f({x})[0]));
}

TEST(Jit, HoldsAValueAwayFromThePeak) {
  // gelu(x) is read at once and again after a chain of small ops, but the program's peak comes
  // after its last reader (an outer product 16 times x's size and its exp): a copy would not
  // lower it, so the program holds h (compiler/remat.h), and computes what eager computes.
  auto f = [](const Tensors& in) {
    Tensor h = in[0].gelu(), t = in[1];
    Tensor early = h.sum();
    for (int i = 0; i < 6; ++i) t = (t * 0.5).tanh();
    Tensor late = early + (h * t.sum()).sum();  // before the product: operands' order is unspecified
    Tensor big = in[0].reshape({-1, 1}) * in[0].slice(0, 0, 16).reshape({1, -1});
    return Tensors{late + big.exp().sum()};
  };
  manual_seed(0);
  const Tensors in{randn({1 << 12}), randn({4})};
  const compiler::Program program = compiler::Program::trace(f, in);
  EXPECT_EQ(program.stats().recomputed, 0u);
  EXPECT_TRUE(equal(program(in)[0], f(in)[0]));
}

TEST(Jit, ComputesAProjectionOfItsInputsAgainForTheBackward) {
  // Attention over a q/k/v projection of the input x by w, then a long tail: the backward reads
  // q, k and v again, which the program computes again from x and w (alive anyway) instead of
  // holding them through the tail (compiler/remat.h). The copies run the same kernels on the
  // same inputs, so the gradients are the eager ones bit for bit.
  constexpr int64_t d = 16;
  auto loss_grads = [](const Tensors& in) {
    auto [value, grads] = value_and_grad(
        [](const Tensors& a) {
          std::vector<Tensor> qkv = a[0].matmul(a[1].t()).split(d, -1);
          Tensor h = (qkv[0] * 0.25).matmul(qkv[1].transpose(-2, -1)).softmax(-1).matmul(qkv[2]);
          for (int i = 0; i < 8; ++i) h = h.matmul(a[2]).tanh();
          return Tensors{h.sum()};
        },
        in, {0, 1, 2});
    grads.insert(grads.begin(), value[0]);
    return grads;
  };
  manual_seed(0);
  const Tensors in{randn({4, 8, d}), randn({3 * d, d}) * 0.3, randn({d, d}) * 0.3};
  const compiler::Program program = compiler::Program::trace(loss_grads, in);
  setenv("UG_JIT_REMAT", "0", 1);
  const compiler::Program plain = compiler::Program::trace(loss_grads, in);
  unsetenv("UG_JIT_REMAT");
  auto products = [](const compiler::Program& p) {
    const std::vector<std::string> types = p.node_types();
    return std::count(types.begin(), types.end(), "MatMul");
  };
  // The projection again, and the scores again (the backward reads their softmax).
  EXPECT_EQ(products(program), products(plain) + 2);
  EXPECT_EQ(plain.stats().recomputed, 0u);
  // With w's transpose, the Split, q's scaling, k's transpose and the softmax.
  EXPECT_EQ(program.stats().recomputed, 7u);
  const Tensors run = program(in), eager = loss_grads(in);
  ASSERT_EQ(run.size(), eager.size());
  const Tensors plain_run = plain(in);
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(equal(run[i], eager[i]) && equal(run[i], plain_run[i])) << i;
}

TEST(Jit, InputsMovedIntoARunGiveItTheirBuffers) {
  // jit's donate_argnums: an input the caller moves in is the run's alone, so the sum is
  // written into its buffer; an input the caller still holds is never written.
  auto f = [](const Tensors& in) { return Tensors{in[0] + in[1]}; };
  manual_seed(0);
  const Tensor x = randn({1000}), y = randn({1000});
  const Tensor expected = x + y;
  const compiler::Program program = compiler::Program::trace(f, {x, y});
  const Tensor held = program({x, y})[0];
  EXPECT_NE(held.raw_data(), x.raw_data());
  Tensors moved{x.clone(), y};
  const void* buffer = moved[0].raw_data();
  const Tensor out = program(std::move(moved))[0];
  EXPECT_EQ(out.raw_data(), buffer);
  EXPECT_TRUE(equal(out, expected));
  EXPECT_TRUE(equal(held, expected));
}

TEST(Jit, FusesAnElementwiseChainWithItsRowSum) {
  // Five nodes become one that runs block by block (compiler/fuse.h: over 8 blocks of 65536
  // elements); each block computes whole rows with the same kernels, so the row sums are the
  // unfused ones bit for bit. The graph a program lists and saves stays unfused.
  auto f = [](const Tensors& in) { return Tensors{((in[0] * in[1] + in[2]).relu() * 0.5).sum({-1})}; };
  manual_seed(0);
  const Tensor x = randn({600, 1001}), a = randn({1001}), b = randn({600, 1});
  const compiler::Program program = compiler::Program::trace(f, {x, a, b});
  EXPECT_EQ(program.stats().fused, 5u);
  EXPECT_EQ(program.stats().fused_groups, 1u);
  const std::vector<std::string> types = program.node_types();
  EXPECT_EQ(std::count(types.begin(), types.end(), "UgReplay"), 0);
  EXPECT_TRUE(equal(program({x, a, b})[0], f({x, a, b})[0]));
}

/** zero_grad(); backward(); step() on a squared error: a PyTorch-style training step. */
std::function<Tensors(const Tensors&)> torch_step(nn::Sequential& net, optim::Optimizer& opt) {
  return [&net, &opt](const Tensors& xy) {
    opt.zero_grad();
    Tensor loss = (net->forward(xy[0]) - xy[1]).pow(2.0).mean();
    loss.backward();
    opt.step();
    return Tensors{loss};
  };
}

TEST(Jit, ATorchStyleStepHoldsWhatEagerHolds) {
  // zero_grad(); backward(); step() inside the function: the parameters, their .grad and
  // Adam's state are read and written by every run, as the eager step writes them.
  auto make = [] {
    manual_seed(0);
    return nn::Sequential(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 1));
  };
  nn::Sequential eager = make(), compiled = make();
  optim::Adam opt_e(eager->parameters(), optim::AdamOptions(1e-2));
  optim::Adam opt_c(compiled->parameters(), optim::AdamOptions(1e-2));
  JitFunction compiled_step = jit(torch_step(compiled, opt_c));
  auto eager_step = torch_step(eager, opt_e);
  manual_seed(1);
  for (int i = 0; i < 10; ++i) {
    Tensors xy{randn({16, 4}), randn({16, 1})};
    EXPECT_TRUE(allclose(compiled_step(xy)[0], eager_step(xy)[0], 1e-6, 1e-7)) << i;
    auto pe = eager->parameters(), pc = compiled->parameters();
    for (size_t k = 0; k < pe.size(); ++k) {
      EXPECT_TRUE(allclose(pc[k], pe[k], 1e-6, 1e-7)) << i << " " << k;
      EXPECT_TRUE(allclose(pc[k].grad(), pe[k].grad(), 1e-6, 1e-7)) << i << " " << k;
    }
  }
  EXPECT_EQ(compiled_step.cache_info().traces, 1);
}

TEST(Jit, ReduceRetracingCompilesATrainingStepOnceForEveryBatch) {
  // The mean's count and the backward's reshapes and expands are read from the inputs' shapes:
  // one program for every batch, each step equal (bit for bit: the same ops in the same order)
  // to a program traced at that batch alone.
  auto make = [] {
    manual_seed(0);
    return nn::Sequential(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 1));
  };
  nn::Sequential relaxed = make(), exact = make();
  optim::Adam opt_r(relaxed->parameters(), optim::AdamOptions(1e-2));
  optim::Adam opt_e(exact->parameters(), optim::AdamOptions(1e-2));
  int traces = 0;
  auto step = torch_step(relaxed, opt_r);
  JitFunction relaxed_step = jit(
      [&](const Tensors& xy) {
        ++traces;
        return step(xy);
      },
      {.name = "step", .reduce_retracing = true, .on_retrace = [](const std::string&) {}});
  JitFunction exact_step = jit(torch_step(exact, opt_e), {.on_retrace = [](const std::string&) {}});
  manual_seed(1);
  for (int64_t n : {16, 9, 5, 16, 12}) {
    Tensors xy{randn({n, 4}), randn({n, 1})};
    EXPECT_TRUE(equal(relaxed_step(xy)[0], exact_step(xy)[0])) << n;
    auto pr = relaxed->parameters(), pe = exact->parameters();
    for (size_t k = 0; k < pe.size(); ++k) EXPECT_TRUE(equal(pr[k], pe[k])) << n << " " << k;
  }
  EXPECT_EQ(traces, 2);
  EXPECT_EQ(relaxed_step.cache_info().size, 1u);
}

TEST(Jit, AStepWithBatchNormAndDropoutHoldsWhatEagerHolds) {
  // BatchNorm's running statistics and batch counter and the global generator are implicit
  // state too: each step starts both runs from one seed, and they stay equal.
  auto make = [] {
    manual_seed(0);
    nn::Sequential net(nn::Linear(4, 8), nn::BatchNorm1d(8), nn::ReLU(), nn::Dropout(0.3), nn::Linear(8, 1));
    net->to(DType::Float64);
    return net;
  };
  nn::Sequential eager = make(), compiled = make();
  optim::SGD opt_e(eager->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_c(compiled->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  JitFunction compiled_step = jit(torch_step(compiled, opt_c));
  auto eager_step = torch_step(eager, opt_e);
  for (int i = 0; i < 10; ++i) {
    manual_seed(100 + i);
    Tensors xy{randn({16, 4}, {.dtype = DType::Float64}), randn({16, 1}, {.dtype = DType::Float64})};
    Tensor loss_c = compiled_step(xy)[0];
    Tensor rng_c = get_rng_state();
    manual_seed(100 + i);
    randn({16, 4}), randn({16, 1});  // the same draws as for xy
    EXPECT_TRUE(allclose(loss_c, eager_step(xy)[0], 1e-12, 1e-12)) << i;
    EXPECT_TRUE(equal(get_rng_state(), rng_c)) << i;
    auto se = eager->state_dict(), sc = compiled->state_dict();
    for (const auto& [name, t] : se) EXPECT_TRUE(allclose(sc.at(name), t, 1e-12, 1e-12)) << i << " " << name;
  }
  EXPECT_EQ(compiled->state_dict().at("1.num_batches_tracked").item<int64_t>(), 10);
}

TEST(Jit, AWhileLoopWithATracedBoundRunsAsOneLoop) {
  // Doubling until the sum passes the bound, closing over it: the trip count is the data's at
  // every run, never the trace's.
  int calls = 0;
  JitFunction f = jit([&](const Tensors& xs) {
    ++calls;
    const Tensor& bound = xs[1];
    return while_loop([&](const Tensors& c) { return c[0].sum() < bound; },
                      [&](const Tensors& c) {
                        return Tensors{c[0] * 2 + 1, c[1] + 1};
                      },
                      {xs[0], scalar_tensor(0, {.dtype = DType::Int64})});
  });
  for (double bound : {10.0, 1000.0, 1.0}) {
    Tensor x = tensor({1.0, 2.0}), n = scalar_tensor(0, {.dtype = DType::Int64});
    while ((x.sum() < bound).item<bool>()) x = x * 2 + 1, n = n + 1;
    Tensors out = f({tensor({1.0, 2.0}), scalar_tensor(bound)});
    EXPECT_TRUE(allclose(out[0], x));
    EXPECT_EQ(out[1].item<int64_t>(), n.item<int64_t>());
  }
  EXPECT_EQ(calls, 1);
}

TEST(Jit, AWhileLoopOnAPerExampleConditionBatchesUnderVmap) {
  // JAX's batching rule: the loop goes on while some example's condition holds, and an example
  // whose condition stopped holding keeps its carry. Eagerly, and compiled inside the vmap.
  LoopCond below = [](const Tensors& c) { return c[0].sum() < 10.0; };
  LoopBody doubled = [](const Tensors& c) { return Tensors{c[0] * 2, c[1] + 1}; };
  TensorFn f = [&](const Tensors& xs) {
    return while_loop(below, doubled, {xs[0], scalar_tensor(0, {.dtype = DType::Int64})});
  };
  JitFunction compiled = jit(f);
  const Tensor xs = tensor({{0.5, 0.5}, {3.0, 4.0}, {20.0, 1.0}});
  const int64_t before = vmap_fallbacks();
  for (const TensorFn& run : {f, TensorFn([&](const Tensors& a) { return compiled(a); })}) {
    for (int call = 0; call < 2; ++call) {
      Tensors out = vmap(run, {xs}, {0}, {});
      EXPECT_TRUE(equal(out[0], tensor({{8.0, 8.0}, {6.0, 8.0}, {20.0, 1.0}})));
      EXPECT_TRUE(equal(out[1], tensor({4, 1, 0}).to(DType::Int64)));
    }
  }
  EXPECT_EQ(vmap_fallbacks(), before);
}

TEST(Jit, AnExplicitNumericsCheckRunsAtEveryRunOfTheProgram) {
  JitFunction f = jit([](const Tensors& xs) { return Tensors{debugging::check_numerics(xs[0].log(), "log") * 2}; });
  EXPECT_TRUE(allclose(f({tensor({1.0, 2.0})})[0], tensor({1.0, 2.0}).log() * 2));  // traced on finite values
  EXPECT_THROW(f({tensor({1.0, -2.0})}), RuntimeError);
}

TEST(Jit, DebugCallbacksRunAtEveryRunOfTheProgram) {
  std::vector<double> seen;
  JitFunction f = jit([&](const Tensors& xs) {
    Tensor y = xs[0] * 2.0;
    compiler::debug_callback([&](const Tensors& v) { seen.push_back(v[0].sum().item<double>()); }, {y});
    return Tensors{y + 1.0};
  });
  f({full({2}, 1.0)});
  f({full({2}, 3.0)});
  EXPECT_EQ(seen, (std::vector<double>{4.0, 12.0}));  // once a call: the trace waits for the run
}

TEST(Jit, CondRunsTheBranchItsPredicatePicksAtEachRun) {
  // x log x guarded at x <= 0: the untaken branch's log(0) reaches neither value nor gradient.
  auto f = [](const Tensors& xs) {
    return lax::cond(
        xs[0] > 0.0, [](const Tensors& v) { return Tensors{v[0] * v[0].log()}; },
        [](const Tensors& v) { return Tensors{v[0] * 0.0}; }, {xs[0]});
  };
  JitFunction gradient = jit([&](const Tensors& xs) { return value_and_grad(f, xs, {0}).second; });
  for (double x : {2.0, 0.0, -1.0}) {
    const double g = gradient({scalar_tensor(x)})[0].item<double>();
    EXPECT_NEAR(g, x > 0 ? std::log(x) + 1 : 0.0, 1e-6) << "at " << x;
  }
}

TEST(Jit, SavesAnInferenceProgramThatOnnxLoadRuns) {
  manual_seed(0);
  nn::Sequential net(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  Tensor x = randn({2, 4});
  auto program = compiler::Program::trace([&](const Tensors& xs) { return Tensors{net->forward(xs[0])}; }, {x});
  const std::string path =
      (std::filesystem::temp_directory_path() / ("jit_" + std::to_string(::getpid()) + ".onnx")).string();
  program.save(path);
  auto loaded = onnx::load(path);
  std::filesystem::remove(path);
  Tensor want = net->forward(x);
  EXPECT_TRUE(allclose(program({x})[0], want));
  EXPECT_TRUE(allclose(loaded->forward(x), want));
  EXPECT_THROW(program({randn({3, 4})}), TypeError);
}

TEST(Jit, AClosedOverTensorWrittenInPlaceRetracesOnceThenIsReadLive) {
  Tensor c = ones({2});
  std::vector<std::string> warnings;
  JitFunction f = jit([&](const Tensors& xs) { return Tensors{xs[0] + c * 3}; },
                      {.name = "f", .on_retrace = [&](const std::string& w) { warnings.push_back(w); }});
  EXPECT_TRUE(allclose(f({zeros({2})})[0], full({2}, 3.0)));
  c.add_(1);
  EXPECT_TRUE(allclose(f({zeros({2})})[0], full({2}, 6.0)));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'f' is traced again: a tensor it reads as a constant (float32 [2]) was written in place"),
            std::string::npos)
      << warnings[0];
  EXPECT_TRUE(allclose(f({zeros({2})})[0], full({2}, 6.0)));
  // Read live since: written at every call, it retraces no more.
  for (double step = 3; step < 6; ++step) {
    c.add_(1);
    EXPECT_TRUE(allclose(f({zeros({2})})[0], full({2}, 3 * step)));
  }
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(f.cache_info().traces, 2);
}

TEST(Jit, ArgumentsSharingMemoryTraceTheirOwnProgram) {
  JitFunction f = jit([](const Tensors& xs) { return Tensors{xs[0] * 2 + xs[1]}; });
  Tensor a = ones({3});
  EXPECT_TRUE(allclose(f({a, a})[0], full({3}, 3.0)));
  EXPECT_TRUE(allclose(f({a, zeros({3})})[0], full({3}, 2.0)));
  EXPECT_EQ(f.cache_info().traces, 2);
  EXPECT_EQ(compiler::aliasing({a, zeros({3}), a.view({3}), a}), "2=0+0 [1]/[1] 3=0+0 [1]/[1]");
  // Views of one memory that overlap otherwise are another program (before: "1=0" for both, and a
  // program traced on (a, a) read the first view twice).
  Tensor base = arange(4.0);
  EXPECT_EQ(compiler::aliasing({base.narrow(0, 0, 2), base.narrow(0, 2, 2)}), "1=0+2 [1]/[1]");
  EXPECT_EQ(compiler::aliasing({base.narrow(0, 2, 2), base.narrow(0, 0, 2)}), "1=0-2 [1]/[1]");
  EXPECT_TRUE(allclose(f({base.narrow(0, 0, 2), base.narrow(0, 2, 2)})[0], tensor({2.0, 5.0})));
  EXPECT_EQ(f.cache_info().traces, 3);
}

TEST(Jit, AReadOfATracedValueIsRefusedUnlessItOnlyChecks) {
  // item() on a traced value would keep the trace's number for every later call.
  JitFunction scale_by_max = jit([](const Tensors& xs) { return Tensors{xs[0] * xs[0].amax().item<double>()}; });
  try {
    scale_by_max({randn({3})});
    FAIL() << "a read of a traced value was not refused";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("[jit] C++ code read the value of a traced tensor (float32 [])"),
              std::string::npos)
        << e.what();
  }
  // A read that only checks an input is allowed: under the trace it checks the trace's values.
  JitFunction checked = jit([](const Tensors& xs) {
    {
      ValueReadScope check;
      if (xs[0].lt(0).any().item<bool>()) fail("negative input");
    }
    return Tensors{xs[0].sqrt()};
  });
  Tensor x = rand({4});
  EXPECT_TRUE(allclose(checked({x})[0], x.sqrt()));
  // Outside a trace, item() reads as always.
  EXPECT_DOUBLE_EQ(ones({}).item<double>(), 1.0);
}

}  // namespace
}  // namespace ug
