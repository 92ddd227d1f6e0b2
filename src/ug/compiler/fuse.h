// Fusion of a compiled program's elementwise chains (docs/design.md, "Fused elementwise
// chains"): each maximal tree of elementwise nodes whose intermediates only the tree reads,
// with an optional trailing reduction, becomes one node that runs the same op-table kernels
// block by block, so that no intermediate is ever materialised whole.
#pragma once

#include <cstddef>

namespace ug::onnx {
struct Graph;
}

namespace ug::compiler {

struct FuseStats {
  size_t nodes = 0;    // nodes folded into fused groups
  size_t groups = 0;   // fused nodes made of them
  size_t applied = 0;  // parameters' updates that make the new parameter (fold_applied_updates)
  size_t stops = 0;    // stop_gradient call-backs removed (drop_gradient_stops)
};

/** First removes the stop_gradient call-backs (the graph runs where autograd does not record),
 *  then folds each Add of a parameter and its optimizer update (apply_updates after
 *  optimizer.update) into the update, which has an applied form (graph/update_replay.h) that
 *  makes the new parameter in its own pass. Then rewrites graph's nodes: each group becomes a
 *  UgReplay node (op "fused") at the place of its last node, calling a replay appended to
 *  graph.replays; plans liveness again. A fused node takes its inputs (onnx::Replay), so an
 *  input the graph reads there for the last time may hold its result. It runs whole tensors,
 *  unblocked, when its output is small (under 8 blocks), when autograd records through it or an
 *  input carries a forward tangent or a vmap batch: then it is the unfused program's
 *  computation, in-place writes included. */
FuseStats fuse(onnx::Graph& graph);

}  // namespace ug::compiler
