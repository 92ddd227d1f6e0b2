// ug.distributed (torch.distributed) over ug::distributed: process groups, collectives with
// Work handles, and the Reducer behind ug.nn.parallel.DistributedDataParallel (its Python
// class lives in unigrad/distributed/). Waiting releases the GIL: another Python thread may run.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <thread>

#include "bindings.h"
#include "ug/distributed/data_parallel.h"
#include "ug/distributed/distributed.h"
#include "ug/distributed/sync_batch_norm.h"

namespace ugpy {

using namespace nb::literals;
namespace dist = ug::distributed;

namespace {

dist::Timeout seconds(double s) { return dist::Timeout(s); }

nb::object work_or_none(dist::WorkPtr work) { return work ? nb::cast(work) : nb::none(); }

/** Seconds from a datetime.timedelta (torch's habit) or a number. */
double seconds_of(nb::handle t) {
  return nb::hasattr(t, "total_seconds") ? nb::cast<double>(t.attr("total_seconds")()) : nb::cast<double>(t);
}

/** Starts a collective with the GIL released (waiting for it too, unless async_op): its Work,
 *  or None once done. */
template <class Start> nb::object released(Start&& start) {
  dist::WorkPtr w;
  {
    nb::gil_scoped_release release;
    w = start();
  }
  return work_or_none(std::move(w));
}

}  // namespace

void bind_distributed(nb::module_& m) {
  nb::module_ d = m.def_submodule("distributed", "process groups and collectives over MPI (torch.distributed)");
  nb::enum_<dist::ReduceOp>(d, "ReduceOp", "torch.distributed.ReduceOp: how all_reduce combines the ranks' values")
      .value("SUM", dist::ReduceOp::Sum)
      .value("AVG", dist::ReduceOp::Avg)
      .value("MAX", dist::ReduceOp::Max)
      .value("MIN", dist::ReduceOp::Min)
      .value("PRODUCT", dist::ReduceOp::Product);
  nb::class_<dist::Work>(d, "Work", "A collective in flight (async_op=True): wait() blocks until it is done")
      .def(
          "wait",
          [](dist::Work& w, nb::handle timeout) {
            const bool bounded = !timeout.is_none();
            const double limit = bounded ? seconds_of(timeout) : 0.0;
            nb::gil_scoped_release release;
            if (!bounded) {
              w.wait();
              return true;
            }
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
            while (!w.is_completed()) {
              if (std::chrono::steady_clock::now() > deadline)
                ug::fail<ug::RuntimeError>("[wait] the collective did not finish within ", limit, " s");
              std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
            return true;
          },
          "timeout"_a.none() = nb::none(),
          "Waits for the collective; raises RuntimeError when it timed out (at the group's timeout, or at "
          "`timeout`: seconds or a timedelta). Returns True, as torch.")
      .def("is_completed", &dist::Work::is_completed)
      .def("source_rank", &dist::Work::source_rank, "the sender of a finished recv (irecv without src)");
  nb::class_<dist::ProcessGroup>(d, "ProcessGroup", "A group of ranks (the world, or one made by new_group)")
      .def("rank", &dist::ProcessGroup::rank)
      .def("size", &dist::ProcessGroup::size)
      .def("backend", &dist::ProcessGroup::backend)
      .def_prop_ro("ranks", &dist::ProcessGroup::world_ranks, "the world ranks of the members, in group order")
      .def_prop_ro(
          "timeout", [](const dist::ProcessGroup& g) { return g.timeout().count(); }, "seconds");

  d.def(
      "init_process_group",
      [](const std::string& backend, double timeout) { dist::init_process_group(backend, seconds(timeout)); },
      "backend"_a = "mpi", "timeout"_a = dist::kDefaultTimeout.count());
  d.def("is_initialized", &dist::is_initialized);
  d.def("_default_group", [] { return dist::default_group("group.WORLD"); });
  d.def("destroy_process_group", &dist::destroy_process_group, "group"_a.none() = nb::none());
  d.def("get_rank", &dist::get_rank, "group"_a.none() = nb::none());
  d.def("get_world_size", &dist::get_world_size, "group"_a.none() = nb::none());
  d.def("get_backend", &dist::get_backend, "group"_a.none() = nb::none());
  d.def("get_local_rank", &dist::get_local_rank, "LOCAL_RANK, else OpenMPI's local rank, else 0");
  d.def(
      "new_group",
      [](const std::vector<int>& ranks, std::optional<double> timeout) {
        return dist::new_group(ranks, timeout ? std::optional(seconds(*timeout)) : std::nullopt);
      },
      "ranks"_a = std::vector<int>{}, "timeout"_a.none() = nb::none());

  // The collectives wait (when not async_op) with the GIL released.
  d.def(
      "all_reduce",
      [](const ug::Tensor& t, dist::ReduceOp op, dist::ProcessGroupPtr group, bool async_op) {
        return released([&] { return dist::all_reduce(t, op, group, async_op); });
      },
      "tensor"_a, "op"_a = dist::ReduceOp::Sum, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "broadcast",
      [](const ug::Tensor& t, int src, dist::ProcessGroupPtr group, bool async_op) {
        return released([&] { return dist::broadcast(t, src, group, async_op); });
      },
      "tensor"_a, "src"_a, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "all_gather",
      [](const std::vector<ug::Tensor>& out, const ug::Tensor& t, dist::ProcessGroupPtr group, bool async_op) {
        return released([&] { return dist::all_gather(out, t, group, async_op); });
      },
      "tensor_list"_a, "tensor"_a, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "reduce_scatter",
      [](const ug::Tensor& out, const std::vector<ug::Tensor>& in, dist::ReduceOp op, dist::ProcessGroupPtr group,
         bool async_op) { return released([&] { return dist::reduce_scatter(out, in, op, group, async_op); }); },
      "output"_a, "input_list"_a, "op"_a = dist::ReduceOp::Sum, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "barrier",
      [](dist::ProcessGroupPtr group, bool async_op) {
        return released([&] { return dist::barrier(group, async_op); });
      },
      "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "all_gather_into_tensor",
      [](const ug::Tensor& out, const ug::Tensor& in, dist::ProcessGroupPtr group, bool async_op) {
        return released([&] { return dist::all_gather_into_tensor(out, in, group, async_op); });
      },
      "output_tensor"_a, "input_tensor"_a, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "reduce_scatter_tensor",
      [](const ug::Tensor& out, const ug::Tensor& in, dist::ReduceOp op, dist::ProcessGroupPtr group, bool async_op) {
        return released([&] { return dist::reduce_scatter_tensor(out, in, op, group, async_op); });
      },
      "output"_a, "input"_a, "op"_a = dist::ReduceOp::Sum, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "reduce",
      [](const ug::Tensor& t, int dst, dist::ReduceOp op, dist::ProcessGroupPtr group, bool async_op) {
        return released([&] { return dist::reduce(t, dst, op, group, async_op); });
      },
      "tensor"_a, "dst"_a, "op"_a = dist::ReduceOp::Sum, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "gather",
      [](const ug::Tensor& t, std::optional<std::vector<ug::Tensor>> list, int dst, dist::ProcessGroupPtr group,
         bool async_op) {
        return released(
            [&] { return dist::gather(t, list.value_or(std::vector<ug::Tensor>{}), dst, group, async_op); });
      },
      "tensor"_a, "gather_list"_a.none() = nb::none(), "dst"_a = 0, "group"_a.none() = nb::none(),
      "async_op"_a = false);
  d.def(
      "scatter",
      [](const ug::Tensor& t, std::optional<std::vector<ug::Tensor>> list, int src, dist::ProcessGroupPtr group,
         bool async_op) {
        return released(
            [&] { return dist::scatter(t, list.value_or(std::vector<ug::Tensor>{}), src, group, async_op); });
      },
      "tensor"_a, "scatter_list"_a.none() = nb::none(), "src"_a = 0, "group"_a.none() = nb::none(),
      "async_op"_a = false);
  d.def(
      "all_to_all",
      [](const std::vector<ug::Tensor>& out, const std::vector<ug::Tensor>& in, dist::ProcessGroupPtr group,
         bool async_op) { return released([&] { return dist::all_to_all(out, in, group, async_op); }); },
      "output_tensor_list"_a, "input_tensor_list"_a, "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def(
      "all_to_all_single",
      [](const ug::Tensor& out, const ug::Tensor& in, std::optional<std::vector<int64_t>> out_sizes,
         std::optional<std::vector<int64_t>> in_sizes, dist::ProcessGroupPtr group, bool async_op) {
        return released([&] {
          return dist::all_to_all_single(out, in, out_sizes.value_or(std::vector<int64_t>{}),
                                         in_sizes.value_or(std::vector<int64_t>{}), group, async_op);
        });
      },
      "output"_a, "input"_a, "output_split_sizes"_a.none() = nb::none(), "input_split_sizes"_a.none() = nb::none(),
      "group"_a.none() = nb::none(), "async_op"_a = false);
  d.def("send", &dist::send, "tensor"_a, "dst"_a, "group"_a.none() = nb::none(), "tag"_a = 0,
        nb::call_guard<nb::gil_scoped_release>());
  d.def("recv", &dist::recv, "tensor"_a, "src"_a.none() = nb::none(), "group"_a.none() = nb::none(), "tag"_a = 0,
        nb::call_guard<nb::gil_scoped_release>(), "Receives into tensor; returns the sender's rank, as torch");
  d.def("isend", &dist::isend, "tensor"_a, "dst"_a, "group"_a.none() = nb::none(), "tag"_a = 0);
  d.def("irecv", &dist::irecv, "tensor"_a, "src"_a.none() = nb::none(), "group"_a.none() = nb::none(), "tag"_a = 0);

  d.def(
      "_broadcast_module_state",
      [](ug::nn::Module& module, dist::ProcessGroupPtr group, bool parameters) {
        dist::broadcast_module_state(module, group ? group : dist::default_group("DistributedDataParallel"),
                                     parameters);
      },
      "module"_a, "group"_a.none(), "parameters"_a);
  nb::class_<dist::Reducer>(d, "Reducer", "DistributedDataParallel's gradient buckets and their all_reduces")
      .def(
          "__init__",
          [](dist::Reducer* self, const std::vector<ug::Tensor>& params, dist::ProcessGroupPtr group,
             size_t bucket_cap_bytes, bool find_unused, bool as_view) {
            new (self) dist::Reducer(params, group ? group : dist::default_group("DistributedDataParallel"),
                                     bucket_cap_bytes, find_unused, as_view);
          },
          "parameters"_a, "group"_a.none(), "bucket_cap_bytes"_a, "find_unused_parameters"_a,
          "gradient_as_bucket_view"_a = false)
      .def("prepare_for_forward", &dist::Reducer::prepare_for_forward)
      .def("prepare_for_backward", &dist::Reducer::prepare_for_backward, "outputs"_a)
      .def_prop_rw("require_sync", &dist::Reducer::require_sync, &dist::Reducer::set_require_sync)
      .def_prop_ro("bucket_indices", &dist::Reducer::bucket_indices);
  nb::class_<dist::SyncBatchNormImpl, ug::nn::Module>(
      d, "SyncBatchNorm",
      "Batch normalisation with the statistics of the global batch, all ranks together (torch.nn.SyncBatchNorm)")
      .def(nb::init<int64_t, double, double, dist::ProcessGroupPtr>(), "num_features"_a, "eps"_a = 1e-5,
           "momentum"_a = 0.1, "process_group"_a.none() = nb::none())
      .def_prop_ro("num_features", &dist::SyncBatchNormImpl::num_features)
      .def_prop_ro("eps", &dist::SyncBatchNormImpl::eps)
      .def_prop_ro("momentum", &dist::SyncBatchNormImpl::momentum)
      .def_prop_ro("affine", [](const dist::SyncBatchNormImpl&) { return true; })
      .def_prop_ro("track_running_stats", [](const dist::SyncBatchNormImpl&) { return true; })
      .def_static("convert_sync_batchnorm", &dist::convert_sync_batchnorm, "module"_a,
                  "process_group"_a.none() = nb::none(),
                  "The module with each BatchNorm*d in it replaced by a SyncBatchNorm holding its tensors");
}

}  // namespace ugpy
