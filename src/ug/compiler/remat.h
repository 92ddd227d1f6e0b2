// Rematerialization: a cheap value read early and again much later is computed a second time
// for its late readers when its inputs are alive there anyway, instead of being held across the
// gap (a GELU's output, read by the forward's product and again by the weight gradient's, while
// the GELU's input waits for gelu_backward).
#pragma once

#include <cstddef>

namespace ug::onnx {
struct Graph;
}

namespace ug::compiler {

/** Gives the late readers of each cheap node's output (an activation: Gelu, Relu, Sigmoid,
 *  Tanh, Exp, ...; LayerNormalization; Softmax) a copy of the node placed just before the first
 *  of them, when the node's inputs are alive there anyway (program inputs or constants, or
 *  values read at or after that point), no effect runs between the node and the copy, and the
 *  gap between the early and late readers is long; a softmax whose scores die at it gets a copy
 *  of the scores' MatMul too when that product's operands are alive. Then plans the values'
 *  liveness again. A copy computes the same bits with the same kernel. Returns how many nodes
 *  it copied. */
size_t rematerialize(onnx::Graph& graph);

}  // namespace ug::compiler
