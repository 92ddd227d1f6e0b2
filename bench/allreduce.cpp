// ug_allreduce_bench: all_reduce bandwidth of float32 buffers (0.25 to 64 MiB: the MLP's and the
// transformer's DDP buckets are under 1 MiB, the figures 4 to 64), ug::distributed
// against MPI_Allreduce on the same buffer in the same run (osu_allreduce-style: the median
// time of many calls after warm-up). The two alternate call by call (MPI, ug, ug, MPI, ...), each
// after a barrier, so a change in the machine's speed during the run hits both alike; each size
// runs ROUNDS rounds, and the figures are the medians over the rounds of each round's medians,
// with the range of the rounds' ratios. Run under mpirun:
// `ug launch -n 2 build/bench/ug_allreduce_bench [ROUNDS]` (default 5).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "ug/ug.h"

namespace {

double seconds(const std::function<void()>& call) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace dist = ug::distributed;
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  ug::set_num_threads(1);
  dist::init_process_group("mpi", dist::Timeout(120));
  const int rank = dist::get_rank();
  if (rank == 0) std::printf("size_mib,mpi_gb_s,ug_gb_s,ug_over_mpi,ratio_min,ratio_max\n");
  for (double mib : {0.25, 1.0, 4.0, 8.0, 16.0, 32.0, 64.0}) {
    const auto n = static_cast<int64_t>(mib * 1024 * 1024 / 4);
    ug::Tensor t = ug::zeros({n});  // zeros stay zeros: no overflow to inf over hundreds of sums
    auto mpi_call = [&] {
      MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    auto ug_call = [&] { dist::all_reduce(t, dist::ReduceOp::Sum); };
    for (int i = 0; i < 3; ++i) {
      mpi_call();
      ug_call();
    }
    const int reps = mib < 4 ? 200 : mib < 32 ? 30 : 10;
    std::vector<double> mpi_rounds, ug_rounds, ratios;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> mpi, ours;
      for (int i = 0; i < reps; ++i) {
        if (i % 2 == 0) mpi.push_back(seconds(mpi_call));
        ours.push_back(seconds(ug_call));
        if (i % 2 == 1) mpi.push_back(seconds(mpi_call));
      }
      mpi_rounds.push_back(median(mpi));
      ug_rounds.push_back(median(ours));
      ratios.push_back(mpi_rounds.back() / ug_rounds.back());
    }
    const double bytes = double(n) * 4;
    if (rank == 0)
      std::printf("%g,%.3f,%.3f,%.3f,%.3f,%.3f\n", mib, bytes / median(mpi_rounds) / 1e9,
                  bytes / median(ug_rounds) / 1e9, median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                  *std::max_element(ratios.begin(), ratios.end()));
  }
  dist::destroy_process_group();
  return 0;
}
