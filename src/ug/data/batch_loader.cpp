#include "ug/data/batch_loader.h"

#include <algorithm>

#include "ug/data/seeding.h"

namespace ug::data {

namespace {
constexpr uint64_t kBatchStream = 0xBA7C4;  // keeps batch seeds apart from shuffle seeds
}  // namespace

uint64_t pass_seed(std::optional<uint64_t> seed, int64_t epoch) {
  return seed ? mix_seed(*seed, {kBatchStream, static_cast<uint64_t>(epoch)}) : draw_seed();
}

PassPlan plan_pass(BatchSampler& sampler, const LoaderOptions& options, int64_t epoch) {
  return {sampler.batches(), pass_seed(options.seed, epoch)};
}

uint64_t batch_seed(uint64_t pass_seed, int64_t index) { return mix_seed(pass_seed, {static_cast<uint64_t>(index)}); }

int64_t queue_capacity(const LoaderOptions& options) {
  if (options.num_workers < 0)
    fail("[DataLoader] num_workers option should be non-negative, got ", options.num_workers);
  if (options.prefetch_factor < 1)
    fail("[DataLoader] prefetch_factor must be at least 1, got ", options.prefetch_factor);
  if (!(options.timeout >= 0)) fail("[DataLoader] timeout option should be non-negative, got ", options.timeout);
  if (options.timeout > 0 && options.num_workers == 0)
    fail("[DataLoader] timeout=", options.timeout,
         " limits the wait for worker threads, but num_workers=0 loads "
         "batches on the calling thread; set num_workers > 0 or timeout=0");
  return int64_t{std::max(options.num_workers, 1)} * options.prefetch_factor;
}

std::function<void(int)> worker_start(const LoaderOptions& options, uint64_t pass_seed, int workers) {
  return [init = options.worker_init_fn, pass_seed, workers](int id) {
    set_worker_info({.id = id, .num_workers = workers, .seed = pass_seed + static_cast<uint64_t>(id)});
    if (init) init(id);
  };
}

}  // namespace ug::data
