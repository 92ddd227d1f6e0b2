// The replay (capture.h) of an op whose first output is an update of its first input (an
// optimizer's functional update: the new value minus the parameter), with the form a compiled
// program runs instead where it only adds that update to the input (optax's apply_updates):
// the same outputs with input + update in place of the update, computed in the update's own
// pass (compiler/fuse.h), bit for bit what the addition gives.
#pragma once

#include <vector>

#include "ug/graph/capture.h"

namespace ug::graph {

struct UpdateReplay {
  Replay update, applied;
  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const { return update(in); }
};

}  // namespace ug::graph
