// The draws of a checkpointed region (autograd/checkpoint.h) under a capture: run again in a
// compiled backward, the region must read its first run's numbers. Putting the generator's state
// back, as an eager run again does, is no op of the program, whose draws at run time would take
// the generator from wherever it then is.
#pragma once

#include <vector>

#include "ug/core/tensor.h"

namespace ug::ops {

/** While alive on this thread, each draw from the global generator is appended to `draws`
 *  (Record), or gives the next of `draws` instead of drawing (Replay). */
class DrawReplay {
 public:
  enum class Mode { Record, Replay };
  DrawReplay(std::vector<Tensor>& draws, Mode mode);
  ~DrawReplay();
  DrawReplay(const DrawReplay&) = delete;
  DrawReplay& operator=(const DrawReplay&) = delete;

  /** The replay open on this thread, or null. */
  static DrawReplay* current();
  /** Records `out`, or returns the next recorded draw, which must have out's shape and dtype
   *  (`shape`, `dtype`: the draw about to be made). */
  void record(const Tensor& out);
  Tensor next(const Shape& shape, DType dtype);
  bool replaying() const { return mode_ == Mode::Replay; }

 private:
  std::vector<Tensor>& draws_;
  Mode mode_;
  size_t next_ = 0;
  DrawReplay* previous_;
};

}  // namespace ug::ops
