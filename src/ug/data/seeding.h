// Where the data pipeline's randomness comes from. A shuffle depends on (seed, epoch) and a
// batch's random transforms on (seed, epoch, batch) only, so neither thread timing nor the
// number of workers changes the data, and a run resumed at epoch k sees epoch k's order.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "ug/core/random.h"

namespace ug::data {

/** A seed derived from `seed` and `parts` (SplitMix64 steps): distinct parts, unrelated seeds. */
uint64_t mix_seed(uint64_t seed, std::initializer_list<uint64_t> parts);

/** A fresh seed from the global generator: what an unseeded shuffle uses, as torch does. */
uint64_t draw_seed();

/** A random permutation of [0, n) that depends on `seed` only. */
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

/** `count` uniform doubles in [0, 1) from generator `g`. */
std::vector<double> uniform_doubles(Generator& g, int64_t count);

}  // namespace ug::data
