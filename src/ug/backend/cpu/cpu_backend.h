// The CPU backend: elementwise and reduction kernels compiled per ISA (picked once at
// start-up), OpenBLAS for matrix products, plain loops for indexing and sorting.
#pragma once

#include "ug/backend/backend.h"

namespace ug::cpu {

/** src as a contiguous tensor of `dtype`: src itself when it already is one, else a copy by
 *  the copy kernel (the kernels sit below the ops, so they convert with their own). */
Tensor contiguous(const Tensor& src, DType dtype);
inline Tensor contiguous(const Tensor& src) { return contiguous(src, src.dtype()); }

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  enum class Isa { Generic, Avx2, Avx512 };
  /** "avx512", "avx2" or "generic": the kernel set in use. */
  const char* isa() const;
  /** Whether bfloat16 products run on the AVX512-BF16 GEMM (else widened to float32). */
  bool bf16_gemm() const { return bf16_gemm_; }
  /** Whether the bf16 GEMM runs on AMX's tiles (Sapphire Rapids and later; UG_CPU_ISA=avx512bf16
   *  keeps it on vdpbf16ps). */
  bool amx_bf16() const { return amx_bf16_; }
  /** "amx", "avx512bf16" or "widened": what runs bfloat16 products. */
  const char* bf16_kernel() const { return amx_bf16_ ? "amx" : bf16_gemm_ ? "avx512bf16" : "widened"; }
  /** "avx512vnni" or "portable": what runs uint8 x int8 products (UG_CPU_ISA=avx512, avx2 or
   *  generic keeps them portable). */
  const char* int8_kernel() const { return vnni_ ? "avx512vnni" : "portable"; }

  void copy(const Tensor& src, const Tensor& dst) override;
  void fill(const Tensor& dst, const Scalar& value) override;
  void unary(ops::UnaryOp op, const Tensor& x, const Tensor& out) override;
  void binary(ops::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override;

  void uniform(const Tensor& out, const RandomStream& stream, double low, double high) override;
  void normal(const Tensor& out, const RandomStream& stream, double mean, double std) override;
  void randint(const Tensor& out, const RandomStream& stream, int64_t low, int64_t high) override;

  void reduce(ops::ReduceOp op, const Tensor& x, int64_t outer, int64_t reduced, int64_t inner,
              const Tensor& out) override;
  void scan(ops::ScanOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, const Tensor& out) override;
  void sort(const Tensor& x, int64_t rows, int64_t n, bool descending, bool stable, const Tensor& values,
            const Tensor& indices) override;

  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void matmul_u8s8(const Tensor& a, int64_t a_zero_point, const Tensor& b, const Tensor& out) override;
  void linear_u8s8(const Tensor& a, int64_t a_zero_point, const Tensor& b, const Tensor& scale, const Tensor& bias,
                   const Tensor& out) override;
  Tensor pack_u8s8(const Tensor& b) override;
  void quantize_u8(const Tensor& x, float inv_scale, int64_t zero_point, const Tensor& out) override;
  std::pair<double, double> float_range(const Tensor& x) override;

  ops::LinalgStatus solve(const Tensor& a, const Tensor& b, const Tensor& x) override;
  void slogdet(const Tensor& a, const Tensor& sign, const Tensor& logabsdet) override;
  ops::LinalgStatus cholesky(const Tensor& a, const Tensor& l, const Tensor& info) override;
  ops::LinalgStatus lu_factor(const Tensor& a, const Tensor& lu, const Tensor& pivots, const Tensor& info) override;
  ops::LinalgStatus ldl_factor(const Tensor& a, const Tensor& ld, const Tensor& pivots, const Tensor& info) override;
  void ldl_solve(const Tensor& ld, const Tensor& pivots, const Tensor& b, const Tensor& x) override;
  ops::LinalgStatus eigh(const Tensor& a, const Tensor& w, const Tensor& v) override;
  ops::LinalgStatus eig(const Tensor& a, const Tensor& w, const Tensor& v) override;
  ops::LinalgStatus svd(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh) override;
  void qr(const Tensor& a, const Tensor& q, const Tensor& r) override;
  void solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool unit, const Tensor& x) override;

  void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) override;
  void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, ops::ScatterOp op) override;
  void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) override;
  void nonzero(const Tensor& x, const Tensor& out) override;
  int64_t count_nonzero(const Tensor& x) override;

  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                  const Tensor& mean, const Tensor& rstd) override;
  void layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                           const Tensor& weight, const Tensor& dx, const Tensor& dweight, const Tensor& dbias) override;
  void batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                  const Tensor& mean, const Tensor& var) override;
  void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& var, double eps,
                           const Tensor& weight, const Tensor& dx, const Tensor& dweight, const Tensor& dbias) override;
  void softmax(const Tensor& x, bool log, const Tensor& y) override;
  void softmax_backward(const Tensor& g, const Tensor& y, bool log, const Tensor& dx) override;

  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal, double scale,
                 const Tensor& out, const Tensor& lse) override;
  void attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                          bool causal, double scale, const Tensor& out, const Tensor& lse, const Tensor& dq,
                          const Tensor& dk, const Tensor& dv) override;

  void nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index, const Tensor& loss,
                const Tensor& total_weight) override;
  void nll_loss_backward(const Tensor& g, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                         const Tensor& dx) override;
  void cross_entropy_backward(const Tensor& g, const Tensor& x, const Tensor& target, const Tensor& weight,
                              int64_t ignore_index, bool mean, const Tensor& dx) override;
  void squared_error(const Tensor& a, const Tensor& b, double scale, const Tensor& out) override;

  void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p, const Tensor& out) override;
  void conv2d_input_grad(const Tensor& g, const Tensor& w, const Conv2dParams& p, const Tensor& gx) override;
  void conv2d_weight_grad(const Tensor& x, const Tensor& g, const Conv2dParams& p, const Tensor& gw) override;
  void max_pool2d(const Tensor& x, const PoolWindows& win, const Tensor& out, const Tensor& indices) override;
  void avg_pool2d(const Tensor& x, const PoolWindows& win, const Tensor& out) override;
  void avg_pool2d_transpose(const Tensor& g, const PoolWindows& win, const Tensor& gx) override;

 private:
  Isa isa_;
  bool bf16_gemm_, amx_bf16_, vnni_;
};

CpuBackend& cpu_backend();

/** Calls f(float{}) or f(double{}) for the dtype: the kernels written for those two only. */
template <class F> void dispatch_float_or_double(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default: fail<TypeError>("[", op, "] the CPU kernel supports float32 and float64, got ", dtype);
  }
}

/** The same with std::complex<float> and std::complex<double> too (LAPACK's c and z routines). */
template <class F> void dispatch_inexact(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::Complex64: return f(std::complex<float>{});
    case DType::Complex128: return f(std::complex<double>{});
    default: return dispatch_float_or_double(dtype, op, std::forward<F>(f));
  }
}

}  // namespace ug::cpu
