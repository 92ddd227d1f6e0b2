// ug::data's loading layer from C++: data sets, samplers, the prefetching core, DataLoader
// and the tf.data-style Pipeline. Comparisons with torch are in tests/python/test_data_loader.py.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "test_util.h"
#include "ug/data/collate.h"
#include "ug/data/data_loader.h"
#include "ug/data/datasets.h"
#include "ug/data/pipeline.h"

namespace {

using ug::Tensor;
using ug::test::values;
namespace data = ug::data;

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : values(t)) out.push_back(static_cast<int64_t>(v));
  return out;
}

std::vector<int64_t> iota(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + i;
  return v;
}

/** (x, y) with x[i] = (i, 10 i) and y[i] = i. */
std::shared_ptr<data::TensorDataset> numbered(int64_t n, int64_t start = 0) {
  Tensor y = ug::arange(start, start + n);
  Tensor x = ug::stack({y.to(ug::float32), (y * 10).to(ug::float32)}, 1);
  return std::make_shared<data::TensorDataset>(std::vector<Tensor>{x, y});
}

/** Labels of every batch of a pass. */
std::vector<std::vector<int64_t>> labels(data::BatchSource& source, int64_t epoch) {
  source.start_epoch(epoch);
  std::vector<std::vector<int64_t>> out;
  while (auto b = source.next()) out.push_back(ints(b->back()));
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(DataSets, TensorDatasetSamplesAndBatches) {
  auto ds = numbered(5);
  EXPECT_EQ(ds->size(), 5);
  data::Example s = ds->get(3);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(values(s[0]), (std::vector<double>{3, 30}));
  const std::vector<int64_t> idx{4, 0, 2};
  data::Example b = ds->get_batch(idx);
  EXPECT_EQ(b[0].shape(), ug::test::shape({3, 2}));
  EXPECT_EQ(ints(b[1]), idx);
  // The fast path and the generic stacking agree.
  data::Example generic = ds->data::Dataset::get_batch(idx);
  EXPECT_EQ(values(generic[0]), values(b[0]));
  EXPECT_THROW(data::default_collate({ds->get(0), {ds->get(1)[0]}}), ug::ValueError);
  EXPECT_THROW(ds->get(5), ug::IndexError);
  EXPECT_THROW(ds->get_batch(std::vector<int64_t>{1, -1}), ug::IndexError);
}

TEST(DataSets, TensorDatasetSizeMismatchNamesSizes) {
  try {
    data::TensorDataset({ug::zeros({5, 2}), ug::zeros({4})});
    FAIL();
  } catch (const ug::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("5, 4"), std::string::npos) << e.what();
  }
}

TEST(DataSets, SubsetAndConcat) {
  auto sub = std::make_shared<data::Subset>(numbered(10), std::vector<int64_t>{7, 2, 5});
  EXPECT_EQ(sub->size(), 3);
  EXPECT_EQ(ints(sub->get(1)[1]), std::vector<int64_t>{2});
  EXPECT_EQ(ints(sub->get_batch(std::vector<int64_t>{2, 0})[1]), (std::vector<int64_t>{5, 7}));
  EXPECT_THROW(data::Subset(numbered(3), {3}), ug::IndexError);

  data::ConcatDataset cat({numbered(3), numbered(4, 100), numbered(2, 200)});
  EXPECT_EQ(cat.size(), 9);
  EXPECT_EQ(cat.cumulative_sizes(), (std::vector<int64_t>{3, 7, 9}));
  EXPECT_EQ(ints(cat.get(3)[1]), std::vector<int64_t>{100});
  EXPECT_EQ(ints(cat.get(8)[1]), std::vector<int64_t>{201});
  const std::vector<int64_t> idx{8, 0, 4, 2, 3};
  data::Example b = cat.get_batch(idx);
  EXPECT_EQ(ints(b[1]), (std::vector<int64_t>{201, 0, 101, 2, 100}));
  EXPECT_EQ(values(b[0].select(1, 1)), (std::vector<double>{2010, 0, 1010, 20, 1000}));
  EXPECT_THROW(cat.get(9), ug::IndexError);
}

TEST(DataSets, StackDatasetFieldsSideBySide) {
  auto labels = std::make_shared<data::TensorDataset>(std::vector<Tensor>{ug::arange(100, 104)});
  data::StackDataset keyed({numbered(4), labels}, {"pair", "label"});
  EXPECT_EQ(keyed.size(), 4);
  const data::Example b = keyed.get_batch(std::vector<int64_t>{3, 1});
  EXPECT_EQ(b.names, (std::vector<std::string>{"pair.0", "pair.1", "label"}));
  EXPECT_EQ(ints(b.field("pair.1")), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(ints(b.field("label")), (std::vector<int64_t>{103, 101}));
  const data::Example tuple = data::StackDataset({numbered(4), labels}).get(2);
  EXPECT_EQ(tuple.size(), 3u);
  EXPECT_TRUE(tuple.names.empty());
  EXPECT_EQ(ints(tuple[2]), std::vector<int64_t>{102});
  try {
    data::StackDataset({numbered(4), numbered(5)});
    FAIL() << "expected a size mismatch";
  } catch (const ug::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset 0 has 4 samples, dataset 1 has 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(keyed.get(4), ug::IndexError);
}

TEST(DataSets, RandomSplitLengthsAndFractions) {
  auto ds = numbered(10);
  auto parts = data::random_split(ds, {3, 7}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]->size(), 3);
  std::vector<int64_t> all = parts[0]->indices();
  all.insert(all.end(), parts[1]->indices().begin(), parts[1]->indices().end());
  EXPECT_EQ(sorted(all), iota(10));
  EXPECT_EQ(data::random_split(ds, {3, 7}, 1)[0]->indices(), parts[0]->indices());
  // torch: floor(10 * f) = 3, 3, 3, then the remainder one by one from the first split.
  auto thirds = data::random_split(ds, {1.0 / 3, 1.0 / 3, 1.0 / 3}, 0);
  EXPECT_EQ(thirds[0]->size(), 4);
  EXPECT_EQ(thirds[1]->size(), 3);
  EXPECT_THROW(data::random_split(ds, {3, 6}, 0), ug::ValueError);
}

TEST(Samplers, SeededShufflesDependOnSeedAndEpochOnly) {
  data::RandomSampler a(50, false, std::nullopt, 7), b(50, false, std::nullopt, 7);
  const std::vector<int64_t> e0 = a.indices(), e1 = a.indices();
  EXPECT_EQ(sorted(e0), iota(50));
  EXPECT_NE(e0, e1);  // the epoch moves on after a pass
  b.set_epoch(1);
  EXPECT_EQ(b.indices(), e1);     // resuming at epoch 1
  data::RandomSampler drawn(50);  // unseeded: drawn from the global generator
  ug::manual_seed(3);
  const std::vector<int64_t> d1 = drawn.indices();
  ug::manual_seed(3);
  EXPECT_EQ(drawn.indices(), d1);
}

TEST(Samplers, SubsetRandomSamplerPermutesItsIndices) {
  const std::vector<int64_t> subset{9, 4, 30, 2, 17, 8};
  data::SubsetRandomSampler a(subset, 5), b(subset, 5);
  const std::vector<int64_t> e0 = a.indices(), e1 = a.indices();
  EXPECT_EQ(sorted(e0), sorted(subset));
  EXPECT_EQ(sorted(e1), sorted(subset));
  b.set_epoch(1);
  EXPECT_EQ(b.indices(), e1);
  EXPECT_EQ(a.size(), 6);
}

TEST(Samplers, RandomSamplerNumSamples) {
  data::RandomSampler more(4, false, 10, 0);
  const std::vector<int64_t> v = more.indices();
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(sorted({v.begin(), v.begin() + 4}), iota(4));  // whole permutations first
  data::RandomSampler replace(3, true, 100, 0);
  for (int64_t i : replace.indices()) EXPECT_TRUE(i >= 0 && i < 3);
  EXPECT_THROW(data::RandomSampler(0), ug::ValueError);
}

TEST(Samplers, WeightedFrequencies) {
  data::WeightedRandomSampler s({1, 0, 3}, 40000, true, 0);
  std::vector<int64_t> counts(3);
  for (int64_t i : s.indices()) ++counts[static_cast<size_t>(i)];
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(counts[2] / 40000.0, 0.75, 0.015);
  data::WeightedRandomSampler unique({1, 1, 0, 5}, 3, false, 0);
  EXPECT_EQ(sorted(unique.indices()), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_THROW(data::WeightedRandomSampler({1, 0}, 2, false), ug::ValueError);
  EXPECT_THROW(data::WeightedRandomSampler({1, -1}, 2), ug::ValueError);
}

TEST(Samplers, DistributedCountsAndUnion) {
  for (bool drop_last : {false, true}) {
    std::vector<int64_t> all;
    for (int64_t rank = 0; rank < 3; ++rank) {
      data::DistributedSampler s(10, 3, rank, true, 5, drop_last);
      const std::vector<int64_t> mine = s.indices();
      EXPECT_EQ(static_cast<int64_t>(mine.size()), drop_last ? 3 : 4);
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::set<int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(distinct.size(), drop_last ? 9u : 10u);
  }
  data::DistributedSampler plain(5, 2, 1, false);
  EXPECT_EQ(plain.indices(), (std::vector<int64_t>{1, 3, 0}));  // padded with index 0
  EXPECT_THROW(data::DistributedSampler(5, 2, 2), ug::ValueError);
}

TEST(Samplers, BatchSamplerCounts) {
  auto seq = std::make_shared<data::SequentialSampler>(10);
  data::BatchSampler keep(seq, 4, false), drop(seq, 4, true);
  EXPECT_EQ(keep.size(), 3);
  EXPECT_EQ(drop.size(), 2);
  EXPECT_EQ(keep.batches().back(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(drop.batches().size(), 2u);
  EXPECT_THROW(data::BatchSampler(seq, 0, false), ug::ValueError);
}

TEST(Prefetcher, DeliversInOrderWhateverTheTiming) {
  data::Prefetcher<int64_t> p(
      [](int64_t i) -> std::optional<int64_t> {
        if (i >= 40) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 500));
        return i * i;
      },
      3, 4);
  for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(p.next(), i * i);
  EXPECT_FALSE(p.next());
  EXPECT_FALSE(p.next());
}

TEST(Prefetcher, StaysWithinCapacity) {
  std::atomic<int64_t> produced{0};
  data::Prefetcher<int64_t> p(
      [&](int64_t i) -> std::optional<int64_t> {
        ++produced;
        return i;
      },
      2, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_LE(produced.load(), 3);  // never more than the queue holds
  EXPECT_EQ(p.next(), 0);
  p.stop();  // early stop with items still queued
  EXPECT_LE(produced.load(), 4);
}

TEST(Prefetcher, RethrowsAWorkersExceptionThenEnds) {
  for (int workers : {0, 2}) {
    data::Prefetcher<int64_t> p(
        [](int64_t i) -> std::optional<int64_t> {
          if (i == 2) throw ug::ValueError("bad sample 2");
          return i;
        },
        workers, 4);
    EXPECT_EQ(p.next(), 0);
    EXPECT_EQ(p.next(), 1);
    try {
      p.next();
      FAIL();
    } catch (const ug::ValueError& e) {
      EXPECT_STREQ(e.what(), "bad sample 2");
    }
    EXPECT_FALSE(p.next());
  }
}

/** A data set whose samples carry a random number: its value shows which generator ran. */
class RandomSamples : public data::Dataset {
 public:
  int64_t size() const override { return 37; }
  data::Example get(int64_t index) const override { return {ug::rand({1}), ug::scalar_tensor(index)}; }
};

TEST(DataLoader, SameBatchesWithAnyNumberOfWorkers) {
  auto ds = std::make_shared<RandomSamples>();
  std::vector<std::vector<double>> reference;
  for (int workers : {0, 1, 3}) {
    data::DataLoaderOptions o;
    o.batch_size = 5;
    o.shuffle = true;
    o.seed = 11;
    o.num_workers = workers;
    data::DataLoader loader(ds, o);
    EXPECT_EQ(loader.num_batches(), 8);
    std::vector<std::vector<double>> got;
    for (int64_t epoch : {0, 1}) {
      loader.start_epoch(epoch);
      while (auto b = loader.next()) {
        got.push_back(values(b->at(0)));
        got.push_back(values(b->at(1)));
      }
    }
    if (reference.empty()) reference = got;
    EXPECT_EQ(got, reference) << workers << " workers";
  }
  EXPECT_NE(reference[0], reference[16]);  // epochs differ
}

/** A data set whose samples say which worker loaded them (-1: none). */
class WorkerSamples : public data::Dataset {
 public:
  int64_t size() const override { return 20; }
  data::Example get(int64_t index) const override {
    const data::WorkerInfo* w = data::worker_info();
    return {ug::scalar_tensor(w ? w->id : -1), ug::scalar_tensor(w ? w->num_workers : -1), ug::scalar_tensor(index)};
  }
};

TEST(DataLoader, WorkerInitAndWorkerInfo) {
  std::mutex mu;
  std::set<int> started;
  std::set<uint64_t> seeds_minus_ids;
  data::DataLoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 3;
  o.seed = 5;
  o.worker_init_fn = [&](int id) {
    const data::WorkerInfo* w = data::worker_info();
    ASSERT_NE(w, nullptr);
    std::lock_guard lock(mu);
    EXPECT_TRUE(started.insert(id).second) << "worker " << id << " started twice";
    EXPECT_EQ(w->id, id);
    seeds_minus_ids.insert(w->seed - static_cast<uint64_t>(id));
  };
  data::DataLoader loader(std::make_shared<WorkerSamples>(), o);
  loader.start_epoch(0);
  std::vector<int64_t> indices;
  while (auto b = loader.next()) {
    for (int64_t id : ints(b->at(0))) EXPECT_TRUE(id >= 0 && id < 3) << id;
    for (int64_t n : ints(b->at(1))) EXPECT_EQ(n, 3);
    for (int64_t i : ints(b->at(2))) indices.push_back(i);
  }
  EXPECT_EQ(indices, iota(20));
  loader.stop();  // joins the workers: a late one may start after the last batch
  EXPECT_EQ(started, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(seeds_minus_ids.size(), 1u);  // one seed per pass, plus the worker's id
  EXPECT_EQ(data::worker_info(), nullptr);

  o.num_workers = 0;  // batches load on this thread: no worker, no worker_init_fn
  started.clear();
  data::DataLoader inline_loader(std::make_shared<WorkerSamples>(), o);
  inline_loader.start_epoch(0);
  while (auto b = inline_loader.next()) EXPECT_EQ(ints(b->at(0)), std::vector<int64_t>(4, -1));
  EXPECT_TRUE(started.empty());
}

TEST(DataLoader, WorkerInitErrorsAndTimeouts) {
  data::DataLoaderOptions o;
  o.num_workers = 2;
  o.worker_init_fn = [](int id) { ug::fail("worker ", id, " cannot start"); };
  data::DataLoader failing(numbered(8), o);
  failing.start_epoch(0);
  EXPECT_THROW(while (failing.next()){}, ug::ValueError);

  // A sample that takes longer than the timeout: next() throws, the pass still stops cleanly.
  class Slow : public data::Dataset {
   public:
    int64_t size() const override { return 2; }
    data::Example get(int64_t index) const override {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return {ug::scalar_tensor(index)};
    }
  };
  data::DataLoaderOptions slow;
  slow.num_workers = 1;
  slow.timeout = 0.02;
  data::DataLoader loader(std::make_shared<Slow>(), slow);
  loader.start_epoch(0);
  try {
    loader.next();
    FAIL() << "no timeout";
  } catch (const ug::RuntimeError& e) {
    EXPECT_STREQ(e.what(), "DataLoader timed out after 0.02 seconds");
  }
  slow.num_workers = 0;
  EXPECT_THROW(data::DataLoader(std::make_shared<Slow>(), slow), ug::ValueError);
  slow.num_workers = 1;
  slow.timeout = -1;
  EXPECT_THROW(data::DataLoader(std::make_shared<Slow>(), slow), ug::ValueError);
}

TEST(DataLoader, ShuffleCoversTheDataAndResumes) {
  data::DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 3;
  o.num_workers = 2;
  data::DataLoader a(numbered(10), o), b(numbered(10), o);
  const auto e0 = labels(a, 0), e1 = labels(a, 1);
  EXPECT_EQ(sorted(flat(e0)), iota(10));
  EXPECT_EQ(e0.size(), 3u);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(labels(b, 1), e1);
  o.drop_last = true;
  data::DataLoader dropped(numbered(10), o);
  EXPECT_EQ(dropped.num_batches(), 2);
  EXPECT_EQ(labels(dropped, 0).size(), 2u);
}

TEST(DataLoader, CustomCollateSamplerAndErrors) {
  data::DataLoaderOptions o;
  o.batch_size = 3;
  o.sampler = std::make_shared<data::DistributedSampler>(7, 2, 0, false);
  o.collate_fn = [](std::vector<data::Example> samples) {
    std::vector<Tensor> ys;
    for (auto& s : samples) ys.push_back(s[1]);
    return data::Example{ug::stack(ys, 0) + 100};
  };
  data::DataLoader loader(numbered(7), o);
  EXPECT_EQ(labels(loader, 0), (std::vector<std::vector<int64_t>>{{100, 102, 104}, {106}}));

  data::DataLoaderOptions conflict;
  conflict.shuffle = true;
  conflict.sampler = std::make_shared<data::SequentialSampler>(3);
  EXPECT_THROW(data::DataLoader(numbered(3), conflict), ug::ValueError);
  data::DataLoaderOptions zero;
  zero.batch_size = 0;
  EXPECT_THROW(data::DataLoader(numbered(3), zero), ug::ValueError);
}

TEST(DataLoader, StopsMidEpoch) {
  data::DataLoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 1;
  data::DataLoader loader(numbered(1000), o);
  loader.start_epoch(0);
  ASSERT_TRUE(loader.next());
  loader.start_epoch(1);  // abandons epoch 0's pass
  EXPECT_EQ(labels(loader, 2).size(), 1000u);
  loader.start_epoch(3);
  ASSERT_TRUE(loader.next());
}  // destroyed with a pass under way

TEST(Pipeline, ShuffleBatchRepeatTake) {
  Tensor x = ug::arange(10);
  auto p = data::Pipeline::from_tensor_slices({x, x * 2});
  EXPECT_EQ(p.cardinality(), 10);
  EXPECT_EQ(flat(labels(p, 0)), (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
  auto batched = p.batch(4);
  EXPECT_EQ(batched.num_batches(), 3);
  EXPECT_EQ(labels(batched, 0), (std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {8, 10, 12, 14}, {16, 18}}));
  EXPECT_EQ(p.batch(4, true).num_batches(), 2);

  // A buffer of one keeps the order; a buffer of the whole set is a full shuffle.
  auto kept = p.shuffle(1, 0);
  EXPECT_EQ(flat(labels(kept, 0)), flat(labels(p, 0)));
  auto shuffled = p.shuffle(10, 4).batch(10);
  const auto e0 = flat(labels(shuffled, 0)), e1 = flat(labels(shuffled, 1));
  EXPECT_EQ(sorted(e0), sorted(flat(labels(p, 0))));
  EXPECT_NE(e0, e1);                         // reshuffled each pass
  EXPECT_EQ(flat(labels(shuffled, 1)), e1);  // ... as a function of (seed, epoch)

  auto twice = p.shuffle(3, 0).repeat(2);
  EXPECT_EQ(twice.cardinality(), 20);
  const auto both = flat(labels(twice, 0));
  ASSERT_EQ(both.size(), 20u);
  EXPECT_NE(std::vector<int64_t>(both.begin(), both.begin() + 10), std::vector<int64_t>(both.begin() + 10, both.end()));
  EXPECT_EQ(p.repeat().cardinality(), -1);
  auto endless = p.repeat().take(25);
  EXPECT_EQ(flat(labels(endless, 0)).size(), 25u);
  EXPECT_THROW(p.batch(0), ug::ValueError);
  EXPECT_THROW(p.shuffle(0), ug::ValueError);
}

TEST(Pipeline, MapAndPrefetch) {
  auto p = data::Pipeline::from_tensor_slices({ug::arange(100)})
               .map([](data::Example e) { return data::Example{e[0] * 3}; })
               .batch(8)
               .prefetch(data::AUTOTUNE);
  const auto all = flat(labels(p, 0));
  ASSERT_EQ(all.size(), 100u);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], 3 * i);
  p.start_epoch(1);
  ASSERT_TRUE(p.next());
  p.start_epoch(2);  // a pass abandoned with its prefetch thread running
  ASSERT_TRUE(p.next());
  auto failing = data::Pipeline::from_tensor_slices({ug::arange(10)})
                     .map([](data::Example e) -> data::Example {
                       if (ug::test::values(e[0])[0] == 4) throw ug::ValueError("element 4");
                       return e;
                     })
                     .prefetch(2);
  failing.start_epoch(0);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(failing.next());
  EXPECT_THROW(failing.next(), ug::ValueError);
}

TEST(Pipeline, DictSlicesKeepTheirNamesThroughShuffleAndBatch) {
  Tensor x = ug::arange(10), y = ug::arange(10) * 2;
  auto p = data::Pipeline::from_tensor_slices({{"data", x}, {"label", y}});
  p.start_epoch(0);
  std::optional<data::Example> first = p.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->names, (std::vector<std::string>{"data", "label"}));
  EXPECT_EQ(first->field("label").item<int64_t>(), 0);
  EXPECT_THROW(first->field("image"), ug::IndexError);

  auto batches = p.shuffle(10, 0).batch(4);
  batches.start_epoch(0);
  int64_t seen = 0;
  while (std::optional<data::Example> b = batches.next()) {
    EXPECT_EQ(b->names, (std::vector<std::string>{"data", "label"}));
    EXPECT_EQ(values(b->field("label")), values(b->field("data") * 2));  // rows stay together
    seen += b->field("data").size(0);
  }
  EXPECT_EQ(seen, 10);

  data::Example renamed({ug::ones({2})}, {"label"});
  EXPECT_THROW(data::default_collate({*first, renamed}), ug::ValueError);
  EXPECT_THROW(data::Example({x}, {"a", "b"}), ug::ValueError);
  EXPECT_THROW(data::Example({x, y}, {"a", "a"}), ug::ValueError);
  EXPECT_THROW(data::Pipeline::from_tensor_slices({{"data", x}, {"label", ug::arange(3)}}), ug::ValueError);
}

}  // namespace
