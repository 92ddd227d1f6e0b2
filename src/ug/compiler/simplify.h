// The first passes over a traced program, before it runs: what the trace wrote but the
// program need not do.
#pragma once

#include <cstddef>

namespace ug::onnx {
struct Graph;
}

namespace ug::compiler {

struct SimplifyStats {
  size_t identities = 0;  // Identity nodes forwarded (their readers read the input)
  size_t dead = 0;        // nodes whose outputs nothing read
};

/** Forwards Identity nodes, drops the nodes whose outputs neither the program's outputs nor a
 *  node with a side effect (a debug print) need, and plans the values' liveness again. */
SimplifyStats simplify(onnx::Graph& graph);

}  // namespace ug::compiler
