// The passes over a traced program before it runs: what the trace wrote but the program need
// not do at every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>

namespace ug::onnx {
struct Graph;
}

namespace ug::compiler {

struct SimplifyStats {
  size_t identities = 0;  // Identity nodes forwarded (their readers read the input)
  size_t folded = 0;      // nodes computed once, at compile time, into initializers
  size_t merged = 0;      // nodes that computed what an earlier node had (common subexpressions)
  size_t dead = 0;        // nodes whose outputs nothing read
  size_t recomputed = 0;  // nodes computed again for their late readers (remat.h)
  size_t fused = 0;       // elementwise and reduction nodes run as fused groups (fuse.h)
  size_t fused_groups = 0;
  size_t applied = 0;  // optimizer updates that add themselves to their parameter (fuse.h)
};

/** Forwards Identity nodes; folds the nodes that read only constants into initializers;
 *  merges a node into an earlier node of the same op, attributes and inputs (common
 *  subexpressions: a checkpointed region's recomputation reads its inputs through an
 *  optimization barrier, a replayed op, so it stays a recomputation); drops the nodes whose
 *  outputs neither the program's outputs nor a node with a side effect (a debug print) need;
 *  and plans the values' liveness again. `live` are the initializers the program refills at
 *  every run (parameters, state, .grad): never constants. Random draws and replayed ops
 *  (effects, optimizer updates, barriers) are neither folded nor merged. */
SimplifyStats simplify(onnx::Graph& graph, const std::unordered_set<int64_t>& live = {});

}  // namespace ug::compiler
