// Dense linear algebra: LAPACK's routines from the OpenBLAS the build already links (Debian's
// libopenblas exports the Fortran symbols sgesv_, dsyevd_, ...), declared here rather than
// through lapacke.h: the few prototypes below need no extra package, and LAPACKE's row-major
// entry points would transpose a copy of every matrix anyway. LAPACK is column-major, and a
// row-major buffer read column-major is the matrix's transpose, which most routines here can
// use as it is: det(A^T) = det(A), the lower triangle of a symmetric A row-major is the upper
// one column-major, and the SVD of A^T hands back A's factors swapped and transposed. Only
// solve, eig and qr copy their operands transposed. Batch entries run in parallel, one LAPACK call
// each (OpenBLAS runs single-threaded inside the pool's tasks).
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

// Fortran LAPACK (LP64: 32-bit integers). Character arguments carry a hidden length, passed
// by value after the other arguments (gfortran's convention).
extern "C" {
void sgesv_(const int* n, const int* nrhs, float* a, const int* lda, int* ipiv, float* b, const int* ldb, int* info);
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b, const int* ldb, int* info);
void cgesv_(const int* n, const int* nrhs, std::complex<float>* a, const int* lda, int* ipiv, std::complex<float>* b,
            const int* ldb, int* info);
void zgesv_(const int* n, const int* nrhs, std::complex<double>* a, const int* lda, int* ipiv, std::complex<double>* b,
            const int* ldb, int* info);
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr, float* wi,
            float* vl, const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork, int* info, size_t,
            size_t);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi,
            double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info, size_t,
            size_t);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<float>* a, const int* lda,
            std::complex<float>* w, std::complex<float>* vl, const int* ldvl, std::complex<float>* vr, const int* ldvr,
            std::complex<float>* work, const int* lwork, float* rwork, int* info, size_t, size_t);
void zgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<double>* a, const int* lda,
            std::complex<double>* w, std::complex<double>* vl, const int* ldvl, std::complex<double>* vr,
            const int* ldvr, std::complex<double>* work, const int* lwork, double* rwork, int* info, size_t, size_t);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void ssytrf_(const char* uplo, const int* n, float* a, const int* lda, int* ipiv, float* work, const int* lwork,
             int* info, size_t);
void dsytrf_(const char* uplo, const int* n, double* a, const int* lda, int* ipiv, double* work, const int* lwork,
             int* info, size_t);
void ssytrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv, float* b,
             const int* ldb, int* info, size_t);
void dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info, size_t);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
}

namespace ug::cpu {

namespace {

// One overload per dtype, so that the kernels below are written once.
void gesv(int n, int k, float* a, int* ipiv, float* b, int* info) { sgesv_(&n, &k, a, &n, ipiv, b, &n, info); }
void gesv(int n, int k, double* a, int* ipiv, double* b, int* info) { dgesv_(&n, &k, a, &n, ipiv, b, &n, info); }
void gesv(int n, int k, std::complex<float>* a, int* ipiv, std::complex<float>* b, int* info) {
  cgesv_(&n, &k, a, &n, ipiv, b, &n, info);
}
void gesv(int n, int k, std::complex<double>* a, int* ipiv, std::complex<double>* b, int* info) {
  zgesv_(&n, &k, a, &n, ipiv, b, &n, info);
}
void getrf(int m, int n, float* a, int* ipiv, int* info) {
  const int lda = std::max(m, 1);
  sgetrf_(&m, &n, a, &lda, ipiv, info);
}
void getrf(int m, int n, double* a, int* ipiv, int* info) {
  const int lda = std::max(m, 1);
  dgetrf_(&m, &n, a, &lda, ipiv, info);
}
void potrf(char uplo, int n, float* a, int* info) { spotrf_(&uplo, &n, a, &n, info, 1); }
void potrf(char uplo, int n, double* a, int* info) { dpotrf_(&uplo, &n, a, &n, info, 1); }
void syevd(char uplo, int n, float* a, float* w, float* work, int lwork, int* iwork, int liwork, int* info) {
  const char jobz = 'V';
  ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void syevd(char uplo, int n, double* a, double* w, double* work, int lwork, int* iwork, int liwork, int* info) {
  const char jobz = 'V';
  dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void gesdd(char jobz, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt, float* work, int lwork,
           int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(char jobz, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt, double* work,
           int lwork, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void geqrf(int m, int n, float* a, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, float* a, const float* tau, float* work, int lwork, int* info) {
  sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, const double* tau, double* work, int lwork, int* info) {
  dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}

void sytrf(int n, float* a, int* ipiv, float* work, int lwork, int* info) {
  const char uplo = 'L';
  const int lda = std::max(n, 1);
  ssytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
void sytrf(int n, double* a, int* ipiv, double* work, int lwork, int* info) {
  const char uplo = 'L';
  const int lda = std::max(n, 1);
  dsytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
void sytrs(int n, int k, const float* a, const int* ipiv, float* b, int* info) {
  const char uplo = 'L';
  const int lda = std::max(n, 1);
  ssytrs_(&uplo, &n, &k, a, &lda, ipiv, b, &lda, info, 1);
}
void sytrs(int n, int k, const double* a, const int* ipiv, double* b, int* info) {
  const char uplo = 'L';
  const int lda = std::max(n, 1);
  dsytrs_(&uplo, &n, &k, a, &lda, ipiv, b, &lda, info, 1);
}

// geev with right eigenvectors only (jobvl 'N', jobvr 'V'), on a column-major n x n matrix;
// a workspace query where lwork is -1. The real forms return the eigenvalues
// as their real and imaginary parts and each complex pair's eigenvectors packed in two
// real columns (eig_impl unpacks them); rwork is the complex forms' real workspace (2n).
void geev(int n, float* a, float* wr, float* wi, float* vr, float* work, int lwork, float*, int* info) {
  const char jobvl = 'N', jobvr = 'V';
  const int one = 1;
  sgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &n, work, &lwork, info, 1, 1);
}
void geev(int n, double* a, double* wr, double* wi, double* vr, double* work, int lwork, double*, int* info) {
  const char jobvl = 'N', jobvr = 'V';
  const int one = 1;
  dgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &n, work, &lwork, info, 1, 1);
}
void geev(int n, std::complex<float>* a, std::complex<float>* w, std::complex<float>*, std::complex<float>* vr,
          std::complex<float>* work, int lwork, float* rwork, int* info) {
  const char jobvl = 'N', jobvr = 'V';
  const int one = 1;
  cgeev_(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &n, work, &lwork, rwork, info, 1, 1);
}
void geev(int n, std::complex<double>* a, std::complex<double>* w, std::complex<double>*, std::complex<double>* vr,
          std::complex<double>* work, int lwork, double* rwork, int* info) {
  const char jobvl = 'N', jobvr = 'V';
  const int one = 1;
  zgeev_(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &n, work, &lwork, rwork, info, 1, 1);
}

template <class T> struct RealOf { using type = T; };
template <class T> struct RealOf<std::complex<T>> { using type = T; };

/** dst [cols, rows] = src [rows, cols] transposed: a row-major matrix to column-major or back. */
template <class T> void transpose(const T* src, int64_t rows, int64_t cols, T* dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}

/** A workspace size LAPACK returned from a query (as a float) made an int. */
template <class T> int work_size(T w) { return std::max(1, static_cast<int>(w)); }

/** Runs f(b) for each batch entry in parallel and keeps the failure of the lowest entry. */
template <class F> ops::LinalgStatus for_each_entry(int64_t batch, F&& f) {
  std::atomic<int64_t> first{std::numeric_limits<int64_t>::max()};
  std::vector<int> infos(batch, 0);
  parallel_for(batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      infos[b] = f(b);
      if (infos[b] != 0) {
        int64_t seen = first.load();
        while (b < seen && !first.compare_exchange_weak(seen, b)) {}
      }
    }
  });
  ops::LinalgStatus status;
  if (first.load() != std::numeric_limits<int64_t>::max()) status = {first.load(), infos[first.load()]};
  return status;
}

template <class T> ops::LinalgStatus solve_impl(const Tensor& a0, const Tensor& b0, const Tensor& x) {
  Tensor a = contiguous(a0), b = contiguous(b0);
  const int64_t B = a.size(0), n = a.size(1), k = b.size(2);
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* px = x.data_ptr<T>();
  return for_each_entry(B, [&](int64_t i) {
    std::vector<T> lu(n * n), rhs(n * k);
    std::vector<int> ipiv(n);
    transpose(pa + i * n * n, n, n, lu.data());
    transpose(pb + i * n * k, n, k, rhs.data());
    int info = 0;
    gesv(static_cast<int>(n), static_cast<int>(k), lu.data(), ipiv.data(), rhs.data(), &info);
    transpose(rhs.data(), k, n, px + i * n * k);
    return info;
  });
}

template <class T> void slogdet_impl(const Tensor& a0, const Tensor& sign, const Tensor& logabsdet) {
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), n = a.size(1);
  const T* pa = a.data_ptr<T>();
  T* ps = sign.data_ptr<T>();
  T* pl = logabsdet.data_ptr<T>();
  for_each_entry(B, [&](int64_t i) {
    // LU of the transpose (the buffer read column-major): the same determinant.
    std::vector<T> lu(pa + i * n * n, pa + (i + 1) * n * n);
    std::vector<int> ipiv(n);
    int info = 0;
    getrf(static_cast<int>(n), static_cast<int>(n), lu.data(), ipiv.data(), &info);
    T s = 1, l = 0;
    for (int64_t j = 0; j < n; ++j) {
      T d = lu[j * n + j];
      if (ipiv[j] != j + 1) s = -s;
      if (d < 0) s = -s;
      l += std::log(std::abs(d));
    }
    ps[i] = info > 0 ? T(0) : s;
    pl[i] = info > 0 ? -std::numeric_limits<T>::infinity() : l;
    return 0;
  });
}

template <class T> ops::LinalgStatus cholesky_impl(const Tensor& a0, const Tensor& l, const Tensor& infos) {
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), n = a.size(1);
  const T* pa = a.data_ptr<T>();
  T* pl = l.data_ptr<T>();
  int32_t* pinfo = infos.defined() ? infos.data_ptr<int32_t>() : nullptr;
  return for_each_entry(B, [&](int64_t i) {
    T* li = pl + i * n * n;
    std::copy(pa + i * n * n, pa + (i + 1) * n * n, li);
    // Row-major lower is column-major upper: potrf('U') finds U with A = U^T U there, which
    // read row-major is L = U^T.
    int info = 0;
    potrf('U', static_cast<int>(n), li, &info);
    for (int64_t r = 0; r < n; ++r) std::fill(li + r * n + r + 1, li + (r + 1) * n, T(0));
    if (pinfo) pinfo[i] = info;
    return info;
  });
}

template <class T>
ops::LinalgStatus lu_factor_impl(const Tensor& a0, const Tensor& lu, const Tensor& pivots, const Tensor& infos) {
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), m = a.size(1), n = a.size(2), k = std::min(m, n);
  const T* pa = a.data_ptr<T>();
  T* plu = lu.data_ptr<T>();
  int32_t* ppiv = pivots.data_ptr<int32_t>();
  int32_t* pinfo = infos.data_ptr<int32_t>();
  return for_each_entry(B, [&](int64_t i) {
    // getrf pivots rows: it needs A column-major, not the transpose a row-major buffer is.
    std::vector<T> buf(m * n);
    transpose(pa + i * m * n, m, n, buf.data());
    int info = 0;
    getrf(static_cast<int>(m), static_cast<int>(n), buf.data(), ppiv + i * k, &info);
    transpose(buf.data(), n, m, plu + i * m * n);
    pinfo[i] = info;
    return info;
  });
}

template <class T>
ops::LinalgStatus ldl_factor_impl(const Tensor& a0, const Tensor& ld, const Tensor& pivots, const Tensor& infos) {
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), n = a.size(1);
  const T* pa = a.data_ptr<T>();
  T* pld = ld.data_ptr<T>();
  int32_t* ppiv = pivots.data_ptr<int32_t>();
  int32_t* pinfo = infos.data_ptr<int32_t>();
  return for_each_entry(B, [&](int64_t i) {
    // Column-major, so that uplo L reads A's lower triangle, as torch's call does.
    std::vector<T> buf(n * n);
    transpose(pa + i * n * n, n, n, buf.data());
    const int ni = static_cast<int>(n);
    T lwork_q = 0;
    int info = 0;
    sytrf(ni, buf.data(), ppiv + i * n, &lwork_q, -1, &info);
    std::vector<T> work(work_size(lwork_q));
    sytrf(ni, buf.data(), ppiv + i * n, work.data(), static_cast<int>(work.size()), &info);
    T* ldi = pld + i * n * n;
    transpose(buf.data(), n, n, ldi);
    for (int64_t r = 0; r < n; ++r) std::fill(ldi + r * n + r + 1, ldi + (r + 1) * n, T(0));
    pinfo[i] = info;
    return info;
  });
}

template <class T> void ldl_solve_impl(const Tensor& ld0, const Tensor& pivots0, const Tensor& b0, const Tensor& x) {
  Tensor ld = contiguous(ld0), pivots = contiguous(pivots0), b = contiguous(b0);
  const int64_t B = ld.size(0), n = ld.size(1), k = b.size(2);
  const T* pld = ld.data_ptr<T>();
  const int32_t* ppiv = pivots.data_ptr<int32_t>();
  const T* pb = b.data_ptr<T>();
  T* px = x.data_ptr<T>();
  for_each_entry(B, [&](int64_t i) {
    std::vector<T> factors(n * n), rhs(n * k);
    transpose(pld + i * n * n, n, n, factors.data());
    transpose(pb + i * n * k, n, k, rhs.data());
    int info = 0;
    sytrs(static_cast<int>(n), static_cast<int>(k), factors.data(), ppiv + i * n, rhs.data(), &info);
    transpose(rhs.data(), k, n, px + i * n * k);
    return 0;
  });
}

template <class T> ops::LinalgStatus eigh_impl(const Tensor& a0, const Tensor& w, const Tensor& v) {
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), n = a.size(1);
  const T* pa = a.data_ptr<T>();
  T* pw = w.data_ptr<T>();
  T* pv = v.data_ptr<T>();
  return for_each_entry(B, [&](int64_t i) {
    std::vector<T> z(pa + i * n * n, pa + (i + 1) * n * n);
    const int ni = static_cast<int>(n);
    T lwork_q = 0;
    int liwork_q = 0, info = 0;
    syevd('U', ni, z.data(), pw + i * n, &lwork_q, -1, &liwork_q, -1, &info);
    std::vector<T> work(work_size(lwork_q));
    std::vector<int> iwork(std::max(1, liwork_q));
    syevd('U', ni, z.data(), pw + i * n, work.data(), static_cast<int>(work.size()), iwork.data(),
          static_cast<int>(iwork.size()), &info);
    transpose(z.data(), n, n, pv + i * n * n);  // column-major eigenvectors to row-major columns
    return info;
  });
}

template <class T> ops::LinalgStatus eig_impl(const Tensor& a0, const Tensor& w, const Tensor& v) {
  using R = typename RealOf<T>::type;
  using C = std::complex<R>;
  constexpr bool kReal = std::is_same_v<T, R>;
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), n = a.size(1);
  const int ni = static_cast<int>(n);
  const T* pa = a.data_ptr<T>();
  C* pw = w.data_ptr<C>();
  C* pv = v.data_ptr<C>();
  return for_each_entry(B, [&](int64_t i) {
    std::vector<T> buf(n * n), wr(n), wi(kReal ? n : 1), vr(n * n);
    std::vector<R> rwork(kReal ? 1 : 2 * n);
    transpose(pa + i * n * n, n, n, buf.data());  // geev reads A itself, column-major
    T lwork_q = 0;
    int info = 0;
    geev(ni, buf.data(), wr.data(), wi.data(), vr.data(), &lwork_q, -1, rwork.data(), &info);
    std::vector<T> work(work_size(std::real(lwork_q)));
    geev(ni, buf.data(), wr.data(), wi.data(), vr.data(), work.data(), static_cast<int>(work.size()), rwork.data(),
         &info);
    if (info != 0) return info;
    C* wo = pw + i * n;
    C* vo = pv + i * n * n;  // row-major: eigenvector j is column j
    for (int64_t j = 0; j < n; ++j) {
      if constexpr (kReal) {
        wo[j] = C(wr[j], wi[j]);
        if (wi[j] == 0) {
          for (int64_t r = 0; r < n; ++r) vo[r * n + j] = C(vr[j * n + r], 0);
        } else {  // a conjugate pair, positive imaginary part first: columns j and j + 1 hold re, im
          for (int64_t r = 0; r < n; ++r) {
            vo[r * n + j] = C(vr[j * n + r], vr[(j + 1) * n + r]);
            vo[r * n + j + 1] = std::conj(vo[r * n + j]);
          }
          wo[j + 1] = C(wr[j + 1], wi[j + 1]);
          ++j;
        }
      } else {
        wo[j] = wr[j];
        for (int64_t r = 0; r < n; ++r) vo[r * n + j] = vr[j * n + r];
      }
    }
    return 0;
  });
}

template <class T> ops::LinalgStatus svd_impl(const Tensor& a0, const Tensor& u, const Tensor& s, const Tensor& vh) {
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), m = a.size(1), n = a.size(2), k = std::min(m, n);
  const bool vectors = u.defined(), full = vectors && (u.size(2) != k || vh.size(1) != k);
  const char jobz = !vectors ? 'N' : full ? 'A' : 'S';
  // The buffer holds A^T (n x m column-major) = U' S V'^T, so A = V' S U'^T: LAPACK's vt,
  // read row-major, is A's U, and its u is A's Vh.
  const int64_t ucols = jobz == 'A' ? m : k, vrows = jobz == 'A' ? n : k;
  const T* pa = a.data_ptr<T>();
  T* ps = s.data_ptr<T>();
  T* pu = vectors ? u.data_ptr<T>() : nullptr;
  T* pv = vectors ? vh.data_ptr<T>() : nullptr;
  return for_each_entry(B, [&](int64_t i) {
    std::vector<T> buf(pa + i * m * n, pa + (i + 1) * m * n), dummy(1);
    std::vector<int> iwork(8 * std::max<int64_t>(k, 1));
    T* lap_u = vectors ? pv + i * vrows * n : dummy.data();   // LAPACK's u: n x vrows
    T* lap_vt = vectors ? pu + i * m * ucols : dummy.data();  // LAPACK's vt: ucols x m
    const int ldu = static_cast<int>(std::max<int64_t>(n, 1)), ldvt = static_cast<int>(std::max<int64_t>(ucols, 1));
    T lwork_q = 0;
    int info = 0;
    gesdd(jobz, static_cast<int>(n), static_cast<int>(m), buf.data(), ps + i * k, lap_u, ldu, lap_vt, ldvt, &lwork_q,
          -1, iwork.data(), &info);
    std::vector<T> work(work_size(lwork_q));
    gesdd(jobz, static_cast<int>(n), static_cast<int>(m), buf.data(), ps + i * k, lap_u, ldu, lap_vt, ldvt, work.data(),
          static_cast<int>(work.size()), iwork.data(), &info);
    return info;
  });
}

template <class T> void qr_impl(const Tensor& a0, const Tensor& q, const Tensor& r) {
  Tensor a = contiguous(a0);
  const int64_t B = a.size(0), m = a.size(1), n = a.size(2), k = std::min(m, n);
  const int64_t qcols = q.defined() ? q.size(2) : 0, rrows = r.size(1);
  const T* pa = a.data_ptr<T>();
  T* pq = q.defined() ? q.data_ptr<T>() : nullptr;
  T* pr = r.data_ptr<T>();
  for_each_entry(B, [&](int64_t i) {
    // Column-major A, with room for the m columns a complete Q has.
    std::vector<T> buf(m * std::max(n, qcols)), tau(std::max<int64_t>(k, 1));
    transpose(pa + i * m * n, m, n, buf.data());
    const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
    T lwork_q = 0;
    int info = 0;
    geqrf(mi, ni, buf.data(), tau.data(), &lwork_q, -1, &info);
    std::vector<T> work(work_size(lwork_q));
    geqrf(mi, ni, buf.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
    T* ri = pr + i * rrows * n;
    for (int64_t row = 0; row < rrows; ++row)
      for (int64_t col = 0; col < n; ++col) ri[row * n + col] = col >= row ? buf[col * m + row] : T(0);
    if (pq) {
      const int qi = static_cast<int>(qcols);
      orgqr(mi, qi, ki, buf.data(), tau.data(), &lwork_q, -1, &info);
      work.resize(std::max<size_t>(work.size(), work_size(lwork_q)));
      orgqr(mi, qi, ki, buf.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
      transpose(buf.data(), qcols, m, pq + i * m * qcols);
    }
    return 0;
  });
}

template <class T>
void solve_triangular_impl(const Tensor& a0, const Tensor& b, bool upper, bool unit, const Tensor& x) {
  Tensor a = contiguous(a0);
  cpu_backend().copy(b, x);
  const int64_t B = a.size(0), n = a.size(1), k = x.size(2);
  const T* pa = a.data_ptr<T>();
  T* px = x.data_ptr<T>();
  const CBLAS_UPLO uplo = upper ? CblasUpper : CblasLower;
  const CBLAS_DIAG diag = unit ? CblasUnit : CblasNonUnit;
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  const int lda = std::max(ni, 1), ldx = std::max(ki, 1);
  for_each_entry(B, [&](int64_t i) {
    if constexpr (std::is_same_v<T, float>)
      cblas_strsm(CblasRowMajor, CblasLeft, uplo, CblasNoTrans, diag, ni, ki, 1.0f, pa + i * n * n, lda, px + i * n * k,
                  ldx);
    else
      cblas_dtrsm(CblasRowMajor, CblasLeft, uplo, CblasNoTrans, diag, ni, ki, 1.0, pa + i * n * n, lda, px + i * n * k,
                  ldx);
    return 0;
  });
}

}  // namespace

ops::LinalgStatus CpuBackend::solve(const Tensor& a, const Tensor& b, const Tensor& x) {
  ops::LinalgStatus status;
  dispatch_inexact(a.dtype(), "linalg.solve", [&](auto t) { status = solve_impl<decltype(t)>(a, b, x); });
  return status;
}

void CpuBackend::slogdet(const Tensor& a, const Tensor& sign, const Tensor& logabsdet) {
  dispatch_float_or_double(a.dtype(), "linalg.slogdet", [&](auto t) { slogdet_impl<decltype(t)>(a, sign, logabsdet); });
}

ops::LinalgStatus CpuBackend::cholesky(const Tensor& a, const Tensor& l, const Tensor& info) {
  ops::LinalgStatus status;
  dispatch_float_or_double(a.dtype(), "linalg.cholesky",
                           [&](auto t) { status = cholesky_impl<decltype(t)>(a, l, info); });
  return status;
}

ops::LinalgStatus CpuBackend::lu_factor(const Tensor& a, const Tensor& lu, const Tensor& pivots, const Tensor& info) {
  ops::LinalgStatus status;
  dispatch_float_or_double(a.dtype(), "linalg.lu_factor",
                           [&](auto t) { status = lu_factor_impl<decltype(t)>(a, lu, pivots, info); });
  return status;
}

ops::LinalgStatus CpuBackend::ldl_factor(const Tensor& a, const Tensor& ld, const Tensor& pivots, const Tensor& info) {
  ops::LinalgStatus status;
  dispatch_float_or_double(a.dtype(), "linalg.ldl_factor",
                           [&](auto t) { status = ldl_factor_impl<decltype(t)>(a, ld, pivots, info); });
  return status;
}

void CpuBackend::ldl_solve(const Tensor& ld, const Tensor& pivots, const Tensor& b, const Tensor& x) {
  dispatch_float_or_double(ld.dtype(), "linalg.ldl_solve",
                           [&](auto t) { ldl_solve_impl<decltype(t)>(ld, pivots, b, x); });
}

ops::LinalgStatus CpuBackend::eigh(const Tensor& a, const Tensor& w, const Tensor& v) {
  ops::LinalgStatus status;
  dispatch_float_or_double(a.dtype(), "linalg.eigh", [&](auto t) { status = eigh_impl<decltype(t)>(a, w, v); });
  return status;
}

ops::LinalgStatus CpuBackend::eig(const Tensor& a, const Tensor& w, const Tensor& v) {
  ops::LinalgStatus status;
  dispatch_inexact(a.dtype(), "linalg.eig", [&](auto t) { status = eig_impl<decltype(t)>(a, w, v); });
  return status;
}

ops::LinalgStatus CpuBackend::svd(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh) {
  ops::LinalgStatus status;
  dispatch_float_or_double(a.dtype(), "linalg.svd", [&](auto t) { status = svd_impl<decltype(t)>(a, u, s, vh); });
  return status;
}

void CpuBackend::qr(const Tensor& a, const Tensor& q, const Tensor& r) {
  dispatch_float_or_double(a.dtype(), "linalg.qr", [&](auto t) { qr_impl<decltype(t)>(a, q, r); });
}

void CpuBackend::solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool unit, const Tensor& x) {
  dispatch_float_or_double(a.dtype(), "linalg.solve_triangular",
                           [&](auto t) { solve_triangular_impl<decltype(t)>(a, b, upper, unit, x); });
}

}  // namespace ug::cpu
