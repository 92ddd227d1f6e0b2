#include "ug/core/shape.h"

#include <sstream>

#include "ug/core/error.h"

namespace ug {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) fail("shape ", shape, " has more elements than an int64 counts");
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // An empty tensor's strides still multiply the other dims: (2^40, 2^40, 0) must not wrap.
    if (i > 0 && __builtin_mul_overflow(s, shape[i] > 0 ? shape[i] : 1, &s))
      fail("shape ", shape, " has strides that overflow int64");
  }
  return strides;
}

bool is_contiguous(const Shape& shape, const Strides& strides) {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = ndim > 0 ? ndim : 1;  // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  if (dim < -n || dim >= n)
    fail<IndexError>("[", op, "] dimension out of range (expected to be in range of [", -n, ", ", n - 1, "], but got ",
                     dim, ")");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) return a;  // the common case, and a measurable share of a tiny op's cost
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("[", op, "] shapes ", a, " and ", b, " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db,
           ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  return os << ']';
}

}  // namespace ug
