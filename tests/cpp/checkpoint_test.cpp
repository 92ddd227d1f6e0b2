// ug::io trees in safetensors files and ug::train::Checkpoint: every kind of value and key
// round-trips, flat dicts stay plain safetensors files, hostile skeletons raise ValueError,
// and training resumed from a checkpoint in a fresh process matches an unbroken run bit for bit.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "ug/io/tree_file.h"
#include "ug/train/checkpoint.h"

namespace ug {
namespace {

namespace fs = std::filesystem;
using io::Tree;
namespace F = nn::functional;
namespace sch = optim::lr_scheduler;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ug_checkpoint_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/** Same dtype, shape and bytes. */
void expect_identical(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  EXPECT_EQ(std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()), 0) << what;
}

/** The same names (in any order) with identical tensors. */
void expect_identical(const nn::TensorDict& a, const nn::TensorDict& b) {
  std::vector<std::string> ka = a.keys(), kb = b.keys();
  std::sort(ka.begin(), ka.end());
  std::sort(kb.begin(), kb.end());
  ASSERT_EQ(ka, kb);
  for (const auto& [name, t] : a) expect_identical(t, b.at(name), name);
}

// ---- trees --------------------------------------------------------------------------------

Tree sample_tree() {
  Tree inner = Tree::dict();
  inner.set(int64_t{0}, Tree::dict({{"exp_avg", Tree(arange(3.0))}, {"step", Tree(scalar_tensor(2.0))}}));
  inner.set("0", "the string key next to the int key 0");
  inner.set("a.b", Tree(ones({2}, {.dtype = int64})));
  inner.set("", Tree());
  return Tree::dict({{"state", inner},
                     {"betas", Tree::tuple({0.9, 0.999})},
                     {"numbers", Tree::list({int64_t{-3}, INT64_MAX, 2.5, 3.0, std::nan(""), INFINITY, -INFINITY})},
                     {"flags", Tree::list({true, false, Tree()})},
                     {"empty", Tree::list({Tree::dict(), Tree::list(), Tree::tuple()})},
                     {"name", "Adam ✓"}});
}

void expect_same_tree(const Tree& a, const Tree& b, const std::string& where = "root") {
  ASSERT_EQ(a.kind(), b.kind()) << where;
  switch (a.kind()) {
    case Tree::Kind::None: return;
    case Tree::Kind::Bool: EXPECT_EQ(a.as_bool(), b.as_bool()) << where; return;
    case Tree::Kind::Int: EXPECT_EQ(a.as_int(), b.as_int()) << where; return;
    case Tree::Kind::Float:
      if (std::isnan(a.as_double())) EXPECT_TRUE(std::isnan(b.as_double())) << where;
      else EXPECT_EQ(a.as_double(), b.as_double()) << where;
      return;
    case Tree::Kind::String: EXPECT_EQ(a.as_string(), b.as_string()) << where; return;
    case Tree::Kind::Tensor: expect_identical(a.as_tensor(), b.as_tensor(), where); return;
    case Tree::Kind::List:
    case Tree::Kind::Tuple:
      ASSERT_EQ(a.size(), b.size()) << where;
      for (size_t i = 0; i < a.size(); ++i)
        expect_same_tree(a.items()[i], b.items()[i], where + "." + std::to_string(i));
      return;
    case Tree::Kind::Dict:
      ASSERT_EQ(a.size(), b.size()) << where;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a.entries()[i].first, b.entries()[i].first) << where;
        expect_same_tree(a.entries()[i].second, b.entries()[i].second,
                         where + "." + io::key_to_string(a.entries()[i].first));
      }
  }
}

TEST(Safetensors, ABoolByteOtherThanZeroOrOneReadsAsTrue) {
  io::TensorDict d;
  d.insert("b", ug::zeros({3}, {.dtype = DType::Bool}));
  std::string bytes = io::save_bytes(d);
  bytes[bytes.size() - 2] = '\x40';  // the middle element's byte
  const Tensor counted = io::load_bytes(bytes).at("b").to(DType::Int64);
  EXPECT_EQ(std::vector<int64_t>(counted.data_ptr<int64_t>(), counted.data_ptr<int64_t>() + 3),
            (std::vector<int64_t>{0, 1, 0}));
}

TEST(Tree, EveryKindAndKeyRoundTrips) {
  Tree t = sample_tree();
  expect_same_tree(io::load_tree_bytes(io::save_tree_bytes(t)), t);
  fs::path path = fresh_dir("roundtrip") / "t.safetensors";
  io::save(t, path.string(), {{"note", "kept"}});
  expect_same_tree(io::load(path.string()), t);
  EXPECT_EQ(io::load_metadata(path.string()).at("note"), "kept");
}

TEST(Tree, TensorsAreNamedByTheirDottedPathsForOtherReaders) {
  io::TensorDict flat = io::load_bytes(io::save_tree_bytes(sample_tree()));
  EXPECT_EQ(flat.keys(), (std::vector<std::string>{"state.0.exp_avg", "state.0.step", "state.a.b"}));
  // {"a.b": x, "a": {"b": y}} would share a name: both get a suffix, and still load apart.
  Tree clash =
      Tree::dict({{"a.b", Tree(ones({1}))}, {"a", Tree::dict({{"b", Tree(zeros({1}))}})}, {"a.b#1x", Tree(ones({2}))}});
  EXPECT_EQ(io::load_bytes(io::save_tree_bytes(clash)).keys(), (std::vector<std::string>{"a.b#1", "a.b#1x", "a.b#2"}));
  expect_same_tree(io::load_tree_bytes(io::save_tree_bytes(clash)), clash);
}

TEST(Tree, AFlatStateDictIsAPlainSafetensorsFile) {
  io::TensorDict d{{"fc.weight", ones({2, 3})}, {"fc.bias", zeros({2})}};
  EXPECT_EQ(io::save_tree_bytes(Tree(d)), io::save_bytes(d));
  EXPECT_EQ(io::save_tree_bytes(Tree(d), {{"k", "v"}}), io::save_bytes(d, {{"k", "v"}}));
  Tree back = io::load_tree_bytes(io::save_bytes(d));
  expect_identical(back.as_tensor_dict(), io::load_bytes(io::save_bytes(d)));
  EXPECT_THROW(io::save_tree_bytes(sample_tree(), {{io::kTreeMetadataKey, "x"}}), ValueError);
}

/** A file with these tensors and this "ug.tree" text. */
std::string with_skeleton(const io::TensorDict& tensors, const std::string& skeleton) {
  return io::save_bytes(tensors, {{io::kTreeMetadataKey, skeleton}});
}

void expect_bad(const std::string& bytes, const std::string& message) {
  try {
    io::load_tree_bytes(bytes);
    ADD_FAILURE() << "no error; expected " << message;
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(Tree, HostileSkeletonsRaiseValueErrors) {
  io::TensorDict one{{"w", ones({2})}};
  expect_bad(with_skeleton(one, "{not json"), "not valid JSON");
  expect_bad(with_skeleton(one, R"({"version":2,"root":null})"), "format version 2");
  expect_bad(with_skeleton(one, R"([1])"), "expected {\"version\": 1");
  expect_bad(with_skeleton(one, R"({"version":1,"root":{"tensor":"missing"}})"), "does not hold");
  expect_bad(with_skeleton(one, R"({"version":1,"root":[{"tensor":"w"},{"tensor":"w"}]})"), "more than once");
  expect_bad(with_skeleton(one, R"({"version":1,"root":null})"), "tensor 'w' is in the file but not in the tree");
  expect_bad(with_skeleton({}, R"({"version":1,"root":{"dict":5}})"), "not a list of [key, value] pairs");
  expect_bad(with_skeleton({}, R"({"version":1,"root":{"dict":[[1.5,null]]}})"), "neither a string nor");
  expect_bad(with_skeleton({}, R"({"version":1,"root":{"dict":[["a",1],["a",2]]}})"), "appears twice");
  expect_bad(with_skeleton({}, R"({"version":1,"root":{"tensor":3}})"), "not a tensor name");
  expect_bad(with_skeleton({}, R"({"version":1,"root":{"code":"import os"}})"), "unknown node kind");
  expect_bad(with_skeleton({}, R"({"version":1,"root":{"float":"1e999"}})"), "\"float\" node");
  expect_bad(with_skeleton({}, R"({"version":1,"root":18446744073709551615})"), "does not fit in 64 bits");
  expect_bad(with_skeleton({}, "{\"version\":1,\"root\":" + std::string(100000, '[') + std::string(100000, ']') + "}"),
             "deeper than");
  std::string nested = "null";
  for (int i = 0; i < io::kMaxTreeDepth; ++i) nested = "[" + nested + "]";
  EXPECT_NO_THROW(io::load_tree_bytes(with_skeleton({}, "{\"version\":1,\"root\":" + nested + "}")));
  expect_bad(with_skeleton({}, "{\"version\":1,\"root\":[" + nested + "]}"), "deeper than");
}

TEST(Tree, SavingRefusesWhatCannotLoad) {
  Tree deep = Tree::list();
  for (int i = 0; i < io::kMaxTreeDepth; ++i) deep = Tree::list({deep});
  EXPECT_THROW(io::save_tree_bytes(deep), ValueError);
  EXPECT_THROW(io::save_tree_bytes(Tree::dict({{"s", std::string("\xff")}})), ValueError);
  EXPECT_THROW(Tree{Tensor()}, ValueError);
  EXPECT_THROW(Tree(3).as_string(), TypeError);
}

// ---- checkpoints --------------------------------------------------------------------------

constexpr int64_t kExamples = 48, kBatch = 12, kStepsPerEpoch = kExamples / kBatch, kEpochs = 4;

/** A model, its optimizer and schedule, built the same way every time. */
struct Trainer {
  nn::Sequential model;
  std::unique_ptr<optim::Adam> opt;
  std::unique_ptr<sch::OneCycleLR> sched;

  explicit Trainer(int64_t hidden = 16)
      : model(nn::Linear(6, hidden), nn::ReLU(), nn::Dropout(0.3), nn::Linear(hidden, 3)) {
    opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-2));
    sched = std::make_unique<sch::OneCycleLR>(*opt, std::vector<double>{0.05},
                                              sch::OneCycleOptions{.total_steps = kEpochs * kStepsPerEpoch});
  }
  train::Checkpoint checkpoint() { return {model.ptr().get(), opt.get(), sched.get()}; }

  /** Trains from (epoch, step) to the end of epoch `end`. order_from_epoch: each epoch's
   *  order is a permutation keyed by the epoch (resumable mid-epoch); otherwise it is drawn
   *  from the global generator at the epoch's start. */
  void train(int64_t epoch, int64_t step, int64_t end, bool order_from_epoch, int64_t stop_after_step = -1) {
    Tensor x = random::normal(random::key(1), {kExamples, 6});
    Tensor y = random::randint(random::key(2), {kExamples}, 0, 3);
    for (; epoch < end; ++epoch, step = 0) {
      Tensor order = order_from_epoch ? random::permutation(random::fold_in(random::key(3), epoch), kExamples)
                                      : randperm(kExamples);
      for (; step < kStepsPerEpoch; ++step) {
        if (epoch == end - 1 && step == stop_after_step) return;
        Tensor idx = order.narrow(0, step * kBatch, kBatch);
        Tensor loss = F::cross_entropy(model(x.index_select(0, idx)), y.index_select(0, idx));
        opt->zero_grad();
        loss.backward();
        opt->step();
        sched->step();
      }
    }
  }
};

TEST(Checkpoint, TreeHasTorchsLayout) {
  manual_seed(0);
  Trainer run;
  run.train(0, 0, 1, false);
  Tree t = run.checkpoint().to_tree({1, 4, Tree::dict({{"best", 0.5}})});
  std::vector<Tree::Key> keys;
  for (const auto& [k, v] : t.entries()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<Tree::Key>{"model", "optimizer", "scheduler", "epoch", "step", "rng", "extra"}));
  EXPECT_EQ(t.at("model").as_tensor_dict().keys(), run.model->state_dict().keys());
  const Tree& state = t.at("optimizer").at("state");
  EXPECT_EQ(state.entries()[0].first, Tree::Key(int64_t{0}));
  expect_identical(state.at(int64_t{0}).at("step").as_tensor(), scalar_tensor(4.0, {.dtype = float32}), "step");
  const Tree& group = t.at("optimizer").at("param_groups").items()[0];
  EXPECT_EQ(group.at("betas").kind(), Tree::Kind::Tuple);
  EXPECT_EQ(group.at("params").size(), 4u);
  EXPECT_EQ(t.at("scheduler").at("last_epoch").as_int(), 4);
  EXPECT_EQ(t.at("scheduler").at("_last_lr").kind(), Tree::Kind::List);
  expect_identical(t.at("rng").as_tensor(), get_rng_state(), "rng");
}

/** Set by the parent test: run the second half in this fresh process. */
const char* kResumeEnv = "UG_CHECKPOINT_TEST_RESUME";

TEST(Checkpoint, ResumeInFreshProcessChild) {
  const char* dir = std::getenv(kResumeEnv);
  if (!dir) GTEST_SKIP() << "run by Checkpoint.ResumingInAFreshProcessIsBitIdentical";
  manual_seed(12345);  // another initialisation and generator state than the saving process
  Trainer run;
  train::Progress p = run.checkpoint().load((fs::path(dir) / "half.safetensors").string());
  ASSERT_EQ(p.epoch, 2);
  ASSERT_EQ(p.extra.at("note").as_string(), "halfway");
  run.train(p.epoch, p.step, kEpochs, false);
  io::save_file(run.model->state_dict(), (fs::path(dir) / "resumed.safetensors").string());
}

TEST(Checkpoint, ResumingInAFreshProcessIsBitIdentical) {
  manual_seed(0);
  Trainer straight;
  straight.train(0, 0, kEpochs, false);

  fs::path dir = fresh_dir("resume");
  manual_seed(0);
  Trainer first;
  first.train(0, 0, 2, false);
  first.checkpoint().save((dir / "half.safetensors").string(), {2, 0, Tree::dict({{"note", "halfway"}})});

  std::string self = fs::read_symlink("/proc/self/exe").string();
  ::setenv(kResumeEnv, dir.c_str(), 1);
  int rc = std::system(("'" + self + "' --gtest_filter=Checkpoint.ResumeInFreshProcessChild >/dev/null").c_str());
  ::unsetenv(kResumeEnv);
  ASSERT_EQ(rc, 0);
  expect_identical(io::load_file((dir / "resumed.safetensors").string()), straight.model->state_dict());
}

TEST(Checkpoint, ResumesMidEpochWhenTheOrderDependsOnTheEpoch) {
  manual_seed(0);
  Trainer straight;
  straight.train(0, 0, kEpochs, true);

  manual_seed(0);
  Trainer first;
  first.train(0, 0, 3, true, /*stop_after_step=*/2);
  Tree saved = first.checkpoint().to_tree({2, 2, {}});
  manual_seed(7);
  Trainer second;
  train::Progress p = second.checkpoint().from_tree(io::load_tree_bytes(io::save_tree_bytes(saved)));
  second.train(p.epoch, p.step, kEpochs, true);
  expect_identical(second.model->state_dict(), straight.model->state_dict());

  // The dropout masks matter: without the generator's state the run goes elsewhere.
  Trainer third;
  third.checkpoint().from_tree(saved);
  manual_seed(7);
  third.train(p.epoch, p.step, kEpochs, true);
  EXPECT_FALSE(test::values(third.model->state_dict().at("0.weight")) ==
               test::values(straight.model->state_dict().at("0.weight")));
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

TEST(Checkpoint, ADifferentArchitectureNamesTheMismatchedKeys) {
  Trainer small(16), big(32);
  Tree t = small.checkpoint().to_tree({});
  std::string msg = error_of([&] { big.checkpoint().from_tree(t, "ckpt"); });
  EXPECT_NE(msg.find("size mismatch for \"0.weight\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"3.weight\""), std::string::npos) << msg;

  nn::Sequential other(nn::Linear(6, 16), nn::ReLU(), nn::Linear(16, 3));
  msg = error_of([&] { train::Checkpoint{other.ptr().get()}.from_tree(t, "ckpt"); });
  EXPECT_NE(msg.find("missing keys: \"2.weight\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected keys: \"3.weight\""), std::string::npos) << msg;
}

TEST(Checkpoint, WrongTypesAndMissingEntriesRaiseClearErrors) {
  Trainer run;
  run.train(0, 0, 1, false);
  const Tree good = run.checkpoint().to_tree({1, 2, {}});
  auto expect_error = [&](const std::function<void(Tree&)>& spoil, const std::string& message) {
    Tree t = good;
    spoil(t);
    std::string msg = error_of([&] { run.checkpoint().from_tree(t, "ckpt"); });
    EXPECT_NE(msg.find(message), std::string::npos) << msg;
  };
  expect_error([](Tree& t) { t.set("epoch", "three"); }, "[load_checkpoint] 'ckpt': 'epoch' is a str, expected an int");
  expect_error([](Tree& t) { t.entries().erase(t.entries().begin() + 1); }, "the checkpoint has no entry 'optimizer'");
  expect_error([](Tree& t) { t.find("model")->set("0.weight", 1); },
               "'model' entry '0.weight' is an int, expected a Tensor");
  expect_error([](Tree& t) { t.find("optimizer")->find("state")->set("x", Tree::dict()); },
               "'optimizer.state' has the key 'x', expected parameter indices");
  expect_error([](Tree& t) { t.find("optimizer")->find("param_groups")->items()[0].set("lr", Tree::list()); },
               "'optimizer.param_groups.0' entry 'lr' is a list, expected a number");
  expect_error([](Tree& t) { t.find("scheduler")->set("last_epoch", 1e300); },
               "'scheduler.last_epoch' is a float, expected an int");
  expect_error([](Tree& t) { t.find("scheduler")->set("_last_lr", "x"); },
               "'scheduler._last_lr' is a str, expected a number");
  expect_error([](Tree& t) { t.set("rng", Tree(zeros({3}))); }, "'rng' is a float32 tensor of shape [3]");
  expect_error([](Tree& t) { t.find("optimizer")->find("state")->find(int64_t{0})->set("exp_avg", Tree(zeros({5}))); },
               "loaded state 'exp_avg' of parameter 0 has shape [5]");
  expect_error([](Tree& t) { t = Tree::list(); }, "the checkpoint is a list, expected a dict");
}

}  // namespace
}  // namespace ug
