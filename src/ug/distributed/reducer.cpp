#include "ug/distributed/reducer.h"

#include <unordered_set>
#include <utility>

#include "ug/autograd/grad_trace.h"
#include "ug/distributed/distributed.h"
#include "ug/distributed/overlap.h"
#include "ug/distributed/start_and_wait.h"
#include "ug/graph/capture.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"

namespace ug::distributed {

struct Reducer::State {
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;
    Tensor flat;
    size_t pending = 0;
    WorkPtr work;
    // In a compiled step's trace: the bucket's average, or the buffer its all_reduce reduces
    // into while in flight.
    Tensor average;
    bool in_flight = false;
  };
  std::vector<Tensor> params;
  std::vector<size_t> bucket_of;  // parameter index -> bucket
  std::vector<size_t> slot_of;    // parameter index -> position in its bucket
  std::vector<Bucket> buckets;
  std::vector<size_t> hook_ids;
  ProcessGroupPtr group;
  bool find_unused = false;
  bool as_view = false;  // gradient_as_bucket_view: each .grad is its slice of the bucket
  bool require_sync = true;
  bool armed = false;
  bool traced = false;  // this backward is a compiled step's trace (average_traced)
  size_t ready = 0;
  size_t unused = 0;  // of them, marked ready by find_unused's search before backward
  std::vector<bool> is_ready;

  Tensor slice(size_t p) {
    Bucket& b = buckets[bucket_of[p]];
    return b.flat.narrow(0, b.offsets[slot_of[p]], params[p].numel());
  }

  /** Whether parameter p's .grad already is its slice of the bucket. */
  bool grad_is_slice(size_t p) const {
    const Tensor g = params[p].grad();
    const Bucket& b = buckets[bucket_of[p]];
    return g.defined() && g.is_contiguous() && g.dtype() == b.flat.dtype() &&
           g.raw_data() == static_cast<char*>(b.flat.raw_data()) +
                               static_cast<size_t>(b.offsets[slot_of[p]]) * b.flat.element_size();
  }

  void arm() {
    for (Bucket& b : buckets) {
      b.pending = b.params.size();
      b.work.reset();
      b.average = Tensor();
      b.in_flight = false;
    }
    ready = unused = 0;
    is_ready.assign(params.size(), false);
    armed = true;
  }

  /** Parameter p's .grad holds this step's gradient (undefined: none, reduced as zeros). */
  void mark_ready(size_t p) {
    if (is_ready[p])
      fail<RuntimeError>("[DistributedDataParallel] parameter ", p,
                         " got two gradients in one backward "
                         "(a reentrant backward, or a parameter shared in a way DDP cannot see)");
    is_ready[p] = true;
    if (traced) {
      if (Bucket& b = buckets[bucket_of[p]]; --b.pending == 0) average_traced(b, ready + 1 == params.size());
      ++ready;
      return;
    }
    if (!(as_view && grad_is_slice(p))) {
      const Tensor g = params[p].grad();
      Tensor s = slice(p);
      if (g.defined()) s.copy_(g.reshape({-1}));
      else s.zero_();
      // From now on backward adds into the bucket in place, and the average lands in .grad.
      if (as_view) params[p].set_grad(s.view(params[p].shape()));
    }
    Bucket& b = buckets[bucket_of[p]];
    if (--b.pending == 0) {
      auto start = [&] { return group->all_reduce(b.flat, ReduceOp::Avg); };
      // The step's last gradient: finish() waits for its bucket next.
      b.work = ready + 1 == params.size() ? start_and_wait(start) : start();
    }
    for (Bucket& other : buckets)  // MPI progresses the collectives in flight only inside its calls
      if (other.work) other.work->is_completed();
    ++ready;
  }

  /** In a compiled step's trace: the bucket is the concatenation of the traced gradients, and
   *  the program starts its all_reduce(AVG) where the bucket fills, as eager DDP does, and
   *  goes on with backward while the group's thread reduces it (finish waits). The bucket of
   *  the last gradient has nothing left to overlap: its all_reduce runs at once, on the
   *  calling thread (start_and_wait), as eager DDP's does. */
  void average_traced(Bucket& b, bool last) {
    autograd::GradTrace& trace = *autograd::GradTrace::current();
    std::vector<Tensor> parts;
    for (size_t p : b.params) {
      const Tensor g = trace.grad(params[p]);
      parts.push_back(g.defined() ? g.reshape({-1}) : zeros({params[p].numel()}, {.dtype = params[p].dtype()}));
    }
    b.average = cat(parts, 0);
    b.in_flight = !last;
    if (last) all_reduce(b.average, ReduceOp::Avg, group);
    else b.average = start_overlapped_all_reduce(b.average, ReduceOp::Avg, group);
  }

  /** In a compiled step's trace, at the end of backward: the program waits for each bucket's
   *  all_reduce, and each .grad becomes its slice of the average. */
  void finish_traced() {
    for (Bucket& b : buckets) {
      Tensor average = std::exchange(b.average, Tensor());
      if (std::exchange(b.in_flight, false)) average = wait_overlapped(average);
      for (size_t i = 0; i < b.params.size(); ++i) {
        const Tensor& p = params[b.params[i]];
        p.set_grad(average.narrow(0, b.offsets[i], p.numel()).view(p.shape()));
      }
    }
  }

  /** Waits for every bucket and leaves the averages in .grad. */
  void finish() {
    armed = false;
    if (traced) return finish_traced();
    for (Bucket& b : buckets) b.work->wait();
    if (as_view) return;
    for (size_t p = 0; p < params.size(); ++p) {
      Tensor avg = slice(p).view(params[p].shape());
      if (params[p].grad().defined()) params[p].grad().copy_(avg);
      else params[p].set_grad(avg.clone());
    }
  }

  void on_accumulated(size_t p) {
    if (!armed) return;
    AutoGradMode no_grad(false);
    mark_ready(p);
    if (ready == params.size()) finish();
  }
};

Reducer::Reducer(std::vector<Tensor> parameters, ProcessGroupPtr group, size_t bucket_cap_bytes,
                 bool find_unused_parameters, bool gradient_as_bucket_view)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.group = std::move(group);
  s.find_unused = find_unused_parameters;
  s.as_view = gradient_as_bucket_view;
  for (const Tensor& p : parameters)
    if (p.requires_grad()) s.params.push_back(p);
  s.bucket_of.resize(s.params.size());
  s.slot_of.resize(s.params.size());
  size_t bytes = 0;
  for (size_t k = s.params.size(); k-- > 0;) {
    const Tensor& p = s.params[k];
    if (!p.is_floating_point())
      fail<TypeError>("[DistributedDataParallel] parameter ", k, " has dtype ", p.dtype(), ": gradients are averaged");
    bool fresh = s.buckets.empty() || bytes >= bucket_cap_bytes ||
                 s.params[s.buckets.back().params.front()].dtype() != p.dtype();
    if (fresh) {
      s.buckets.emplace_back();
      bytes = 0;
    }
    State::Bucket& b = s.buckets.back();
    s.bucket_of[k] = s.buckets.size() - 1;
    s.slot_of[k] = b.params.size();
    b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + s.params[b.params.back()].numel());
    b.params.push_back(k);
    bytes += p.nbytes();
  }
  for (State::Bucket& b : s.buckets) {
    int64_t n = b.offsets.back() + s.params[b.params.back()].numel();
    b.flat = zeros({n}, {.dtype = s.params[b.params.front()].dtype()});
  }
  std::weak_ptr<State> weak = state_;
  for (size_t k = 0; k < s.params.size(); ++k)
    s.hook_ids.push_back(autograd::register_post_accumulate_grad_hook(s.params[k], [weak, k](const Tensor&) {
      if (auto state = weak.lock()) state->on_accumulated(k);
    }));
}

Reducer::~Reducer() {
  for (size_t k = 0; k < state_->params.size(); ++k)
    autograd::remove_post_accumulate_grad_hook(state_->params[k], state_->hook_ids[k]);
}

void Reducer::prepare_for_forward() {
  State& s = *state_;
  if (!s.armed || s.ready == 0 || !s.require_sync || !GradMode::is_enabled()) return;
  if (s.ready == s.unused) {
    s.armed = false;
    fail<RuntimeError>(
        "[DistributedDataParallel] forward ran again before a backward through the previous forward's "
        "output: with find_unused_parameters=True the unused parameters' reduction starts in "
        "forward, so each forward needs its backward before the next one (run extra forwards "
        "under no_sync() or no_grad())");
  }
  std::string missing;
  for (size_t p = 0; p < s.params.size(); ++p)
    if (!s.is_ready[p]) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
  s.armed = false;
  fail<RuntimeError>("[DistributedDataParallel] the previous backward finished without gradients for parameters ",
                     missing,
                     " (by index in module.parameters()), so their reduction never ran: pass "
                     "find_unused_parameters=True when some parameters take no part in the loss");
}

void Reducer::prepare_for_backward(const std::vector<Tensor>& outputs) {
  State& s = *state_;
  // A forward under no_grad or no_sync leaves a previous forward's reduction armed, as torch's.
  if (!s.require_sync || !GradMode::is_enabled()) return;
  // A compiled step's trace records the buckets' averaging (average_traced); an ONNX export's
  // trace has no backward to arm for.
  s.traced = graph::detail::current_capture != nullptr;
  if (s.traced && !autograd::GradTrace::current()) {
    s.armed = false;
    return;
  }
  s.arm();
  if (!s.find_unused) return;
  std::unordered_set<const TensorImpl*> reached;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Tensor& t : outputs)
    if (t.defined())
      if (Edge e = autograd::gradient_edge(t); e.valid() && seen.insert(e.node.get()).second)
        stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (auto* acc = dynamic_cast<AccumulateGrad*>(n)) reached.insert(acc->leaf().impl_ref().get());
    for (const Edge& e : n->next_edges())
      if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  }
  AutoGradMode no_grad(false);
  for (size_t p = 0; p < s.params.size(); ++p)
    if (!reached.count(s.params[p].impl_ref().get())) {
      s.mark_ready(p);
      ++s.unused;
    }
  if (s.ready == s.params.size()) s.finish();
}

void Reducer::set_require_sync(bool sync) { state_->require_sync = sync; }
bool Reducer::require_sync() const { return state_->require_sync; }

std::vector<std::vector<size_t>> Reducer::bucket_indices() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : state_->buckets) out.push_back(b.params);
  return out;
}

}  // namespace ug::distributed
