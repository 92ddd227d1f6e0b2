#include "ug/core/random.h"

#include <random>

namespace ug {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 2> key, std::array<uint32_t, 4> c) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return c;
}

uint32_t RandomStream::word(uint64_t i) const {
  uint64_t block = offset + i / 4;
  auto r = philox4x32(key, {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0, 0});
  return r[i % 4];
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::seed() {
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) | device();
  manual_seed(seed);
  return seed;
}

RandomStream Generator::reserve(uint64_t words) {
  std::lock_guard<std::mutex> lock(mu_);
  RandomStream s{{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)}, offset_};
  offset_ += (words + 3) / 4;
  return s;
}

std::array<uint64_t, 2> Generator::get_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {seed_, offset_};
}

void Generator::set_state(std::array<uint64_t, 2> state) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = state[0];
  offset_ = state[1];
}

namespace {
thread_local Generator* scoped_generator = nullptr;
}  // namespace

Generator& default_generator() {
  static Generator g;
  return scoped_generator ? *scoped_generator : g;
}

GeneratorScope::GeneratorScope(Generator& g) : previous_(scoped_generator) { scoped_generator = &g; }
GeneratorScope::~GeneratorScope() { scoped_generator = previous_; }

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace ug
