// Matrix products. float32/float64 go to OpenBLAS, reading transposed operands in place
// (a unit stride on either axis), split into tasks for unigrad's thread pool; 16-bit floats
// are widened to float32, multiplied and rounded; integers use a plain triple loop.
#include <cblas.h>

#include <algorithm>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

// Products smaller than this many multiply-adds per task are not worth waking a thread for.
constexpr int64_t kMacsPerTask = 1 << 17;

/** How BLAS can read a [rows, cols] matrix with these strides, or false if it cannot. */
bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, CBLAS_TRANSPOSE& trans, int64_t& ld) {
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

template <class T> void gemm_blas(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  Tensor A = a, Bm = b;
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  if (!blas_layout(M, K, a.stride(1), a.stride(2), ta, lda)) {
    A = contiguous(a);
    blas_layout(M, K, A.stride(1), A.stride(2), ta, lda);
  }
  if (!blas_layout(K, N, b.stride(1), b.stride(2), tb, ldb)) {
    Bm = contiguous(b);
    blas_layout(K, N, Bm.stride(1), Bm.stride(2), tb, ldb);
  }
  const T* pa = static_cast<const T*>(A.raw_data());
  const T* pb = static_cast<const T*>(Bm.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  // OpenBLAS runs single-threaded (see thread_pool.cpp); the pool splits the product into
  // tasks of whole batch entries, else of row blocks, else of column blocks, each one GEMM.
  const int64_t threads = get_num_threads();
  const int64_t macs = B * M * N * K;
  const int64_t tasks = std::clamp<int64_t>(macs / kMacsPerTask, 1, threads);
  const bool by_batch = B >= tasks, by_rows = !by_batch && M >= N;
  const int64_t splits = by_batch ? B : by_rows ? std::min(tasks, M) : std::min(tasks, N);
  auto gemm = [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const T* ai = pa + bi * A.stride(0) + (ta == CblasNoTrans ? i0 * lda : i0);
    const T* bj = pb + bi * Bm.stride(0) + (tb == CblasNoTrans ? j0 : j0 * ldb);
    T* oij = po + bi * M * N + i0 * N + j0;
    const int64_t ldo = std::max<int64_t>(N, 1);
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, i1 - i0, j1 - j0, K, 1.0f, ai, lda, bj, ldb, 0.0f, oij, ldo);
    else cblas_dgemm(CblasRowMajor, ta, tb, i1 - i0, j1 - j0, K, 1.0, ai, lda, bj, ldb, 0.0, oij, ldo);
  };
  parallel_for(splits, by_batch ? (B + tasks - 1) / tasks : 1, [&](int64_t s0, int64_t s1) {
    if (by_batch) {
      for (int64_t bi = s0; bi < s1; ++bi) gemm(bi, 0, M, 0, N);
    } else if (by_rows) {
      gemm(0, M * s0 / splits, M * s1 / splits, 0, N);
    } else {
      gemm(0, 0, M, N * s0 / splits, N * s1 / splits);
    }
  });
}

template <class T> void gemm_loops(const Tensor& a, const Tensor& b, const Tensor& out) {
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
      Tensor a32 = contiguous(a, DType::Float32), b32 = contiguous(b, DType::Float32);
      Tensor o32 = empty(out.shape(), {.dtype = DType::Float32, .device = out.device()});
      gemm_blas<float>(a32, b32, o32);
      copy(o32, out);
      return;
    }
    case DType::Int32: return gemm_loops<int32_t>(a, b, out);
    case DType::Int64: return gemm_loops<int64_t>(a, b, out);
    case DType::Int16: return gemm_loops<int16_t>(a, b, out);
    case DType::Int8: return gemm_loops<int8_t>(a, b, out);
    case DType::UInt8: return gemm_loops<uint8_t>(a, b, out);
    case DType::Bool:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64: fail<TypeError>("[matmul] not implemented for dtype ", a.dtype());
  }
}

}  // namespace ug::cpu
