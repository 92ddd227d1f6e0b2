// TensorFlow's GradientTape on the shared engine: a recording scope that watches tensors
// and answers gradient(target, sources) by walking the graph it saw, returning gradients
// instead of adding them into .grad.
#pragma once

#include <memory>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"

namespace ug {

/** What gradient() returns for a source the targets do not depend on (TensorFlow's
 *  tf.UnconnectedGradients): an undefined tensor (Python None), or zeros shaped like it. */
enum class UnconnectedGradients { None, Zero };

class GradientTape {
 public:
  /** watch_accessed_variables=false (TensorFlow's opt-out) answers only for tensors passed
   *  to watch() (and tensors computed from them): other leaves, even ones that require grad,
   *  count as unconnected. */
  explicit GradientTape(bool persistent = false, bool watch_accessed_variables = true);
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

  /** d(sum of targets)/d(source) for each source; undefined (or zeros) for sources not used.
   *  A non-persistent tape answers once. output_gradients weight the targets (default ones). */
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                               const std::vector<Tensor>& output_gradients = {},
                               UnconnectedGradients unconnected = UnconnectedGradients::None);
  Tensor gradient(const Tensor& target, const Tensor& source);
  /** tf.GradientTape.jacobian: d target / d source, shaped target.shape + source.shape, for
   *  each source (one backward pass per element of target). */
  std::vector<Tensor> jacobian(const Tensor& target, const std::vector<Tensor>& sources,
                               UnconnectedGradients unconnected = UnconnectedGradients::None);
  /** tf.GradientTape.batch_jacobian: for target [B, T...] and source [B, S...] whose batch rows
   *  are independent, result[b] = d target[b] / d source[b], shaped [B, T..., S...]. */
  Tensor batch_jacobian(const Tensor& target, const Tensor& source,
                        UnconnectedGradients unconnected = UnconnectedGradients::None);

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
  /** Gradients of the weighted targets for each source, undefined where unconnected; retain
   *  keeps the graph for another pass. */
  std::vector<Tensor> backward(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                               const std::vector<Tensor>& weights, bool retain);
  void use(const char* what);
  bool persistent_;
  bool watch_accessed_variables_;
  bool recording_ = false;
  bool used_ = false;
  std::unique_ptr<AutoGradMode> grad_mode_;
  std::vector<Watch> watches_;
};

}  // namespace ug
