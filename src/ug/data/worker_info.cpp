#include "ug/data/worker_info.h"

#include <optional>

namespace ug::data {

namespace {
thread_local std::optional<WorkerInfo> current;
}  // namespace

const WorkerInfo* worker_info() { return current ? &*current : nullptr; }

void set_worker_info(const WorkerInfo& info) { current = info; }

}  // namespace ug::data
