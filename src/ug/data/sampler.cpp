#include "ug/data/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ug/core/error.h"
#include "ug/data/seeding.h"
#include "ug/ops/random.h"

namespace ug::data {

namespace {

void check_num_samples(const char* op, int64_t num_samples) {
  if (num_samples <= 0)
    fail("[", op, "] num_samples should be a positive integer value, but got num_samples=", num_samples);
}

/** The value of `key` in a sampler's state; raises when it is missing. */
int64_t state_entry(const SamplerState& state, const std::string& key, const char* who) {
  for (const auto& [k, v] : state)
    if (k == key) return v;
  fail("[", who, "] the sampler state has no '", key, "'");
}

}  // namespace

void Sampler::load_state(const SamplerState& state) { epoch_ = state_entry(state, "epoch", "Sampler"); }

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  if (n < 0) fail("[SequentialSampler] the data set size must be non-negative, got ", n);
}

std::vector<int64_t> SequentialSampler::indices() {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

uint64_t SeededSampler::next_pass_seed() {
  const int64_t epoch = epoch_++;
  return seed_ ? mix_seed(*seed_, {static_cast<uint64_t>(epoch)}) : draw_seed();
}

RandomSampler::RandomSampler(int64_t n, bool replacement, std::optional<int64_t> num_samples,
                             std::optional<uint64_t> seed)
    : SeededSampler(seed), n_(n), replacement_(replacement), num_samples_(num_samples.value_or(n)) {
  check_num_samples("RandomSampler", num_samples_);
}

std::vector<int64_t> RandomSampler::indices() {
  const uint64_t seed = next_pass_seed();
  if (replacement_) {
    Generator g(seed);
    GeneratorScope scope(g);
    const Tensor draws = randint(0, n_, {num_samples_});
    std::vector<int64_t> out(static_cast<size_t>(num_samples_));
    std::memcpy(out.data(), draws.raw_data(), out.size() * sizeof(int64_t));
    return out;
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  for (uint64_t round = 0; static_cast<int64_t>(out.size()) < num_samples_; ++round) {
    const std::vector<int64_t> p = permutation(n_, mix_seed(seed, {round}));
    const size_t take = std::min(p.size(), static_cast<size_t>(num_samples_) - out.size());
    out.insert(out.end(), p.begin(), p.begin() + static_cast<std::ptrdiff_t>(take));
  }
  return out;
}

SubsetRandomSampler::SubsetRandomSampler(std::vector<int64_t> indices, std::optional<uint64_t> seed)
    : SeededSampler(seed), subset_(std::move(indices)) {}

std::vector<int64_t> SubsetRandomSampler::indices() {
  std::vector<int64_t> out = permutation(size(), next_pass_seed());
  for (int64_t& i : out) i = subset_[static_cast<size_t>(i)];
  return out;
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                             std::optional<uint64_t> seed)
    : SeededSampler(seed), weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement) {
  check_num_samples("WeightedRandomSampler", num_samples);
  double total = 0;
  int64_t positive = 0;
  for (double w : weights_) {
    if (!(w >= 0) || !std::isfinite(w))
      fail("[WeightedRandomSampler] weights must be finite and non-negative, got ", w);
    total += w;
    positive += w > 0;
  }
  if (total <= 0) fail("[WeightedRandomSampler] the weights sum to zero (", weights_.size(), " weights)");
  if (!replacement && num_samples > positive)
    fail("[WeightedRandomSampler] cannot draw ", num_samples, " samples without replacement from ", positive,
         " indices of non-zero weight");
}

std::vector<int64_t> WeightedRandomSampler::indices() {
  Generator g(next_pass_seed());
  const std::vector<double> u = uniform_doubles(g, replacement_ ? num_samples_ : static_cast<int64_t>(weights_.size()));
  std::vector<int64_t> out(static_cast<size_t>(num_samples_));
  if (replacement_) {
    std::vector<double> cumulative(weights_.size());
    std::partial_sum(weights_.begin(), weights_.end(), cumulative.begin());
    for (size_t i = 0; i < out.size(); ++i) {
      const double target = u[i] * cumulative.back();
      const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
      // Rounding can put the target at the very end: the last index of non-zero weight.
      size_t k = std::min(static_cast<size_t>(it - cumulative.begin()), weights_.size() - 1);
      while (weights_[k] == 0) --k;
      out[i] = static_cast<int64_t>(k);
    }
    return out;
  }
  // Without replacement (Efraimidis-Spirakis): the largest keys log(u)/w are the same
  // draws, in the same order, as picking one index at a time in proportion to its weight.
  std::vector<std::pair<double, int64_t>> keyed(weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i)
    keyed[i] = {weights_[i] > 0 ? std::log1p(-u[i]) / weights_[i] : -INFINITY, static_cast<int64_t>(i)};
  std::partial_sort(keyed.begin(), keyed.begin() + num_samples_, keyed.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < out.size(); ++i) out[i] = keyed[i].second;
  return out;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : n_(dataset_size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed) {
  if (num_replicas < 1) fail("[DistributedSampler] num_replicas must be at least 1, got ", num_replicas);
  if (rank < 0 || rank >= num_replicas)
    fail("[DistributedSampler] invalid rank ", rank, ", rank should be in the interval [0, ", num_replicas - 1, "]");
  if (dataset_size < 0) fail("[DistributedSampler] the data set size must be non-negative, got ", dataset_size);
  // As torch: with drop_last, the tail that cannot be split evenly is dropped; without,
  // the indices are padded up to the next multiple of num_replicas.
  num_samples_ = drop_last && n_ % num_replicas != 0 ? (n_ - num_replicas + num_replicas - 1) / num_replicas
                                                     : (n_ + num_replicas - 1) / num_replicas;
}

SamplerState DistributedSampler::state() const {
  return {{"epoch", epoch_},
          {"seed", static_cast<int64_t>(seed_)},  // the bits of the uint64
          {"num_replicas", num_replicas_},
          {"rank", rank_},
          {"dataset_size", n_}};
}

void DistributedSampler::load_state(const SamplerState& state) {
  struct Check {
    const char* key;
    int64_t mine;
    const char* hint;
  };
  const char* same_job = ": resume with the world size and rank it was saved with";
  for (const Check& c : {Check{"num_replicas", num_replicas_, same_job}, Check{"rank", rank_, same_job},
                         Check{"dataset_size", n_, ": it was saved for another data set"}}) {
    const int64_t saved = state_entry(state, c.key, "DistributedSampler");
    if (saved != c.mine)
      fail("[DistributedSampler] the saved state has ", c.key, "=", saved, " but this sampler has ", c.key, "=", c.mine,
           c.hint);
  }
  const int64_t epoch = state_entry(state, "epoch", "DistributedSampler");
  seed_ = static_cast<uint64_t>(state_entry(state, "seed", "DistributedSampler"));
  epoch_ = epoch;
}

std::vector<int64_t> DistributedSampler::indices() {
  std::vector<int64_t> all(static_cast<size_t>(n_));
  if (shuffle_) all = permutation(n_, mix_seed(seed_, {static_cast<uint64_t>(epoch_)}));
  else std::iota(all.begin(), all.end(), int64_t{0});
  const size_t total = static_cast<size_t>(total_size());
  if (all.size() < total) {
    if (all.empty()) fail("[DistributedSampler] cannot pad an empty data set to ", total, " samples");
    for (size_t i = 0; all.size() < total; ++i) all.push_back(all[i]);
  }
  all.resize(total);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_)) out.push_back(all[i]);
  return out;
}

}  // namespace ug::data
