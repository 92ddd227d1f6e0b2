// `ug demo`: a short tour of the C++ API (creation, printing, arithmetic, random numbers),
// then matrix products of growing size, each checked against a naive loop and timed.
#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include "cli.h"
#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::cli {

namespace {

void show(const char* code, const Tensor& t) { std::cout << code << "\n" << t << "\n\n"; }

void tour() {
  std::cout << "== tensors\n\n";
  Tensor x = ug::tensor({{1, 2}, {3, 4}});
  show("x = ug::tensor({{1, 2}, {3, 4}})", x);
  Tensor r = ug::arange(6).reshape({2, 3}) * 0.5;
  show("r = ug::arange(6).reshape({2, 3}) * 0.5", r);
  ug::manual_seed(0);
  Tensor n = ug::randn({2, 3});
  show("ug::manual_seed(0); n = ug::randn({2, 3})", n);
  show("ug::exp(r) + n", ug::exp(r) + n);
  show("x.matmul(x.t())", x.matmul(x.t()));
  show("(r * n).sum()", (r * n).sum());
}

struct Check {
  double max_error;
  double tolerance;
};

/** Recomputes a few rows of c = a @ b with a plain double-precision loop. Sampling rows
 *  keeps the check cheap at any size while still covering the first, last and middle. */
Check check_rows(const Tensor& a, const Tensor& b, const Tensor& c) {
  const int64_t n = a.size(0);
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  const float* pc = c.data_ptr<float>();
  std::vector<double> ref(n);
  double max_error = 0;
  for (int64_t s = 0; s <= 8; ++s) {
    const int64_t i = s * (n - 1) / 8;
    std::fill(ref.begin(), ref.end(), 0.0);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j) ref[j] += double(pa[i * n + k]) * pb[k * n + j];
    for (int64_t j = 0; j < n; ++j) max_error = std::max(max_error, std::abs(ref[j] - pc[i * n + j]));
  }
  // float32 rounding grows with n, and entries of a product of N(0, 1) matrices are about
  // sqrt(n) in size: n * eps * sqrt(n) is loose for rounding, far below any real bug.
  const double nd = static_cast<double>(n);
  return {max_error, nd * FLT_EPSILON * std::sqrt(nd)};
}

/** Median seconds per call, over at least 3 calls and about a quarter second. */
template <class Fn> double median_seconds(Fn&& fn) {
  using clock = std::chrono::steady_clock;
  fn();  // warm-up: first-touch pages, BLAS buffers
  std::vector<double> times;
  const auto start = clock::now();
  while (times.size() < 3 || clock::now() - start < std::chrono::milliseconds(250)) {
    const auto t0 = clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

bool matmul_sweep(int64_t max_size) {
  std::cout << "== matrix products: float32 C = A.matmul(B), A and B from ug::randn\n\n";
  std::printf("%6s %14s %10s %14s %12s  %s\n", "n", "median time", "GFLOP/s", "max |error|", "tolerance", "check");
  std::vector<int64_t> sizes;
  for (int64_t n = 64; n < max_size; n *= 2) sizes.push_back(n);
  sizes.push_back(max_size);
  bool all_ok = true;
  for (int64_t n : sizes) {
    Tensor a = ug::randn({n, n}), b = ug::randn({n, n});
    Tensor c = a.matmul(b).contiguous();
    const Check check = check_rows(a, b, c);
    const bool ok = check.max_error <= check.tolerance;
    all_ok = all_ok && ok;
    const double seconds = median_seconds([&] { c = a.matmul(b); });
    const double gflops = 2.0 * n * n * n / seconds / 1e9;
    std::printf("%6lld %11.3f ms %10.1f %14.3g %12.3g  %s\n", static_cast<long long>(n), seconds * 1e3, gflops,
                check.max_error, check.tolerance, ok ? "ok" : "FAILED");
  }
  std::cout << "\n(the check recomputes 9 rows of each product in double precision)\n";
  return all_ok;
}

}  // namespace

int run_demo(const Args& args) {
  int64_t size = 512, threads = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view name = option_name(args[i]);
    if (name == "--size") size = parse_int(name, option_value(args, i), 1, 8192);
    else if (name == "--threads") threads = parse_int(name, option_value(args, i), 1, 1024);
    else throw UsageError("unknown option '" + std::string(args[i]) + "'");
  }
  if (threads > 0) ug::set_num_threads(static_cast<int>(threads));
  std::cout << "unigrad " << UG_VERSION << " demo: " << ug::get_num_threads() << " threads, "
            << ug::cpu::cpu_backend().isa() << " kernels\n\n";
  tour();
  return matmul_sweep(size) ? 0 : 1;
}

}  // namespace ug::cli
