// Tensor::item() is the one way C++ reads a tensor's value back. While a function is traced,
// the compiler sets a hook on it that refuses reads of traced values: a number read at the
// trace would be kept by the program for every later call (a silently wrong result). The reads
// that are safe say so with ValueReadScope: a check of an input (an index in range, a weight
// non-negative), which under a trace checks the trace's values (jax.jit checks none), or a
// read inside an op that a compiled program calls back, which reads again at every run.
#pragma once

namespace ug {

class Tensor;

namespace detail {
// constinit here too: other files then read them directly, not through the thread-local
// wrapper function a dynamically initialized variable needs (which this file does not define).
using ValueReadHook = void (*)(const Tensor&);
extern thread_local constinit ValueReadHook value_read_hook;
extern thread_local constinit int value_reads_allowed;  // ValueReadScopes open on this thread
}  // namespace detail

/** While alive, item() may read traced values: the reads check an input, or are made again at
 *  every run of a compiled program. */
class ValueReadScope {
 public:
  ValueReadScope() { ++detail::value_reads_allowed; }
  ~ValueReadScope() { --detail::value_reads_allowed; }
  ValueReadScope(const ValueReadScope&) = delete;
  ValueReadScope& operator=(const ValueReadScope&) = delete;
};

}  // namespace ug
