// Which DataLoader worker thread the calling code runs on (torch.utils.data.get_worker_info):
// data sets use it to tell workers apart, to seed a library or shard a stream per worker.
#pragma once

#include <cstdint>

namespace ug::data {

struct WorkerInfo {
  int id = 0;           // 0 .. num_workers - 1
  int num_workers = 0;  // the threads loading the pass
  uint64_t seed = 0;    // the pass's seed plus id
};

/** The calling thread's worker, or nullptr off the loader's worker threads. */
const WorkerInfo* worker_info();
/** Marks the calling thread, one of a pass's workers, as `info` (worker threads end with
 *  their pass, and this with them). */
void set_worker_info(const WorkerInfo& info);

}  // namespace ug::data
