// Matrix products. float32/float64 go to OpenBLAS, reading transposed operands in place
// (a unit stride on either axis); 16-bit floats are widened to float32, multiplied and
// rounded; integers use a plain triple loop.
#include <cblas.h>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

/** How BLAS can read a [rows, cols] matrix with these strides, or false if it cannot. */
bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, CBLAS_TRANSPOSE& trans,
                 int64_t& ld) {
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1)) {
    trans = CblasNoTrans;
    ld = std::max<int64_t>({rs, cols, 1});
    return true;
  }
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1)) {
    trans = CblasTrans;
    ld = std::max<int64_t>({cs, rows, 1});
    return true;
  }
  return false;
}

template <class T>
void gemm_blas(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  Tensor A = a, Bm = b;
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  if (!blas_layout(M, K, a.stride(1), a.stride(2), ta, lda)) {
    A = a.contiguous();
    blas_layout(M, K, A.stride(1), A.stride(2), ta, lda);
  }
  if (!blas_layout(K, N, b.stride(1), b.stride(2), tb, ldb)) {
    Bm = b.contiguous();
    blas_layout(K, N, Bm.stride(1), Bm.stride(2), tb, ldb);
  }
  const T* pa = static_cast<const T*>(A.raw_data());
  const T* pb = static_cast<const T*>(Bm.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  for (int64_t i = 0; i < B; ++i) {
    const T* ai = pa + i * A.stride(0);
    const T* bi = pb + i * Bm.stride(0);
    T* oi = po + i * M * N;
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, ai, lda, bi, ldb, 0.0f, oi, std::max<int64_t>(N, 1));
    else
      cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, ai, lda, bi, ldb, 0.0, oi, std::max<int64_t>(N, 1));
  }
}

template <class T>
void gemm_loops(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  const int64_t as0 = a.stride(0), as1 = a.stride(1), as2 = a.stride(2);
  const int64_t bs0 = b.stride(0), bs1 = b.stride(1), bs2 = b.stride(2);
  parallel_for(B * M, std::max<int64_t>(1, 4096 / std::max<int64_t>(N * K, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t bi = r / M, i = r % M;
      for (int64_t j = 0; j < N; ++j) {
        T acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc = static_cast<T>(acc + pa[bi * as0 + i * as1 + k * as2] * pb[bi * bs0 + k * bs1 + j * bs2]);
        po[(bi * M + i) * N + j] = acc;
      }
    }
  });
}

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.numel() == 0) return;
  if (a.size(2) == 0) {
    fill(out, 0);
    return;
  }
  switch (out.dtype()) {
    case DType::Float32: return gemm_blas<float>(a, b, out);
    case DType::Float64: return gemm_blas<double>(a, b, out);
    case DType::Float16:
    case DType::BFloat16: {
      Tensor a32 = a.to(DType::Float32), b32 = b.to(DType::Float32);
      Tensor o32 = empty(out.shape(), {.dtype = DType::Float32, .device = out.device()});
      gemm_blas<float>(a32, b32, o32);
      copy(o32, out);
      return;
    }
    case DType::Int32: return gemm_loops<int32_t>(a, b, out);
    case DType::Int64: return gemm_loops<int64_t>(a, b, out);
    case DType::UInt8: return gemm_loops<uint8_t>(a, b, out);
    case DType::Bool: fail<TypeError>("[matmul] not implemented for dtype bool");
  }
}

}  // namespace ug::cpu
