// Rematerialization: a value read early and again much later is computed a second time for its
// late readers, from values alive there anyway, instead of being held across the gap: a cheap
// node's output (a GELU's output, read by the forward's product and again by the weight
// gradient's, while the GELU's input waits for gelu_backward), and the projections of values
// alive for the whole run (an attention's q/k/v projection of the block's input, read by the
// forward's attention and again by its backward). Only what lowers the program's peak: as XLA's
// rematerialization, a candidate is computed again when its buffer is held across the peak and
// the copy lowers it, then at the peak that leaves, until none does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ug::onnx {
struct Graph;
}

namespace ug::compiler {

/** Gives late readers copies of the nodes that made what they read, placed before the first of
 *  them, then plans the values' liveness again. `bytes`: each value's size by id (-1 where the
 *  trace did not bind a tensor to it: it weighs what an elementwise reader makes, else its
 *  node's largest input), what the peak is reckoned in, as run_graph holds buffers (a view is
 *  its base's, an elementwise result may take a dying operand's); `buffers`: the storage each
 *  traced value was in (null where unknown), which tells a rearrangement's view from its copy.
 *  A candidate is copied only when its buffer is held across the peak of the program planned so
 *  far and copying it lowers that peak (those needing no product tried first, the largest
 *  first), until none does; then, one at a time, one that beside the others kept lowers the
 *  peak by less than half its buffer is dropped (its copy is alive at the peak too). The
 *  candidates, two kinds of copies:
 *  - a projection: a MatMul of values available there (program inputs, state, constants, views
 *    of them or casts of them, or values of the program alive there anyway: a block's input
 *    inside a stack, held for its weight's gradient), neither itself a projection's, and the
 *    rearrangements (Transpose, Reshape, Split, ...), casts, bias additions and scalings
 *    (Add/Sub/Mul/Div by whole-run values) of its result; each of those values the backward
 *    reads after a long gap, and that no cheap node reads, is computed again, all of one
 *    product before the first late reader among them, sharing one product;
 *  - a cheap node (an activation: Gelu, Relu, Sigmoid, Tanh, Exp, ...; LayerNormalization;
 *    Softmax; Cast; a rearrangement the run made a copy of) when its inputs are available there
 *    (program inputs or constants, values read at or after that point, or copies made before
 *    it), or its first input's node is copied too from inputs available there: a softmax's
 *    scores' MatMul (scores that die at the softmax), a cheap node or a Transpose (an autocast
 *    cast of a layer norm's output gets the norm again).
 *  Never when an effect (an optimizer's step) runs between the node and the copy. A copy computes
 *  the same bits with the same kernel. UG_JIT_REMAT=0, read when a program is compiled, turns it
 *  off (for measuring it). Returns how many nodes it copied. */
size_t rematerialize(onnx::Graph& graph, std::vector<int64_t> bytes, const std::vector<const void*>& buffers);

}  // namespace ug::compiler
