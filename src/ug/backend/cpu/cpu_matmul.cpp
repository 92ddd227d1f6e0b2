// Matrix products. float32/float64 go to OpenBLAS, reading transposed operands in place
// (a unit stride on either axis), split into tasks for unigrad's thread pool; bfloat16 goes to
// unigrad's own AVX512-BF16 GEMM where the CPU has it (Debian's OpenBLAS 0.3.21 exports no
// sbgemm); other 16-bit products are widened to float32 block by block, multiplied and
// rounded; integers use a plain triple loop.
#include <cblas.h>

#include <algorithm>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/backend/cpu/cpu_bf16_gemm.h"
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
  // Rows where there are more of them than columns, or more than the sum's length (a weight's
  // gradient, [128, 64] x [64, 784]: each task then writes whole rows of the output, 59 us on
  // two threads of an Emerald Rapids Xeon against 89 by columns and 96 on one thread).
  const int64_t threads = get_num_threads();
  const int64_t macs = B * M * N * K;
  const int64_t tasks = std::clamp<int64_t>(macs / kMacsPerTask, 1, threads);
  const bool by_batch = B >= tasks, by_rows = !by_batch && (M >= N || K < M);
  const int64_t splits = by_batch ? B : by_rows ? std::min(tasks, M) : std::min(tasks, N);
  auto gemm = [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const T* ai = pa + bi * A.stride(0) + (ta == CblasNoTrans ? i0 * lda : i0);
    const T* bj = pb + bi * Bm.stride(0) + (tb == CblasNoTrans ? j0 : j0 * ldb);
    T* oij = po + bi * M * N + i0 * N + j0;
    const int64_t ldo = std::max<int64_t>(N, 1);
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasRowMajor, ta, tb, i1 - i0, j1 - j0, K, 1.0f, ai, lda, bj, ldb, 0.0f, oij, ldo);
    } else if constexpr (std::is_same_v<T, double>) {
      cblas_dgemm(CblasRowMajor, ta, tb, i1 - i0, j1 - j0, K, 1.0, ai, lda, bj, ldb, 0.0, oij, ldo);
    } else {
      const T one(1), zero(0);
      if constexpr (std::is_same_v<T, std::complex<float>>)
        cblas_cgemm(CblasRowMajor, ta, tb, i1 - i0, j1 - j0, K, &one, ai, lda, bj, ldb, &zero, oij, ldo);
      else cblas_zgemm(CblasRowMajor, ta, tb, i1 - i0, j1 - j0, K, &one, ai, lda, bj, ldb, &zero, oij, ldo);
    }
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

// A 16-bit product is widened in blocks of this many float32 elements at most per operand.
constexpr int64_t kWidenBlock = 1 << 18;

/** The [n0, n0 + n) x [r0, r0 + r) x [c0, c0 + c) block of a [B, R, C] tensor, as a view. */
Tensor block(const Tensor& t, int64_t n0, int64_t n, int64_t r0, int64_t r, int64_t c0, int64_t c) {
  return Tensor(make_ref<TensorImpl>(t.storage(), Shape{n, r, c}, Strides{t.stride(0), t.stride(1), t.stride(2)},
                                     t.storage_offset() + n0 * t.stride(0) + r0 * t.stride(1) + c0 * t.stride(2),
                                     t.dtype()));
}

/** A float16/bfloat16 product through sgemm without a float32 copy of a whole operand or of
 *  the result: blocks of batch entries (small products, as attention's), else panels of
 *  output columns and blocks of rows, are widened as they are needed, multiplied, and each
 *  output block is rounded once. The float32 scratch stays within a few kWidenBlocks. */
void gemm_widened(CpuBackend& backend, const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  auto product = [&](int64_t n0, int64_t n, int64_t i0, int64_t mb, int64_t j0, int64_t nb) {
    Tensor a32 = contiguous(block(a, n0, n, i0, mb, 0, K), DType::Float32);
    Tensor b32 = contiguous(block(b, n0, n, 0, K, j0, nb), DType::Float32);
    Tensor o32 = empty({n, mb, nb}, {.dtype = DType::Float32, .device = out.device()});
    gemm_blas<float>(a32, b32, o32);
    backend.copy(o32, block(out, n0, n, i0, mb, j0, nb));
  };
  const int64_t per_entry = std::max<int64_t>({M * K, K * N, M * N, 1});
  if (per_entry <= kWidenBlock) {  // whole entries, several at a time
    const int64_t chunk = std::max<int64_t>(1, kWidenBlock / per_entry);
    for (int64_t n0 = 0; n0 < B; n0 += chunk) product(n0, std::min(chunk, B - n0), 0, M, 0, N);
    return;
  }
  const int64_t nb = std::clamp<int64_t>(kWidenBlock / std::max<int64_t>(K, 1), 64, std::max<int64_t>(N, 1));
  const int64_t mb =
      std::clamp<int64_t>(kWidenBlock / std::max<int64_t>(std::max(K, nb), 1), 64, std::max<int64_t>(M, 1));
  for (int64_t n0 = 0; n0 < B; ++n0)
    for (int64_t j0 = 0; j0 < N; j0 += nb)
      for (int64_t i0 = 0; i0 < M; i0 += mb) product(n0, 1, i0, std::min(mb, M - i0), j0, std::min(nb, N - j0));
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
    case DType::Complex64: return gemm_blas<std::complex<float>>(a, b, out);
    case DType::Complex128: return gemm_blas<std::complex<double>>(a, b, out);
    case DType::BFloat16:
      if (bf16_gemm_) return gemm_bf16(a, b, out, amx_bf16_);
      return gemm_widened(*this, a, b, out);
    case DType::Float16: return gemm_widened(*this, a, b, out);
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
