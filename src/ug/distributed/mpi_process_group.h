// The MPI backend (OpenMPI): every collective runs on the group's thread, waited for until done or
// until the group's timeout, so a missing rank becomes an error instead of a hang.
#pragma once

#include "ug/distributed/process_group.h"

namespace ug::distributed {

/** The group of every process of the MPI job (MPI_COMM_WORLD); initialises MPI on first use. */
ProcessGroupPtr mpi_world_group(Timeout timeout);

}  // namespace ug::distributed
