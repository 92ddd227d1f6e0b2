// nll_loss in one pass over the targets each way, and cross-entropy's gradient in one pass
// after the softmax: classification's loss without a chain of gather, where and sum kernels;
// the squared error of a regression's loss in one pass over its two operands. Sums accumulate
// in double.
#include <algorithm>
#include <vector>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

template <class T>
void nll_loss_typed(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                    const Tensor& loss, const Tensor& total_weight) {
  const int64_t n = x.size(0), classes = x.size(1);
  const T* px = static_cast<const T*>(x.raw_data());
  const auto* pt = static_cast<const int64_t*>(target.raw_data());
  const T* pw = weight.defined() ? static_cast<const T*>(weight.raw_data()) : nullptr;
  T* per_sample = loss.dim() == 1 ? static_cast<T*>(loss.raw_data()) : nullptr;
  double sum = 0, weights = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = pt[i];
    T li = T(0);
    if (t != ignore_index) {
      if (t < 0 || t >= classes)
        fail<IndexError>("[nll_loss] Target ", t, " is out of bounds: class indices must be in [0, ", classes,
                         ") or equal ignore_index (", ignore_index, ")");
      const T wi = pw ? pw[t] : T(1);
      li = -(wi * px[i * classes + t]);
      sum += li;
      weights += wi;
    }
    if (per_sample) per_sample[i] = li;
  }
  if (!per_sample) *static_cast<T*>(loss.raw_data()) = static_cast<T>(sum);
  *static_cast<T*>(total_weight.raw_data()) = static_cast<T>(weights);
}

template <class T>
void nll_loss_backward_typed(const Tensor& g, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                             const Tensor& dx) {
  const int64_t n = dx.size(0), classes = dx.size(1);
  const T* pg = static_cast<const T*>(g.raw_data());
  const int64_t g_step = g.dim() == 0 ? 0 : 1;
  const auto* pt = static_cast<const int64_t*>(target.raw_data());
  const T* pw = weight.defined() ? static_cast<const T*>(weight.raw_data()) : nullptr;
  T* pd = static_cast<T*>(dx.raw_data());
  std::fill(pd, pd + n * classes, T(0));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = pt[i];
    if (t == ignore_index || t < 0 || t >= classes) continue;  // forward rejected out-of-range ones
    pd[i * classes + t] = -(pg[i * g_step] * (pw ? pw[t] : T(1)));
  }
}

/** dx holds softmax(x) on entry: scales each row's p - one_hot(t) in place. */
template <class T>
void cross_entropy_backward_typed(const Tensor& g, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                  bool mean, const Tensor& dx) {
  const int64_t n = dx.size(0), classes = dx.size(1);
  const T* pg = static_cast<const T*>(g.raw_data());
  const int64_t g_step = g.dim() == 0 ? 0 : 1;
  const auto* pt = static_cast<const int64_t*>(target.raw_data());
  const T* pw = weight.defined() ? static_cast<const T*>(weight.raw_data()) : nullptr;
  T* pd = static_cast<T*>(dx.raw_data());
  auto counts = [&](int64_t t) { return t != ignore_index && t >= 0 && t < classes; };  // forward rejected the others
  T scale = T(1);
  if (mean) {  // all ignored: every row is 0 below, whatever the scale
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
      if (counts(pt[i])) total += pw ? pw[pt[i]] : T(1);
    scale = static_cast<T>(1 / total);
  }
  for (int64_t i = 0; i < n; ++i) {
    T* row = pd + i * classes;
    const int64_t t = pt[i];
    if (!counts(t)) {
      std::fill(row, row + classes, T(0));
      continue;
    }
    const T s = pg[i * g_step] * (pw ? pw[t] : T(1)) * scale;
    row[t] -= T(1);
    for (int64_t j = 0; j < classes; ++j) row[j] *= s;
  }
}

// Blocks of the squared error, each summed in kLanes independent accumulators of the element
// type (which vectorise), then in double; the blocks' sums added in order, so the result does
// not depend on how many threads ran them.
constexpr int64_t kSquaredErrorBlock = 1 << 14;
constexpr int kLanes = 16;

template <class T> void squared_error_typed(const Tensor& a, const Tensor& b, double scale, const Tensor& out) {
  const int64_t n = a.numel(), blocks = (n + kSquaredErrorBlock - 1) / kSquaredErrorBlock;
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  std::vector<double> partial(static_cast<size_t>(blocks));
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t i0 = blk * kSquaredErrorBlock, i1 = std::min(n, i0 + kSquaredErrorBlock);
      T lane[kLanes] = {};
      int64_t i = i0;
      for (; i + kLanes <= i1; i += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          const T d = pa[i + l] - pb[i + l];
          lane[l] += d * d;
        }
      for (int l = 0; i < i1; ++i, ++l) {
        const T d = pa[i] - pb[i];
        lane[l] += d * d;
      }
      double sum = 0;
      for (T v : lane) sum += v;
      partial[static_cast<size_t>(blk)] = sum;
    }
  });
  double total = 0;
  for (double p : partial) total += p;
  *static_cast<T*>(out.raw_data()) = static_cast<T>(total * scale);
}

}  // namespace

void CpuBackend::squared_error(const Tensor& a, const Tensor& b, double scale, const Tensor& out) {
  if (a.dtype() == DType::Float64) return squared_error_typed<double>(a, b, scale, out);
  squared_error_typed<float>(a, b, scale, out);
}

void CpuBackend::nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                          const Tensor& loss, const Tensor& total_weight) {
  dispatch_float_or_double(x.dtype(), "nll_loss", [&](auto t) {
    nll_loss_typed<decltype(t)>(x, target, weight, ignore_index, loss, total_weight);
  });
}

void CpuBackend::nll_loss_backward(const Tensor& g, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                   const Tensor& dx) {
  dispatch_float_or_double(dx.dtype(), "nll_loss",
                           [&](auto t) { nll_loss_backward_typed<decltype(t)>(g, target, weight, ignore_index, dx); });
}

void CpuBackend::cross_entropy_backward(const Tensor& g, const Tensor& x, const Tensor& target, const Tensor& weight,
                                        int64_t ignore_index, bool mean, const Tensor& dx) {
  softmax(x, false, dx);
  dispatch_float_or_double(dx.dtype(), "cross_entropy", [&](auto t) {
    cross_entropy_backward_typed<decltype(t)>(g, target, weight, ignore_index, mean, dx);
  });
}

}  // namespace ug::cpu
