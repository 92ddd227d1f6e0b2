// GradTrace: what a PyTorch-style training step does to the parameters' .grad while it is
// traced into a compiled program (ug.compile / ug.jit of `zero_grad(); loss.backward();
// step()`). A .grad is state outside the traced values, so backward() under a trace does not
// leave it behind the program's back: it accumulates through ops the trace records, reading a
// leaf's incoming gradient through a placeholder the program fills with the live .grad at
// every run, and the trace ends by listing each touched leaf's final gradient, which the
// program writes back (docs/design.md, "Compiled mode").
#pragma once

#include <utility>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::autograd {

class GradTrace {
 public:
  /** Installs itself on this thread while it lives (a trace of a compiled program). */
  GradTrace();
  ~GradTrace();
  GradTrace(const GradTrace&) = delete;
  GradTrace& operator=(const GradTrace&) = delete;

  /** The one installed on this thread, or null. */
  static GradTrace* current();

  /** Adds g into leaf.grad as AccumulateGrad does, with ops the trace records. */
  void accumulate(const Tensor& leaf, const Tensor& g);
  /** leaf.grad as the trace sees it: the first time (unless cleared), the placeholder of its
   *  incoming value. What a post-accumulate hook (DistributedDataParallel's) reads. */
  Tensor grad(const Tensor& leaf);
  /** zero_grad cleared leaf.grad (to none or zeros) inside the trace: its incoming value is not read. */
  void cleared(const Tensor& leaf);

  /** An optimizer's step read g, leaf's .grad: where g is no traced value (a gradient left by
   *  backward() before the traced function ran, as in accumulation over calls), a program run
   *  reads the live .grad in its place. */
  void read(const Tensor& leaf, const Tensor& g) { read_.emplace_back(g, leaf); }

  /** Leaves whose .grad the trace set or cleared, in first-touch order. */
  const std::vector<Tensor>& touched() const { return touched_; }
  /** (placeholder, leaf): the tensor standing for leaf's incoming .grad (zeros where it had
   *  none), which a program run replaces by the live .grad. */
  const std::vector<std::pair<Tensor, Tensor>>& incoming() const { return incoming_; }
  /** (gradient, leaf) for each gradient an optimizer's step read (read()). */
  const std::vector<std::pair<Tensor, Tensor>>& read_by_steps() const { return read_; }

 private:
  bool touch(const Tensor& leaf);  // true the first time
  std::vector<Tensor> touched_, cleared_;
  std::vector<std::pair<Tensor, Tensor>> incoming_, read_;
  GradTrace* previous_;
};

}  // namespace ug::autograd
