// Indexing kernels: gather, scatter, index_select, nonzero. Element-size generic: they move
// bytes, except scatter with accumulation, which adds in the element type.
#include <cstring>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

/** Visits every element of `shape` in row-major order with its multi-index. */
template <class F>
void for_each_index(const Shape& shape, F f) {
  int64_t n = numel_of(shape);
  if (n == 0) return;
  Shape idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t offset_of(const Shape& idx, const Strides& strides) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
  return off;
}

}  // namespace

void CpuBackend::gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  const size_t item = x.element_size();
  const char* px = static_cast<const char*>(x.raw_data());
  const int64_t* pi = static_cast<const int64_t*>(index.raw_data());
  char* po = static_cast<char*>(out.raw_data());
  for_each_index(index.shape(), [&](Shape& idx) {
    int64_t io = offset_of(idx, index.strides());
    int64_t saved = idx[dim];
    idx[dim] = pi[io];
    int64_t xo = offset_of(idx, x.strides());
    idx[dim] = saved;
    std::memcpy(po + offset_of(idx, out.strides()) * item, px + xo * item, item);
  });
}

void CpuBackend::scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                         bool accumulate) {
  const int64_t* pi = static_cast<const int64_t*>(index.raw_data());
  UG_DISPATCH_ALL(out.dtype(), "scatter", {
    scalar_t* po = static_cast<scalar_t*>(out.raw_data());
    const scalar_t* ps = static_cast<const scalar_t*>(src.raw_data());
    for_each_index(index.shape(), [&](Shape& idx) {
      scalar_t v = ps[offset_of(idx, src.strides())];
      int64_t saved = idx[dim];
      idx[dim] = pi[offset_of(idx, index.strides())];
      scalar_t& dst = po[offset_of(idx, out.strides())];
      idx[dim] = saved;
      if (accumulate) {
        if constexpr (std::is_same_v<scalar_t, bool>) dst = dst || v;
        else dst = static_cast<scalar_t>(static_cast<acc_t<scalar_t>>(dst) + static_cast<acc_t<scalar_t>>(v));
      } else {
        dst = v;
      }
    });
  });
}

void CpuBackend::index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  // View both as [outer, size(dim), inner] and copy whole inner blocks.
  const size_t item = x.element_size();
  Tensor xc = x.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const int64_t n_in = x.dim() ? x.size(dim) : 1, n_idx = index.numel();
  const char* px = static_cast<const char*>(xc.raw_data());
  Tensor idx = index.contiguous();
  const int64_t* pi = static_cast<const int64_t*>(idx.raw_data());
  char* po = static_cast<char*>(out.raw_data());
  const size_t block = static_cast<size_t>(inner) * item;
  parallel_for(outer * n_idx, std::max<int64_t>(1, 65536 / std::max<int64_t>(inner, 1)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t o = t / n_idx, k = t % n_idx;
      std::memcpy(po + t * block, px + (o * n_in + pi[k]) * block, block);
    }
  });
}

int64_t CpuBackend::count_nonzero(const Tensor& x) {
  Tensor b = x.dtype() == DType::Bool ? x.contiguous() : x.ne(0).contiguous();
  const bool* p = static_cast<const bool*>(b.raw_data());
  int64_t count = 0;
  for (int64_t i = 0, n = b.numel(); i < n; ++i) count += p[i];
  return count;
}

void CpuBackend::nonzero(const Tensor& x, const Tensor& out) {
  Tensor b = x.dtype() == DType::Bool ? x.contiguous() : x.ne(0).contiguous();
  const bool* p = static_cast<const bool*>(b.raw_data());
  int64_t* po = static_cast<int64_t*>(out.raw_data());
  int64_t i = 0;
  const size_t nd = x.shape().size();
  for_each_index(x.shape(), [&](Shape& idx) {
    if (p[i++])
      for (size_t d = 0; d < nd; ++d) *po++ = idx[d];
  });
}

}  // namespace ug::cpu
