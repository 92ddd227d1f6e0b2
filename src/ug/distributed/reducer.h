// The gradient side of DistributedDataParallel: parameters in buckets of about bucket_cap
// bytes (in reverse registration order, roughly the order backward produces gradients); a
// post-accumulate hook copies each .grad into its bucket and starts the bucket's averaging
// all_reduce as soon as the bucket is full, so communication runs while backward goes on. The
// last gradient of the step waits for every bucket and writes the averages into .grad. With
// gradient_as_bucket_view each .grad becomes its slice of the bucket at its first reduction:
// backward then adds into the bucket in place and the average needs no copy in or out.
// Inside a compiled step's trace the hooks run too: each full bucket becomes a concatenation,
// a traced all_reduce and slices, which the program runs at every call.
#pragma once

#include <memory>
#include <vector>

#include "ug/distributed/process_group.h"

namespace ug::distributed {

class Reducer {
 public:
  Reducer(std::vector<Tensor> parameters, ProcessGroupPtr group, size_t bucket_cap_bytes, bool find_unused_parameters,
          bool gradient_as_bucket_view = false);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  /** Before a forward: raises if the previous step's reduction never finished (a parameter
   *  got no gradient and find_unused_parameters is off). */
  void prepare_for_forward();
  /** After a forward whose backward should reduce: arms the hooks; with
   *  find_unused_parameters, marks the parameters the outputs do not reach as ready. */
  void prepare_for_backward(const std::vector<Tensor>& outputs);
  /** no_sync(): while false, backward only accumulates gradients locally. */
  void set_require_sync(bool sync);
  bool require_sync() const;
  /** The parameter indices of each bucket (tests and docs). */
  std::vector<std::vector<size_t>> bucket_indices() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace ug::distributed
