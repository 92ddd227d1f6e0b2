// Helpers the linalg ops share (ops/linalg_solvers.cpp, ops/linalg_lu.cpp): argument checks,
// shapes of matrix batches and the operands of a batching rule.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "ug/core/batching.h"
#include "ug/core/tensor.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/linalg_kinds.h"

namespace ug::linalg_detail {

/** A float32/float64 tensor (complex64/complex128 too where complex_ok) of at least 2 dims;
 *  `square` also asks for square matrices. */
inline void check_matrix(const Tensor& a, const char* op, bool square = true, bool complex_ok = false) {
  const DType t = a.dtype();
  const bool real_ok = t == DType::Float32 || t == DType::Float64;
  if (!real_ok && !(complex_ok && (t == DType::Complex64 || t == DType::Complex128)))
    fail<TypeError>("[", op, "] expected a float32 or float64", complex_ok ? " (or complex64, complex128)" : "",
                    " tensor, got ", t, " (shape ", a.shape(), ")");
  if (a.dim() < 2)
    fail("[", op, "] expected a matrix or a batch of matrices (at least 2 dims), got shape ", a.shape(), " (dtype ",
         a.dtype(), ")");
  if (square && a.size(-1) != a.size(-2))
    fail("[", op, "] expected square matrices, got shape ", a.shape(), " (", a.size(-2), " by ", a.size(-1),
         "), dtype ", a.dtype());
}

inline void check_pair(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    fail<TypeError>("[", op, "] expected A and B of one dtype, got ", a.dtype(), " and ", b.dtype(), " (shapes ",
                    a.shape(), " and ", b.shape(), ")");
  if (a.device() != b.device())
    fail<RuntimeError>("[", op, "] expected A and B on one device, got ", a.device(), " and ", b.device());
}

inline Shape with(Shape head, std::initializer_list<int64_t> tail) {
  for (int64_t n : tail) head.push_back(n);
  return head;
}

inline Shape prepend(int64_t n, const Shape& tail) {
  Shape out{n};
  for (int64_t d : tail) out.push_back(d);
  return out;
}

/** The leading (batch) dims of a [..., rows, cols] tensor. */
inline Shape batch_of(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 2); }

inline Options like(const Tensor& t) { return {.dtype = t.dtype(), .device = t.device()}; }

/** The conjugate transpose of a batch of matrices (the transpose for real ones). */
inline Tensor mH(const Tensor& x) { return conj(x).mT(); }

/** The [..., n, n] matrices with v [..., n] on their diagonals. */
inline Tensor diag_embed(const Tensor& v) { return v.unsqueeze(-1) * eye(v.size(-1), {}, like(v)); }

/** m with its diagonal zeroed. */
inline Tensor off_diagonal(const Tensor& m) { return m * (1 - eye(m.size(-1), {}, like(m))); }

/** E[i, j] = w[j] - w[i] off the diagonal, 1 on it: the divisor of the eigen- and singular
 *  vectors' derivative rules (eig, eigh, svd). */
inline Tensor gaps(const Tensor& w) { return w.unsqueeze(-2) - w.unsqueeze(-1) + eye(w.size(-1), {}, like(w)); }

/** The operands of a vmap call at `lvl`: each batched one's physical tensor (vmap dim first),
 *  each other one broadcast along a new first dim of the batch's size. */
inline std::vector<Tensor> physical_operands(std::initializer_list<const Tensor*> ts, int lvl) {
  int64_t v = 1;
  for (const Tensor* t : ts)
    if (batching::level(*t) == lvl) v = batching::physical(*t, lvl).size(0);
  std::vector<Tensor> out;
  for (const Tensor* t : ts)
    out.push_back(batching::level(*t) == lvl ? batching::physical(*t, lvl)
                                             : t->unsqueeze(0).expand(prepend(v, t->shape())));
  return out;
}

inline std::string batch_element(const Tensor& a, const ops::LinalgStatus& s) {
  return a.dim() > 2 ? "(batch element " + std::to_string(s.batch) + ") " : "";
}

inline Shape broadcast_batch(const Tensor& a, const Tensor& b, const char* op) {
  return broadcast_shapes(batch_of(a), batch_of(b), op);
}

}  // namespace ug::linalg_detail
