// Exceptions raised by unigrad. Messages start with "[op]" and name the shapes and dtypes
// involved; the Python binding maps each class to the matching built-in exception.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ug {

/** A value is wrong (shape mismatch, bad dimension, bad argument): Python ValueError. */
struct ValueError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/** A dtype or argument kind is not supported: Python TypeError. */
struct TypeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/** An index or dimension is out of range: Python IndexError. */
struct IndexError : std::out_of_range {
  using std::out_of_range::out_of_range;
};
/** Anything else that cannot proceed (absent device, bad state): Python RuntimeError. */
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/** An allocation would pass the memory limit (memory::set_limit) or the system refused it:
 *  Python ug.OutOfMemoryError, a RuntimeError as torch.OutOfMemoryError is. */
struct OutOfMemoryError : RuntimeError {
  using RuntimeError::RuntimeError;
};
/** An operation the object does not define (a distribution's icdf, a KL divergence of an
 *  unknown pair): Python NotImplementedError. */
struct NotImplementedError : std::logic_error {
  using std::logic_error::logic_error;
};
/** A file that is needed does not exist: Python FileNotFoundError. */
struct FileNotFoundError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args> std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

/** Throws E with the pieces streamed together: fail<ValueError>("[add] shapes ", a, " and ", b). */
template <class E = ValueError, class... Args> [[noreturn]] void fail(const Args&... args) {
  throw E(detail::cat(args...));
}

}  // namespace ug
