// ug::fft's FFTW kernel from C++: a DFT against its definition, and calls from several threads
// at once (plans are made under one mutex and executed concurrently) against the same calls
// made one at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/fft.h"
#include "ug/ops/random.h"
#include "test_util.h"

namespace {

using ug::Tensor;

TEST(Fft, RfftIsTheDefinition) {
  const int64_t n = 13;
  const Tensor x = ug::randn({n}, {.dtype = ug::DType::Float64});
  const std::vector<double> xs = ug::test::values(x), got = ug::test::values(ug::view_as_real(ug::fft::rfft(x)));
  ASSERT_EQ(got.size(), static_cast<size_t>(2 * (n / 2 + 1)));
  for (int64_t k = 0; k <= n / 2; ++k) {
    double re = 0, im = 0;
    for (int64_t j = 0; j < n; ++j) {
      re += xs[j] * std::cos(2 * std::numbers::pi * static_cast<double>(j * k) / n);
      im -= xs[j] * std::sin(2 * std::numbers::pi * static_cast<double>(j * k) / n);
    }
    EXPECT_NEAR(got[2 * k], re, 1e-12) << k;
    EXPECT_NEAR(got[2 * k + 1], im, 1e-12) << k;
  }
}

TEST(Fft, ConcurrentCallsGiveTheSerialResults) {
  // Shapes new to the plan cache, several strided (the column passes), planned by the threads
  // at once: the serial results come afterwards, from the plans the threads made.
  std::vector<Tensor> inputs;
  for (int64_t n = 101; n < 141; ++n)
    inputs.push_back(ug::randn({5, n, 6}, {.dtype = n % 2 ? ug::DType::Float64 : ug::DType::Float32}));
  auto run = [](const Tensor& x) {
    return ug::fft::irfftn(ug::fft::fftn(x, std::nullopt, ug::Dims{0, 1}), ug::Dims{5, x.size(1), 6});
  };
  const size_t count = inputs.size();
  std::vector<std::vector<Tensor>> results(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < count; ++i) results[t].push_back(run(inputs[(i + 5 * t) % count]));
    });
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < results.size(); ++t)
    for (size_t i = 0; i < count; ++i)
      EXPECT_TRUE(ug::equal(results[t][i], run(inputs[(i + 5 * t) % count]))) << t << " " << i;
}

}  // namespace
