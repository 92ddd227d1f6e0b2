// The interface every device backend implements. Ops validate, promote and broadcast,
// then hand canonical operands to these kernels: a new backend adds kernels here without
// touching any op definition.
#pragma once

#include <cstdint>
#include <utility>

#include "ug/core/random.h"
#include "ug/core/tensor.h"
#include "ug/ops/binary_kinds.h"
#include "ug/ops/conv_kinds.h"
#include "ug/ops/indexing_kinds.h"
#include "ug/ops/linalg_kinds.h"
#include "ug/ops/pool_kinds.h"
#include "ug/ops/reduce_kinds.h"
#include "ug/ops/unary_kinds.h"

namespace ug {

class Backend {
 public:
  virtual ~Backend() = default;

  // Elementwise. Operands all have out's shape (inputs may be stride-0 broadcast views);
  // binary inputs share one dtype; out may be strided.
  /** dst = src, converting dtype. */
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  virtual void fill(const Tensor& dst, const Scalar& value) = 0;
  virtual void unary(ops::UnaryOp op, const Tensor& x, const Tensor& out) = 0;
  virtual void binary(ops::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  /** out = cond ? a : b; cond is bool, a and b have out's dtype. */
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) = 0;

  // Random fills of a contiguous out, element i drawn from word(s) i of `stream`.
  virtual void uniform(const Tensor& out, const RandomStream& stream, double low, double high) = 0;
  virtual void normal(const Tensor& out, const RandomStream& stream, double mean, double std) = 0;
  virtual void randint(const Tensor& out, const RandomStream& stream, int64_t low, int64_t high) = 0;

  // Reductions over the middle dim of a contiguous [outer, reduced, inner] view of `x`;
  // out is contiguous [outer, inner]. ArgMax/ArgMin write int64 indices.
  virtual void reduce(ops::ReduceOp op, const Tensor& x, int64_t outer, int64_t reduced, int64_t inner,
                      const Tensor& out) = 0;
  /** Inclusive scan (cumsum/cumprod) along the middle dim of contiguous [outer, n, inner]. */
  virtual void scan(ops::ScanOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, const Tensor& out) = 0;
  /** Sorts each row of a contiguous [rows, n] tensor; values and int64 indices are [rows, n]. */
  virtual void sort(const Tensor& x, int64_t rows, int64_t n, bool descending, bool stable, const Tensor& values,
                    const Tensor& indices) = 0;

  /** out[b] = a[b] @ b[b] for [B, M, K] x [B, K, N] (any strides) into contiguous [B, M, N]. */
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  /** out (int32 [M, N]) = (a - a_zero_point) @ b^T for a uint8 [M, K] and an int8 b [N, K]
   *  (contiguous), every sum exact: dynamic quantization's product (ops/quantized.h).
   *  b may instead be the packed form pack_u8s8 made of the int8 weight. */
  virtual void matmul_u8s8(const Tensor& a, int64_t a_zero_point, const Tensor& b, const Tensor& out) = 0;
  /** out (float32 [M, N]) = float((a - a_zero_point) @ b^T) * scale + bias: matmul_u8s8
   *  (b plain or packed) with fbgemm's float epilogue, scale float32 [N], bias float32 [N] or
   *  undefined. */
  virtual void linear_u8s8(const Tensor& a, int64_t a_zero_point, const Tensor& b, const Tensor& scale,
                           const Tensor& bias, const Tensor& out) = 0;
  /** An int8 weight b [N, K] in the form matmul_u8s8 reads fastest (an opaque int32 tensor),
   *  for a layer to pack once; undefined where the backend has no such form. */
  virtual Tensor pack_u8s8(const Tensor& b) = 0;
  /** out (uint8) = clamp(round_half_even(x * inv_scale) + zero_point, 0, 255) for a contiguous
   *  float32 x, in one pass: dynamic quantization's input. */
  virtual void quantize_u8(const Tensor& x, float inv_scale, int64_t zero_point, const Tensor& out) = 0;
  /** The least and greatest value of a contiguous float32 tensor, NaNs skipped (inf, -inf if
   *  none): the range dynamic quantization maps onto uint8. */
  virtual std::pair<double, double> float_range(const Tensor& x) = 0;

  // Dense linear algebra over contiguous [B, ...] batches of row-major float32/float64
  // matrices (complex ones too for solve and eig) into contiguous outputs. A kernel that can
  // fail reports the first batch entry that did (ops::LinalgStatus) and the op raises.
  /** x [B, n, k] = a^-1 b for a [B, n, n] and b [B, n, k] (LU with partial pivoting); fails
   *  where a pivot is exactly zero (a singular). */
  virtual ops::LinalgStatus solve(const Tensor& a, const Tensor& b, const Tensor& x) = 0;
  /** The sign (-1, 0 or 1) and log|det| [B] of a [B, n, n]: 0 and -inf for a singular a. */
  virtual void slogdet(const Tensor& a, const Tensor& sign, const Tensor& logabsdet) = 0;
  /** Lower triangular l [B, n, n] with a = l l^T, from a's lower triangle; fails where a
   *  leading minor is not positive-definite. info [B] int32, when defined, gets each entry's
   *  LAPACK info (0, or the order of the leading minor that is not). */
  virtual ops::LinalgStatus cholesky(const Tensor& a, const Tensor& l, const Tensor& info) = 0;
  /** LU with partial pivoting, a [B, m, n] = P L U: lu [B, m, n] holds L below its unit
   *  diagonal and U on and above it, pivots [B, min(m, n)] int32 the 1-based row each row i
   *  was swapped with (LAPACK's ipiv), info [B] int32 0 or the 1-based index of U's first zero
   *  diagonal element (the first such entry is reported too). */
  virtual ops::LinalgStatus lu_factor(const Tensor& a, const Tensor& lu, const Tensor& pivots, const Tensor& info) = 0;
  /** Bunch-Kaufman A = L D L^T of symmetric a [B, n, n] from its lower triangle (LAPACK's
   *  sytrf, uplo L): ld [B, n, n] holds L below its unit diagonal and D's blocks on and below
   *  it (zeros above), pivots [B, n] int32 LAPACK's ipiv (negative for 2 x 2 blocks), info [B]
   *  int32 0 or the 1-based index of D's first zero diagonal element. */
  virtual ops::LinalgStatus ldl_factor(const Tensor& a, const Tensor& ld, const Tensor& pivots, const Tensor& info) = 0;
  /** x [B, n, k] = A^-1 b for A given by ldl_factor's ld and pivots (LAPACK's sytrs). */
  virtual void ldl_solve(const Tensor& ld, const Tensor& pivots, const Tensor& b, const Tensor& x) = 0;
  /** Ascending eigenvalues w [B, n] and orthonormal eigenvectors v [B, n, n] (columns) of the
   *  symmetric matrix whose lower triangle a [B, n, n] holds; fails where they do not converge. */
  virtual ops::LinalgStatus eigh(const Tensor& a, const Tensor& w, const Tensor& v) = 0;
  /** Eigenvalues w [B, n] and right eigenvectors v [B, n, n] (columns of unit norm, each with
   *  its largest component real: LAPACK's geev) of a general a [B, n, n], real or complex; w
   *  and v are complex. Fails where the QR iteration does not converge. */
  virtual ops::LinalgStatus eig(const Tensor& a, const Tensor& w, const Tensor& v) = 0;
  /** a [B, m, n] = u diag(s) vh, s [B, k] descending (k = min(m, n)); u and vh are [B, m, k]
   *  and [B, k, n], or [B, m, m] and [B, n, n] (full), or both undefined (s alone). Fails
   *  where the iteration does not converge. */
  virtual ops::LinalgStatus svd(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh) = 0;
  /** a [B, m, n] = q r with orthonormal columns q [B, m, c] and upper triangular r [B, c, n],
   *  c = min(m, n) or m (complete); q undefined: r [B, min(m, n), n] alone. */
  virtual void qr(const Tensor& a, const Tensor& q, const Tensor& r) = 0;
  /** x [B, n, k] = a^-1 b for triangular a [B, n, n] (its upper or lower triangle is read,
   *  its diagonal taken as ones when unit) and b [B, n, k]. */
  virtual void solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool unit, const Tensor& x) = 0;

  // Indexing along `dim`. index is int64, already checked to be in range.
  /** out[..i..] = x[..index[..i..]..] (torch.gather). */
  virtual void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) = 0;
  /** out[..index[..i..]..] = src[..i..], or combined with what is there (ScatterOp). */
  virtual void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, ops::ScatterOp op) = 0;
  /** out = x.index_select(dim, index) with a 1-d index. */
  virtual void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) = 0;
  /** Writes the int64 coordinates of x's nonzero elements into out [count, ndim]. */
  virtual void nonzero(const Tensor& x, const Tensor& out) = 0;
  virtual int64_t count_nonzero(const Tensor& x) = 0;

  // normalization
  /** Normalizes each row of contiguous x [rows, cols] (float32/float64): y = (x - mean) * rstd,
   *  times weight plus bias ([cols], contiguous) when those are defined. Writes y [rows, cols]
   *  and each row's mean and rstd = 1 / sqrt(var + eps) ([rows]). */
  virtual void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                          const Tensor& mean, const Tensor& rstd) = 0;
  /** The gradients of layer_norm for the output gradient g [rows, cols] (contiguous): dx, and
   *  dweight and dbias [cols] where they are defined (weight may be undefined: all ones). */
  virtual void layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                   const Tensor& weight, const Tensor& dx, const Tensor& dweight,
                                   const Tensor& dbias) = 0;
  /** Batch normalization with batch statistics over contiguous x [N, C, S] (float32/float64):
   *  writes each channel's mean and biased variance over N and S ([C]) and y [N, C, S] =
   *  (x - mean) / sqrt(var + eps), times weight plus bias ([C], contiguous) when defined. */
  virtual void batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                          const Tensor& mean, const Tensor& var) = 0;
  /** The gradients of batch_norm for the output gradient g [N, C, S] (contiguous), from the
   *  mean and var it wrote: dx, dweight and dbias [C], each only where defined (weight may be
   *  undefined: all ones). */
  virtual void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& var, double eps,
                                   const Tensor& weight, const Tensor& dx, const Tensor& dweight,
                                   const Tensor& dbias) = 0;
  /** softmax (or, when log, log_softmax) of each row of contiguous x [rows, cols] (float32 or
   *  float64) into y. */
  virtual void softmax(const Tensor& x, bool log, const Tensor& y) = 0;
  /** The input gradient of softmax / log_softmax from its output y and output gradient g
   *  (contiguous [rows, cols]). */
  virtual void softmax_backward(const Tensor& g, const Tensor& y, bool log, const Tensor& dx) = 0;

  // attention (flash-attention style: the [L, S] probabilities are never stored)
  /** softmax(q k^T * scale + mask) v for q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] of
   *  one dtype (float32, float64, or bfloat16/float16 computed in float32), each with a unit
   *  last stride and any other strides (0 where broadcast); Hq is a multiple of Hk and query
   *  head h reads key/value head h / (Hq / Hk). mask is undefined, or bool (true = attend) or
   *  q's dtype (added to the scores), [B, Hq, L, S] with any strides; causal keeps key j <= i.
   *  Writes out [B, Hq, L, Ev] (q's dtype, unit last stride) and lse [B, Hq, L] (contiguous;
   *  float64 for float64, else float32): each row's log-sum-exp of its scores, +inf for a row
   *  whose every key is masked (its output is 0). */
  virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                         double scale, const Tensor& out, const Tensor& lse) = 0;
  /** The gradients of attention for the output gradient g (out's shape and dtype, unit last
   *  stride), recomputing the probabilities from q, k, v, out and lse: dq, dk and dv
   *  (contiguous, the shapes and dtype of q, k and v). */
  virtual void attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, bool causal, double scale, const Tensor& out, const Tensor& lse,
                                  const Tensor& dq, const Tensor& dk, const Tensor& dv) = 0;

  // losses
  /** nll_loss over contiguous log-probabilities x [N, C] (float32/float64) and int64 targets
   *  [N]: each sample's loss is -weight[t] * x[i, t] (0 where t == ignore_index); loss gets
   *  them ([N]) or, when 0-d, their sum. total_weight (0-d) gets the sum of weight[t] over the
   *  samples not ignored. weight is [C] or undefined (ones). A target outside [0, C) that is
   *  not ignore_index raises IndexError. */
  virtual void nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                        const Tensor& loss, const Tensor& total_weight) = 0;
  /** The gradient of nll_loss's per-sample losses: dx [N, C] is -g[i] * weight[t] at (i, t) and 0
   *  elsewhere (and on ignored samples); g is [N] or 0-d (one value for every sample). */
  virtual void nll_loss_backward(const Tensor& g, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                 const Tensor& dx) = 0;
  /** The gradient of softmax cross-entropy (log_softmax then nll_loss) at logits x [N, C]:
   *  dx[i] = s[i] * weight[t] * (softmax(x[i]) - one_hot(t)), 0 on ignored samples, with s = g
   *  ([N], or 0-d: one value for every sample), divided by the samples' total weight when mean. */
  virtual void cross_entropy_backward(const Tensor& g, const Tensor& x, const Tensor& target, const Tensor& weight,
                                      int64_t ignore_index, bool mean, const Tensor& dx) = 0;
  /** out (0-d) = scale * sum of (a - b)^2 over contiguous a and b of one shape and dtype
   *  (float32/float64), in one pass that makes neither the difference nor its square; summed
   *  in the same order whatever the thread count. */
  virtual void squared_error(const Tensor& a, const Tensor& b, double scale, const Tensor& out) = 0;

  // convolution and pooling. Every tensor is contiguous, float32 or float64.
  /** out [N, O, Ho, Wo] = conv(x [N, C, H, W], w [O, C / groups, kh, kw]) + bias [O] (bias
   *  may be undefined). */
  virtual void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                      const Tensor& out) = 0;
  /** gx [N, C, H, W] = the adjoint of conv2d in x, applied to g [N, O, Ho, Wo]. */
  virtual void conv2d_input_grad(const Tensor& g, const Tensor& w, const Conv2dParams& p, const Tensor& gx) = 0;
  /** gw [O, C / groups, kh, kw] = the adjoint of conv2d in w: sum over n of g[n] (x) x[n]. */
  virtual void conv2d_weight_grad(const Tensor& x, const Tensor& g, const Conv2dParams& p, const Tensor& gw) = 0;
  /** Pools planes x [P, H, W] into out [P, Ho, Wo]; indices (int64, h * W + w) of the maxima,
   *  unless undefined (nothing will read them). */
  virtual void max_pool2d(const Tensor& x, const PoolWindows& win, const Tensor& out, const Tensor& indices) = 0;
  virtual void avg_pool2d(const Tensor& x, const PoolWindows& win, const Tensor& out) = 0;
  /** gx [P, H, W] = the adjoint of avg_pool2d applied to g [P, Ho, Wo]. */
  virtual void avg_pool2d_transpose(const Tensor& g, const PoolWindows& win, const Tensor& gx) = 0;
};

/** The backend for a device; throws RuntimeError when the device is not available. */
Backend& backend_for(Device device);

}  // namespace ug
