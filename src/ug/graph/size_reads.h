// Sizes that ops turned into constants of a captured graph. A composite such as chunk reads a
// size of its input and records slices of lengths computed from it; a program traced at two
// sizes that made the same graph would then keep those lengths for every other size
// (tf.function's reduce_retracing, compiler::Program::generalize). Such ops note the size they
// read, and the compiler refuses to generalize two traces whose notes differ.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ug::graph {

/** Op `op` made constants of the graph from a size `size` of a tensor (a no-op when nothing
 *  collects the notes). */
void note_size_read(const char* op, int64_t size);

/** While alive, collects this thread's note_size_read calls (one collector per thread: an
 *  inner one collects alone). */
class SizeReads {
 public:
  SizeReads();
  ~SizeReads();
  SizeReads(const SizeReads&) = delete;
  SizeReads& operator=(const SizeReads&) = delete;
  /** (op, size) in the order they were noted. */
  const std::vector<std::pair<std::string, int64_t>>& reads() const { return reads_; }

 private:
  friend void note_size_read(const char* op, int64_t size);
  std::vector<std::pair<std::string, int64_t>> reads_;
  SizeReads* previous_;
};

}  // namespace ug::graph
