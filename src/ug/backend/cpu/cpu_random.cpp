// Random fills. Block b of the stream (four Philox words) always makes the same elements,
// so the numbers do not depend on how the work is split across threads.
#include <cmath>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

constexpr int64_t kBlockGrain = 2048;

std::array<uint32_t, 4> block(const RandomStream& s, int64_t b) {
  uint64_t c = s.offset + static_cast<uint64_t>(b);
  return philox4x32(s.key, {static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0, 0});
}

/** Calls make(words, first_element, count) for each block; `per_block` elements a block. */
template <class Make> void for_blocks(int64_t n, int64_t per_block, const RandomStream& s, Make make) {
  int64_t blocks = (n + per_block - 1) / per_block;
  parallel_for(blocks, kBlockGrain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      int64_t first = b * per_block;
      make(block(s, b), first, std::min(per_block, n - first));
    }
  });
}

}  // namespace

void CpuBackend::uniform(const Tensor& out, const RandomStream& s, double low, double high) {
  int64_t n = out.numel();
  UG_DISPATCH_FLOATING(out.dtype(), "uniform", {
    scalar_t* o = static_cast<scalar_t*>(out.raw_data());
    if constexpr (std::is_same_v<scalar_t, double>) {
      for_blocks(n, 2, s, [&](std::array<uint32_t, 4> w, int64_t i, int64_t c) {
        for (int64_t j = 0; j < c; ++j) o[i + j] = low + (high - low) * uniform_double(w[2 * j], w[2 * j + 1]);
      });
    } else {
      const float lo = static_cast<float>(low), span = static_cast<float>(high - low);
      for_blocks(n, 4, s, [&](std::array<uint32_t, 4> w, int64_t i, int64_t c) {
        for (int64_t j = 0; j < c; ++j) o[i + j] = static_cast<scalar_t>(lo + span * uniform_float(w[j]));
      });
    }
  });
}

void CpuBackend::normal(const Tensor& out, const RandomStream& s, double mean, double std) {
  int64_t n = out.numel();
  constexpr double kTwoPi = 6.283185307179586476925;
  UG_DISPATCH_FLOATING(out.dtype(), "normal", {
    scalar_t* o = static_cast<scalar_t*>(out.raw_data());
    if constexpr (std::is_same_v<scalar_t, double>) {
      for_blocks(n, 2, s, [&](std::array<uint32_t, 4> w, int64_t i, int64_t c) {
        double u1 = 1.0 - uniform_double(w[0], w[1]), u2 = uniform_double(w[2], w[3]);
        double r = std::sqrt(-2.0 * std::log(u1));
        double z[2] = {r * std::cos(kTwoPi * u2), r * std::sin(kTwoPi * u2)};
        for (int64_t j = 0; j < c; ++j) o[i + j] = mean + std * z[j];
      });
    } else {
      for_blocks(n, 4, s, [&](std::array<uint32_t, 4> w, int64_t i, int64_t c) {
        float z[4];
        for (int k = 0; k < 2; ++k) {
          float u1 = 1.0f - uniform_float(w[2 * k]), u2 = uniform_float(w[2 * k + 1]);
          float r = std::sqrt(-2.0f * std::log(u1));
          z[2 * k] = r * std::cos(static_cast<float>(kTwoPi) * u2);
          z[2 * k + 1] = r * std::sin(static_cast<float>(kTwoPi) * u2);
        }
        for (int64_t j = 0; j < c; ++j)
          o[i + j] = static_cast<scalar_t>(static_cast<float>(mean) + static_cast<float>(std) * z[j]);
      });
    }
  });
}

void CpuBackend::randint(const Tensor& out, const RandomStream& s, int64_t low, int64_t high) {
  int64_t n = out.numel();
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  UG_DISPATCH_ALL(out.dtype(), "randint", {
    scalar_t* o = static_cast<scalar_t*>(out.raw_data());
    for_blocks(n, 2, s, [&](std::array<uint32_t, 4> w, int64_t i, int64_t c) {
      for (int64_t j = 0; j < c; ++j) {
        uint64_t r = (static_cast<uint64_t>(w[2 * j]) << 32) | w[2 * j + 1];
        int64_t v = low + static_cast<int64_t>(r % range);
        o[i + j] = static_cast<scalar_t>(static_cast<acc_t<scalar_t>>(v));
      }
    });
  });
}

}  // namespace ug::cpu
