// The interface every communication backend implements (MPI today, NCCL when the CUDA
// backend arrives): a group of ranks and the collectives over it, each returning a Work
// handle. Ranks named in arguments (src, dst) are ranks of the group, not of the world.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::distributed {

/** torch.distributed.ReduceOp: AVG is SUM divided by the group's size (floating dtypes). */
enum class ReduceOp { Sum, Avg, Max, Min, Product };

std::string_view reduce_op_name(ReduceOp op);

/** A collective in flight (async_op=True). wait() raises if the collective timed out. */
class Work {
 public:
  virtual ~Work() = default;
  /** Blocks until the collective is done and its result is in the output tensors. */
  virtual void wait() = 0;
  /** True once done (polls; finishes the collective when it is). */
  virtual bool is_completed() = 0;
  /** A finished recv's sender (a world rank); -1 for any other work, or before it finished. */
  virtual int source_rank() const { return -1; }
};

using WorkPtr = std::shared_ptr<Work>;
using Timeout = std::chrono::duration<double>;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  /** The backend's name: "mpi". */
  virtual std::string backend() const = 0;
  /** This process's rank in the group; -1 when it is not a member. */
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /** The world ranks of the group's members, in group order. */
  virtual const std::vector<int>& world_ranks() const = 0;
  /** How long a collective waits for every rank before it raises. */
  virtual Timeout timeout() const = 0;

  virtual WorkPtr all_reduce(Tensor tensor, ReduceOp op) = 0;
  virtual WorkPtr broadcast(Tensor tensor, int src) = 0;
  /** outputs[i] receives rank i's tensor. */
  virtual WorkPtr all_gather(std::vector<Tensor> outputs, Tensor input) = 0;
  /** output receives the reduction over ranks of inputs[rank]. */
  virtual WorkPtr reduce_scatter(Tensor output, std::vector<Tensor> inputs, ReduceOp op) = 0;
  /** dst's tensor receives the reduction over ranks; the others' are left as they were. */
  virtual WorkPtr reduce(Tensor tensor, int dst, ReduceOp op) = 0;
  /** dst's outputs[i] receives rank i's input; the other ranks pass no outputs. */
  virtual WorkPtr gather(std::vector<Tensor> outputs, Tensor input, int dst) = 0;
  /** output receives src's inputs[rank]; the other ranks pass no inputs. */
  virtual WorkPtr scatter(Tensor output, std::vector<Tensor> inputs, int src) = 0;
  /** outputs[i] receives rank i's inputs[rank]; the sizes may differ from pair to pair. */
  virtual WorkPtr all_to_all(std::vector<Tensor> outputs, std::vector<Tensor> inputs) = 0;
  virtual WorkPtr send(Tensor tensor, int dst, int tag) = 0;
  /** src -1: from whichever rank sends first (the Work's source_rank says which). */
  virtual WorkPtr recv(Tensor tensor, int src, int tag) = 0;
  virtual WorkPtr barrier() = 0;
  /** A group of some of this group's ranks (group ranks); every member of this group calls it. */
  virtual std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks, Timeout timeout) = 0;
};

using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

}  // namespace ug::distributed
