// In-place ops while gradients are recorded. Such an op runs out of place on the same values
// and gives the written tensor the result's history (rebase_history); written into a view, it
// gives the view's base its old history with the view's elements replaced (torch's
// CopySlices), and every view of that memory takes its history from the base anew when next
// used (graph/node.h, refresh_view).
#pragma once

#include "ug/graph/node.h"

namespace ug::ops {

/** Before an in-place op on t under grad mode: raises for leaves that require grad (or a view
 *  of one). Returns true when t, its base (t a view) or the other operand requires grad, so
 *  the op must run out of place and rebase t's history (see rebase_history). */
bool inplace_needs_rebase(const Tensor& t, const Tensor* other, const char* op);
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
