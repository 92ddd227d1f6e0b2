// Collectives whose caller waits for them at once (async_op=False).
#pragma once

#include <functional>

#include "ug/distributed/process_group.h"

namespace ug::distributed {

/** Starts one collective with `start` (a call of one of a group's collectives) and waits for it;
 *  returns its finished Work. An MPI group whose thread is idle runs the collective on the
 *  calling thread and never wakes its thread: woken, that thread preempts the caller on this
 *  machine and runs the whole collective while the caller waits to be woken in turn: two
 *  hand-overs per call, and under load a scheduler slice each. Collectives started otherwise go
 *  to the group's thread at once, so that they overlap the caller's work. */
WorkPtr start_and_wait(const std::function<WorkPtr()>& start);

}  // namespace ug::distributed
