// Sorting and scans along the last (sort) or middle (scan) dim of a contiguous tensor.
// NaN sorts above every number, as in PyTorch.
#include <algorithm>
#include <numeric>
#include <vector>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

void CpuBackend::sort(const Tensor& x, int64_t rows, int64_t n, bool descending, bool stable, const Tensor& values,
                      const Tensor& indices) {
  (void)stable;  // std::stable_sort is used always: equal keys keep their order
  UG_DISPATCH_ALL(x.dtype(), "sort", {
    using A = acc_t<scalar_t>;
    const scalar_t* px = static_cast<const scalar_t*>(x.raw_data());
    scalar_t* pv = static_cast<scalar_t*>(values.raw_data());
    int64_t* pi = static_cast<int64_t*>(indices.raw_data());
    parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t r = r0; r < r1; ++r) {
        const scalar_t* row = px + r * n;
        std::iota(order.begin(), order.end(), int64_t{0});
        auto less = [&](int64_t i, int64_t j) {
          A a = static_cast<A>(row[i]), b = static_cast<A>(row[j]);
          if (a != a) return false;  // NaN is never less
          return b != b || a < b;
        };
        if (descending) std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return less(j, i); });
        else std::stable_sort(order.begin(), order.end(), less);
        for (int64_t k = 0; k < n; ++k) {
          pv[r * n + k] = row[order[k]];
          pi[r * n + k] = order[k];
        }
      }
    });
  });
}

namespace {
/** One step of a running sum or product (bool: or / and). */
template <class A> A scan_step(bool is_sum, A acc, A v) {
  if constexpr (std::is_same_v<A, bool>) return is_sum ? (acc || v) : (acc && v);
  else return is_sum ? static_cast<A>(acc + v) : static_cast<A>(acc * v);
}
}  // namespace

void CpuBackend::scan(ops::ScanOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, const Tensor& out) {
  UG_DISPATCH_ALL(x.dtype(), "scan", {
    using A = acc_t<scalar_t>;
    const scalar_t* px = static_cast<const scalar_t*>(x.raw_data());
    scalar_t* po = static_cast<scalar_t*>(out.raw_data());
    const bool is_sum = op == ops::ScanOp::CumSum;
    parallel_for(outer * inner, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        int64_t o = t / inner, j = t % inner;
        A acc = is_sum ? A(0) : A(1);
        for (int64_t k = 0; k < n; ++k) {
          int64_t at = (o * n + k) * inner + j;
          A v = static_cast<A>(px[at]);
          acc = scan_step(is_sum, acc, v);
          po[at] = static_cast<scalar_t>(acc);
        }
      }
    });
  });
}

}  // namespace ug::cpu
