// Indexing kernels: gather, scatter, index_select, nonzero. Gather and plain scatter move
// elements by their size; scatter with a reduction combines in the element's accumulation type.
//
// gather and scatter walk the index tensor row by row (a row is its last dimension), keep
// each operand's offset up to date incrementally, and run in parallel over slices of one
// dimension. scatter only splits a dimension other than `dim`: every output element is then
// written by one thread, in the serial order, so duplicate indices resolve as they would
// serially (last writer wins; sums add in the same order).
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

/** Elements per parallel task for the indexing loops. */
constexpr int64_t kIndexGrain = 16384;

/** The unsigned integer type as wide as an element: gather and scatter copy through it. */
struct Bits128 {
  uint64_t lo, hi;
};
template <size_t Size>
using Bits = std::conditional_t<
    Size == 1, uint8_t,
    std::conditional_t<Size == 2, uint16_t,
                       std::conditional_t<Size == 4, uint32_t, std::conditional_t<Size == 8, uint64_t, Bits128>>>>;

/** The index tensor's shape, operand strides (in elements) along it, and `dim`, with the
 *  dimensions where the index has size 1 dropped (except `dim`): they only add offset 0. */
template <size_t N> struct IndexGeometry {
  Shape shape;
  std::array<Strides, N> strides;
  int64_t dim = 0;

  IndexGeometry(const Tensor& index, int64_t d, const std::array<const Tensor*, N>& operands) {
    for (int64_t k = 0; k < index.dim(); ++k) {
      if (index.size(k) == 1 && k != d) continue;
      if (k == d) dim = static_cast<int64_t>(shape.size());
      shape.push_back(index.size(k));
      for (size_t o = 0; o < N; ++o) strides[o].push_back(operands[o]->stride(k));
    }
  }
};

/**
 * Calls row(offsets, n) for each row (run along the last dimension) of the slice
 * [begin, end) of dimension `split`, with offsets[k] the start of the row in operand k.
 * Offsets advance incrementally, row after row, in row-major order.
 */
template <size_t N, class Row>
void for_each_row(const Shape& shape, const std::array<Strides, N>& strides, size_t split, int64_t begin, int64_t end,
                  Row&& row) {
  const size_t nd = shape.size();
  Shape sizes = shape;
  sizes[split] = end - begin;
  std::array<int64_t, N> off{};
  for (size_t k = 0; k < N; ++k) off[k] = begin * strides[k][split];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d) rows *= sizes[d];
  Shape idx(nd, 0);
  for (int64_t r = 0; r < rows; ++r) {
    row(off, sizes[nd - 1]);
    for (size_t d = nd - 1; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < sizes[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * sizes[d];
      idx[d] = 0;
    }
  }
}

/** Runs for_each_row over all of `shape`, split over dimension `split` across threads. */
template <size_t N, class Row>
void parallel_rows(const Shape& shape, const std::array<Strides, N>& strides, size_t split, Row&& row) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const int64_t per_slice = n / shape[split];
  parallel_for(shape[split], std::max<int64_t>(1, kIndexGrain / per_slice),
               [&](int64_t b, int64_t e) { for_each_row(shape, strides, split, b, e, row); });
}

/** The largest dimension other than `skip` (-1: none skipped), or -1 if there is none. */
int64_t largest_dim(const Shape& shape, int64_t skip) {
  int64_t best = -1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != skip && (best < 0 || shape[d] > shape[best])) best = d;
  return best;
}

template <class T> void gather_typed(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  // Operands: out, index, x. x's offset along `dim` comes from the index, so the walk
  // gives it stride 0 there.
  IndexGeometry<3> g(index, dim, {&out, &index, &x});
  const int64_t x_dim_stride = x.stride(dim);
  g.strides[2][g.dim] = 0;
  const T* px = static_cast<const T*>(x.raw_data());
  const int64_t* pi = static_cast<const int64_t*>(index.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  const size_t last = g.shape.size() - 1;
  const int64_t os = g.strides[0][last], is = g.strides[1][last], xs = g.strides[2][last];
  parallel_rows(g.shape, g.strides, static_cast<size_t>(largest_dim(g.shape, -1)),
                [&](const std::array<int64_t, 3>& off, int64_t n) {
                  T* o = po + off[0];
                  const int64_t* i = pi + off[1];
                  const T* xr = px + off[2];
                  for (int64_t j = 0; j < n; ++j) o[j * os] = xr[j * xs + i[j * is] * x_dim_stride];
                });
}

/** dst combined with v by op (not Assign), in the accumulation type; Amax and Amin keep a NaN
 *  from either side, as torch's scatter_reduce does. */
template <class T> T scatter_combine(ops::ScatterOp op, T dst, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == ops::ScatterOp::Sum || op == ops::ScatterOp::Amax ? (dst || v) : (dst && v);
  } else if constexpr (is_complex_v<T>) {  // sums and products only (scatter checks)
    return op == ops::ScatterOp::Prod ? dst * v : dst + v;
  } else {
    using A = acc_t<T>;
    const A a = static_cast<A>(dst), b = static_cast<A>(v);
    switch (op) {
      case ops::ScatterOp::Prod: return static_cast<T>(a * b);
      case ops::ScatterOp::Amax: return b != b ? v : (a < b ? v : dst);  // b != b: isnan for every A
      case ops::ScatterOp::Amin: return b != b ? v : (b < a ? v : dst);
      default: return static_cast<T>(a + b);
    }
  }
}

template <class T, bool kAssign>
void scatter_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, ops::ScatterOp op) {
  // Operands: out, index, src; out's offset along `dim` comes from the index.
  IndexGeometry<3> g(index, dim, {&out, &index, &src});
  const int64_t out_dim_stride = out.stride(dim);
  g.strides[0][g.dim] = 0;
  T* po = static_cast<T*>(out.raw_data());
  const int64_t* pi = static_cast<const int64_t*>(index.raw_data());
  const T* ps = static_cast<const T*>(src.raw_data());
  const size_t last = g.shape.size() - 1;
  const int64_t os = g.strides[0][last], is = g.strides[1][last], ss = g.strides[2][last];
  auto row = [&](const std::array<int64_t, 3>& off, int64_t n) {
    T* o = po + off[0];
    const int64_t* i = pi + off[1];
    const T* s = ps + off[2];
    for (int64_t j = 0; j < n; ++j) {
      T& dst = o[j * os + i[j * is] * out_dim_stride];
      if constexpr (kAssign) dst = s[j * ss];
      else dst = scatter_combine(op, dst, s[j * ss]);
    }
  };
  // Slices of a dimension other than `dim` write disjoint parts of out, unless out repeats
  // memory along it (a stride-0 expanded view), which the serial loop keeps deterministic.
  const int64_t split = largest_dim(g.shape, g.dim);
  if (split < 0 || g.strides[0][split] == 0) {
    for_each_row(g.shape, g.strides, 0, 0, g.shape[0], row);
    return;
  }
  parallel_rows(g.shape, g.strides, static_cast<size_t>(split), row);
}

/** x as a contiguous bool tensor: true where x is nonzero (not of not x, for any dtype). */
Tensor nonzero_mask(CpuBackend& backend, const Tensor& x) {
  if (x.dtype() == DType::Bool) return contiguous(x);
  Tensor zero = empty(x.shape(), {.dtype = DType::Bool, .device = x.device()});
  backend.unary(ops::UnaryOp::LogicalNot, x, zero);
  backend.unary(ops::UnaryOp::LogicalNot, zero, zero);
  return zero;
}

/** Fixed-size chunks for nonzero's two passes (independent of the thread count). */
constexpr int64_t kNonzeroChunk = 65536;

int64_t count_true(const bool* p, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i];
  return count;
}

}  // namespace

void CpuBackend::gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  switch (x.element_size()) {
    case 1: return gather_typed<Bits<1>>(x, dim, index, out);
    case 2: return gather_typed<Bits<2>>(x, dim, index, out);
    case 4: return gather_typed<Bits<4>>(x, dim, index, out);
    case 8: return gather_typed<Bits<8>>(x, dim, index, out);
    default: return gather_typed<Bits<16>>(x, dim, index, out);
  }
}

void CpuBackend::scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, ops::ScatterOp op) {
  if (op == ops::ScatterOp::Assign) {
    switch (out.element_size()) {
      case 1: return scatter_typed<Bits<1>, true>(out, dim, index, src, op);
      case 2: return scatter_typed<Bits<2>, true>(out, dim, index, src, op);
      case 4: return scatter_typed<Bits<4>, true>(out, dim, index, src, op);
      case 8: return scatter_typed<Bits<8>, true>(out, dim, index, src, op);
      default: return scatter_typed<Bits<16>, true>(out, dim, index, src, op);
    }
  }
  if (is_complex(out.dtype())) {  // complex numbers have no order: no amax or amin (as torch)
    if (op != ops::ScatterOp::Sum && op != ops::ScatterOp::Prod)
      fail<RuntimeError>("[scatter] reducing by max or min is not supported for complex dtypes (got ", out.dtype(),
                         ")");
    UG_DISPATCH_COMPLEX(out.dtype(), "scatter", (scatter_typed<scalar_t, false>(out, dim, index, src, op)));
    return;
  }
  UG_DISPATCH_ALL(out.dtype(), "scatter", (scatter_typed<scalar_t, false>(out, dim, index, src, op)));
}

void CpuBackend::index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) {
  // View both as [outer, size(dim), inner] and copy whole inner blocks.
  const size_t item = x.element_size();
  Tensor xc = contiguous(x);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const int64_t n_in = x.dim() ? x.size(dim) : 1, n_idx = index.numel();
  const char* px = static_cast<const char*>(xc.raw_data());
  Tensor idx = contiguous(index);
  const int64_t* pi = static_cast<const int64_t*>(idx.raw_data());
  char* po = static_cast<char*>(out.raw_data());
  const size_t block = static_cast<size_t>(inner) * item;
  auto row = [&](int64_t t) { return px + (t / n_idx * n_in + pi[t % n_idx]) * block; };
  // Rows picked at random (a shuffled batch from a data set) come from memory one after the
  // other, each waiting out its first misses: prefetching the heads of the rows a few ahead
  // overlaps them (64 random rows of 3136 bytes out of 188 MB: 49-59 -> 32-44 us). The head
  // only: the hardware prefetcher streams the rest, and prefetching whole rows was slower.
  // Split from kIndexGrain elements on: each thread waits out its own rows' misses.
  const size_t ahead = std::min<size_t>(block, 1024);
  auto prefetch = [&](int64_t t) {
    const char* r = row(t);
    for (size_t b = 0; b < ahead; b += 64) __builtin_prefetch(r + b, 0, 3);
  };
  const int64_t grain = std::max<int64_t>(1, kIndexGrain / std::max<int64_t>(inner, 1));
  parallel_for(outer * n_idx, grain, [&](int64_t t0, int64_t t1) {
    constexpr int64_t kAhead = 4;
    for (int64_t t = t0; t < std::min(t1, t0 + kAhead); ++t) prefetch(t);
    for (int64_t t = t0; t < t1; ++t) {
      if (t + kAhead < t1) prefetch(t + kAhead);
      std::memcpy(po + t * block, row(t), block);
    }
  });
}

int64_t CpuBackend::count_nonzero(const Tensor& x) {
  Tensor b = nonzero_mask(*this, x);
  const bool* p = static_cast<const bool*>(b.raw_data());
  const int64_t n = b.numel(), chunks = (n + kNonzeroChunk - 1) / kNonzeroChunk;
  std::vector<int64_t> counts(static_cast<size_t>(chunks));
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      counts[c] = count_true(p + c * kNonzeroChunk, std::min(kNonzeroChunk, n - c * kNonzeroChunk));
  });
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  return total;
}

void CpuBackend::nonzero(const Tensor& x, const Tensor& out) {
  // Two passes over fixed chunks: count each chunk's nonzeros, then each chunk writes its
  // coordinates from the running total of the chunks before it.
  Tensor b = nonzero_mask(*this, x);
  const bool* p = static_cast<const bool*>(b.raw_data());
  int64_t* po = static_cast<int64_t*>(out.raw_data());
  const Shape& shape = x.shape();
  const size_t nd = shape.size();
  const int64_t n = b.numel(), chunks = (n + kNonzeroChunk - 1) / kNonzeroChunk;
  std::vector<int64_t> start(static_cast<size_t>(chunks) + 1, 0);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      start[c + 1] = count_true(p + c * kNonzeroChunk, std::min(kNonzeroChunk, n - c * kNonzeroChunk));
  });
  for (int64_t c = 0; c < chunks; ++c) start[c + 1] += start[c];
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    const int64_t begin = c0 * kNonzeroChunk, end = std::min(n, c1 * kNonzeroChunk);
    // Branch-free: every element's coordinates are stored at the cursor, which only
    // advances past nonzeros. The loop stops once the piece's nonzeros are all written, so
    // the stores stay inside this piece's rows of out.
    const int64_t width = static_cast<int64_t>(nd);
    int64_t* o = po + start[c0] * width;
    int64_t* const o_end = po + start[c1] * width;
    if (nd == 1) {
      for (int64_t i = begin; i < end && o != o_end; ++i) {
        *o = i;
        o += p[i];
      }
      return;
    }
    Shape idx(nd, 0);
    for (int64_t rem = begin, d = width - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (int64_t i = begin; i < end && o != o_end; ++i) {
      for (size_t d = 0; d < nd; ++d) o[d] = idx[d];
      o += width * p[i];
      for (size_t d = nd; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
}

}  // namespace ug::cpu
