#include "ug/autograd/checkpoint.h"

#include <any>
#include <memory>
#include <optional>

#include "ug/core/allocator.h"
#include "ug/core/error.h"
#include "ug/core/random.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"
#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/draw_replay.h"

namespace ug {

namespace {

/** What a checkpointed region needs to run again: the function, its inputs, the states of the
 *  first run, and the tensors the second run saved (by the order they were saved in). */
struct Region {
  TensorFn fn;
  Tensors inputs;
  std::vector<uint32_t> versions;  // the inputs' data versions when the region first ran
  std::array<uint64_t, 2> rng;
  bool autocast_enabled, autocast_active;  // the CPU region's, and whether an op is mid-cast
  DType autocast_dtype;
  size_t saved = 0;  // tensors saved during the first run
  bool recomputed = false;
  Tensors again;
  bool captured = false;  // the first run was captured: its draws are in `draws`, which the run again reads
  Tensors draws;
};

/** A saved tensor as a region keeps it: the tensor itself (the policy keeps it), or its index
 *  in the order of saving (recomputed). */
struct Packed {
  std::shared_ptr<Region> region;
  size_t index;
  Tensor kept;
};

const graph::OpDef kBarrier("optimization_barrier");

/** The region's inputs as its recomputation reads them. Under a capture (a compiled program's
 *  trace) they pass through an op a program calls back as itself (a replay, which its passes
 *  never merge): the recomputation is then no common subexpression of the first run, which a
 *  program would otherwise keep alive instead of computing again (jax.checkpoint's
 *  prevent_cse, XLA's optimization barrier). At run time the replay hands its inputs through. */
Tensors barrier(const Tensors& inputs) {
  graph::OpCall call(kBarrier);
  if (!call.capturing()) return inputs;
  Tensors out;
  std::vector<const Tensor*> ins, outs;
  out.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    // A copy, not the tensor: a value of its own for the capture. Requiring grad as the input
    // does, so that the region's ops save what they saved the first time.
    Tensor copy = t.defined() ? t.detach().clone() : Tensor();
    if (t.defined() && t.requires_grad()) copy.requires_grad_(true);
    out.push_back(std::move(copy));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(&inputs[i]);
    outs.push_back(&out[i]);
  }
  call.set_replay([](const std::vector<Tensor>& in) { return in; });
  call.finish(ins, outs);
  return out;
}

/** Runs the region again to recover what its first run saved. */
void recompute(Region& r) {
  // The random state and the autocast region of the first run, undone afterwards whatever
  // happens. The region itself, not only autocast's flag: backward usually runs after the
  // region was left, and an op casts only inside an enabled region.
  struct Restore {
    Generator& gen;
    std::array<uint64_t, 2> rng;
    bool active;
    ~Restore() {
      gen.set_state(rng);
      autocast::detail::active = active;
    }
  } restore{default_generator(), default_generator().get_state(), autocast::detail::active};
  for (size_t i = 0; i < r.inputs.size(); ++i)
    if (r.inputs[i].defined() && r.inputs[i].version() != r.versions[i])
      fail<RuntimeError>(
          "[checkpoint] one of the variables needed for gradient computation has been modified by an "
          "inplace operation: input ",
          i, " of a checkpointed region (", r.inputs[i].dtype(), " ", r.inputs[i].shape(), ") is at version ",
          r.inputs[i].version(), ", expected version ", r.versions[i],
          " (the region runs again on it in backward); write into a copy (x.clone()) instead");
  restore.gen.set_state(r.rng);
  // The run again records a graph of its own, whose nodes keep what they save: a gradient
  // computed with create_graph differentiates through it (a second derivative).
  auto record = std::make_shared<SavedTensorHooks>(
      SavedTensorHooks{[&r](const Tensor& t) -> std::any {
                         r.again.push_back(t);
                         return t;
                       },
                       [](const std::any& packed) -> Tensor { return std::any_cast<const Tensor&>(packed); }});
  {
    EnableGradGuard grad;  // the ops save their tensors only when they record a node
    AutocastGuard amp(DeviceType::CPU, r.autocast_dtype, r.autocast_enabled);
    autocast::detail::active = r.autocast_active;
    SavedTensorHooksGuard hooks(record);
    std::optional<ops::DrawReplay> draws;
    if (r.captured) draws.emplace(r.draws, ops::DrawReplay::Mode::Replay);
    r.fn(barrier(r.inputs));
  }
  if (r.again.size() != r.saved)
    fail<RuntimeError>("[checkpoint] the function saved ", r.again.size(), " tensors when run again, ", r.saved,
                       " the first time: it must compute the same way each time (no data-dependent branches on "
                       "state that changed in between)");
  r.recomputed = true;
}

}  // namespace

Tensors checkpoint(const TensorFn& fn, const Tensors& inputs, const CheckpointPolicy& keep) {
  // Inside a jvp's level (jacfwd, hessian's forward over reverse) the region runs as it is: its
  // run again would not carry the tangents its saved tensors had, and the derivative of the
  // gradient through them would be lost (before: hessian(remat(f)) was silently wrong).
  if (forward::active()) return fn(inputs);
  std::vector<uint32_t> versions;
  for (const Tensor& t : inputs) versions.push_back(t.defined() ? t.version() : 0);
  auto region = std::make_shared<Region>(Region{fn,
                                                inputs,
                                                std::move(versions),
                                                default_generator().get_state(),
                                                autocast::is_enabled(DeviceType::CPU),
                                                autocast::active(),
                                                autocast::get_dtype(DeviceType::CPU),
                                                0,
                                                false,
                                                {}});
  std::weak_ptr<Region> weak = region;  // the packed tensors own the region; it does not own them
  auto hooks =
      std::make_shared<SavedTensorHooks>(SavedTensorHooks{[weak, keep](const Tensor& t) -> std::any {
                                                            std::shared_ptr<Region> r = weak.lock();
                                                            const size_t index = r->saved++;
                                                            const char* op =
                                                                ug::detail::current_op ? ug::detail::current_op : "";
                                                            return Packed{r, index, keep && keep(op) ? t : Tensor()};
                                                          },
                                                          [](const std::any& packed) -> Tensor {
                                                            const Packed& p = std::any_cast<const Packed&>(packed);
                                                            if (p.kept.defined()) return p.kept;
                                                            if (!p.region->recomputed) recompute(*p.region);
                                                            return p.region->again.at(p.index);
                                                          }});
  SavedTensorHooksGuard guard(hooks);
  std::optional<ops::DrawReplay> draws;
  if (graph::detail::current_capture) {
    region->captured = true;
    draws.emplace(region->draws, ops::DrawReplay::Mode::Record);
  }
  return fn(inputs);
}

}  // namespace ug
