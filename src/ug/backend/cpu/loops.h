// The strided N-operand loop behind every CPU elementwise kernel. Operand 0 is the output;
// all operands share one shape (inputs may be stride-0 broadcast views). Dimensions that
// are contiguous across all operands are merged, and the innermost run is handed to an
// inner kernel that takes fast paths for unit or zero strides.
#pragma once

#include <array>
#include <cstdint>

#include "ug/core/shape.h"
#include "ug/core/tensor.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

/** Elements per parallel task: below this, threading costs more than it saves. */
inline constexpr int64_t kElementwiseGrain = 32768;

template <size_t N> class StridedLoop {
 public:
  explicit StridedLoop(const std::array<const Tensor*, N>& operands) {
    const Shape& shape = operands[0]->shape();
    numel_ = operands[0]->numel();
    for (size_t k = 0; k < N; ++k) base_[k] = static_cast<char*>(operands[k]->raw_data());
    // All operands contiguous (the usual case, and the one where per-op overhead matters
    // most): one flat run, without looking at the dims.
    bool flat = true;
    for (size_t k = 0; k < N && flat; ++k) flat = operands[k]->is_contiguous();
    if (flat) {
      if (numel_ > 1) {
        sizes_.push_back(numel_);
        for (size_t k = 0; k < N; ++k) strides_[k].push_back(static_cast<int64_t>(operands[k]->element_size()));
      }
      return;
    }
    // Size-1 dims are dropped; a dim folds into the one outside it when, for every operand,
    // the outer stride equals the inner stride times the inner size.
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      std::array<int64_t, N> st;
      for (size_t k = 0; k < N; ++k)
        st[k] = operands[k]->strides()[d] * static_cast<int64_t>(operands[k]->element_size());
      bool fold = !sizes_.empty();
      for (size_t k = 0; k < N && fold; ++k) fold = strides_[k].back() == st[k] * shape[d];
      if (fold) {
        sizes_.back() *= shape[d];
        for (size_t k = 0; k < N; ++k) strides_[k].back() = st[k];
      } else {
        sizes_.push_back(shape[d]);
        for (size_t k = 0; k < N; ++k) strides_[k].push_back(st[k]);
      }
    }
  }

  int64_t numel() const { return numel_; }

  /** Runs inner(ptrs, strides, n) over linear elements [begin, end). */
  template <class Inner> void run(int64_t begin, int64_t end, Inner&& inner) const {
    if (begin >= end) return;
    const int nd = static_cast<int>(sizes_.size());
    if (nd == 0) {  // a single element
      std::array<char*, N> ptrs = base_;
      std::array<int64_t, N> zero{};
      inner(ptrs.data(), zero.data(), int64_t{1});
      return;
    }
    if (nd == 1) {  // one run: no index bookkeeping
      std::array<char*, N> ptrs;
      std::array<int64_t, N> st;
      for (size_t k = 0; k < N; ++k) {
        st[k] = strides_[k][0];
        ptrs[k] = base_[k] + begin * st[k];
      }
      inner(ptrs.data(), st.data(), end - begin);
      return;
    }
    Shape idx(nd);
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % sizes_[d];
      rem /= sizes_[d];
    }
    std::array<int64_t, N> inner_strides;
    for (size_t k = 0; k < N; ++k) inner_strides[k] = strides_[k][nd - 1];
    int64_t pos = begin;
    while (pos < end) {
      std::array<char*, N> ptrs;
      for (size_t k = 0; k < N; ++k) {
        char* p = base_[k];
        for (int d = 0; d < nd; ++d) p += idx[d] * strides_[k][d];
        ptrs[k] = p;
      }
      int64_t n = std::min(sizes_[nd - 1] - idx[nd - 1], end - pos);
      inner(ptrs.data(), inner_strides.data(), n);
      pos += n;
      idx[nd - 1] += n;
      for (int d = nd - 1; d > 0 && idx[d] == sizes_[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  }

  /** Runs the loop over all elements, in parallel for large tensors. */
  template <class Inner> void run_parallel(Inner&& inner, int64_t grain = kElementwiseGrain) const {
    if (numel_ == 0) return;
    if (numel_ < grain) {
      run(0, numel_, inner);
      return;
    }
    parallel_for(numel_, grain, [&](int64_t b, int64_t e) { run(b, e, inner); });
  }

 private:
  std::array<char*, N> base_{};
  std::array<Strides, N> strides_;
  Shape sizes_;
  int64_t numel_ = 0;
};

}  // namespace ug::cpu
