// The uint8 x int8 GEMM of dynamic quantization, its AVX512-VNNI kernel and its portable loop,
// against float64 sums (exact for these sizes), on shapes that leave partial row, column and
// k-quad blocks; and quantize_dynamic on a small model.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "ug/backend/cpu/cpu_int8_gemm.h"
#include "ug/nn/containers.h"
#include "ug/nn/layers/activation.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"
#include "ug/quantization/dynamic_linear.h"

namespace {

using ug::Tensor;

/** packed: b packed once (pack_u8s8, as a quantized Linear holds it), then gemm_u8s8_packed. */
void check_gemm(int64_t M, int64_t N, int64_t K, bool vnni, int32_t za = 0, bool packed = false) {
  std::mt19937 rng(static_cast<unsigned>(M * 1000 + N * 10 + K));
  std::vector<uint8_t> a(static_cast<size_t>(M * K));
  std::vector<int8_t> b(static_cast<size_t>(N * K));
  // The extremes too: 255 * -128 is the largest product in magnitude.
  for (auto& v : a) v = static_cast<uint8_t>(rng() % 4 == 0 ? 255 : rng() % 256);
  for (auto& v : b) v = static_cast<int8_t>(rng() % 4 == 0 ? -128 : static_cast<int>(rng() % 256) - 128);
  std::vector<int32_t> out(static_cast<size_t>(M * N), -1);
  if (packed) {
    std::vector<int32_t> bp(static_cast<size_t>(ug::cpu::packed_u8s8_words(N, K)));
    ug::cpu::pack_u8s8(b.data(), N, K, bp.data());
    ug::cpu::gemm_u8s8_packed(a.data(), za, bp.data(), out.data(), M, N, K);
  } else {
    ug::cpu::gemm_u8s8(a.data(), za, b.data(), out.data(), M, N, K, vnni);
  }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += (static_cast<double>(a[i * K + k]) - za) * static_cast<double>(b[j * K + k]);
      ASSERT_EQ(static_cast<double>(out[i * N + j]), ref)
          << "M=" << M << " N=" << N << " K=" << K << " at " << i << "," << j << (vnni ? " (vnni)" : " (portable)");
    }
}

TEST(Int8Gemm, PortableSumsAreExact) {
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, {5, 17, 3}, {64, 33, 130}, {7, 64, 784}, {3, 5, 0}})
    check_gemm(M, N, K, false);
  check_gemm(9, 40, 77, false, 255);
}

TEST(Int8Gemm, VnniSumsAreExact) {
  if (!ug::cpu::cpu_has_avx512_vnni()) GTEST_SKIP() << "no AVX512-VNNI on this CPU";
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, {5, 17, 3}, {64, 33, 130}, {7, 64, 784}, {3, 5, 0}, {130, 1024, 1025}})
    check_gemm(M, N, K, true);
  check_gemm(9, 40, 77, true, 255);
  check_gemm(17, 20, 33, true, 127);
}

TEST(Int8Gemm, PrepackedSumsAreExact) {
  if (!ug::cpu::cpu_has_avx512_vnni()) GTEST_SKIP() << "no AVX512-VNNI on this CPU";
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, {5, 17, 3}, {64, 33, 130}, {7, 64, 784}, {3, 5, 0}})
    check_gemm(M, N, K, true, 0, true);
  check_gemm(9, 40, 77, true, 255, true);
}

TEST(Int8Gemm, QuantizeU8RoundsHalfToEvenOnBothKernels) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // x * 2 + 3: halves round to even; the ends saturate; NaN gives 0. 37 values: a partial vector.
  std::vector<float> x = {0.25f, 0.75f, -0.25f, -1.25f, 1.25f, 2.0f, -2.0f, 200.0f, -200.0f, inf, -inf, nan, 63.75f};
  const std::vector<int> want = {3, 5, 3, 1, 5, 7, 0, 255, 0, 255, 0, 0, 131};
  x.resize(37, 1.0f);
  for (bool vnni : {false, true}) {
    if (vnni && !ug::cpu::cpu_has_avx512_vnni()) continue;
    std::vector<uint8_t> out(x.size(), 99);
    ug::cpu::quantize_u8(x.data(), static_cast<int64_t>(x.size()), 2.0f, 3, out.data(), vnni);
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(out[i], i < want.size() ? want[i] : 5) << "x=" << x[i] << (vnni ? " (vnni)" : " (portable)");
  }
}

TEST(QuantizeDynamic, SwapsLinearsInsideContainers) {
  ug::manual_seed(0);
  auto model = std::make_shared<ug::nn::SequentialImpl>(ug::nn::Linear(8, 16), ug::nn::ReLU(), ug::nn::Linear(16, 4));
  auto q = ug::quantization::quantize_dynamic(model);
  EXPECT_EQ(q->named_children()[0].second->type_name(), "DynamicQuantizedLinear");
  EXPECT_EQ(q->named_children()[2].second->type_name(), "DynamicQuantizedLinear");
  EXPECT_EQ(model->named_children()[0].second->type_name(), "Linear");  // a copy unless inplace
  Tensor x = ug::randn({4, 8});
  const double err = ((*q)(x) - (*model)(x)).abs().amax().item<double>();
  EXPECT_LT(err, 0.05);
  EXPECT_THROW(ug::quantization::quantize_dynamic(model, {"Linear"}, ug::DType::Float16), ug::TypeError);
}

}  // namespace
