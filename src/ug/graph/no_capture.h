// NoCapture: runs ops without recording them in the capture of this thread (if any) while
// alive. For work at trace time that the program must not repeat: the trace-time run of a
// while_loop, whose iterations the program makes from the recorded one, or a check of an
// input's values (ops/value_checks.h).
#pragma once

#include <utility>

#include "ug/graph/capture.h"

namespace ug::graph {

class NoCapture {
 public:
  NoCapture() : saved_(std::exchange(detail::current_capture, nullptr)) {}
  ~NoCapture() { detail::current_capture = saved_; }
  NoCapture(const NoCapture&) = delete;
  NoCapture& operator=(const NoCapture&) = delete;

 private:
  Capture* saved_;
};

}  // namespace ug::graph
