#include "ug/data/data_loader.h"

#include "ug/core/error.h"

namespace ug::data {

namespace {

std::shared_ptr<Dataset> require(std::shared_ptr<Dataset> dataset) {
  if (!dataset) fail("[DataLoader] expected a data set, got none");
  return dataset;
}

BatchLoader<Example>::Load load_for(std::shared_ptr<Dataset> dataset, Collate collate) {
  if (!collate) return [dataset](std::span<const int64_t> indices) { return dataset->get_batch(indices); };
  return [dataset, collate](std::span<const int64_t> indices) {
    std::vector<Example> samples;
    samples.reserve(indices.size());
    for (int64_t i : indices) samples.push_back(dataset->get(i));
    return collate(std::move(samples));
  };
}

}  // namespace

std::shared_ptr<BatchSampler> make_batch_sampler(int64_t size, const DataLoaderOptions& o) {
  if (o.batch_sampler) {
    if (o.batch_size != 1 || o.shuffle || o.sampler || o.drop_last)
      fail("[DataLoader] batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last");
    return o.batch_sampler;
  }
  if (o.sampler && o.shuffle) fail("[DataLoader] sampler option is mutually exclusive with shuffle");
  std::shared_ptr<Sampler> sampler = o.sampler;
  if (!sampler && o.shuffle) sampler = std::make_shared<RandomSampler>(size, false, std::nullopt, o.seed);
  if (!sampler) sampler = std::make_shared<SequentialSampler>(size);
  return std::make_shared<BatchSampler>(std::move(sampler), o.batch_size, o.drop_last);
}

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(require(std::move(dataset))),
      core_(make_batch_sampler(dataset_->size(), options), load_for(dataset_, options.collate_fn),
            {.num_workers = options.num_workers,
             .prefetch_factor = options.prefetch_factor,
             .seed = options.seed,
             .worker_init_fn = options.worker_init_fn,
             .timeout = options.timeout}) {}

DataLoader::~DataLoader() { stop(); }

void DataLoader::start_epoch(int64_t epoch) {
  stop();
  core_.set_epoch(epoch);
  pass_ = core_.begin_pass();
}

std::optional<Example> DataLoader::next() {
  if (!pass_) pass_ = core_.begin_pass();
  return pass_->next();
}

void DataLoader::stop() { pass_.reset(); }

}  // namespace ug::data
