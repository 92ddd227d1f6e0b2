// Reductions over the middle dim of a contiguous [outer, reduced, inner] tensor. Long
// reductions are cut into fixed chunks whose partial results are combined in order, so
// the answer is bit-identical whatever the number of threads. Compiled once per ISA.
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "ug/backend/cpu/kernels.h"
#include "ug/core/error.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu::UG_CPU_ISA {
namespace {

constexpr int64_t kChunk = 4096;          // elements per partial result
constexpr int64_t kParallelWork = 16384;  // elements a task of the pool should have at least

template <class A> struct SumOp {
  static A init() { return A(0); }
  static A combine(A a, A b) { return a + b; }
};
template <class A> struct ProdOp {
  static A init() { return A(1); }
  static A combine(A a, A b) { return a * b; }
};
template <class A> struct MaxOp {
  static A init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  static A combine(A a, A b) { return (a != a) ? a : (b != b) ? b : (b > a ? b : a); }
};
template <class A> struct MinOp {
  static A init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  static A combine(A a, A b) { return (a != a) ? a : (b != b) ? b : (b < a ? b : a); }
};

template <class Op, class A> constexpr bool kIsExtreme = std::is_same_v<Op, MaxOp<A>> || std::is_same_v<Op, MinOp<A>>;

/** The max (or min) of n contiguous values, or NaN if one is NaN. The NaN test is a flag
 *  beside the comparison so that both vectorise: combine's NaN branches kept the loop scalar,
 *  20-40x slower than a sum. */
template <bool IsMax, class T, class A> A extreme_run(const T* x, int64_t n) {
  A acc = IsMax ? MaxOp<A>::init() : MinOp<A>::init();
  int nan = 0;
  if constexpr (IsMax) {
#pragma omp simd reduction(max : acc) reduction(| : nan)
    for (int64_t i = 0; i < n; ++i) {
      const A v = static_cast<A>(x[i]);
      acc = v > acc ? v : acc;
      nan |= v != v;
    }
  } else {
#pragma omp simd reduction(min : acc) reduction(| : nan)
    for (int64_t i = 0; i < n; ++i) {
      const A v = static_cast<A>(x[i]);
      acc = v < acc ? v : acc;
      nan |= v != v;
    }
  }
  if constexpr (std::numeric_limits<A>::has_quiet_NaN) {
    if (nan) return std::numeric_limits<A>::quiet_NaN();
  }
  return acc;
}

/** Reduces n contiguous values: sums and extremes vectorise with simd reductions. */
template <class Op, class T, class A> A reduce_run(const T* x, int64_t n) {
  A acc = Op::init();
  if constexpr (std::is_same_v<Op, SumOp<A>> && std::is_floating_point_v<A>) {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<A>(x[i]);
  } else if constexpr (kIsExtreme<Op, A> && !std::is_same_v<A, bool>) {
    acc = extreme_run<std::is_same_v<Op, MaxOp<A>>, T, A>(x, n);
  } else {
    for (int64_t i = 0; i < n; ++i) acc = Op::combine(acc, static_cast<A>(x[i]));
  }
  return acc;
}

/** acc[j] = the reduction of column j of n contiguous rows of `inner` values. */
template <class Op, class T, class A> void wide_columns(const T* rows, int64_t n, int64_t inner, A* acc) {
  for (int64_t j = 0; j < inner; ++j) acc[j] = Op::init();
  for (int64_t r = 0; r < n; ++r) {
    const T* row = rows + r * inner;
#pragma omp simd
    for (int64_t j = 0; j < inner; ++j) acc[j] = Op::combine(acc[j], static_cast<A>(row[j]));
  }
}

/** The same for narrow rows (a complex tensor's [n, 2] real view, a [64, 10] bias gradient):
 *  row by row the loop is `inner` lanes wide and scalar. Instead, read the rows as one flat
 *  stream in groups of `group` values (a whole number of rows), accumulate each group into
 *  `group` lanes, then fold the lanes of each column. */
constexpr int64_t kNarrow = 32;
template <class Op, class T, class A> void narrow_columns(const T* rows, int64_t n, int64_t inner, A* acc) {
  constexpr int64_t kLanes = 64;
  const int64_t per_group = kLanes / inner, group = per_group * inner, groups = n / per_group;
  A lanes[kLanes];
  for (int64_t l = 0; l < group; ++l) lanes[l] = Op::init();
  for (int64_t g = 0; g < groups; ++g) {
    const T* x = rows + g * group;
#pragma omp simd
    for (int64_t l = 0; l < group; ++l) lanes[l] = Op::combine(lanes[l], static_cast<A>(x[l]));
  }
  for (int64_t j = 0; j < inner; ++j) {
    A a = lanes[j];
    for (int64_t m = 1; m < per_group; ++m) a = Op::combine(a, lanes[m * inner + j]);
    acc[j] = a;
  }
  for (int64_t r = groups * per_group; r < n; ++r)
    for (int64_t j = 0; j < inner; ++j) acc[j] = Op::combine(acc[j], static_cast<A>(rows[r * inner + j]));
}

template <class Op, class T>
void reduce_typed(const Tensor& x, int64_t outer, int64_t R, int64_t inner, const Tensor& out) {
  using A = acc_t<T>;
  const T* px = static_cast<const T*>(x.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  const int64_t chunks = std::max<int64_t>(1, (R + kChunk - 1) / kChunk);
  // Tasks of at least kParallelWork elements: a small reduction (a [64, 10] row sum in a
  // training step) runs on the calling thread instead of waking the pool, which costs more
  // than the sum and, on a loaded machine, waits for a descheduled worker. The partial sums
  // are the same either way.
  const int64_t grain = std::max<int64_t>(1, kParallelWork / std::max<int64_t>(std::min(R, kChunk) * inner, 1));
  if (inner == 1) {
    // One row per output; rows split into fixed chunks.
    std::unique_ptr<A[]> partial(new A[static_cast<size_t>(outer * chunks)]);
    parallel_for(outer * chunks, grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        int64_t o = t / chunks, c = t % chunks;
        int64_t begin = c * kChunk, len = std::min(kChunk, R - begin);
        partial[t] = len > 0 ? reduce_run<Op, T, A>(px + o * R + begin, len) : Op::init();
      }
    });
    for (int64_t o = 0; o < outer; ++o) {
      A acc = partial[o * chunks];
      for (int64_t c = 1; c < chunks; ++c) acc = Op::combine(acc, partial[o * chunks + c]);
      po[o] = static_cast<T>(acc);
    }
    return;
  }
  // Columns: accumulate whole rows of `inner` values at a time (vectorises across columns).
  std::unique_ptr<A[]> partial(new A[static_cast<size_t>(outer * chunks * inner)]);
  parallel_for(outer * chunks, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t o = t / chunks, c = t % chunks;
      int64_t begin = c * kChunk, end = std::min(R, begin + kChunk);
      const T* rows = px + (o * R + begin) * inner;
      A* acc = partial.get() + t * inner;
      if (inner < kNarrow) narrow_columns<Op, T, A>(rows, end - begin, inner, acc);
      else wide_columns<Op, T, A>(rows, end - begin, inner, acc);
    }
  });
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      A acc = partial[(o * chunks) * inner + j];
      for (int64_t c = 1; c < chunks; ++c) acc = Op::combine(acc, partial[(o * chunks + c) * inner + j]);
      po[o * inner + j] = static_cast<T>(acc);
    }
}

/** The first i < n with hit(x[i]) (0 if none), one block of 64 values at a time, each block
 *  searched by a vectorised min over the indices that hit. */
template <class A, class T, class Hit> int64_t first_index(const T* x, int64_t n, Hit hit) {
  constexpr int64_t kBlock = 64;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    int64_t first = e;
#pragma omp simd reduction(min : first)
    for (int64_t i = b; i < e; ++i) first = hit(static_cast<A>(x[i])) && i < first ? i : first;
    if (first < e) return first;
  }
  return 0;
}

/** ArgMax/ArgMin: first index of the extreme value; NaN counts as the extreme. */
template <bool IsMax, class T>
void arg_reduce_typed(const Tensor& x, int64_t outer, int64_t R, int64_t inner, const Tensor& out) {
  using A = acc_t<T>;
  const T* px = static_cast<const T*>(x.raw_data());
  int64_t* po = static_cast<int64_t*>(out.raw_data());
  const int64_t grain = std::max<int64_t>(1, kParallelWork / std::max<int64_t>(R, 1));
  if (inner == 1 && !std::is_same_v<A, bool>) {
    // Rows: the extreme in one vectorised pass, then the first index holding it (or the
    // first NaN), instead of one branchy scalar pass.
    parallel_for(outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const T* row = px + o * R;
        const A best = extreme_run<IsMax, T, A>(row, R);
        po[o] = best == best ? first_index<A>(row, R, [best](A v) { return v == best; })
                             : first_index<A>(row, R, [](A v) { return v != v; });
      }
    });
    return;
  }
  // Columns: a block of columns at a time, every row updating the block's best values and
  // their indices together (vectorises across columns; a NaN, once met, stays the best).
  constexpr int64_t kCols = 256;
  const int64_t blocks = (inner + kCols - 1) / kCols;
  parallel_for(outer * blocks, std::max<int64_t>(1, kParallelWork / std::max<int64_t>(R * kCols, 1)),
               [&](int64_t t0, int64_t t1) {
                 A best[kCols];
                 int64_t best_i[kCols];
                 for (int64_t t = t0; t < t1; ++t) {
                   const int64_t o = t / blocks, j0 = (t % blocks) * kCols, n = std::min(kCols, inner - j0);
                   const T* base = px + o * R * inner + j0;
                   for (int64_t j = 0; j < n; ++j) {
                     best[j] = static_cast<A>(base[j]);
                     best_i[j] = 0;
                   }
                   for (int64_t r = 1; r < R; ++r) {
                     const T* row = base + r * inner;
#pragma omp simd
                     for (int64_t j = 0; j < n; ++j) {
                       const A v = static_cast<A>(row[j]), b = best[j];
                       const bool take = b == b && (v != v || (IsMax ? v > b : v < b));
                       best[j] = take ? v : b;
                       best_i[j] = take ? r : best_i[j];
                     }
                   }
                   for (int64_t j = 0; j < n; ++j) po[o * inner + j0 + j] = best_i[j];
                 }
               });
}

template <bool IsAll> void logical_reduce(const Tensor& x, int64_t outer, int64_t R, int64_t inner, const Tensor& out) {
  const bool* px = static_cast<const bool*>(x.raw_data());
  bool* po = static_cast<bool*>(out.raw_data());
  parallel_for(outer * inner, std::max<int64_t>(1, kParallelWork / std::max<int64_t>(R, 1)),
               [&](int64_t t0, int64_t t1) {
                 for (int64_t t = t0; t < t1; ++t) {
                   int64_t o = t / inner, j = t % inner;
                   const bool* base = px + o * R * inner + j;
                   bool acc = IsAll;
                   for (int64_t r = 0; r < R && acc == IsAll; ++r) acc = base[r * inner];
                   po[t] = acc;
                 }
               });
}

}  // namespace

void reduce(ops::ReduceOp op, const Tensor& x, int64_t outer, int64_t R, int64_t inner, const Tensor& out) {
  using ops::ReduceOp;
  switch (op) {
    case ReduceOp::Sum:
      UG_DISPATCH_NUMERIC(x.dtype(), "sum", (reduce_typed<SumOp<acc_t<scalar_t>>, scalar_t>(x, outer, R, inner, out)));
      return;
    case ReduceOp::Prod:
      UG_DISPATCH_NUMERIC(x.dtype(), "prod",
                          (reduce_typed<ProdOp<acc_t<scalar_t>>, scalar_t>(x, outer, R, inner, out)));
      return;
    case ReduceOp::Max:
      UG_DISPATCH_ALL(x.dtype(), "max", (reduce_typed<MaxOp<acc_t<scalar_t>>, scalar_t>(x, outer, R, inner, out)));
      return;
    case ReduceOp::Min:
      UG_DISPATCH_ALL(x.dtype(), "min", (reduce_typed<MinOp<acc_t<scalar_t>>, scalar_t>(x, outer, R, inner, out)));
      return;
    case ReduceOp::ArgMax:
      UG_DISPATCH_ALL(x.dtype(), "argmax", (arg_reduce_typed<true, scalar_t>(x, outer, R, inner, out)));
      return;
    case ReduceOp::ArgMin:
      UG_DISPATCH_ALL(x.dtype(), "argmin", (arg_reduce_typed<false, scalar_t>(x, outer, R, inner, out)));
      return;
    case ReduceOp::All: return logical_reduce<true>(x, outer, R, inner, out);
    case ReduceOp::Any: return logical_reduce<false>(x, outer, R, inner, out);
  }
}

}  // namespace ug::cpu::UG_CPU_ISA
