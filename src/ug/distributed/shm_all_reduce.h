// The sum and mean all-reduce of a group whose ranks all run on one host, through one POSIX
// shared-memory segment instead of MPI's messages: each rank copies its buffer into its slot,
// reduces its 1/N share of the elements across the slots and copies the other shares out of
// their owners' slots, three phases each closed by a counter per rank in the segment. MPI's
// tokens have already checked that every rank entered the same collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ug/distributed/process_group.h"

namespace ug::distributed {

class ShmAllReduce {
 public:
  /** Maps the segment called `name` (a POSIX shm name, "/...") for ranks 0..size-1; rank 0
   *  creates it (create = true), the others open it after that. Null where it cannot. */
  static std::unique_ptr<ShmAllReduce> map(const std::string& name, int rank, int size, bool create);
  /** Removes the name once every rank has mapped the segment: it goes when the last unmaps it. */
  static void unlink(const std::string& name);
  ~ShmAllReduce();
  ShmAllReduce(const ShmAllReduce&) = delete;
  ShmAllReduce& operator=(const ShmAllReduce&) = delete;

  /** What it reduces: float32 and float64 sums and means (MPI carries the rest). */
  static bool supports(DType dtype, ReduceOp op);
  /** Replaces data (count elements) with the sum over ranks (divided by size for Avg), the same
   *  bits on every rank. Every rank of the group calls it, in the same order as the others.
   *  False if a rank stopped taking part before `deadline`. */
  bool run(void* data, int64_t count, DType dtype, ReduceOp op, std::chrono::steady_clock::time_point deadline);

 private:
  ShmAllReduce(void* base, size_t bytes, int rank, int size) : base_(base), bytes_(bytes), rank_(rank), size_(size) {}
  template <class T> bool run_typed(T* data, int64_t count, bool mean, std::chrono::steady_clock::time_point deadline);
  void publish(uint64_t step);
  bool wait_all(uint64_t step, std::chrono::steady_clock::time_point deadline) const;
  char* slot(int r) const;

  void* base_;
  size_t bytes_;
  int rank_;
  int size_;
  uint64_t step_ = 0;  // the phases this rank has finished: the same count on every rank between calls
};

}  // namespace ug::distributed
