// ug::train::Checkpoint: the whole state of a training run in one safetensors file, so a run
// stopped after any epoch or step continues, in a new process, exactly as if it had not
// stopped. The file is the tree torch users save by hand (io::save / ug.save):
//   {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
//    "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(), "epoch": int, "step": int,
//    "rng": ug.get_rng_state(), "extra": any tree}
// in torch's layouts (the optimizer's state keyed by int parameter index, "betas" a tuple,
// counters ints); entries of objects not given are left out. ug.load(path) reads it back.
//
// Resuming bit-exactly: build the model, optimizer and scheduler as the first run did (same
// constructor arguments, same parameter order), then load. The global generator is restored,
// so dropout masks and shuffles drawn from it continue the same stream. A checkpoint taken at
// an epoch boundary (before the next epoch's shuffle) resumes with any data order. To resume
// in the middle of an epoch, save the number of batches done in it as `step`; after loading,
// rebuild that epoch's order and skip `step` batches. The order must then be a function of
// the epoch (ug::random::permutation(fold_in(key, epoch), n), a DataLoader given a seed), not
// a draw from the global generator, whose restored state is the one at the save, past the
// epoch's shuffle. A sampler given to the checkpoint (a seeded one, DistributedSampler) gets
// its epoch and seed back.
//
// Distributed (`group` set): saving and loading are collective, every rank of the group calls
// them. Saving gathers every rank's RNG state and sampler state to rank 0, which alone writes
// the file (atomically: a rank that dies mid-save makes the others time out in the gather, and
// nothing is written); the model and optimizer are rank 0's (DDP keeps the replicas equal). The
// file gains "ranks": {"world_size": N, "rng": int64 [N, 2], "sampler": {name: int64 [N]}}.
// Loading (every rank reads the file: it must be visible to all of them) gives each rank its
// own RNG and sampler state back, so a job resumed with the same world size continues
// bit-identically; another world size is an error.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "ug/data/sampler.h"
#include "ug/distributed/process_group.h"
#include "ug/io/tree.h"
#include "ug/nn/module.h"
#include "ug/optim/grad_scaler.h"
#include "ug/optim/lr_scheduler.h"
#include "ug/optim/optimizer.h"

namespace ug::train {

/** Where the run stands: saved beside the objects' states and returned on loading. */
struct Progress {
  int64_t epoch = 0;
  int64_t step = 0;
  /** Anything else to keep (best metric, config...); None when not given. */
  io::Tree extra;
};

/** Either kind of learning-rate schedule; null for none. */
using SchedulerRef = std::variant<optim::lr_scheduler::LRScheduler*, optim::lr_scheduler::ReduceLROnPlateau*>;

/** The objects whose state a checkpoint holds; any may be left null. Loading restores each
 *  one given and the global generator (ug::default_generator()); a given object whose entry
 *  the file lacks is an error. Every entry is read and type-checked before anything is
 *  restored; then the model (whose load_state_dict names missing, unexpected and misshapen
 *  keys), the optimizer, the scheduler, the scaler and the generator, in that order. */
struct Checkpoint {
  nn::Module* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  SchedulerRef scheduler;
  /** Mixed-precision loss scaling: its scale and growth count, so a resumed run skips and
   *  grows exactly where the first would have. */
  amp::GradScaler* scaler = nullptr;
  /** Its epoch and seed (SamplerState), saved and restored. */
  data::Sampler* sampler = nullptr;
  /** Makes saving and loading collective over this group (see above); null: this process alone. */
  distributed::ProcessGroupPtr group;

  /** The tree save() writes (collective with a group: every rank gets the whole tree). */
  io::Tree to_tree(const Progress& progress) const;
  /** Restores from a tree as to_tree() makes it; `source` names it in errors. With a group,
   *  each rank takes its own row of "ranks" (no communication). */
  Progress from_tree(const io::Tree& tree, const std::string& source = "checkpoint") const;

  /** Writes atomically: a crash part-way leaves the previous file intact. With a group, rank
   *  0 writes and every rank returns once it has (or raises if it could not). */
  void save(const std::string& path, const Progress& progress) const;
  Progress load(const std::string& path) const;
};

}  // namespace ug::train
