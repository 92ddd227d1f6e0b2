// Counter-based random numbers (Philox 4x32-10). Element i of a draw depends only on the
// key, the draw's counter offset and i, so results are the same on any number of threads.
// Two front ends share it: a global generator (manual_seed) and explicit JAX-style keys.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace ug {

/** Four 32-bit random words for one (key, counter) pair. */
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 2> key, std::array<uint32_t, 4> counter);

/** The source of one random draw: a key and the counter where the draw starts. */
struct RandomStream {
  std::array<uint32_t, 2> key;
  uint64_t offset;  // in 4-word blocks
  /** Word `i` (0-based) of this stream. */
  uint32_t word(uint64_t i) const;
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  /** Seeds from std::random_device (torch's Generator.seed()) and returns the new seed. */
  uint64_t seed();
  uint64_t initial_seed() const { return seed_; }
  /** Reserves `words` words for one draw and returns where they start. */
  RandomStream reserve(uint64_t words);
  /** The whole state as (seed, offset), for checkpoints. */
  std::array<uint64_t, 2> get_state() const;
  void set_state(std::array<uint64_t, 2> state);

 private:
  mutable std::mutex mu_;
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

/** The process-wide generator behind ug::manual_seed and the ug::rand family. */
Generator& default_generator();
void manual_seed(uint64_t seed);

/** While alive, default_generator() on this thread is `g`: Module::init draws a model's
 *  initial parameters from a JAX-style key through the same initialisers as the global seed. */
class GeneratorScope {
 public:
  explicit GeneratorScope(Generator& g);
  ~GeneratorScope();
  GeneratorScope(const GeneratorScope&) = delete;
  GeneratorScope& operator=(const GeneratorScope&) = delete;

 private:
  Generator* previous_;
};

/** Converts random words to floats in [0, 1) with 24 (float) or 53 (double) random bits. */
inline float uniform_float(uint32_t w) { return static_cast<float>(w >> 8) * 0x1.0p-24f; }
inline double uniform_double(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((static_cast<uint64_t>(hi) << 32) | lo) >> 11) * 0x1.0p-53;
}

}  // namespace ug
