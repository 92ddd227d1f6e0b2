// ug::distributed in one process (MPI's singleton start: a world of one rank). The many-rank
// behaviour is tested under mpirun by tests/python/test_distributed.py.
#include <gmock/gmock.h>

#include <unistd.h>

#include <cstring>
#include <random>
#include <thread>

#include "test_util.h"
#include "ug/distributed/shm_all_reduce.h"
#include "ug/distributed/sync_batch_norm.h"

namespace ug {
namespace {

namespace dist = distributed;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

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

TEST(Distributed, RootedCollectivesAndAllToAllOnOneRank) {
  World world;
  Tensor x = randn({2, 3}, {.dtype = float64});
  Tensor r = x.clone();
  dist::reduce(r, 0, dist::ReduceOp::Avg);
  EXPECT_EQ(test::values(r), test::values(x));
  std::vector<Tensor> gathered = {zeros({2, 3}, {.dtype = float64})};
  dist::gather(x, gathered, 0);
  EXPECT_EQ(test::values(gathered[0]), test::values(x));
  Tensor scattered = zeros({2, 3}, {.dtype = float64});
  dist::scatter(scattered, {x}, 0);
  EXPECT_EQ(test::values(scattered), test::values(x));
  Tensor whole = zeros({2, 3}, {.dtype = float64});
  dist::all_gather_into_tensor(whole, x);
  EXPECT_EQ(test::values(whole), test::values(x));
  std::vector<Tensor> received = {zeros({4}, {.dtype = int64})};
  dist::all_to_all(received, {arange(4)});
  EXPECT_EQ(test::values(received[0]), test::values(arange(4)));
  Tensor single = zeros({4}, {.dtype = int64});
  dist::all_to_all_single(single, arange(4), {4}, {4});
  EXPECT_EQ(test::values(single), test::values(arange(4)));
  EXPECT_THAT(
      [&] {
        dist::all_gather_into_tensor(zeros({5, 3}, {.dtype = float64}), x);
      },
      ThrowsMessage<ValueError>(HasSubstr("[all_gather_into_tensor] output of shape [5, 3]")));
  EXPECT_THAT([&] { dist::gather(x, {}, 0); },
              ThrowsMessage<ValueError>(HasSubstr("[gather] gather_list needs one tensor per rank (1), got 0")));
  auto outside = dist::new_group({0});
  EXPECT_EQ(dist::get_world_size(outside), 1);
}

TEST(Distributed, ConvertSyncBatchnormKeepsTheTensors) {
  nn::Sequential net(nn::Linear(4, 3), nn::BatchNorm1d(3), nn::ReLU());
  Tensor weight = (*net)[1]->parameter("weight");
  auto converted = dist::convert_sync_batchnorm(net.ptr());
  EXPECT_EQ(converted, net.ptr());
  EXPECT_EQ((*net)[1]->type_name(), "SyncBatchNorm");
  EXPECT_EQ(&(*net)[1]->parameter("weight").impl(), &weight.impl());
  EXPECT_THAT([] { dist::convert_sync_batchnorm(nn::BatchNorm1d(3, 1e-5, 0.1, false).ptr()); },
              ThrowsMessage<ValueError>(HasSubstr("BatchNorm1d(3) lacks one of them")));
}

TEST(Distributed, AStrategysReplicaContextSumsTheGradientsOfApplyGradients) {
  // One replica: the sum is the gradient itself, the loss averaged over the global batch, the
  // local part the whole batch; reduce over an axis sums or averages its rows.
  World world;
  auto strategy = train::MirroredStrategy::make();
  Tensor w = ones({2});
  optim::keras::SGD opt(optim::keras::SGDOptions(1.0));
  Tensor per_example = tensor({1.0, 2.0, 3.0, 6.0});
  EXPECT_EQ(train::compute_average_loss(per_example).item<double>(), 3.0);
  EXPECT_EQ(train::compute_average_loss(per_example, 8).item<double>(), 1.5);
  {
    auto replica = strategy->replica_context();
    EXPECT_EQ(train::current_strategy(), strategy);
    opt.apply_gradients({{full({2}, 0.5), w}});
  }
  EXPECT_EQ(train::current_strategy(), nullptr);
  test::expect_tensor(w, {2}, {0.5, 0.5});
  Tensor rows = tensor({{1.0, 2.0}, {3.0, 6.0}});
  EXPECT_EQ(test::values(strategy->local_part(rows)), test::values(rows));
  EXPECT_EQ(test::values(strategy->reduce("MEAN", rows, 0)), (std::vector<double>{2.0, 4.0}));
  EXPECT_EQ(test::values(strategy->reduce("SUM", rows)), test::values(rows));
  EXPECT_THROW(strategy->reduce("MAX", rows), ValueError);
}

TEST(Distributed, ACompiledProgramRunsItsAllReduceAtEveryCall) {
  // all_reduce and broadcast are ops of the program (kept though nothing reads them: every
  // rank takes part); a collective the program cannot replay raises inside the trace.
  World world;
  auto f = [](const Tensors& in) {
    Tensor t = in[0] * 2;
    dist::WorkPtr work = dist::all_reduce(t, dist::ReduceOp::Avg, nullptr, /*async_op=*/true);
    work->wait();  // finished already: a program runs it in turn
    if (!work->is_completed()) throw std::runtime_error("a traced all_reduce's handle is finished");
    Tensor unread = in[0].clone();
    dist::broadcast(unread, 0);
    return Tensors{t + 1};
  };
  const Tensor x = tensor({1.0, 2.0});
  const compiler::Program program = compiler::Program::trace(f, {x});
  const std::vector<std::string> called = program.called_back();  // ops the program calls back
  EXPECT_EQ(std::count(called.begin(), called.end(), "all_reduce"), 1);
  EXPECT_EQ(std::count(called.begin(), called.end(), "broadcast"), 1);
  EXPECT_EQ(test::values(program({tensor({3.0, 4.0})})[0]), (std::vector<double>{7.0, 9.0}));
  auto gather = [](const Tensors& in) {
    std::vector<Tensor> out{zeros_like(in[0])};
    dist::all_gather(out, in[0]);
    return out;
  };
  try {
    compiler::Program::trace(gather, {x});
    FAIL() << "all_gather compiled";
  } catch (const RuntimeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[all_gather] inside a compiled function"));
  }
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

/** `ranks` threads, each a rank with its own mapping of one segment, all-reduce their
 *  buffers at once: every element is the sum (or mean) in rank order, on every rank bit for bit. */
template <class T> void check_shared_memory_all_reduce(int ranks, int64_t count, dist::ReduceOp op) {
  static int segment = 0;
  const std::string name = "/ug-test-" + std::to_string(getpid()) + "-" + std::to_string(segment++);
  std::vector<std::unique_ptr<dist::ShmAllReduce>> shm;
  for (int r = 0; r < ranks; ++r) shm.push_back(dist::ShmAllReduce::map(name, r, ranks, r == 0));
  dist::ShmAllReduce::unlink(name);
  std::mt19937 rng(static_cast<unsigned>(count));
  std::normal_distribution<T> normal;
  std::vector<std::vector<T>> data(static_cast<size_t>(ranks), std::vector<T>(static_cast<size_t>(count)));
  for (auto& d : data)
    for (T& x : d) x = normal(rng);
  std::vector<double> expected(static_cast<size_t>(count), 0.0), magnitude(static_cast<size_t>(count), 0.0);
  for (const auto& d : data)
    for (int64_t i = 0; i < count; ++i) {
      expected[i] += d[i];
      magnitude[i] += std::abs(d[i]);
    }
  const double scale = op == dist::ReduceOp::Avg ? 1.0 / ranks : 1.0;
  std::vector<std::thread> threads;
  std::vector<char> ok(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ok[r] = shm[r]->run(data[r].data(), count, dtype_of<T>, op,
                          std::chrono::steady_clock::now() + std::chrono::seconds(30));
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    ASSERT_TRUE(ok[r]);
    EXPECT_EQ(std::memcmp(data[r].data(), data[0].data(), sizeof(T) * static_cast<size_t>(count)), 0) << "rank " << r;
  }
  for (int64_t i = 0; i < count; ++i)  // a sum of `ranks` terms, then perhaps one division
    ASSERT_NEAR(data[0][i], expected[i] * scale, (ranks + 1) * std::numeric_limits<T>::epsilon() * magnitude[i] * scale)
        << i;
}

TEST(Distributed, SharedMemoryAllReduceOfEverySizeIsTheSumOnEveryRank) {
  ASSERT_TRUE(dist::ShmAllReduce::supports(float32, dist::ReduceOp::Avg));
  EXPECT_FALSE(dist::ShmAllReduce::supports(int64, dist::ReduceOp::Sum));
  EXPECT_FALSE(dist::ShmAllReduce::supports(float32, dist::ReduceOp::Max));
  for (int ranks : {2, 3})
    for (int64_t count : {0, 1, 17, 1000, 300007}) {
      check_shared_memory_all_reduce<float>(ranks, count, dist::ReduceOp::Sum);
      check_shared_memory_all_reduce<double>(ranks, count, dist::ReduceOp::Avg);
    }
}

TEST(Distributed, SharedMemoryAllReduceGivesUpAtTheDeadlineWhenARankNeverComes) {
  const std::string name = "/ug-test-" + std::to_string(getpid()) + "-absent";
  auto first = dist::ShmAllReduce::map(name, 0, 2, true);
  auto second = dist::ShmAllReduce::map(name, 1, 2, false);
  dist::ShmAllReduce::unlink(name);
  ASSERT_TRUE(first && second);
  std::vector<float> x(100, 1.0f);
  EXPECT_FALSE(first->run(x.data(), 100, float32, dist::ReduceOp::Sum,
                          std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
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

TEST(Distributed, DdpGradientAsBucketViewLeavesEachGradInItsBucketAndTheSameValues) {
  World world;
  manual_seed(0);
  nn::Sequential net(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 2));
  nn::Sequential reference(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 2));
  reference->load_state_dict(net->state_dict());
  dist::DistributedDataParallel ddp(
      net.ptr(), dist::DdpOptions{.bucket_cap_mb = 100.0 / (1024 * 1024), .gradient_as_bucket_view = true});
  auto got = net->parameters(), want = reference->parameters();
  // Buckets {3, 2} and {1, 0}: within one, parameter 2's gradient follows parameter 3's.
  auto expect_in_buckets = [&] {
    for (size_t k : {size_t{1}, size_t{3}})
      EXPECT_EQ(static_cast<char*>(got[k - 1].grad().raw_data()),
                static_cast<char*>(got[k].grad().raw_data()) + got[k].nbytes());
  };
  auto expect_grads = [&] {
    for (size_t i = 0; i < got.size(); ++i) test::expect_values(got[i].grad(), test::values(want[i].grad()), 1e-6);
  };
  Tensor x = randn({5, 8});
  ddp(x).sum().backward();
  reference(x).sum().backward();
  expect_grads();
  expect_in_buckets();
  std::vector<void*> where;
  for (const Tensor& p : got) where.push_back(p.grad().raw_data());
  // Kept gradients (no zero_grad, then zero_grad(set_to_none=false)) accumulate in the bucket.
  for (bool zero : {false, true}) {
    if (zero) {
      net->zero_grad(false);
      reference->zero_grad(false);
    }
    ddp(x * 2).sum().backward();
    reference(x * 2).sum().backward();
    expect_grads();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].grad().raw_data(), where[i]);
  }
  {
    auto no_sync = ddp->no_sync();
    ddp(x).sum().backward();
  }
  reference(x).sum().backward();
  expect_grads();
  // set_to_none: backward makes new gradients, which go back into the bucket.
  net->zero_grad(true);
  reference->zero_grad(true);
  ddp(x).sum().backward();
  reference(x).sum().backward();
  expect_grads();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].grad().raw_data(), where[i]);
}

TEST(Distributed, ACompiledDdpStepAllReducesEveryBucketAndHoldsWhatEagerHolds) {
  // Backward inside a trace runs DDP's hooks: each full bucket's average is an all_reduce of
  // the program, waited for at the end of backward, and each buffer's broadcast before the
  // forward is an op too; 10 steps of the compiled step equal the eager DDP step's.
  World world;
  auto make = [] {
    manual_seed(0);
    nn::Sequential net(nn::Linear(8, 16), nn::BatchNorm1d(16), nn::Tanh(), nn::Linear(16, 2));
    net->to(DType::Float64);
    return net;
  };
  const dist::DdpOptions options{.bucket_cap_mb = 100.0 / (1024 * 1024)};
  nn::Sequential eager_net = make(), compiled_net = make(), traced_net = make();
  dist::DistributedDataParallel eager(eager_net.ptr(), options), compiled(compiled_net.ptr(), options),
      traced(traced_net.ptr(), options);
  optim::SGD opt_e(eager->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_c(compiled->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_t(traced->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  auto step = [](dist::DistributedDataParallel& ddp, optim::Optimizer& opt) {
    return [&ddp, &opt](const Tensors& xy) {
      opt.zero_grad();
      Tensor loss = (ddp->forward(xy[0]) - xy[1]).pow(2.0).mean();
      loss.backward();
      opt.step();
      return Tensors{loss};
    };
  };
  auto batch = [] {
    return Tensors{randn({6, 8}, {.dtype = DType::Float64}), randn({6, 2}, {.dtype = DType::Float64})};
  };
  const std::string text = compiler::Program::trace(step(traced, opt_t), batch()).text();
  auto count = [&](const std::string& op) {
    size_t n = 0;
    for (size_t at = text.find(op); at != std::string::npos; at = text.find(op, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("op=\"all_reduce\""), 5u);  // buckets {5, 4}, {3}, {2}, {1}, {0}
  EXPECT_EQ(traced->reducer().bucket_indices().size(), 5u);
  // Overlapped as eager DDP's: each all_reduce starts where its bucket fills, the rest of
  // backward runs on (the first layer's weight gradient after the first start), and the program
  // waits for them at its end; the last bucket's, with nothing left to overlap, runs at once.
  EXPECT_EQ(count("op=\"wait_tensor\""), 4u);
  const size_t first_start = text.find("op=\"all_reduce\""), first_wait = text.find("op=\"wait_tensor\"");
  EXPECT_LT(text.rfind("op=\"all_reduce\""), first_wait);
  EXPECT_NE(text.substr(first_start, first_wait - first_start).find("MatMul"), std::string::npos);
  EXPECT_EQ(count("op=\"broadcast\""), 3u);  // BatchNorm's three buffers

  JitFunction compiled_step = jit(step(compiled, opt_c));
  auto eager_step = step(eager, opt_e);
  for (int i = 0; i < 10; ++i) {
    const Tensors xy = batch();
    EXPECT_TRUE(allclose(compiled_step(xy)[0], eager_step(xy)[0], 1e-12, 1e-12)) << i;
    auto se = eager_net->state_dict(), sc = compiled_net->state_dict();
    for (const auto& [name, t] : se) EXPECT_TRUE(allclose(sc.at(name), t, 1e-12, 1e-12)) << i << " " << name;
    auto pe = eager_net->parameters(), pc = compiled_net->parameters();
    for (size_t k = 0; k < pe.size(); ++k) EXPECT_TRUE(allclose(pc[k].grad(), pe[k].grad(), 1e-12, 1e-12)) << i;
  }
  EXPECT_EQ(compiled_step.cache_info().traces, 1);
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
