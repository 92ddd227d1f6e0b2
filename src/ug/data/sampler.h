// Samplers: the order in which a DataLoader reads a data set (torch.utils.data's samplers).
// A seeded sampler's pass depends on (seed, epoch) only; set_epoch(k) reproduces pass k.
// Unseeded, each pass draws its seed from the global generator, as torch does.
// Counts, padding and interleaving match torch; shuffled orders do not (another generator).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ug::data {

/** What a checkpoint keeps of a sampler, as named integers: its epoch, and for the
 *  distributed one its seed and the shard it was made for (checked on loading). */
using SamplerState = std::vector<std::pair<std::string, int64_t>>;

/** Hands out the indices of one pass at a time. */
class Sampler {
 public:
  virtual ~Sampler() = default;
  /** Indices per pass. */
  virtual int64_t size() const = 0;
  /** The indices of the next pass. */
  virtual std::vector<int64_t> indices() = 0;
  /** The epoch the next pass uses. */
  virtual void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  /** {"epoch": ...}; subclasses add what their passes depend on. */
  virtual SamplerState state() const { return {{"epoch", epoch_}}; }
  /** Restores what state() gave; raises naming the entry that is missing or does not match. */
  virtual void load_state(const SamplerState& state);

 protected:
  int64_t epoch_ = 0;
};

/** 0, 1, ..., n-1. */
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices() override;

 private:
  int64_t n_;
};

/** The base of the shuffling samplers: the seed of a pass is (seed, epoch) and the epoch
 *  moves on by one after each pass, so iterating again reshuffles. */
class SeededSampler : public Sampler {
 protected:
  explicit SeededSampler(std::optional<uint64_t> seed) : seed_(seed) {}
  /** The seed of the next pass; advances the epoch. */
  uint64_t next_pass_seed();

 private:
  std::optional<uint64_t> seed_;
};

/** A random permutation of [0, n) per pass; or num_samples indices: with replacement,
 *  uniform draws; without, whole permutations then part of one (as torch). */
class RandomSampler : public SeededSampler {
 public:
  RandomSampler(int64_t n, bool replacement = false, std::optional<int64_t> num_samples = std::nullopt,
                std::optional<uint64_t> seed = std::nullopt);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> indices() override;

 private:
  int64_t n_;
  bool replacement_;
  int64_t num_samples_;
};

/** The given indices in a random order per pass (torch's SubsetRandomSampler). */
class SubsetRandomSampler : public SeededSampler {
 public:
  explicit SubsetRandomSampler(std::vector<int64_t> indices, std::optional<uint64_t> seed = std::nullopt);
  int64_t size() const override { return static_cast<int64_t>(subset_.size()); }
  std::vector<int64_t> indices() override;
  /** The indices it permutes, as given. */
  const std::vector<int64_t>& subset() const { return subset_; }

 private:
  std::vector<int64_t> subset_;
};

/** num_samples indices drawn with probability proportional to `weights` (with replacement
 *  by default; without, like torch.multinomial: each index at most once). */
class WeightedRandomSampler : public SeededSampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        std::optional<uint64_t> seed = std::nullopt);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> indices() override;

 private:
  std::vector<double> weights_;
  int64_t num_samples_;
  bool replacement_;
};

/** This rank's share of a data set split over num_replicas processes, as torch's
 *  DistributedSampler: every rank gets the same count; the (shuffled) indices are padded by
 *  repeating the first ones (or cut, with drop_last) and rank r takes r, r + R, r + 2R...
 *  The shuffle depends on (seed, epoch); the epoch changes only through set_epoch, so all
 *  ranks agree on it. */
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t dataset_size, int64_t num_replicas = 1, int64_t rank = 0, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> indices() override;
  int64_t total_size() const { return num_samples_ * num_replicas_; }
  /** epoch and seed (restored by load_state), num_replicas, rank and dataset_size (which must
   *  match: a job resumes with the world size it was saved with). */
  SamplerState state() const override;
  void load_state(const SamplerState& state) override;

 private:
  int64_t n_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t num_samples_;
};

}  // namespace ug::data
