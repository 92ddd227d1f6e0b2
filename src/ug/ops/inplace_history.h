// In-place ops while gradients are recorded. Such an op runs out of place on the same values
// and gives the written tensor the result's history (rebase_history); written into a view, it
// gives the view's base its old history with the view's elements replaced (torch's
// CopySlices), and every view of that memory takes its history from the base anew when next
// used (graph/node.h, refresh_view).
#pragma once

#include <initializer_list>

#include "ug/graph/node.h"

namespace ug::ops {

/** Before an in-place op on t under grad mode: raises for leaves that require grad (or a view
 *  of one). Returns true when t, its base (t a view) or the other operand requires grad, so
 *  the op must run out of place and rebase t's history (see rebase_history). */
bool inplace_needs_rebase(const Tensor& t, const Tensor* other, const char* op);
/** Inside vmap, before an in-place op writes `others` into t: raises when one of them is
 *  batched at a level t is not (one value per example cannot go into one tensor; torch's vmap
 *  refuses the same), naming the op. */
void check_batched_write(const Tensor& t, std::initializer_list<const Tensor*> others, const char* op);
/** Writes value (t's shape) into t's memory, no history, and counts the write (t's version).
 *  A batched t (vmap) is written through its physical tensor, whose copy_ counts it, the batch
 *  dim broadcast where value has none. */
void write_into(const Tensor& t, const Tensor& value);
/** t, or a copy of it where an op about to read t, then write its result into t, would save
 *  t for a gradient that the write then spoils: t requires grad, or (inside vmap) t's physical
 *  tensor does, for a grad outside the vmap. */
Tensor read_before_write(const Tensor& t);
/** Writes `result`'s data into t and makes t's history that of `result`. For a view, its base's
 *  history becomes the old one with the view's elements replaced by result's, and the view's
 *  that of its elements of the base. */
void rebase_history(const Tensor& t, const Tensor& result);
/** Notes that `view` was made from `from` under grad mode: its base, for the two above. */
void note_view(const Tensor& view, const Tensor& from);
/** Keeps the gradient of m's tensor at its grad_fn's output in a fresh cell (retain_grad). A
 *  write above that gives the tensor new history calls it again: torch moves the hook too. */
void retain_grad_at(AutogradMeta& m);

}  // namespace ug::ops
