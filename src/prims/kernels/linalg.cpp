// The LAPACK kernels: each matrix of the batch is one task on parax's pool, with OpenBLAS
// kept single-threaded (as for GEMM) so tasks do not oversubscribe the cores. A matrix
// whose factorization fails becomes NaNs, as JAX's CPU lowering makes it.
#include "prims/kernels/linalg.h"

#include <cblas.h>

#include <algorithm>
#include <complex>
#include <limits>
#include <mutex>
#include <numeric>
#include <vector>

#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapack.h>

#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// ---- LAPACK by type ---------------------------------------------------------------------

int potrf(char uplo, int n, float* a) {
  int info = 0;
  LAPACK_spotrf(&uplo, &n, a, &n, &info);
  return info;
}
int potrf(char uplo, int n, double* a) {
  int info = 0;
  LAPACK_dpotrf(&uplo, &n, a, &n, &info);
  return info;
}

int getrf(int m, int n, float* a, int* ipiv) {
  int info = 0;
  LAPACK_sgetrf(&m, &n, a, &m, ipiv, &info);
  return info;
}
int getrf(int m, int n, double* a, int* ipiv) {
  int info = 0;
  LAPACK_dgetrf(&m, &n, a, &m, ipiv, &info);
  return info;
}

int geqrf(int m, int n, float* a, float* tau, float* work, int lwork) {
  int info = 0;
  LAPACK_sgeqrf(&m, &n, a, &m, tau, work, &lwork, &info);
  return info;
}
int geqrf(int m, int n, double* a, double* tau, double* work, int lwork) {
  int info = 0;
  LAPACK_dgeqrf(&m, &n, a, &m, tau, work, &lwork, &info);
  return info;
}

int orgqr(int m, int n, int k, float* a, const float* tau, float* work, int lwork) {
  int info = 0;
  LAPACK_sorgqr(&m, &n, &k, a, &m, tau, work, &lwork, &info);
  return info;
}
int orgqr(int m, int n, int k, double* a, const double* tau, double* work, int lwork) {
  int info = 0;
  LAPACK_dorgqr(&m, &n, &k, a, &m, tau, work, &lwork, &info);
  return info;
}

int gesdd(char jobz, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt,
          float* work, int lwork, int* iwork) {
  int info = 0;
  LAPACK_sgesdd(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, &info);
  return info;
}
int gesdd(char jobz, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt,
          double* work, int lwork, int* iwork) {
  int info = 0;
  LAPACK_dgesdd(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, &info);
  return info;
}

int syevd(char uplo, int n, float* a, float* w, float* work, int lwork, int* iwork, int liwork) {
  int info = 0;
  const char jobz = 'V';
  LAPACK_ssyevd(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, &info);
  return info;
}
int syevd(char uplo, int n, double* a, double* w, double* work, int lwork, int* iwork, int liwork) {
  int info = 0;
  const char jobz = 'V';
  LAPACK_dsyevd(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, &info);
  return info;
}

void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
          const float* a, int lda, float* b) {
  cblas_strsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0f, a, lda, b, n);
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
          const double* a, int lda, double* b) {
  cblas_dtrsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0, a, lda, b, n);
}

// ---- layout -----------------------------------------------------------------------------

// Copies the row-major rows x cols matrix `src` to column-major `dst` (leading dim `ld`).
template <class T>
void to_col_major(const T* src, int64_t rows, int64_t cols, T* dst, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) dst[i + j * ld] = src[i * cols + j];
  }
}

// Copies the first rows x cols of column-major `src` (leading dim `ld`) to row-major `dst`.
template <class T>
void from_col_major(const T* src, int64_t ld, int64_t rows, int64_t cols, T* dst) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = src[i + j * ld];
  }
}

template <class T>
void fill_nan(T* x, int64_t n) {
  std::fill_n(x, n, std::numeric_limits<T>::quiet_NaN());
}

template <class T>
void set_eye(T* x, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) x[i * cols + j] = T(i == j);
  }
}

// The number of matrices in an operand of type `a` whose last `core_rank` dims are one.
int64_t batch_of(const Aval& a, size_t core_rank) {
  int64_t b = 1;
  for (size_t d = 0; d + core_rank < a.shape.size(); ++d) b *= a.shape[d];
  return b;
}

// Runs body(i) for every batch element i, in parallel.
template <class F>
void for_each_matrix(int64_t batch, F&& body) {
  single_threaded_blas();
  parallel_chunks(batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

int64_t dim(const Aval& a, int from_end) { return a.shape[a.shape.size() - size_t(from_end)]; }

// True if every output is empty: there is nothing to compute, however many (empty)
// matrices the batch holds.
bool outputs_empty(const core::KernelCall& call) {
  return std::all_of(call.out_avals.begin(), call.out_avals.end(), [](const Aval& a) {
    return std::find(a.shape.begin(), a.shape.end(), 0) != a.shape.end();
  });
}

template <class F>
void by_dtype(const core::KernelCall& call, F&& f) {
  if (outputs_empty(call)) return;
  if (call.in_avals[0].dtype == DType::float32) {
    f(float{});
  } else {
    PARAX_CHECK(call.in_avals[0].dtype == DType::float64, "LAPACK kernels take float32/float64");
    f(double{});
  }
}

// Applies the row swaps `pivots` (row i with row pivots[i], in order) to the identity.
void pivots_to_permutation(const int32_t* pivots, int64_t k, int32_t* perm, int64_t m) {
  std::iota(perm, perm + m, 0);
  for (int64_t i = 0; i < k; ++i) {
    const int32_t j = pivots[i];
    if (j >= 0 && j < m) std::swap(perm[i], perm[j]);
  }
}

}  // namespace

// ---- kernels ----------------------------------------------------------------------------

void cholesky(const core::KernelCall& call) {
  const int64_t n = dim(call.in_avals[0], 1);
  by_dtype(call, [&](auto zero) {
    using T = decltype(zero);
    const T* x = in_ptr<T>(call, 0);
    T* out = out_ptr<T>(call, 0);
    for_each_matrix(batch_of(call.in_avals[0], 2), [&](int64_t b) {
      std::vector<T> a(static_cast<size_t>(n * n));
      to_col_major(x + b * n * n, n, n, a.data(), n);
      T* o = out + b * n * n;
      if (n > 0 && potrf('L', int(n), a.data()) != 0) return fill_nan(o, n * n);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) o[i * n + j] = j <= i ? a[size_t(i + j * n)] : T(0);
      }
    });
  });
}

void lu(const core::KernelCall& call) {
  const int64_t m = dim(call.in_avals[0], 2);
  const int64_t n = dim(call.in_avals[0], 1);
  const int64_t k = std::min(m, n);
  by_dtype(call, [&](auto zero) {
    using T = decltype(zero);
    const T* x = in_ptr<T>(call, 0);
    T* out = out_ptr<T>(call, 0);
    int32_t* pivots = out_ptr<int32_t>(call, 1);
    int32_t* perms = out_ptr<int32_t>(call, 2);
    for_each_matrix(batch_of(call.in_avals[0], 2), [&](int64_t b) {
      std::vector<T> a(static_cast<size_t>(m * n));
      std::vector<int> ipiv(static_cast<size_t>(k));
      to_col_major(x + b * m * n, m, n, a.data(), m);
      // info > 0 only says U is singular: the factorization is still valid.
      const int info = k > 0 ? getrf(int(m), int(n), a.data(), ipiv.data()) : 0;
      T* o = out + b * m * n;
      if (info < 0) {
        fill_nan(o, m * n);
      } else {
        from_col_major(a.data(), m, m, n, o);
      }
      int32_t* piv = pivots + b * k;
      for (int64_t i = 0; i < k; ++i) piv[i] = ipiv[size_t(i)] - 1;
      pivots_to_permutation(piv, k, perms + b * m, m);
    });
  });
}

void lu_pivots_to_permutation(const core::KernelCall& call) {
  const int64_t k = dim(call.in_avals[0], 1);
  const int64_t m = dim(call.out_avals[0], 1);
  const int32_t* pivots = in_ptr<int32_t>(call, 0);
  int32_t* perms = out_ptr<int32_t>(call, 0);
  const int64_t batch = batch_of(call.in_avals[0], 1);
  if (outputs_empty(call)) return;
  parallel_chunks(batch, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, m)),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t b = begin; b < end; ++b) {
                      pivots_to_permutation(pivots + b * k, k, perms + b * m, m);
                    }
                  });
}

void qr(const core::KernelCall& call) {
  const int64_t m = dim(call.in_avals[0], 2);
  const int64_t n = dim(call.in_avals[0], 1);
  const int64_t k = std::min(m, n);
  const int64_t kq = dim(call.out_avals[0], 1);  // m (full_matrices) or k
  by_dtype(call, [&](auto zero) {
    using T = decltype(zero);
    const T* x = in_ptr<T>(call, 0);
    T* q_out = out_ptr<T>(call, 0);
    T* r_out = out_ptr<T>(call, 1);
    for_each_matrix(batch_of(call.in_avals[0], 2), [&](int64_t b) {
      T* q = q_out + b * m * kq;
      T* r = r_out + b * kq * n;
      std::fill_n(r, kq * n, T(0));
      if (k == 0) return set_eye(q, m, kq);
      std::vector<T> a(static_cast<size_t>(m * std::max(n, kq)));
      std::vector<T> tau(static_cast<size_t>(k));
      to_col_major(x + b * m * n, m, n, a.data(), m);
      T size = 0, size_q = 0;
      geqrf(int(m), int(n), a.data(), tau.data(), &size, -1);
      orgqr(int(m), int(kq), int(k), a.data(), tau.data(), &size_q, -1);
      std::vector<T> work(static_cast<size_t>(std::max<T>({size, size_q, T(1)})));
      const int lwork = int(work.size());
      if (geqrf(int(m), int(n), a.data(), tau.data(), work.data(), lwork) != 0) {
        fill_nan(q, m * kq);
        return fill_nan(r, kq * n);
      }
      for (int64_t i = 0; i < std::min(kq, m); ++i) {
        for (int64_t j = i; j < n; ++j) r[i * n + j] = a[size_t(i + j * m)];
      }
      if (orgqr(int(m), int(kq), int(k), a.data(), tau.data(), work.data(), lwork) != 0) {
        return fill_nan(q, m * kq);
      }
      from_col_major(a.data(), m, m, kq, q);
    });
  });
}

void svd(const core::KernelCall& call) {
  const int64_t m = dim(call.in_avals[0], 2);
  const int64_t n = dim(call.in_avals[0], 1);
  const int64_t k = std::min(m, n);
  const bool compute_uv = call.outputs.size() == 3;
  const int64_t ucols = compute_uv ? dim(call.out_avals[1], 1) : 0;  // m or k
  const int64_t vrows = compute_uv ? dim(call.out_avals[2], 2) : 0;  // n or k
  const char jobz = !compute_uv ? 'N' : ucols == m && vrows == n ? 'A' : 'S';
  by_dtype(call, [&](auto zero) {
    using T = decltype(zero);
    const T* x = in_ptr<T>(call, 0);
    for_each_matrix(batch_of(call.in_avals[0], 2), [&](int64_t b) {
      T* s = out_ptr<T>(call, 0) + b * k;
      T* u = compute_uv ? out_ptr<T>(call, 1) + b * m * ucols : nullptr;
      T* vt = compute_uv ? out_ptr<T>(call, 2) + b * vrows * n : nullptr;
      if (k == 0) {
        if (compute_uv) set_eye(u, m, ucols);
        if (compute_uv) set_eye(vt, vrows, n);
        return;
      }
      std::vector<T> a(static_cast<size_t>(m * n));
      to_col_major(x + b * m * n, m, n, a.data(), m);
      const int ldu = int(std::max<int64_t>(1, m));
      const int ldvt = int(std::max<int64_t>(1, vrows));
      std::vector<T> uc(static_cast<size_t>(compute_uv ? m * ucols : 1));
      std::vector<T> vc(static_cast<size_t>(compute_uv ? vrows * n : 1));
      std::vector<int> iwork(static_cast<size_t>(8 * k));
      T size = 0;
      gesdd(jobz, int(m), int(n), a.data(), s, uc.data(), ldu, vc.data(), ldvt, &size, -1,
            iwork.data());
      std::vector<T> work(static_cast<size_t>(std::max<T>(size, T(1))));
      const int info = gesdd(jobz, int(m), int(n), a.data(), s, uc.data(), ldu, vc.data(), ldvt,
                             work.data(), int(work.size()), iwork.data());
      if (info != 0) {
        fill_nan(s, k);
        if (compute_uv) fill_nan(u, m * ucols);
        if (compute_uv) fill_nan(vt, vrows * n);
        return;
      }
      if (!compute_uv) return;
      from_col_major(uc.data(), m, m, ucols, u);
      from_col_major(vc.data(), vrows, vrows, n, vt);
    });
  });
}

void eigh(const core::KernelCall& call) {
  const int64_t n = dim(call.in_avals[0], 1);
  const char uplo = call.params.get<bool>("lower") ? 'L' : 'U';
  by_dtype(call, [&](auto zero) {
    using T = decltype(zero);
    const T* x = in_ptr<T>(call, 0);
    for_each_matrix(batch_of(call.in_avals[0], 2), [&](int64_t b) {
      T* v = out_ptr<T>(call, 0) + b * n * n;
      T* w = out_ptr<T>(call, 1) + b * n;
      if (n == 0) return;
      std::vector<T> a(static_cast<size_t>(n * n));
      to_col_major(x + b * n * n, n, n, a.data(), n);
      T size = 0;
      int isize = 0;
      syevd(uplo, int(n), a.data(), w, &size, -1, &isize, -1);
      std::vector<T> work(static_cast<size_t>(std::max<T>(size, T(1))));
      std::vector<int> iwork(static_cast<size_t>(std::max(isize, 1)));
      if (syevd(uplo, int(n), a.data(), w, work.data(), int(work.size()), iwork.data(),
                int(iwork.size())) != 0) {
        fill_nan(v, n * n);
        return fill_nan(w, n);
      }
      from_col_major(a.data(), n, n, n, v);
    });
  });
}

void triangular_solve(const core::KernelCall& call) {
  const Aval& bt = call.in_avals[1];
  const int64_t m = dim(bt, 2);
  const int64_t n = dim(bt, 1);
  const int64_t ma = dim(call.in_avals[0], 1);
  const core::Params& p = call.params;
  const CBLAS_SIDE side = p.get<bool>("left_side") ? CblasLeft : CblasRight;
  const CBLAS_UPLO uplo = p.get<bool>("lower") ? CblasLower : CblasUpper;
  const CBLAS_TRANSPOSE trans = p.get<bool>("transpose_a") ? CblasTrans : CblasNoTrans;
  const CBLAS_DIAG diag = p.get<bool>("unit_diagonal") ? CblasUnit : CblasNonUnit;
  by_dtype(call, [&](auto zero) {
    using T = decltype(zero);
    const T* a = in_ptr<T>(call, 0);
    const T* b = in_ptr<T>(call, 1);
    T* out = out_ptr<T>(call, 0);
    for_each_matrix(batch_of(bt, 2), [&](int64_t i) {
      T* o = out + i * m * n;
      std::copy_n(b + i * m * n, m * n, o);
      if (m == 0 || n == 0) return;
      trsm(side, uplo, trans, diag, int(m), int(n), a + i * ma * ma, int(ma), o);
    });
  });
}

}  // namespace parax::prims::kernels
