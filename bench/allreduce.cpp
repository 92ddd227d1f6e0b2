// ug_allreduce_bench: all_reduce bandwidth of float32 buffers (0.25 to 64 MiB: the MLP's and the
// transformer's DDP buckets are under 1 MiB, the figures 4 to 64), ug::distributed
// against MPI_Allreduce on the same buffer in the same run (osu_allreduce-style: the median
// time of many calls after warm-up). Run under mpirun: `ug launch -n 2 build/bench/ug_allreduce_bench`.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "ug/ug.h"

namespace {

double median_seconds(const std::function<void()>& call, int reps) {
  for (int i = 0; i < 3; ++i) call();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = std::chrono::steady_clock::now();
    call();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  namespace dist = ug::distributed;
  ug::set_num_threads(1);
  dist::init_process_group("mpi", dist::Timeout(120));
  const int rank = dist::get_rank();
  if (rank == 0) std::printf("size_mib,mpi_gb_s,ug_gb_s,ug_over_mpi\n");
  for (double mib : {0.25, 1.0, 4.0, 8.0, 16.0, 32.0, 64.0}) {
    const auto n = static_cast<int64_t>(mib * 1024 * 1024 / 4);
    ug::Tensor t = ug::ones({n});
    const int reps = mib < 4 ? 200 : 20;
    double mpi = median_seconds(
        [&] { MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
        reps);
    double ours = median_seconds([&] { dist::all_reduce(t, dist::ReduceOp::Sum); }, reps);
    const double bytes = double(n) * 4;
    if (rank == 0) std::printf("%g,%.3f,%.3f,%.3f\n", mib, bytes / mpi / 1e9, bytes / ours / 1e9, mpi / ours);
  }
  dist::destroy_process_group();
  return 0;
}
