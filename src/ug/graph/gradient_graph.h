// Whether the backward running on this thread was asked for a graph of its gradients
// (create_graph). Eagerly that is the grad mode its rules run under; under a capture (ug.jit
// tracing a step) the engine runs the rules with grad mode on either way, so that they take op
// forms the capture follows. A rule whose fused backward is an op without a derivative of its
// own (attention's) reads this to take its formula only when a graph is really asked for.
#pragma once

namespace ug::graph {

/** create_graph of the backward running on this thread; outside one, the grad mode. */
bool gradient_graph_requested();

/** Set by the engine for the rules it runs, restored when it ends. */
class GradientGraphScope {
 public:
  explicit GradientGraphScope(bool requested);
  ~GradientGraphScope();
  GradientGraphScope(const GradientGraphScope&) = delete;
  GradientGraphScope& operator=(const GradientGraphScope&) = delete;

 private:
  int previous_;
};

}  // namespace ug::graph
