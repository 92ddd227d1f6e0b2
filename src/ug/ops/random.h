// Random tensors, two ways over one Philox generator: the global seed (ug::manual_seed,
// then ug::randn) and explicit JAX-style keys (ug::random::key, split, normal...).
#pragma once

#include <optional>
#include <utility>

#include "ug/core/random.h"
#include "ug/core/tensor.h"

namespace ug {

Tensor rand(const Dims& shape, Options opts = {});
Tensor randn(const Dims& shape, Options opts = {});
/** Integers uniform in [low, high); int64 unless a dtype is given. */
Tensor randint(int64_t low, int64_t high, const Dims& shape, Options opts = {});
Tensor normal(double mean, double std, const Dims& shape, Options opts = {});
Tensor randperm(int64_t n, Options opts = {});
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);
/** The global generator's state as an int64 tensor [seed, offset] (torch.get_rng_state's
 *  role: checkpoints save it), and back. */
Tensor get_rng_state();
void set_rng_state(const Tensor& state);
/** Fills t in place from the global generator (used by initialisers). */
Tensor& uniform_(Tensor& t, double low = 0, double high = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
/** 1 with probability p, else 0: for each element of p (torch.bernoulli), or for each element
 *  of t, in place. */
Tensor bernoulli(const Tensor& p);
Tensor& bernoulli_(Tensor& t, double p = 0.5);
/** Integers drawn uniformly into t in place (torch's Tensor::random_): over [from, to), or from
 *  `from` to the dtype's largest when to is absent (2^digits for a floating dtype, the largest
 *  with every integer below it exact); random_(t, to) draws over [0, to), random_(t) over
 *  [0, the largest]. */
Tensor& random_(Tensor& t, int64_t from, std::optional<int64_t> to);
Tensor& random_(Tensor& t, int64_t to);
Tensor& random_(Tensor& t);
/** Exponentially distributed with rate lambd, in place. */
Tensor& exponential_(Tensor& t, double lambd = 1);
/** num_samples category indices (int64) for each row of non-negative weights (1-d or 2-d, not
 *  necessarily normalised), with or without replacement (torch.multinomial). */
Tensor multinomial(const Tensor& weights, int64_t num_samples, bool replacement = false);

namespace random {

/** A key is an int64 tensor of shape [2] holding two 32-bit words, like jax.random.PRNGKey. */
Tensor key(uint64_t seed);
/** `num` independent keys derived from `key`, as a [num, 2] tensor. */
Tensor split(const Tensor& key, int64_t num = 2);
/** A key derived from `key` and `data` (jax.random.fold_in). */
Tensor fold_in(const Tensor& key, uint64_t data);
/** fold_in with `data` a 0-d integer tensor, as the int: a compiled program folds in the data
 *  it is given at each run, and under vmap a batch of data (or of keys) gives a batch of keys. */
Tensor fold_in(const Tensor& key, const Tensor& data);
/** jax.random.uniform/normal; dtype: the default floating dtype unless given. */
Tensor uniform(const Tensor& key, const Dims& shape, double minval = 0, double maxval = 1,
               std::optional<DType> dtype = std::nullopt);
Tensor normal(const Tensor& key, const Dims& shape, std::optional<DType> dtype = std::nullopt);
Tensor randint(const Tensor& key, const Dims& shape, int64_t minval, int64_t maxval, DType dtype = DType::Int64);
Tensor bernoulli(const Tensor& key, double p, const Dims& shape);
/** Category indices drawn with probabilities softmax(logits) along `axis` (jax.random.categorical):
 *  of the logits' shape without that axis, or of `shape`, which must broadcast with it. */
Tensor categorical(const Tensor& key, const Tensor& logits, int64_t axis = -1, std::optional<Dims> shape = {});
Tensor permutation(const Tensor& key, int64_t n);
/** x shuffled along dim 0. */
Tensor permutation(const Tensor& key, const Tensor& x);

}  // namespace random
}  // namespace ug
