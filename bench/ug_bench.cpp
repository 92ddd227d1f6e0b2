// The C++ side of unigrad's benchmarks, on the workloads of the PyTorch peers
// (shared/bench/peers): 1-element dispatch overhead (with and without autograd),
// memory-bound elementwise ops on 16M float32 elements, and square float32 GEMM. Every benchmark reports wall time
// (UseRealTime): kernels run on the thread pool, where the main thread's CPU time would
// undercount them.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"
#include "ug/ops/unary.h"

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
  state.counters["per_op"] = benchmark::Counter(
      kAutogradOps, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The leaves are made once; their .grad accumulate.
void autograd_1elem(benchmark::State& state) {
  ug::Tensor a = ug::ones({1}).requires_grad_(), b = ug::ones({1}).requires_grad_(),
             c = ug::ones({1}).requires_grad_();
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
  state.counters["GFLOPS"] = benchmark::Counter(
      2e-9 * static_cast<double>(n * n * n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(gemm)->UseRealTime()->Unit(benchmark::kMillisecond)->RangeMultiplier(2)->Range(256, 2048);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("ug_threads", std::to_string(ug::get_num_threads()));
  benchmark::AddCustomContext("ug_isa", ug::cpu::cpu_backend().isa());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
