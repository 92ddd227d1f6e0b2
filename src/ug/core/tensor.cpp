// The Tensor handle's own members: sizes, element access and wrapping foreign memory.
// Conversion and copying are ops (ops/copy.cpp).
#include "ug/core/tensor.h"

#include <algorithm>
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

namespace {

/** torch's order test for two dims' strides in dim_order: a divides or reaches b. */
bool stride_ge(int64_t a, int64_t b) { return b == 0 || (a != 0 && (a >= b || a % b == 0)); }

}  // namespace

Dims Tensor::dim_order(bool ambiguity_check) const {
  const Shape& sizes = shape();
  const Strides& st = strides();
  const int64_t n = dim();
  if (ambiguity_check) {
    bool tie = std::find(sizes.begin(), sizes.end(), 1) != sizes.end();
    for (int64_t d = 0; d + 1 < n; ++d) tie = tie || st[d] == st[d + 1];
    if (tie)
      fail<RuntimeError>(
          "[dim_order] The tensor does not have unique dim order, or cannot map to exact one of the "
          "given memory formats.");
  }
  Dims order;
  for (int64_t d = 0; d < n; ++d) order.push_back(d);
  if (n < 2) return order;
  // torch's channels-last test: C, W, H, N innermost first; size-1 dims' strides do not matter
  bool channels_last = n == 4;
  int64_t expected = 1;
  for (int64_t d : {1, 3, 2, 0}) {
    if (!channels_last) break;
    if (sizes[d] == 1) continue;
    channels_last = st[d] == expected;
    expected *= sizes[d];
  }
  if (is_contiguous() != channels_last) {
    if (channels_last) order = {0, 2, 3, 1};
    return order;
  }
  // -1 keeps a outside b, 1 swaps them, 0 leaves them (a zero stride or a tie)
  auto should_swap = [&](int64_t a, int64_t b) {
    const int64_t sa = st[a], sb = st[b];
    if (sa == 0 || sb == 0) return 0;
    if (sa == sb) return stride_ge(sizes[b], sizes[a]) ? 0 : 1;
    return stride_ge(sb, sa) ? -1 : stride_ge(sa, sb) ? 1 : 0;
  };
  Dims perm;  // innermost first, by torch's insertion sort, which ties leave alone
  for (int64_t d = n - 1; d >= 0; --d) perm.push_back(d);
  for (int64_t i = 1; i < n; ++i) {
    int64_t j = i;
    for (int64_t k = i - 1; k >= 0; --k) {
      const int swap = should_swap(perm[k], perm[j]);
      if (swap < 0) break;
      if (swap > 0) {
        std::swap(perm[k], perm[j]);
        j = k;
      }
    }
  }
  if (ambiguity_check)
    for (int64_t i = 0; i + 1 < n; ++i)
      if (should_swap(perm[i], perm[i + 1]) != -1)
        fail<RuntimeError>("[dim_order] The tensor does not have unique dim order.");
  for (int64_t d = 0; d < n; ++d) order[d] = perm[n - 1 - d];
  return order;
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
