// ug::distributed in one process (MPI's singleton start: a world of one rank). The many-rank
// behaviour is tested under mpirun by tests/python/test_distributed.py.
#include <gmock/gmock.h>

#include "test_util.h"

namespace ug {
namespace {

namespace dist = distributed;
using ::testing::HasSubstr;

/** The world group for one test, gone again at its end. */
struct World {
  World() { dist::init_process_group("mpi", dist::Timeout(30)); }
  ~World() { dist::destroy_process_group(); }
};

TEST(Distributed, CollectivesOnOneRankLeaveTheValues) {
  World world;
  EXPECT_EQ(dist::get_rank(), 0);
  EXPECT_EQ(dist::get_world_size(), 1);
  Tensor x = randn({3, 4}, {.dtype = float64});
  Tensor y = x.clone();
  dist::all_reduce(y, dist::ReduceOp::Avg);
  EXPECT_EQ(test::values(y), test::values(x));
  Tensor h = x.to(float16);  // travels as float32 and comes back as float16
  dist::all_reduce(h, dist::ReduceOp::Max);
  EXPECT_EQ(h.dtype(), float16);
  EXPECT_EQ(test::values(h), test::values(x.to(float16)));
  std::vector<Tensor> gathered = {zeros({3, 4}, {.dtype = float64})};
  dist::WorkPtr work = dist::all_gather(gathered, x, nullptr, /*async_op=*/true);
  ASSERT_TRUE(work);
  work->wait();
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(test::values(gathered[0]), test::values(x));
}

TEST(Distributed, ErrorsNameTheOpAndTheCause) {
  try {
    dist::barrier();
    FAIL() << "no error before init_process_group";
  } catch (const RuntimeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[barrier] the default process group is not initialised"));
  }
  World world;
  EXPECT_THROW(dist::all_reduce(ones({2}, {.dtype = int64}), dist::ReduceOp::Avg), TypeError);
  try {
    dist::new_group({0, 0});
    FAIL() << "no error for a repeated rank";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "[new_group] rank 0 is listed twice");
  }
}

TEST(Distributed, DdpBucketsInReverseOrderAndLeavesTheLocalGradientOnOneRank) {
  World world;
  manual_seed(0);
  nn::Sequential net(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 2));
  nn::Sequential reference(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 2));
  reference->load_state_dict(net->state_dict());
  // 16*2+2 floats = 136 bytes fill the first bucket (cap 100 bytes); the rest form the second.
  dist::DistributedDataParallel ddp(net.ptr(), dist::DdpOptions{.bucket_cap_mb = 100.0 / (1024 * 1024)});
  EXPECT_EQ(ddp->reducer().bucket_indices(), (std::vector<std::vector<size_t>>{{3, 2}, {1, 0}}));
  Tensor x = randn({5, 8});
  ddp(x).sum().backward();
  reference(x).sum().backward();
  auto got = net->parameters(), want = reference->parameters();
  for (size_t i = 0; i < got.size(); ++i) test::expect_values(got[i].grad(), test::values(want[i].grad()), 1e-6);
  {
    auto no_sync = ddp->no_sync();  // accumulates locally: the same sums
    ddp(x).sum().backward();
  }
  reference(x).sum().backward();
  for (size_t i = 0; i < got.size(); ++i) test::expect_values(got[i].grad(), test::values(want[i].grad()), 1e-6);
}

TEST(Distributed, ACheckpointWithAGroupKeepsEveryRanksRngAndSamplerState) {
  World world;
  const dist::ProcessGroupPtr group = dist::default_group();
  data::DistributedSampler sampler(10, 1, 0, /*shuffle=*/true, /*seed=*/5);
  sampler.set_epoch(3);
  manual_seed(9);
  randn({3});  // moves the generator's offset
  const Tensor rng = get_rng_state();
  io::Tree tree = train::Checkpoint{.sampler = &sampler, .group = group}.to_tree({2, 1, {}});
  EXPECT_EQ(tree.find("ranks")->find("world_size")->as_int(), 1);
  EXPECT_EQ(tree.find("ranks")->find("rng")->as_tensor().shape(), Shape({1, 2}));

  data::DistributedSampler fresh(10, 1, 0, true, /*seed=*/0);
  manual_seed(0);
  const train::Progress progress = train::Checkpoint{.sampler = &fresh, .group = group}.from_tree(tree, "ckpt");
  EXPECT_EQ(progress.epoch, 2);
  EXPECT_EQ(fresh.epoch(), 3);
  EXPECT_EQ(fresh.indices(), sampler.indices());  // the seed came back too
  EXPECT_EQ(test::values(get_rng_state()), test::values(rng));

  data::DistributedSampler other_data(12, 1, 0, true, 5);
  try {
    train::Checkpoint{.sampler = &other_data, .group = group}.from_tree(tree, "ckpt");
    FAIL() << "a sampler over another data set was restored";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[DistributedSampler] the saved state has dataset_size=10 but this sampler has "
                                    "dataset_size=12: it was saved for another data set"));
  }
  tree.find("ranks")->set("world_size", 2);
  try {
    train::Checkpoint{.group = group}.from_tree(tree, "ckpt");
    FAIL() << "another world size was accepted";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[load_checkpoint] 'ckpt': it was written by a job of 2 ranks and this one has 1"));
  }
}

}  // namespace
}  // namespace ug
