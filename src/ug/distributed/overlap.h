// A collective a compiled program overlaps with the ops after it: one op starts it on the
// group's thread and returns at once, a later op waits for it (DDP's buckets in a compiled
// step, as eager DDP's all-reduces run behind the rest of backward).
#pragma once

#include "ug/distributed/process_group.h"

namespace ug::distributed {

/** Inside a trace: the op that starts the all_reduce(op) of `tensor`'s value (the trace's own
 *  value computed now) and returns the buffer it reduces into, which holds the result only
 *  once wait_overlapped has run on it. */
Tensor start_overlapped_all_reduce(const Tensor& tensor, ReduceOp op, const ProcessGroupPtr& group);

/** Inside a trace: the op that waits for the collective start_overlapped_all_reduce started
 *  into `started`, giving its result. */
Tensor wait_overlapped(const Tensor& started);

}  // namespace ug::distributed
