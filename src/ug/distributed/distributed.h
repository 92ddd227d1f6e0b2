// ug::distributed: torch.distributed's functions over the default process group (or the
// group passed). Ranks in arguments (src, dst, new_group's ranks) are world ranks, as in
// torch. A collective returns its Work when async_op is true, nullptr once done otherwise.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ug/distributed/process_group.h"

namespace ug::distributed {

/** torch's default timeout: 30 minutes. */
inline constexpr Timeout kDefaultTimeout{1800.0};

/** A backend by name ("mpi" is built in, also as "gloo", torch's CPU backend's name; "nccl"
 *  will join them): makes the world group. */
using BackendFactory = std::function<ProcessGroupPtr(Timeout)>;
void register_backend(const std::string& name, BackendFactory factory);

/** Joins the job's processes into the default group. The ranks come from the backend (MPI);
 *  RANK and WORLD_SIZE, where set, must agree with them. */
void init_process_group(const std::string& backend = "mpi", Timeout timeout = kDefaultTimeout);
bool is_initialized();
/** Drops the group (the default one when none is given): its communicators are freed. */
void destroy_process_group(const ProcessGroupPtr& group = nullptr);
/** The default group; raises when init_process_group has not run. */
ProcessGroupPtr default_group(std::string_view op = "distributed");
/** The rank in the group, and its size: -1 for both when this process is not a member. */
int get_rank(const ProcessGroupPtr& group = nullptr);
int get_world_size(const ProcessGroupPtr& group = nullptr);
/** LOCAL_RANK, else OpenMPI's OMPI_COMM_WORLD_LOCAL_RANK, else 0: the process's rank on its host. */
int get_local_rank();
std::string get_backend(const ProcessGroupPtr& group = nullptr);

WorkPtr all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum, const ProcessGroupPtr& group = nullptr,
                   bool async_op = false);
WorkPtr broadcast(const Tensor& tensor, int src, const ProcessGroupPtr& group = nullptr, bool async_op = false);
WorkPtr all_gather(const std::vector<Tensor>& tensor_list, const Tensor& tensor, const ProcessGroupPtr& group = nullptr,
                   bool async_op = false);
WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op = ReduceOp::Sum,
                       const ProcessGroupPtr& group = nullptr, bool async_op = false);
/** output (rank-major: [N * d0, ...] or [N, ...]) receives every rank's input, in rank order. */
WorkPtr all_gather_into_tensor(const Tensor& output, const Tensor& input, const ProcessGroupPtr& group = nullptr,
                               bool async_op = false);
/** output receives the reduction over ranks of input's rank-th part (input rank-major, as above). */
WorkPtr reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum,
                              const ProcessGroupPtr& group = nullptr, bool async_op = false);
/** dst's tensor receives the reduction over ranks; the others' keep their values. */
WorkPtr reduce(const Tensor& tensor, int dst, ReduceOp op = ReduceOp::Sum, const ProcessGroupPtr& group = nullptr,
               bool async_op = false);
/** dst's gather_list[i] receives rank i's tensor; the other ranks pass an empty list. */
WorkPtr gather(const Tensor& tensor, const std::vector<Tensor>& gather_list, int dst,
               const ProcessGroupPtr& group = nullptr, bool async_op = false);
/** tensor receives src's scatter_list[rank]; the other ranks pass an empty list. */
WorkPtr scatter(const Tensor& tensor, const std::vector<Tensor>& scatter_list, int src,
                const ProcessGroupPtr& group = nullptr, bool async_op = false);
/** output_list[i] receives rank i's input_list[rank]. */
WorkPtr all_to_all(const std::vector<Tensor>& output_list, const std::vector<Tensor>& input_list,
                   const ProcessGroupPtr& group = nullptr, bool async_op = false);
/** all_to_all over dim 0 of one tensor each: split evenly, or by the sizes given. */
WorkPtr all_to_all_single(const Tensor& output, const Tensor& input,
                          const std::vector<int64_t>& output_split_sizes = {},
                          const std::vector<int64_t>& input_split_sizes = {}, const ProcessGroupPtr& group = nullptr,
                          bool async_op = false);
WorkPtr barrier(const ProcessGroupPtr& group = nullptr, bool async_op = false);
/** Blocking point-to-point, as torch's send and recv. recv without src takes the first message
 *  from any rank; it returns the sender's rank. */
void send(const Tensor& tensor, int dst, const ProcessGroupPtr& group = nullptr, int tag = 0);
int recv(const Tensor& tensor, std::optional<int> src = std::nullopt, const ProcessGroupPtr& group = nullptr,
         int tag = 0);
WorkPtr isend(const Tensor& tensor, int dst, const ProcessGroupPtr& group = nullptr, int tag = 0);
WorkPtr irecv(const Tensor& tensor, std::optional<int> src = std::nullopt, const ProcessGroupPtr& group = nullptr,
              int tag = 0);
/** A group of the given world ranks (all of them when empty); every rank of the world calls
 *  it. Processes outside it get a group whose rank is -1. */
ProcessGroupPtr new_group(const std::vector<int>& ranks = {}, std::optional<Timeout> timeout = {});

}  // namespace ug::distributed
