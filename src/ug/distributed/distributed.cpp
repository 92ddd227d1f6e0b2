#include "ug/distributed/distributed.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "ug/distributed/mpi_process_group.h"
#include "ug/distributed/overlap.h"
#include "ug/distributed/start_and_wait.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"

namespace ug::distributed {

namespace {

std::mutex g_mutex;
ProcessGroupPtr g_default;

std::map<std::string, BackendFactory>& backends() {
  // "gloo", torch's CPU backend, is a name of the CPU's one here, so that a torch script's
  // init_process_group("gloo") runs as written (under ug launch: MPI starts the ranks).
  static std::map<std::string, BackendFactory> registry{{"mpi", mpi_world_group}, {"gloo", mpi_world_group}};
  return registry;
}

ProcessGroupPtr resolve(const ProcessGroupPtr& group, std::string_view op) {
  if (group) return group;
  std::lock_guard lock(g_mutex);
  if (!g_default)
    fail<RuntimeError>("[", op, "] the default process group is not initialised: call init_process_group first");
  return g_default;
}

/** The group rank of a world rank, or a ValueError naming the op. */
int group_rank(const ProcessGroup& group, int world_rank, std::string_view op) {
  const auto& ranks = group.world_ranks();
  auto it = std::find(ranks.begin(), ranks.end(), world_rank);
  if (it == ranks.end()) fail("[", op, "] rank ", world_rank, " is not in the group of ", ranks.size(), " ranks");
  return static_cast<int>(it - ranks.begin());
}

/** The collective `start` starts: in flight (async_op), or done. */
WorkPtr run(const std::function<WorkPtr()>& start, bool async_op) {
  if (async_op) return start();
  start_and_wait(start);
  return nullptr;
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "SUM";
    case ReduceOp::Avg: return "AVG";
    case ReduceOp::Max: return "MAX";
    case ReduceOp::Min: return "MIN";
    case ReduceOp::Product: return "PRODUCT";
  }
  return "?";
}

void register_backend(const std::string& name, BackendFactory factory) { backends()[name] = std::move(factory); }

void init_process_group(const std::string& backend, Timeout timeout) {
  std::lock_guard lock(g_mutex);
  if (g_default) fail<RuntimeError>("[init_process_group] the default process group is already initialised");
  auto it = backends().find(backend);
  if (it == backends().end()) {
    std::string known;
    for (const auto& [name, _] : backends()) known += (known.empty() ? "" : ", ") + name;
    fail("[init_process_group] unknown backend '", backend, "' (this build has: ", known, ")");
  }
  if (timeout.count() <= 0) fail("[init_process_group] timeout must be positive, got ", timeout.count(), " s");
  g_default = it->second(timeout);
}

bool is_initialized() {
  std::lock_guard lock(g_mutex);
  return g_default != nullptr;
}

void destroy_process_group(const ProcessGroupPtr& group) {
  std::lock_guard lock(g_mutex);
  if (!group || group == g_default) g_default.reset();
}

ProcessGroupPtr default_group(std::string_view op) { return resolve(nullptr, op); }

int get_rank(const ProcessGroupPtr& group) { return resolve(group, "get_rank")->rank(); }
int get_world_size(const ProcessGroupPtr& group) {
  const ProcessGroupPtr g = resolve(group, "get_world_size");
  return g->rank() < 0 ? -1 : g->size();
}
std::string get_backend(const ProcessGroupPtr& group) { return resolve(group, "get_backend")->backend(); }

int get_local_rank() {
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"})
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  return 0;
}

namespace {

const graph::OpDef kAllReduce("all_reduce"), kBroadcast("broadcast");

using Collective = std::function<WorkPtr(const Tensor&)>;

/** Inside a trace (ug.jit, ug.function), a collective is an op of the program that runs at every
 *  call, kept whether or not its result is read (every rank must take part): over a copy of the
 *  tensor's value, `collective` on the copy gives the trace's own value now, `replay` is what
 *  the program runs. Returns the copy and the trace's finished Work. */
std::pair<Tensor, WorkPtr> record_collective(const graph::OpDef& def, const Tensor& tensor,
                                             const Collective& collective, graph::Replay replay) {
  graph::OpCall call(def);
  Tensor result = tensor.clone();  // a fresh contiguous buffer the collective writes
  WorkPtr work = start_and_wait([&] { return collective(result); });
  call.set_attrs({{"effect", int64_t(1)}});
  call.set_replay(std::move(replay), graph::ReplaySizes::None);
  call.finish({&tensor}, {&result});
  return {result, work};
}

/** An in-place collective inside a trace (record_collective), written back into the tensor as
 *  an op of its own. Returns the trace's finished Work (async_op's handle), or null outside a
 *  trace. */
WorkPtr traced(const graph::OpDef& def, const Tensor& tensor, const Collective& collective) {
  if (!graph::detail::current_capture) return nullptr;
  auto [result, work] = record_collective(def, tensor, collective, [collective](const std::vector<Tensor>& in) {
    Tensor t = in[0].clone();
    start_and_wait([&] { return collective(t); });
    return std::vector<Tensor>{t};
  });
  NoGradGuard no_grad;
  Tensor(tensor).copy_(result);
  return work;
}

/** The collectives a program started to overlap with its next ops and has not waited for
 *  yet, by the buffer each reduces into (the start op's result, which the wait op takes). */
class InFlight {
 public:
  void add(const Tensor& buffer, WorkPtr work) {
    std::lock_guard lock(mutex_);
    works_[buffer.raw_data()] = std::move(work);
  }
  WorkPtr take(const Tensor& buffer) {
    std::lock_guard lock(mutex_);
    auto it = works_.find(buffer.raw_data());
    if (it == works_.end()) return nullptr;
    WorkPtr work = std::move(it->second);
    works_.erase(it);
    return work;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<const void*, WorkPtr> works_;
};

InFlight& in_flight() {
  static InFlight works;
  return works;
}

const graph::OpDef kWait("wait_tensor");  // torch's name for the functional collectives' wait

void check_traced(std::string_view op) {
  if (!graph::detail::current_capture)
    fail<RuntimeError>("[", op, "] records an op of a compiled program: call it inside a trace");
}

/** The collectives a program cannot replay yet raise inside a trace, rather than run once. */
void refuse_traced(std::string_view op) {
  if (graph::detail::current_capture)
    fail<RuntimeError>("[", op,
                       "] inside a compiled function (ug.jit, ug.function) is not supported: a program "
                       "replays all_reduce and broadcast only; call it outside the compiled function");
}

}  // namespace

WorkPtr all_reduce(const Tensor& tensor, ReduceOp op, const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "all_reduce");
  if (WorkPtr done = traced(kAllReduce, tensor, [g, op](const Tensor& t) { return g->all_reduce(t, op); }))
    return async_op ? done : nullptr;
  return run([&] { return g->all_reduce(tensor, op); }, async_op);
}

Tensor start_overlapped_all_reduce(const Tensor& tensor, ReduceOp op, const ProcessGroupPtr& group) {
  check_traced("start_overlapped_all_reduce");
  const auto& g = resolve(group, "all_reduce");
  return record_collective(
             kAllReduce, tensor, [g, op](const Tensor& t) { return g->all_reduce(t, op); },
             [g, op](const std::vector<Tensor>& in) {
               // The buffer the program hands over for the last time is reduced where it is.
               const Tensor& x = in[0];
               const bool own = x.impl_ref()->use_count() == 1 && x.storage()->use_count() == 1 && x.is_contiguous();
               Tensor buffer = own ? x : x.clone();
               in_flight().add(buffer, g->all_reduce(buffer, op));
               return std::vector<Tensor>{buffer};
             })
      .first;
}

Tensor wait_overlapped(const Tensor& started) {
  check_traced("wait_overlapped");
  graph::OpCall call(kWait);
  Tensor done = started.clone();  // a value of its own in the trace; the program's is the buffer itself
  call.set_attrs({{"effect", int64_t(1)}});
  call.set_replay(
      [](const std::vector<Tensor>& in) {
        if (WorkPtr work = in_flight().take(in[0])) work->wait();
        return std::vector<Tensor>{in[0]};
      },
      graph::ReplaySizes::None);
  call.finish({&started}, {&done});
  return done;
}

WorkPtr broadcast(const Tensor& tensor, int src, const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "broadcast");
  const int root = group_rank(*g, src, "broadcast");
  if (WorkPtr done = traced(kBroadcast, tensor, [g, root](const Tensor& t) { return g->broadcast(t, root); }))
    return async_op ? done : nullptr;
  return run([&] { return g->broadcast(tensor, root); }, async_op);
}

WorkPtr all_gather(const std::vector<Tensor>& tensor_list, const Tensor& tensor, const ProcessGroupPtr& group,
                   bool async_op) {
  const auto& g = resolve(group, "all_gather");
  refuse_traced("all_gather");
  return run([&] { return g->all_gather(tensor_list, tensor); }, async_op);
}

WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op,
                       const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "reduce_scatter");
  refuse_traced("reduce_scatter");
  return run([&] { return g->reduce_scatter(output, input_list, op); }, async_op);
}

namespace {

/** The n rank-major parts of a tensor, each of `part`'s shape: views of its memory, which a
 *  collective writes or reads in place. */
std::vector<Tensor> rank_parts(const Tensor& whole, const Tensor& part, int n, std::string_view op,
                               std::string_view what) {
  if (whole.numel() != n * part.numel() || whole.dtype() != part.dtype())
    fail("[", op, "] ", what, " of shape ", whole.shape(), " and dtype ", whole.dtype(), " must hold ", n,
         " tensors of shape ", part.shape(), " and dtype ", part.dtype(), " (one per rank)");
  if (!whole.is_contiguous()) fail("[", op, "] ", what, " must be contiguous");
  std::vector<Tensor> parts;
  const Tensor rows = whole.view({n, part.numel()});
  for (int i = 0; i < n; ++i) parts.push_back(rows.select(0, i).view(part.shape()));
  return parts;
}

/** dim-0 pieces of t: sizes given, or n equal ones. */
std::vector<Tensor> split_rows(const Tensor& t, const std::vector<int64_t>& sizes, int n, std::string_view what) {
  if (t.dim() == 0) fail("[all_to_all_single] ", what, " must have a dim 0 to split");
  std::vector<int64_t> s = sizes;
  if (s.empty()) {
    if (t.size(0) % n != 0)
      fail("[all_to_all_single] ", what, " of shape ", t.shape(), " does not split evenly between ", n, " ranks");
    s.assign(static_cast<size_t>(n), t.size(0) / n);
  }
  if (static_cast<int>(s.size()) != n)
    fail("[all_to_all_single] ", what, "_split_sizes has ", s.size(), " sizes for ", n, " ranks");
  std::vector<Tensor> parts;
  int64_t at = 0;
  for (int64_t k : s) {
    if (k < 0 || at + k > t.size(0))
      fail("[all_to_all_single] ", what, "_split_sizes do not fit dim 0 of ", what, " (shape ", t.shape(), ")");
    parts.push_back(t.narrow(0, at, k));
    at += k;
  }
  if (at != t.size(0))
    fail("[all_to_all_single] ", what, "_split_sizes add up to ", at, ", not dim 0 of ", what, " (shape ", t.shape(),
         ")");
  return parts;
}

}  // namespace

WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input, const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "all_gather_into_tensor");
  refuse_traced("all_gather_into_tensor");
  std::vector<Tensor> parts = rank_parts(output, input, g->size(), "all_gather_into_tensor", "output");
  return run([&] { return g->all_gather(parts, input); }, async_op);
}

WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op, const ProcessGroupPtr& group,
                              bool async_op) {
  const auto& g = resolve(group, "reduce_scatter_tensor");
  refuse_traced("reduce_scatter_tensor");
  std::vector<Tensor> parts = rank_parts(input, output, g->size(), "reduce_scatter_tensor", "input");
  return run([&] { return g->reduce_scatter(output, parts, op); }, async_op);
}

WorkPtr reduce(const Tensor& tensor, int dst, ReduceOp op, const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "reduce");
  refuse_traced("reduce");
  const int root = group_rank(*g, dst, "reduce");
  return run([&] { return g->reduce(tensor, root, op); }, async_op);
}

WorkPtr gather(const Tensor& tensor, const std::vector<Tensor>& gather_list, int dst, const ProcessGroupPtr& group,
               bool async_op) {
  const auto& g = resolve(group, "gather");
  refuse_traced("gather");
  const int root = group_rank(*g, dst, "gather");
  return run([&] { return g->gather(gather_list, tensor, root); }, async_op);
}

WorkPtr scatter(const Tensor& tensor, const std::vector<Tensor>& scatter_list, int src, const ProcessGroupPtr& group,
                bool async_op) {
  const auto& g = resolve(group, "scatter");
  refuse_traced("scatter");
  const int root = group_rank(*g, src, "scatter");
  return run([&] { return g->scatter(tensor, scatter_list, root); }, async_op);
}

WorkPtr all_to_all(const std::vector<Tensor>& output_list, const std::vector<Tensor>& input_list,
                   const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "all_to_all");
  refuse_traced("all_to_all");
  return run([&] { return g->all_to_all(output_list, input_list); }, async_op);
}

WorkPtr all_to_all_single(const Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes,
                          const std::vector<int64_t>& input_split_sizes, const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "all_to_all_single");
  refuse_traced("all_to_all_single");
  std::vector<Tensor> outputs = split_rows(output, output_split_sizes, g->size(), "output");
  std::vector<Tensor> inputs = split_rows(input, input_split_sizes, g->size(), "input");
  return run([&] { return g->all_to_all(outputs, inputs); }, async_op);
}

WorkPtr barrier(const ProcessGroupPtr& group, bool async_op) {
  const auto& g = resolve(group, "barrier");
  refuse_traced("barrier");
  return run([&] { return g->barrier(); }, async_op);
}

WorkPtr isend(const Tensor& tensor, int dst, const ProcessGroupPtr& group, int tag) {
  const auto& g = resolve(group, "send");
  refuse_traced("send");
  return g->send(tensor, group_rank(*g, dst, "send"), tag);
}

WorkPtr irecv(const Tensor& tensor, std::optional<int> src, const ProcessGroupPtr& group, int tag) {
  const auto& g = resolve(group, "recv");
  refuse_traced("recv");
  return g->recv(tensor, src ? group_rank(*g, *src, "recv") : -1, tag);
}

void send(const Tensor& tensor, int dst, const ProcessGroupPtr& group, int tag) {
  isend(tensor, dst, group, tag)->wait();
}

int recv(const Tensor& tensor, std::optional<int> src, const ProcessGroupPtr& group, int tag) {
  WorkPtr work = irecv(tensor, src, group, tag);
  work->wait();
  return work->source_rank();
}

ProcessGroupPtr new_group(const std::vector<int>& ranks, std::optional<Timeout> timeout) {
  const ProcessGroupPtr world = default_group("new_group");
  std::vector<int> members;
  if (ranks.empty())
    for (int r = 0; r < world->size(); ++r) members.push_back(r);
  for (int r : ranks) members.push_back(group_rank(*world, r, "new_group"));
  return world->new_group(members, timeout.value_or(world->timeout()));
}

}  // namespace ug::distributed
