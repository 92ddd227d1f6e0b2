#include "ug/train/checkpoint.h"

#include <exception>
#include <optional>
#include <vector>

#include "ug/io/tree_file.h"
#include "ug/ops/join.h"
#include "ug/ops/random.h"

namespace ug::train {
namespace {

using io::Tree;
using optim::HyperValue;
using optim::OptimizerStateDict;
using optim::lr_scheduler::SchedulerState;

/** "an int", "a str", "None": a kind as a message names it. */
std::string a_kind(Tree::Kind kind) {
  if (kind == Tree::Kind::None) return "None";
  return (kind == Tree::Kind::Int ? "an " : "a ") + std::string(io::kind_name(kind));
}

/** Reads a checkpoint's entries, naming the file and entry in every error. */
struct Reader {
  const std::string& source;

  template <class... Args> [[noreturn]] void bad(const Args&... args) const {
    fail<ValueError>("[load_checkpoint] '", source, "': ", args...);
  }

  const Tree& entry(const Tree& dict, const Tree::Key& key, const std::string& where) const {
    const Tree* v = dict.find(key);
    if (!v) bad(where, " has no entry '", io::key_to_string(key), "'");
    return *v;
  }

  void expect(const Tree& t, Tree::Kind kind, const std::string& what) const {
    if (t.kind() != kind) bad(what, " is ", a_kind(t.kind()), ", expected ", a_kind(kind));
  }

  double number(const Tree& t, const std::string& what) const {
    if (t.kind() != Tree::Kind::Int && t.kind() != Tree::Kind::Float)
      bad(what, " is ", a_kind(t.kind()), ", expected a number");
    return t.as_double();
  }

  int64_t integer(const Tree& t, const std::string& what) const {
    expect(t, Tree::Kind::Int, what);
    return t.as_int();
  }

  amp::GradScalerState scaler_state(const Tree& t) const {
    expect(t, Tree::Kind::Dict, "'scaler'");
    auto field = [&](const char* key) -> const Tree& { return entry(t, key, "'scaler'"); };
    return {number(field("scale"), "'scaler' scale"), number(field("growth_factor"), "'scaler' growth_factor"),
            number(field("backoff_factor"), "'scaler' backoff_factor"),
            integer(field("growth_interval"), "'scaler' growth_interval"),
            integer(field("_growth_tracker"), "'scaler' _growth_tracker")};
  }

  nn::TensorDict tensors(const Tree& t, const std::string& what) const {
    expect(t, Tree::Kind::Dict, what);
    nn::TensorDict out;
    for (const auto& [key, value] : t.entries()) {
      const std::string name = io::key_to_string(key);
      if (!std::holds_alternative<std::string>(key)) bad(what, " has the int key ", name, ", expected names");
      expect(value, Tree::Kind::Tensor, what + " entry '" + name + "'");
      out.insert(name, value.as_tensor());
    }
    return out;
  }

  HyperValue hyper(const Tree& t, const std::string& what) const {
    switch (t.kind()) {
      case Tree::Kind::None: return std::monostate{};
      case Tree::Kind::Bool: return t.as_bool();
      case Tree::Kind::Int:
      case Tree::Kind::Float: return t.as_double();
      case Tree::Kind::String: return t.as_string();
      case Tree::Kind::List:
      case Tree::Kind::Tuple:
        if (t.size() == 2) return std::pair(number(t.items()[0], what), number(t.items()[1], what));
        [[fallthrough]];
      default: bad(what, " is ", a_kind(t.kind()), ", expected a number, a bool, a pair of numbers or a str");
    }
  }

  OptimizerStateDict optimizer_state(const Tree& t) const {
    expect(t, Tree::Kind::Dict, "'optimizer'");
    OptimizerStateDict sd;
    const Tree& state = entry(t, "state", "'optimizer'");
    expect(state, Tree::Kind::Dict, "'optimizer.state'");
    for (const auto& [key, value] : state.entries()) {
      const std::string where = "'optimizer.state." + io::key_to_string(key) + "'";
      if (!std::holds_alternative<int64_t>(key))
        bad("'optimizer.state' has the key '", io::key_to_string(key), "', expected parameter indices (ints)");
      sd.state.emplace_back(std::get<int64_t>(key), tensors(value, where));
    }
    const Tree& groups = entry(t, "param_groups", "'optimizer'");
    expect(groups, Tree::Kind::List, "'optimizer.param_groups'");
    for (size_t i = 0; i < groups.size(); ++i) {
      const Tree& g = groups.items()[i];
      const std::string where = "'optimizer.param_groups." + std::to_string(i) + "'";
      expect(g, Tree::Kind::Dict, where);
      OptimizerStateDict::Group rec;
      for (const auto& [key, value] : g.entries()) {
        if (!std::holds_alternative<std::string>(key)) bad(where, " has the int key ", io::key_to_string(key));
        const std::string& name = std::get<std::string>(key);
        if (name == "params") {
          if (!value.is_sequence()) bad(where, " entry 'params' is ", a_kind(value.kind()), ", expected a list");
          for (const Tree& index : value.items()) rec.params.push_back(integer(index, where + " entry 'params'"));
        } else if (!value.is_none()) {  // torch's unset flags (foreach=None) mean nothing here
          rec.options.insert(name, hyper(value, where + " entry '" + name + "'"));
        }
      }
      sd.param_groups.push_back(std::move(rec));
    }
    return sd;
  }

  SchedulerState scheduler_state(const Tree& t) const {
    expect(t, Tree::Kind::Dict, "'scheduler'");
    SchedulerState out;
    for (const auto& [key, value] : t.entries()) {
      const std::string where = "'scheduler." + io::key_to_string(key) + "'";
      if (!std::holds_alternative<std::string>(key)) bad("'scheduler' has the int key ", io::key_to_string(key));
      if (value.is_sequence()) {
        std::vector<double> values;
        for (const Tree& v : value.items()) values.push_back(number(v, where));
        out.insert(std::get<std::string>(key), std::move(values));
      } else if (optim::lr_scheduler::is_counter(std::get<std::string>(key))) {
        out.insert(std::get<std::string>(key), static_cast<double>(integer(value, where)));
      } else {
        out.insert(std::get<std::string>(key), number(value, where));
      }
    }
    return out;
  }
};

Tree hyper_tree(const HyperValue& v) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  if (const auto* p = std::get_if<std::pair<double, double>>(&v)) return Tree::tuple({p->first, p->second});
  if (std::holds_alternative<std::monostate>(v)) return Tree();
  return std::get<std::string>(v);
}

/** torch's layout: {"state": {index: {name: tensor}}, "param_groups": [{..., "params": [index]}]}. */
Tree optimizer_tree(const OptimizerStateDict& sd) {
  Tree state = Tree::dict();
  for (const auto& [index, st] : sd.state) state.entries().emplace_back(index, Tree(st));  // indices are unique
  Tree groups = Tree::list();
  for (const auto& g : sd.param_groups) {
    Tree d = Tree::dict();
    for (const auto& [key, value] : g.options) d.set(key, hyper_tree(value));
    Tree params = Tree::list();
    for (int64_t i : g.params) params.push_back(i);
    d.set("params", std::move(params));
    groups.push_back(std::move(d));
  }
  return Tree::dict({{"state", std::move(state)}, {"param_groups", std::move(groups)}});
}

/** torch's GradScaler.state_dict() keys. */
Tree scaler_tree(const amp::GradScalerState& s) {
  Tree out = Tree::dict();
  out.set("scale", s.scale);
  out.set("growth_factor", s.growth_factor);
  out.set("backoff_factor", s.backoff_factor);
  out.set("growth_interval", s.growth_interval);
  out.set("_growth_tracker", s.growth_tracker);
  return out;
}

Tree scheduler_tree(const SchedulerState& s) {
  Tree out = Tree::dict();
  for (const auto& [key, value] : s) {
    if (const double* d = std::get_if<double>(&value)) {
      out.set(key, optim::lr_scheduler::is_counter(key) ? Tree(static_cast<int64_t>(*d)) : Tree(*d));
    } else {
      Tree list = Tree::list();
      for (double v : std::get<std::vector<double>>(value)) list.push_back(v);
      out.set(key, std::move(list));
    }
  }
  return out;
}

Tree sampler_tree(const data::SamplerState& state) {
  Tree out = Tree::dict();
  for (const auto& [key, value] : state) out.set(key, value);
  return out;
}

/** Every rank's `mine` (same shape on each), stacked in rank order: [ranks, ...]. */
Tensor gather_rows(distributed::ProcessGroup& group, const Tensor& mine) {
  std::vector<Tensor> rows;
  for (int r = 0; r < group.size(); ++r) rows.push_back(empty_like(mine));
  group.all_gather(rows, mine.contiguous())->wait();
  return stack(rows, 0);
}

Tensor int64_vector(const std::vector<int64_t>& values) {
  Tensor t = empty({static_cast<int64_t>(values.size())}, {.dtype = DType::Int64});
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return t;
}

/** "ranks": every rank's RNG state and sampler state, gathered over the group. */
Tree ranks_tree(distributed::ProcessGroup& group, const data::Sampler* sampler) {
  Tree out = Tree::dict();
  out.set("world_size", static_cast<int64_t>(group.size()));
  out.set("rng", gather_rows(group, get_rng_state()));
  if (sampler) {
    const data::SamplerState state = sampler->state();
    std::vector<int64_t> values;
    for (const auto& entry : state) values.push_back(entry.second);
    const Tensor all = gather_rows(group, int64_vector(values));  // [ranks, entries]
    Tree per_entry = Tree::dict();
    for (size_t i = 0; i < state.size(); ++i)
      per_entry.set(state[i].first, all.select(1, static_cast<int64_t>(i)).contiguous());
    out.set("sampler", std::move(per_entry));
  }
  return out;
}

/** Calls fn on the scheduler, whichever kind it is; false when there is none. */
template <class F> bool with_scheduler(const SchedulerRef& ref, F&& fn) {
  return std::visit(
      [&](auto* s) {
        if (!s) return false;
        fn(*s);
        return true;
      },
      ref);
}

}  // namespace

Tree Checkpoint::to_tree(const Progress& progress) const {
  Tree out = Tree::dict();
  if (model) out.set("model", Tree(model->state_dict()));
  if (optimizer) out.set("optimizer", optimizer_tree(optimizer->state_dict()));
  with_scheduler(scheduler, [&](const auto& s) { out.set("scheduler", scheduler_tree(s.state_dict())); });
  if (scaler) out.set("scaler", scaler_tree(scaler->state_dict()));
  out.set("epoch", progress.epoch);
  out.set("step", progress.step);
  out.set("rng", get_rng_state());
  out.set("extra", progress.extra);
  if (group) {
    if (group->rank() < 0) fail<ValueError>("[save_checkpoint] this process is not a member of the group");
    out.set("ranks", ranks_tree(*group, sampler));
  } else if (sampler) {
    out.set("sampler", sampler_tree(sampler->state()));
  }
  return out;
}

Progress Checkpoint::from_tree(const Tree& tree, const std::string& source) const {
  Reader r{source};
  r.expect(tree, Tree::Kind::Dict, "the checkpoint");
  // Everything is read and checked before anything is restored.
  std::optional<nn::TensorDict> model_state;
  std::optional<OptimizerStateDict> optimizer_state;
  std::optional<SchedulerState> scheduler_state;
  if (model) model_state = r.tensors(r.entry(tree, "model", "the checkpoint"), "'model'");
  if (optimizer) optimizer_state = r.optimizer_state(r.entry(tree, "optimizer", "the checkpoint"));
  if (with_scheduler(scheduler, [](const auto&) {}))
    scheduler_state = r.scheduler_state(r.entry(tree, "scheduler", "the checkpoint"));
  std::optional<amp::GradScalerState> scaler_state;
  if (scaler) scaler_state = r.scaler_state(r.entry(tree, "scaler", "the checkpoint"));
  Progress progress;
  progress.epoch = r.integer(r.entry(tree, "epoch", "the checkpoint"), "'epoch'");
  progress.step = r.integer(r.entry(tree, "step", "the checkpoint"), "'step'");
  if (const Tree* extra = tree.find("extra")) progress.extra = *extra;
  std::optional<Tensor> rng;
  std::optional<data::SamplerState> sampler_state;
  const int world = group ? group->size() : 1;
  if (group && group->rank() < 0) fail<ValueError>("[load_checkpoint] this process is not a member of the group");
  if (const Tree* ranks = tree.find("ranks")) {
    // Written by a distributed job: this rank's row of each per-rank entry.
    r.expect(*ranks, Tree::Kind::Dict, "'ranks'");
    const int64_t saved = r.integer(r.entry(*ranks, "world_size", "'ranks'"), "'ranks.world_size'");
    if (saved != world)
      r.bad("it was written by a job of ", saved, " ranks and this one has ", world,
            ": a distributed checkpoint holds each rank's RNG and sampler state, so it resumes only with the "
            "world size it was saved with");
    const int64_t me = group ? group->rank() : 0;
    auto row = [&](const Tree& t, const std::string& what, int64_t width) {
      r.expect(t, Tree::Kind::Tensor, what);
      const Tensor& v = t.as_tensor();
      if (v.dtype() != DType::Int64 || v.dim() != (width ? 2 : 1) || v.size(0) != saved ||
          (width && v.size(1) != width))
        r.bad(what, " is a ", v.dtype(), " tensor of shape ", v.shape(), ", expected int64 with ", saved, " rows");
      return v.select(0, me).contiguous();
    };
    rng = row(r.entry(*ranks, "rng", "'ranks'"), "'ranks.rng'", 2);
    if (sampler) {
      const Tree& entries = r.entry(*ranks, "sampler", "'ranks'");
      r.expect(entries, Tree::Kind::Dict, "'ranks.sampler'");
      sampler_state.emplace();
      for (const auto& [key, value] : entries.entries()) {
        const std::string name = io::key_to_string(key);
        sampler_state->emplace_back(name, row(value, "'ranks.sampler." + name + "'", 0).item<int64_t>());
      }
    }
  } else {
    if (world > 1)
      r.bad(
          "it holds one process's RNG state, not every rank's: to resume a distributed job, save with the group "
          "(every rank calling save_checkpoint)");
    if (const Tree* t = tree.find("rng")) {
      r.expect(*t, Tree::Kind::Tensor, "'rng'");
      rng = t->as_tensor();
    }
    if (sampler) {
      const Tree& entries = r.entry(tree, "sampler", "the checkpoint");
      r.expect(entries, Tree::Kind::Dict, "'sampler'");
      sampler_state.emplace();
      for (const auto& [key, value] : entries.entries())
        sampler_state->emplace_back(io::key_to_string(key),
                                    r.integer(value, "'sampler." + io::key_to_string(key) + "'"));
    }
  }
  if (rng && (rng->dtype() != DType::Int64 || rng->numel() != 2))
    r.bad("'rng' is a ", rng->dtype(), " tensor of shape ", rng->shape(),
          ", expected the int64 [seed, offset] pair of get_rng_state()");

  // The sampler first: its checks (rank, replicas, data set size) raise before anything changes.
  if (sampler_state) sampler->load_state(*sampler_state);
  if (model_state) model->load_state_dict(*model_state);
  if (optimizer_state) optimizer->load_state_dict(*optimizer_state);
  if (scheduler_state) with_scheduler(scheduler, [&](auto& s) { s.load_state_dict(*scheduler_state); });
  if (scaler_state) scaler->load_state_dict(*scaler_state);
  if (rng) set_rng_state(*rng);
  return progress;
}

void Checkpoint::save(const std::string& path, const Progress& progress) const {
  const Tree tree = to_tree(progress);
  if (!group) return io::save(tree, path);
  // Rank 0 writes; the others learn whether it could, so no rank goes on believing a file
  // exists that does not.
  std::exception_ptr error;
  if (group->rank() == 0) {
    try {
      io::save(tree, path);
    } catch (...) {
      error = std::current_exception();
    }
  }
  Tensor failed = int64_vector({error ? 1 : 0});
  group->broadcast(failed, 0)->wait();
  if (error) std::rethrow_exception(error);
  if (failed.item<int64_t>() != 0) fail<RuntimeError>("[save_checkpoint] rank 0 could not write '", path, "'");
}

Progress Checkpoint::load(const std::string& path) const { return from_tree(io::load(path), path); }

}  // namespace ug::train
