// The Tensor handle's own members: sizes, element access and wrapping foreign memory.
// Conversion and copying are ops (ops/copy.cpp).
#include "ug/core/tensor.h"

#include <cmath>

#include "ug/core/value_read.h"

namespace ug {

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to_bool() ? "True" : "False");
  if (s.is_floating()) return os << s.to_double();
  if (s.is_complex()) {
    const std::complex<double> z = s.to_complex();
    return os << '(' << z.real() << (z.imag() >= 0 || std::isnan(z.imag()) ? "+" : "") << z.imag() << "j)";
  }
  return os << s.to_int();
}

namespace {
template <class T> Scalar scalar_of(T v) {
  if constexpr (std::is_same_v<T, bool>) return Scalar(v);
  else if constexpr (std::is_integral_v<T>) return Scalar(static_cast<int64_t>(v));
  else if constexpr (is_complex_v<T>) return Scalar(to_complex_double(v));
  else return Scalar(to_complex_double(v).real());
}
}  // namespace

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

Scalar Tensor::item() const {
  if (numel() != 1)
    fail("[item] a tensor with ", numel(), " elements cannot be converted to a scalar (shape ", shape(), ")");
  if (detail::value_read_hook && !detail::value_reads_allowed) [[unlikely]]
    detail::value_read_hook(*this);
  Scalar result;
  UG_DISPATCH_ALL_AND_SHELLS(dtype(), "item", { result = scalar_of(*static_cast<const scalar_t*>(raw_data())); });
  return result;
}

namespace detail {
thread_local constinit const char* current_op = nullptr;
thread_local constinit ValueReadHook value_read_hook = nullptr;
thread_local constinit int value_reads_allowed = 0;
}  // namespace detail

/** Allocation is the one factory below the ops: kernels and the recording layer need it. */
Tensor empty(const Dims& shape, Options opts) {
  for (int64_t d : shape)
    if (d < 0) fail("[empty] negative dimension in shape ", Shape(shape.begin(), shape.end()));
  DType dtype = opts.dtype.value_or(get_default_dtype());
  Shape s(shape.begin(), shape.end());
  int64_t n = numel_of(s);
  Ref<Storage> storage;
  try {
    storage = make_ref<Storage>(static_cast<size_t>(n) * itemsize(dtype), opts.device);
  } catch (const OutOfMemoryError& e) {
    fail<OutOfMemoryError>("[", detail::current_op ? detail::current_op : "empty", "] out of memory for a ", dtype,
                           " tensor of shape ", s, ": ", e.what());
  }
  Strides strides = contiguous_strides(s);
  return Tensor(make_ref<TensorImpl>(std::move(storage), std::move(s), std::move(strides), 0, dtype));
}

Tensor from_blob(void* data, const Dims& shape, const Dims& strides, DType dtype, void (*release)(void*), void* ctx,
                 Device device) {
  if (shape.size() != strides.size()) fail("[from_blob] shape ", shape, " and strides have different lengths");
  int64_t extent = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || strides[d] < 0) fail("[from_blob] negative size or stride");
    if (shape[d] == 0) extent = 0;
  }
  if (extent) {
    for (size_t d = 0; d < shape.size(); ++d) extent += (shape[d] - 1) * strides[d];
  }
  auto storage = make_ref<Storage>(data, static_cast<size_t>(extent) * itemsize(dtype), device, release, ctx);
  return Tensor(make_ref<TensorImpl>(std::move(storage), shape, Strides(strides.begin(), strides.end()), 0, dtype));
}

}  // namespace ug
