// TensorFlow's GradientTape on the shared engine: a recording scope that watches tensors
// and answers gradient(target, sources) by walking the graph it saw, returning gradients
// instead of adding them into .grad.
#pragma once

#include <memory>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"

namespace ug {

class GradientTape {
 public:
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /** Starts recording on this thread (Python: __enter__). Ops on watched tensors and on
   *  tensors that require grad are recorded until stop(). */
  void start();
  /** Ends the recording scope (Python: __exit__); gradient() may still be called. */
  void stop();
  bool recording() const { return recording_; }
  /** Records ops on t from now on, as if it required grad. */
  void watch(const Tensor& t);
  std::vector<Tensor> watched() const;

  /** d(sum of targets)/d(source) for each source; undefined for sources not used. A
   *  non-persistent tape answers once. output_gradients weight the targets (default ones). */
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                               const std::vector<Tensor>& output_gradients = {});
  Tensor gradient(const Tensor& target, const Tensor& source);

  /** A scope in which nothing is recorded (tape.stop_recording()). */
  NoGradGuard stop_recording() const { return NoGradGuard(); }

  /** RAII recording scope for C++: { auto rec = tape.record(); ... }. */
  class Scope {
   public:
    explicit Scope(GradientTape& tape) : tape_(tape) { tape_.start(); }
    ~Scope() { tape_.stop(); }

   private:
    GradientTape& tape_;
  };
  Scope record() { return Scope(*this); }

  /** Whether any tape is recording on this thread (nested gradients then build graphs). */
  static bool any_recording();

 private:
  struct Watch {
    Tensor tensor;
    Edge edge;  // where its gradient arrives, fixed when watched
    bool restore_requires_grad;
  };
  bool persistent_;
  bool recording_ = false;
  bool used_ = false;
  std::unique_ptr<AutoGradMode> grad_mode_;
  std::vector<Watch> watches_;
};

}  // namespace ug
