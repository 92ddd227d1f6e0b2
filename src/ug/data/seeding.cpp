#include "ug/data/seeding.h"

#include <cstring>

#include "ug/ops/random.h"

namespace ug::data {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t mix_seed(uint64_t seed, std::initializer_list<uint64_t> parts) {
  uint64_t h = splitmix64(seed);
  for (uint64_t p : parts) h = splitmix64(h ^ splitmix64(p + 0x632BE59BD9B4E019ULL));
  return h;
}

uint64_t draw_seed() {
  const RandomStream s = default_generator().reserve(2);
  return (static_cast<uint64_t>(s.word(0)) << 32) | s.word(1);
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  Generator g(seed);
  GeneratorScope scope(g);
  const Tensor p = randperm(n);
  std::vector<int64_t> out(static_cast<size_t>(n));
  if (n > 0) std::memcpy(out.data(), p.raw_data(), out.size() * sizeof(int64_t));
  return out;
}

std::vector<double> uniform_doubles(Generator& g, int64_t count) {
  const RandomStream s = g.reserve(2 * static_cast<uint64_t>(count));
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    // One Philox block gives four words: two doubles.
    const uint64_t block = s.offset + static_cast<uint64_t>(i) / 2;
    const auto w = philox4x32(s.key, {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0, 0});
    const int k = static_cast<int>(i % 2) * 2;
    out[static_cast<size_t>(i)] = uniform_double(w[k], w[k + 1]);
  }
  return out;
}

}  // namespace ug::data
