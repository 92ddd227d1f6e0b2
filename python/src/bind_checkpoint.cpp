// ug.train.save_checkpoint / load_checkpoint: ug::train::Checkpoint over the C++ objects
// behind a model (including Python subclasses of ug.nn.Module), an optimizer and a scheduler.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <filesystem>

#include "bindings.h"
#include "tree_convert.h"
#include "ug/io/tree_file.h"
#include "ug/train/checkpoint.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::optim::Optimizer;
using ug::optim::lr_scheduler::LRScheduler;
using ug::optim::lr_scheduler::ReduceLROnPlateau;
using ug::train::Checkpoint;

[[noreturn]] void wrong_type(const char* op, const char* arg, const char* expected, nb::handle got) {
  ug::fail<ug::TypeError>("[", op, "] ", arg, " must be ", expected, " or None, got ", nb::inst_name(got).c_str());
}

Checkpoint checkpoint_of(nb::handle model, nb::handle optimizer, nb::handle scheduler, nb::handle scaler,
                         nb::handle sampler, ug::distributed::ProcessGroupPtr group, const char* op) {
  Checkpoint c;
  c.group = std::move(group);
  if (!sampler.is_none()) {
    if (!nb::isinstance<ug::data::Sampler>(sampler)) wrong_type(op, "sampler", "a ug.data sampler", sampler);
    c.sampler = &nb::cast<ug::data::Sampler&>(sampler);
  }
  if (!model.is_none()) {
    if (!nb::isinstance<ug::nn::Module>(model)) wrong_type(op, "model", "a ug.nn.Module", model);
    if (!nb::inst_ready(model))
      throw nb::type_error("[Module] the module is not initialised: call super().__init__() first in __init__");
    c.model = &nb::cast<ug::nn::Module&>(model);
  }
  if (!optimizer.is_none()) {
    if (!nb::isinstance<Optimizer>(optimizer)) wrong_type(op, "optimizer", "a ug.optim.Optimizer", optimizer);
    c.optimizer = &nb::cast<Optimizer&>(optimizer);
  }
  if (nb::isinstance<LRScheduler>(scheduler)) c.scheduler = &nb::cast<LRScheduler&>(scheduler);
  else if (nb::isinstance<ReduceLROnPlateau>(scheduler)) c.scheduler = &nb::cast<ReduceLROnPlateau&>(scheduler);
  else if (!scheduler.is_none()) wrong_type(op, "scheduler", "a ug.optim.lr_scheduler scheduler", scheduler);
  if (!scaler.is_none()) {
    if (!nb::isinstance<ug::amp::GradScaler>(scaler)) wrong_type(op, "scaler", "a ug.amp.GradScaler", scaler);
    c.scaler = &nb::cast<ug::amp::GradScaler&>(scaler);
  }
  return c;
}

}  // namespace

void bind_checkpoint(nb::module_& m) {
  nb::module_ train = get_or_create_submodule(m, "train", "training: checkpoints and loops (ug::train)");
  train.def(
      "save_checkpoint",
      [](const std::filesystem::path& path, nb::handle model, nb::handle optimizer, nb::handle scheduler, int64_t epoch,
         int64_t step, nb::handle extra, nb::handle scaler, nb::handle sampler,
         ug::distributed::ProcessGroupPtr group) {
        Checkpoint c = checkpoint_of(model, optimizer, scheduler, scaler, sampler, std::move(group), "save_checkpoint");
        ug::train::Progress progress{epoch, step, tree_from_python(extra, "save_checkpoint", "extra")};
        nb::gil_scoped_release release;  // with a group: gathers from the other ranks, then rank 0 writes
        c.save(path.string(), progress);
      },
      "path"_a, "model"_a = nb::none(), "optimizer"_a = nb::none(), "scheduler"_a = nb::none(), "epoch"_a = 0,
      "step"_a = 0, "extra"_a = nb::none(), "scaler"_a = nb::none(), "sampler"_a = nb::none(),
      "group"_a.none() = nb::none(),
      "Saves the training state atomically to a safetensors file: the model's state_dict, the optimizer's, the "
      "scheduler's and the GradScaler's, the global RNG state, the sampler's epoch and seed, epoch, step and extra "
      "(anything ug.save takes). ug.load(path) reads it as a dict. With group (e.g. ug.distributed.group.WORLD) "
      "every rank of it calls save_checkpoint: rank 0 writes the file with every rank's RNG and sampler state.");
  train.def(
      "load_checkpoint",
      [](const std::filesystem::path& path, nb::handle model, nb::handle optimizer, nb::handle scheduler,
         nb::handle scaler, nb::handle sampler, ug::distributed::ProcessGroupPtr group) {
        Checkpoint c = checkpoint_of(model, optimizer, scheduler, scaler, sampler, std::move(group), "load_checkpoint");
        ug::io::Tree tree;
        {
          nb::gil_scoped_release release;
          tree = ug::io::load(path.string());
        }
        ug::train::Progress p = c.from_tree(tree, path.string());
        return nb::make_tuple(p.epoch, p.step, tree_to_python(p.extra));
      },
      "path"_a, "model"_a = nb::none(), "optimizer"_a = nb::none(), "scheduler"_a = nb::none(), "scaler"_a = nb::none(),
      "sampler"_a = nb::none(), "group"_a.none() = nb::none(),
      "Restores what save_checkpoint saved into freshly built objects (same architecture and constructor "
      "arguments), the sampler's state and the global RNG state; returns (epoch, step, extra). Runs no code from "
      "the file. With group, each rank gets its own RNG and sampler state back (the file must have been saved by a "
      "job of the same world size; every rank reads it).");
}

}  // namespace ugpy
