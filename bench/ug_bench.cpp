// The C++ side of unigrad's benchmarks, on the workloads of the PyTorch peers
// (shared/bench/peers): 1-element dispatch overhead (with and without autograd),
// memory-bound elementwise ops on 16M float32 elements, square float32 GEMM, and the MLP
// 784-128(ReLU)-10: its no_grad forward at batch 1 and 256 and its training step. Every
// benchmark reports wall time (UseRealTime): kernels run on the thread pool, where the main
// thread's CPU time would undercount them.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/openblas.h"
#include "ug/core/thread_pool.h"
#include "ug/data/idx.h"
#include "ug/nn/nn.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"
#include "ug/ops/unary.h"
#include "ug/optim/adam.h"

namespace {

constexpr int64_t kElems = 16 * 1024 * 1024;  // the peers' elementwise size
constexpr int64_t kFloatBytes = 4;

void add_1elem(benchmark::State& state) {
  ug::Tensor a = ug::ones({1}), b = ug::ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(add_1elem)->UseRealTime();

// Forward and backward of (a*b + c).sum() on 1-element leaves: four ops (mul, add, sum,
// backward) per iteration; the "per_op" counter is the time of one of them.
constexpr int kAutogradOps = 4;

void count_autograd_ops(benchmark::State& state) {
  state.counters["per_op"] =
      benchmark::Counter(kAutogradOps, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The leaves are made once; their .grad accumulate.
void autograd_1elem(benchmark::State& state) {
  ug::Tensor a = ug::ones({1}).requires_grad_(), b = ug::ones({1}).requires_grad_(), c = ug::ones({1}).requires_grad_();
  for (auto _ : state) (a * b + c).sum().backward();
  count_autograd_ops(state);
}
BENCHMARK(autograd_1elem)->UseRealTime();

// The leaves are made inside the loop.
void autograd_1elem_fresh(benchmark::State& state) {
  for (auto _ : state) {
    ug::Tensor a = ug::ones({1}).requires_grad_(), b = ug::ones({1}).requires_grad_(),
               c = ug::ones({1}).requires_grad_();
    (a * b + c).sum().backward();
  }
  count_autograd_ops(state);
}
BENCHMARK(autograd_1elem_fresh)->UseRealTime();

// "fresh": every call returns a new result (c = a + b), so allocation is part of the time.
void add_16M_fresh(benchmark::State& state) {
  ug::Tensor a = ug::rand({kElems}), b = ug::rand({kElems});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
  state.SetBytesProcessed(state.iterations() * 3 * kFloatBytes * kElems);  // read 2, write 1
}
BENCHMARK(add_16M_fresh)->UseRealTime()->Unit(benchmark::kMillisecond);

void exp_16M_fresh(benchmark::State& state) {
  ug::Tensor a = ug::rand({kElems});
  for (auto _ : state) benchmark::DoNotOptimize(ug::exp(a));
  state.SetBytesProcessed(state.iterations() * 2 * kFloatBytes * kElems);
}
BENCHMARK(exp_16M_fresh)->UseRealTime()->Unit(benchmark::kMillisecond);

// "out": into an existing, already-touched output, like torch.exp(a, out=c).
void exp_16M_out(benchmark::State& state) {
  ug::Tensor a = ug::rand({kElems}), out = ug::zeros({kElems});
  for (auto _ : state) ug::ops::unary_out(ug::ops::UnaryOp::Exp, a, out);
  state.SetBytesProcessed(state.iterations() * 2 * kFloatBytes * kElems);
}
BENCHMARK(exp_16M_out)->UseRealTime()->Unit(benchmark::kMillisecond);

// The bandwidth the elementwise ops are measured against: one thread's memcpy of the same
// 64 MiB, counting bytes read and written.
void memcpy_16M(benchmark::State& state) {
  ug::Tensor src = ug::ones({kElems}), dst = ug::zeros({kElems});
  for (auto _ : state) {
    std::memcpy(dst.raw_data(), src.raw_data(), kFloatBytes * kElems);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kFloatBytes * kElems);
}
BENCHMARK(memcpy_16M)->UseRealTime()->Unit(benchmark::kMillisecond);

void gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  ug::manual_seed(0);
  ug::Tensor a = ug::randn({n, n}), b = ug::randn({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(b));
  state.counters["GFLOPS"] =
      benchmark::Counter(2e-9 * static_cast<double>(n * n * n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(gemm)->UseRealTime()->Unit(benchmark::kMillisecond)->RangeMultiplier(2)->Range(256, 2048);

// The peers' MLP, seeded as they are.
ug::nn::Sequential make_mlp() {
  ug::manual_seed(0);
  return ug::nn::Sequential(ug::nn::Linear(784, 128), ug::nn::ReLU(), ug::nn::Linear(128, 10));
}

/** The first n Fashion-MNIST test images as (n, 784) floats in [0, 1], as the peers read
 *  them; random pixels where the data set is absent (the timing does not depend on them). */
ug::Tensor test_images(int64_t n) {
  const char* dir = std::getenv("FASHION_MNIST_DIR");
  const std::string path = std::string(dir ? dir : "/usr/share/datasets/fashion-mnist") + "/t10k-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(path)) return ug::rand({n, 784});
  ug::Tensor x = ug::data::read_idx(path);
  return x.slice(0, 0, n).reshape({n, 784}).to(ug::DType::Float32).div(255.0).contiguous();
}

// The peer infer_latency.py: the forward under no_grad, eval mode, each call timed on its own;
// the "us_median" counter is the median per call (bench/run.py reports it, as the peer does).
void mlp_infer(benchmark::State& state) {
  auto model = make_mlp();
  model->eval();
  ug::Tensor x = test_images(state.range(0));
  ug::NoGradGuard no_grad;
  std::vector<double> seconds;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(model->forward(x));
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  state.counters["us_median"] = seconds.empty() ? 0 : seconds[seconds.size() / 2] * 1e6;
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(mlp_infer)->UseRealTime()->Unit(benchmark::kMicrosecond)->Arg(1)->Arg(256);

// One step of the peer mlp_train_epoch.py: index_select a batch of 64 from a shuffled
// permutation, zero_grad, forward, cross-entropy, backward, Adam, loss.item(). The images
// are random (the step's cost does not depend on them), 8192 of them to keep it small.
void mlp_train_step(benchmark::State& state) {
  constexpr int64_t kImages = 8192, kBatch = 64;
  auto model = make_mlp();
  ug::Tensor x = ug::rand({kImages, 784}), y = ug::randint(0, 10, {kImages});
  ug::optim::Adam opt(model->parameters(), ug::optim::AdamOptions(1e-3));
  ug::nn::CrossEntropyLoss loss_fn;
  ug::Tensor perm = ug::randperm(kImages);
  int64_t i = 0;
  double loss_sum = 0;
  for (auto _ : state) {
    ug::Tensor idx = perm.slice(0, i, i + kBatch);
    i = (i + kBatch) % kImages;
    ug::Tensor xb = x.index_select(0, idx), yb = y.index_select(0, idx);
    opt.zero_grad();
    ug::Tensor loss = loss_fn(model->forward(xb), yb);
    loss.backward();
    opt.step();
    loss_sum += loss.item<float>();
  }
  benchmark::DoNotOptimize(loss_sum);
}
BENCHMARK(mlp_train_step)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  ug::rerun_with_openblas_core(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("ug_threads", std::to_string(ug::get_num_threads()));
  benchmark::AddCustomContext("ug_isa", ug::cpu::cpu_backend().isa());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
