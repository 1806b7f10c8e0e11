// tests/cuda/kernels/cublas_level2.cu - cuBLAS's band, packed, triangular and rank-update
// routines (S and D), syr2k and syrkx, complex and Hermitian level 1, 2 and 3 (her, herk, her2k,
// herkx with their real scalars among them), complex symmetric level 2 and 3, the rotations,
// and the mixed-precision level-1 Ex routines, on random data.
//
// Built as users build cuBLAS programs (nvcc ... -lcublas) and run unmodified. Each result is
// checked against a double-precision loop on the host over the dense matrix the storage format
// describes; a rank update must leave the other triangle (and the packed array's unused slots
// of a band matrix) as it was, and beta 0 must not read y (NaNs there stay out of the result).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <complex>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "blas_test.h"

namespace {

using namespace blas_test;

template <typename T>
std::vector<double> AsDouble(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// The dense n x n (m x n) matrix that a storage format holds; Dense(i, j) of the described
// matrix, 0 outside the stored part. Column-major throughout.
using Dense = std::function<double(int, int)>;

// A triangular matrix in `uplo` from full storage (lda), band storage (k diagonals) or packed.
template <typename T>
Dense Triangle(const std::vector<T>& a, bool upper, int n, int k, int lda, char store) {
  return [=, &a](int i, int j) -> double {
    if (upper ? i > j : i < j) return 0;
    if (store == 'f') return a[i + static_cast<size_t>(j) * lda];
    if (store == 'b') {
      if (upper ? j - i > k : i - j > k) return 0;
      return a[(upper ? k + i - j : i - j) + static_cast<size_t>(j) * lda];
    }
    return upper ? a[i + static_cast<size_t>(j) * (j + 1) / 2]
                 : a[i + static_cast<size_t>(2 * n - j - 1) * j / 2];
  };
}

// The symmetric matrix whose `uplo` triangle a storage format holds.
Dense Symmetric(Dense tri, bool upper) {
  return [=](int i, int j) { return (upper ? i <= j : i >= j) ? tri(i, j) : tri(j, i); };
}

// y = alpha op(A) x + beta y (op(A) rows x cols), x and y strided.
template <typename T>
std::vector<double> MatVec(Dense A, bool trans, int rows, int cols, double alpha,
                           const std::vector<T>& x, int incx, double beta, const std::vector<T>& y,
                           int incy) {
  std::vector<double> out = AsDouble(y);
  for (int i = 0; i < rows; ++i) {
    double s = 0;
    for (int j = 0; j < cols; ++j) s += (trans ? A(j, i) : A(i, j)) * x[j * incx];
    out[i * incy] = alpha * s + (beta == 0 ? 0 : beta * y[i * incy]);
  }
  return out;
}

template <typename T>
void RealRoutines(cublasHandle_t h, Rng& rng) {
  const double tol = Tol<T>();
  const int n = 7, m = 9, k = 2, kl = 2, ku = 1, lda = 11, incx = 2, incy = 3;
  const T alpha = static_cast<T>(0.75), beta = static_cast<T>(-0.5), zero = 0;
  const bool is_float = sizeof(T) == 4;
  auto pick = [](auto s, auto d) {
    if constexpr (sizeof(T) == 4)
      return s;
    else
      return d;
  };
  for (int up = 0; up < 2; ++up) {
    const bool upper = up == 1;
    const cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    for (int t = 0; t < 2; ++t) {
      const cublasOperation_t op = t ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasDiagType_t diag = t ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
      // Triangular products and solves in full, band and packed storage. For the solves the
      // diagonal dominates, so the check (op(T) x_new == x_old) is well conditioned.
      for (char store : {'f', 'b', 'p'}) {
        const size_t bytes = store == 'p' ? n * (n + 1) / 2 : static_cast<size_t>(lda) * n;
        Buf<T> A(bytes, rng, 0.2);
        for (int j = 0; j < n; ++j) {  // a dominant diagonal, wherever the format keeps it
          const size_t at = store == 'f'   ? j + static_cast<size_t>(j) * lda
                            : store == 'b' ? (upper ? k : 0) + static_cast<size_t>(j) * lda
                            : upper        ? j + static_cast<size_t>(j) * (j + 1) / 2
                                           : j + static_cast<size_t>(2 * n - j - 1) * j / 2;
          A.h[at] = static_cast<T>(2 + rng.UniformD(0, 1));
        }
        A.Up();
        Dense tri = Triangle(A.h, upper, n, k, lda, store);
        Dense Tm = [&](int i, int j) {
          return i == j && diag == CUBLAS_DIAG_UNIT ? 1.0 : tri(i, j);
        };
        for (int solve = 0; solve < 2; ++solve) {
          Buf<T> x(n * incx, rng);
          const std::vector<T> before = x.h;
          cublasStatus_t s;
          if (store == 'f')
            s = solve ? pick(cublasStrsv, cublasDtrsv)(h, uplo, op, diag, n, A.d, lda, x.d, incx)
                      : pick(cublasStrmv, cublasDtrmv)(h, uplo, op, diag, n, A.d, lda, x.d, incx);
          else if (store == 'b')
            s = solve
                    ? pick(cublasStbsv, cublasDtbsv)(h, uplo, op, diag, n, k, A.d, lda, x.d, incx)
                    : pick(cublasStbmv, cublasDtbmv)(h, uplo, op, diag, n, k, A.d, lda, x.d, incx);
          else
            s = solve ? pick(cublasStpsv, cublasDtpsv)(h, uplo, op, diag, n, A.d, x.d, incx)
                      : pick(cublasStpmv, cublasDtpmv)(h, uplo, op, diag, n, A.d, x.d, incx);
          BLAS_OK(s);
          const std::vector<T> got = x.Down();
          char what[64];
          std::snprintf(what, sizeof what, "%s t%c%s uplo=%d trans=%d", is_float ? "S" : "D", store,
                        solve ? "sv" : "mv", up, t);
          if (solve)  // op(T) got == before
            Compare(what, AsDouble(MatVec(Tm, t, n, n, 1, got, incx, 0, before, incx)),
                    AsDouble(before), tol * 10);
          else
            Compare(what, got, MatVec(Tm, t, n, n, 1, before, incx, 0, before, incx), tol);
        }
      }
      // gbmv: an m x n band matrix of kl sub- and ku super-diagonals; y holds NaNs for beta 0.
      {
        const int glda = kl + ku + 2;
        Buf<T> A(static_cast<size_t>(glda) * n, rng);
        const int xn = t ? m : n, yn = t ? n : m;
        Buf<T> x(xn * incx, rng), y(yn * incy, rng);
        Dense band = [&](int i, int j) -> double {
          return (i - j > kl || j - i > ku) ? 0 : A.h[ku + i - j + static_cast<size_t>(j) * glda];
        };
        BLAS_OK(pick(cublasSgbmv, cublasDgbmv)(h, op, m, n, kl, ku, &alpha, A.d, glda, x.d, incx,
                                               &beta, y.d, incy));
        Compare(t ? "gbmv T" : "gbmv N", y.Down(),
                MatVec(band, t, yn, xn, alpha, x.h, incx, beta, y.h, incy), tol);
        std::vector<T> nans(y.h.size(), std::numeric_limits<T>::quiet_NaN());
        y.h = nans;
        y.Up();
        BLAS_OK(pick(cublasSgbmv, cublasDgbmv)(h, op, m, n, kl, ku, &alpha, A.d, glda, x.d, incx,
                                               &zero, y.d, incy));
        std::vector<double> want = MatVec(band, t, yn, xn, alpha, x.h, incx, 0, y.h, incy);
        std::vector<T> got = y.Down();
        for (int i = 0; i < yn; ++i)
          if (!Near(static_cast<double>(got[i * incy]), want[i * incy], tol)) {
            std::printf("FAIL gbmv beta 0 read y: y[%d] = %g\n", i * incy,
                        static_cast<double>(got[i * incy]));
            ++failures;
            break;
          }
      }
    }
    // Symmetric band and packed products.
    {
      Buf<T> B(static_cast<size_t>(lda) * n, rng), P(n * (n + 1) / 2, rng);
      Buf<T> x(n * incx, rng), y(n * incy, rng), y2(n * incy, rng);
      BLAS_OK(pick(cublasSsbmv, cublasDsbmv)(h, uplo, n, k, &alpha, B.d, lda, x.d, incx, &beta, y.d,
                                             incy));
      Compare("sbmv", y.Down(),
              MatVec(Symmetric(Triangle(B.h, upper, n, k, lda, 'b'), upper), false, n, n, alpha,
                     x.h, incx, beta, y.h, incy),
              tol);
      BLAS_OK(
          pick(cublasSspmv, cublasDspmv)(h, uplo, n, &alpha, P.d, x.d, incx, &beta, y2.d, incy));
      Compare("spmv", y2.Down(),
              MatVec(Symmetric(Triangle(P.h, upper, n, 0, 0, 'p'), upper), false, n, n, alpha, x.h,
                     incx, beta, y2.h, incy),
              tol);
    }
    // Rank-1 and rank-2 updates: only the `uplo` triangle changes.
    {
      Buf<T> x(n * incx, rng), y(n * incy, rng);
      Buf<T> A1(static_cast<size_t>(lda) * n, rng), A2(static_cast<size_t>(lda) * n, rng);
      Buf<T> P1(n * (n + 1) / 2, rng), P2(n * (n + 1) / 2, rng);
      BLAS_OK(pick(cublasSsyr, cublasDsyr)(h, uplo, n, &alpha, x.d, incx, A1.d, lda));
      BLAS_OK(pick(cublasSsyr2, cublasDsyr2)(h, uplo, n, &alpha, x.d, incx, y.d, incy, A2.d, lda));
      BLAS_OK(pick(cublasSspr, cublasDspr)(h, uplo, n, &alpha, x.d, incx, P1.d));
      BLAS_OK(pick(cublasSspr2, cublasDspr2)(h, uplo, n, &alpha, x.d, incx, y.d, incy, P2.d));
      auto update = [&](int i, int j, bool two) {
        const double xi = x.h[i * incx], xj = x.h[j * incx];
        return two ? alpha * (xi * static_cast<double>(y.h[j * incy]) +
                              static_cast<double>(y.h[i * incy]) * xj)
                   : alpha * xi * xj;
      };
      for (int two = 0; two < 2; ++two) {
        const Buf<T>& A = two ? A2 : A1;
        const Buf<T>& P = two ? P2 : P1;
        std::vector<double> want = AsDouble(A.h), want_p = AsDouble(P.h);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) {
            if (upper ? i > j : i < j) continue;
            want[i + static_cast<size_t>(j) * lda] += update(i, j, two);
            const size_t at = upper ? i + static_cast<size_t>(j) * (j + 1) / 2
                                    : i + static_cast<size_t>(2 * n - j - 1) * j / 2;
            want_p[at] += update(i, j, two);
          }
        Compare(two ? "syr2" : "syr", A.Down(), want, tol);
        Compare(two ? "spr2" : "spr", P.Down(), want_p, tol);
      }
    }
    // syr2k and syrkx, both transposes.
    for (int t = 0; t < 2; ++t) {
      const cublasOperation_t op = t ? CUBLAS_OP_T : CUBLAS_OP_N;
      const int kk = 5, ld = 12, ldc = 9;
      Buf<T> A(static_cast<size_t>(ld) * (t ? n : kk), rng),
          B(static_cast<size_t>(ld) * (t ? n : kk), rng);
      Buf<T> C1(static_cast<size_t>(ldc) * n, rng), C2(static_cast<size_t>(ldc) * n, rng);
      BLAS_OK(pick(cublasSsyr2k, cublasDsyr2k)(h, uplo, op, n, kk, &alpha, A.d, ld, B.d, ld, &beta,
                                               C1.d, ldc));
      BLAS_OK(pick(cublasSsyrkx, cublasDsyrkx)(h, uplo, op, n, kk, &alpha, A.d, ld, B.d, ld, &beta,
                                               C2.d, ldc));
      auto opx = [&](const std::vector<T>& X, int i, int l) -> double {
        return t ? X[l + static_cast<size_t>(i) * ld] : X[i + static_cast<size_t>(l) * ld];
      };
      std::vector<double> w1 = AsDouble(C1.h), w2 = AsDouble(C2.h);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          if (upper ? i > j : i < j) continue;
          double ab = 0, ba = 0;
          for (int l = 0; l < kk; ++l) {
            ab += opx(A.h, i, l) * opx(B.h, j, l);
            ba += opx(B.h, i, l) * opx(A.h, j, l);
          }
          const size_t at = i + static_cast<size_t>(j) * ldc;
          w1[at] = alpha * (ab + ba) + beta * C1.h[at];
          w2[at] = alpha * ab + beta * C2.h[at];
        }
      Compare(t ? "syr2k T" : "syr2k N", C1.Down(), w1, tol);
      Compare(t ? "syrkx T" : "syrkx N", C2.Down(), w2, tol);
    }
  }
  // NVIDIA's argument checks.
  Buf<T> A(static_cast<size_t>(lda) * n, rng), x(n, rng);
  EXPECT_BLAS(pick(cublasStbmv, cublasDtbmv)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                             CUBLAS_DIAG_NON_UNIT, n, k, A.d, k, x.d, 1),
              CUBLAS_STATUS_INVALID_VALUE);  // lda < k + 1
  EXPECT_BLAS(pick(cublasSgbmv, cublasDgbmv)(h, CUBLAS_OP_N, n, n, -1, 0, &alpha, A.d, lda, x.d, 1,
                                             &beta, x.d, 1),
              CUBLAS_STATUS_INVALID_VALUE);  // kl < 0
  EXPECT_BLAS(pick(cublasSspr, cublasDspr)(h, CUBLAS_FILL_MODE_LOWER, n, &alpha, x.d, 0, A.d),
              CUBLAS_STATUS_INVALID_VALUE);  // incx 0

  // A grouped batch: two products of one shape (N, N), one of another (T, N), each group with its
  // own alpha and beta; for FP32, the same again through cublasGemmGroupedBatchedEx.
  {
    const cublasOperation_t ta[2] = {CUBLAS_OP_N, CUBLAS_OP_T}, tb[2] = {CUBLAS_OP_N, CUBLAS_OP_N};
    const int gm[2] = {3, 2}, gn[2] = {2, 3}, gk[2] = {4, 2}, size[2] = {2, 1};
    const int glda[2] = {3, 2}, gldb[2] = {4, 2}, gldc[2] = {3, 2};
    const T galpha[2] = {static_cast<T>(0.5), static_cast<T>(-1)};
    const T gbeta[2] = {static_cast<T>(2), static_cast<T>(0)};
    std::vector<std::unique_ptr<Buf<T>>> As, Bs, Cs;
    std::vector<T*> ptrs;  // A0 A1 A2 | B0 B1 B2 | C0 C1 C2
    for (int i = 0; i < 3; ++i) {
      const int g = i < 2 ? 0 : 1;
      As.push_back(
          std::make_unique<Buf<T>>(size_t(glda[g]) * (ta[g] == CUBLAS_OP_N ? gk[g] : gm[g]), rng));
      Bs.push_back(std::make_unique<Buf<T>>(size_t(gldb[g]) * gn[g], rng));
      Cs.push_back(std::make_unique<Buf<T>>(size_t(gldc[g]) * gn[g], rng));
    }
    for (auto* v : {&As, &Bs, &Cs})
      for (auto& b : *v) ptrs.push_back(b->d);
    T** arrays = nullptr;
    CHECK(cudaMalloc(&arrays, ptrs.size() * sizeof(T*)));
    CHECK(cudaMemcpy(arrays, ptrs.data(), ptrs.size() * sizeof(T*), cudaMemcpyHostToDevice));
    auto check = [&](const char* what) {
      for (int i = 0; i < 3; ++i) {
        const int g = i < 2 ? 0 : 1;
        const std::vector<T>& a = As[i]->h;
        const std::vector<T>& b = Bs[i]->h;
        std::vector<double> want(Cs[i]->h.size());
        for (int c = 0; c < gn[g]; ++c)
          for (int r = 0; r < gm[g]; ++r) {
            double acc = 0;
            for (int l = 0; l < gk[g]; ++l)
              acc += double(ta[g] == CUBLAS_OP_N ? a[r + size_t(l) * glda[g]]
                                                 : a[l + size_t(r) * glda[g]]) *
                     double(b[l + size_t(c) * gldb[g]]);
            want[r + size_t(c) * gldc[g]] =
                double(galpha[g]) * acc +
                double(gbeta[g]) * double(Cs[i]->h[r + size_t(c) * gldc[g]]);
          }
        Compare(what, Cs[i]->Down(), want, tol);
      }
    };
    BLAS_OK(pick(cublasSgemmGroupedBatched, cublasDgemmGroupedBatched)(
        h, ta, tb, gm, gn, gk, galpha, arrays, glda, arrays + 3, gldb, gbeta, arrays + 6, gldc, 2,
        size));
    check(is_float ? "SgemmGroupedBatched" : "DgemmGroupedBatched");
    if constexpr (sizeof(T) == 4) {
      for (auto& c : Cs) c->Up();
      BLAS_OK(cublasGemmGroupedBatchedEx(h, ta, tb, gm, gn, gk, galpha,
                                         reinterpret_cast<void* const*>(arrays), CUDA_R_32F, glda,
                                         reinterpret_cast<void* const*>(arrays + 3), CUDA_R_32F,
                                         gldb, gbeta, reinterpret_cast<void* const*>(arrays + 6),
                                         CUDA_R_32F, gldc, 2, size, CUBLAS_COMPUTE_32F));
      check("GemmGroupedBatchedEx");
    }
    // A group that cannot run (lda below m) fails the call before any group runs.
    const int bad_lda[2] = {3, 1};
    for (auto& c : Cs) c->Up();
    EXPECT_BLAS(pick(cublasSgemmGroupedBatched, cublasDgemmGroupedBatched)(
                    h, ta, tb, gm, gn, gk, galpha, arrays, bad_lda, arrays + 3, gldb, gbeta,
                    arrays + 6, gldc, 2, size),
                CUBLAS_STATUS_INVALID_VALUE);
    Compare("grouped batch refused", Cs[0]->Down(), AsDouble(Cs[0]->h), 0);
    CHECK(cudaFree(arrays));
  }
}

using C64 = std::complex<double>;

template <typename T>
C64 Cx(const T& v) {
  return {v.x, v.y};
}

// Complex vectors and matrices (T cuComplex or cuDoubleComplex, R its real type) on the host and
// the device, and their check against std::complex<double> values within `tol`, relative.
template <typename T, typename R>
struct ComplexKit {
  Rng& rng;
  double tol;
  const char* prefix = sizeof(R) == 4 ? "C" : "Z";

  std::vector<T> Fill(size_t count, double scale = 1) {
    std::vector<T> v(count);
    for (T& e : v)
      e = {static_cast<R>(scale * rng.UniformD(-1, 1)),
           static_cast<R>(scale * rng.UniformD(-1, 1))};
    return v;
  }
  static T* Device(const std::vector<T>& v) {
    T* d = nullptr;
    CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
  }
  static std::vector<T> Host(const T* d, size_t count) {
    std::vector<T> v(count);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(v.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  static std::vector<C64> Wide(const std::vector<T>& v) {
    std::vector<C64> o(v.size());
    for (size_t i = 0; i < v.size(); ++i) o[i] = Cx(v[i]);
    return o;
  }
  void Check(const char* what, const std::vector<T>& got, const std::vector<C64>& want) const {
    for (size_t i = 0; i < want.size(); ++i)
      if (std::abs(Cx(got[i]) - want[i]) > tol * (1 + std::abs(want[i]))) {
        std::printf("FAIL %s%s[%zu] = (%g, %g), want (%g, %g)\n", prefix, what, i,
                    static_cast<double>(got[i].x), static_cast<double>(got[i].y), want[i].real(),
                    want[i].imag());
        ++failures;
        return;
      }
  }
};

// The single (C) or double (Z) entry point, by R.
template <typename R, typename C, typename Z>
auto Pick(C c, Z z) {
  if constexpr (sizeof(R) == 4)
    return c;
  else
    return z;
}

// Complex level 1 against std::complex<double>.
template <typename T, typename R>
void ComplexLevel1(cublasHandle_t h, Rng& rng) {
  const bool single = sizeof(R) == 4;
  const double tol = single ? 2e-5 : 1e-12;
  ComplexKit<T, R> kit{rng, tol};
  const int n = 37, incx = 2, incy = 3;
  const std::vector<T> xh = kit.Fill(n * incx), yh = kit.Fill(n * incy);
  T* x = kit.Device(xh);
  T* y = kit.Device(yh);
  const T alpha = {static_cast<R>(0.5), static_cast<R>(-1.25)};
  const R ralpha = static_cast<R>(-1.5);

  std::vector<C64> want(yh.size());
  for (size_t i = 0; i < yh.size(); ++i) want[i] = Cx(yh[i]);
  BLAS_OK(Pick<R>(cublasCaxpy, cublasZaxpy)(h, n, &alpha, x, incx, y, incy));
  for (int i = 0; i < n; ++i) want[i * incy] += Cx(alpha) * Cx(xh[i * incx]);
  kit.Check("axpy", kit.Host(y, yh.size()), want);

  std::vector<C64> wx(xh.size());
  for (size_t i = 0; i < xh.size(); ++i) wx[i] = Cx(xh[i]);
  BLAS_OK(Pick<R>(cublasCscal, cublasZscal)(h, n, &alpha, x, incx));
  for (int i = 0; i < n; ++i) wx[i * incx] *= Cx(alpha);
  kit.Check("scal", kit.Host(x, xh.size()), wx);
  BLAS_OK(Pick<R>(cublasCsscal, cublasZdscal)(h, n, &ralpha, x, incx));
  for (int i = 0; i < n; ++i) wx[i * incx] *= ralpha;
  kit.Check("sscal/dscal", kit.Host(x, xh.size()), wx);

  // copy, then swap back: y gets x's elements, x gets y's.
  std::vector<T> xs = kit.Host(x, xh.size()), ys = kit.Host(y, yh.size());
  BLAS_OK(Pick<R>(cublasCswap, cublasZswap)(h, n, x, incx, y, incy));
  std::vector<C64> wx2 = wx, wy2(ys.size());
  for (size_t i = 0; i < ys.size(); ++i) wy2[i] = Cx(ys[i]);
  for (int i = 0; i < n; ++i) std::swap(wx2[i * incx], wy2[i * incy]);
  kit.Check("swap x", kit.Host(x, xh.size()), wx2);
  kit.Check("swap y", kit.Host(y, yh.size()), wy2);
  BLAS_OK(Pick<R>(cublasCcopy, cublasZcopy)(h, n, x, incx, y, incy));
  for (int i = 0; i < n; ++i) wy2[i * incy] = wx2[i * incx];
  kit.Check("copy", kit.Host(y, yh.size()), wy2);

  // Reductions over x as it now is: |Re| + |Im| for the index and asum, the 2-norm for nrm2.
  const std::vector<T> cur = kit.Host(x, xh.size());
  int imax = 0, imin = 0;
  double asum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    const C64 v = Cx(cur[i * incx]);
    const double m1 = std::abs(v.real()) + std::abs(v.imag());
    const C64 vmax = Cx(cur[imax * incx]), vmin = Cx(cur[imin * incx]);
    if (m1 > std::abs(vmax.real()) + std::abs(vmax.imag())) imax = i;
    if (m1 < std::abs(vmin.real()) + std::abs(vmin.imag())) imin = i;
    asum += m1;
    sq += std::norm(v);
  }
  int got_max = 0, got_min = 0;
  R got_asum = 0, got_nrm2 = 0;
  BLAS_OK(Pick<R>(cublasIcamax, cublasIzamax)(h, n, x, incx, &got_max));
  BLAS_OK(Pick<R>(cublasIcamin, cublasIzamin)(h, n, x, incx, &got_min));
  BLAS_OK(Pick<R>(cublasScasum, cublasDzasum)(h, n, x, incx, &got_asum));
  BLAS_OK(Pick<R>(cublasScnrm2, cublasDznrm2)(h, n, x, incx, &got_nrm2));
  if (got_max != imax + 1 || got_min != imin + 1) {
    std::printf("FAIL %s amax/amin = %d/%d, want %d/%d\n", single ? "C" : "Z", got_max, got_min,
                imax + 1, imin + 1);
    ++failures;
  }
  if (!Near(got_asum, asum, tol * 10) || !Near(got_nrm2, std::sqrt(sq), tol * 10)) {
    std::printf("FAIL %s asum/nrm2 = %g/%g, want %g/%g\n", single ? "C" : "Z",
                static_cast<double>(got_asum), static_cast<double>(got_nrm2), asum, std::sqrt(sq));
    ++failures;
  }
  // The norm again, into device memory (device pointer mode).
  R* dres = nullptr;
  CHECK(cudaMalloc(&dres, sizeof(R)));
  BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  BLAS_OK(Pick<R>(cublasScnrm2, cublasDznrm2)(h, n, x, incx, dres));
  BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  R back = 0;
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(&back, dres, sizeof(R), cudaMemcpyDeviceToHost));
  if (!Near(back, std::sqrt(sq), tol * 10)) {
    std::printf("FAIL %s nrm2 to device memory = %g\n", single ? "C" : "Z",
                static_cast<double>(back));
    ++failures;
  }
  CHECK(cudaFree(dres));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

// The level-1 Ex routines on half, bfloat16 and complex vectors, with negative increments.
void MixedPrecision(cublasHandle_t h, Rng& rng) {
  const int n = 50, incx = 2, incy = -3;
  std::vector<float> xf(n * incx), yf(n * -incy);
  for (float& v : xf) v = static_cast<float>(rng.UniformD(-1, 1));
  for (float& v : yf) v = static_cast<float>(rng.UniformD(-1, 1));
  // Element i of a vector with increment inc, as BLAS walks a negative one (from the far end).
  auto at = [&](int i, int inc) { return inc > 0 ? i * inc : (n - 1 - i) * -inc; };
  auto halves = [](const std::vector<float>& v) {
    std::vector<__half> o(v.size());
    for (size_t i = 0; i < v.size(); ++i) o[i] = __float2half(v[i]);
    return o;
  };
  auto device = [](const auto& v) {
    void* d = nullptr;
    CHECK(cudaMalloc(&d, v.size() * sizeof(v[0])));
    CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(v[0]), cudaMemcpyHostToDevice));
    return d;
  };
  const std::vector<__half> xh = halves(xf), yh = halves(yf);
  void* dx = device(xh);
  void* dy = device(yh);
  // dot in FP32 of the half values, rounded to half
  float want = 0;
  for (int i = 0; i < n; ++i) want += __half2float(xh[at(i, incx)]) * __half2float(yh[at(i, incy)]);
  __half got;
  BLAS_OK(
      cublasDotEx(h, n, dx, CUDA_R_16F, incx, dy, CUDA_R_16F, incy, &got, CUDA_R_16F, CUDA_R_32F));
  if (std::fabs(__half2float(got) - want) > 1e-2 * (1 + std::fabs(want))) {
    std::printf("FAIL DotEx half = %g, want %g\n", __half2float(got), want);
    ++failures;
  }
  // nrm2 and asum of the half x
  double sq = 0, sum = 0;
  for (int i = 0; i < n; ++i) {
    const double v = __half2float(xh[i * incx]);
    sq += v * v;
    sum += std::fabs(v);
  }
  __half nrm, asum;
  BLAS_OK(cublasNrm2Ex(h, n, dx, CUDA_R_16F, incx, &nrm, CUDA_R_16F, CUDA_R_32F));
  BLAS_OK(cublasAsumEx(h, n, dx, CUDA_R_16F, incx, &asum, CUDA_R_16F, CUDA_R_32F));
  if (!Near(__half2float(nrm), std::sqrt(sq), 2e-3) || !Near(__half2float(asum), sum, 2e-3)) {
    std::printf("FAIL Nrm2Ex/AsumEx half = %g/%g, want %g/%g\n", __half2float(nrm),
                __half2float(asum), std::sqrt(sq), sum);
    ++failures;
  }
  // y += alpha x, then x *= alpha, in half with FP32 alpha
  const float alpha = -0.75f;
  BLAS_OK(cublasAxpyEx(h, n, &alpha, CUDA_R_32F, dx, CUDA_R_16F, incx, dy, CUDA_R_16F, incy,
                       CUDA_R_32F));
  BLAS_OK(cublasScalEx(h, n, &alpha, CUDA_R_32F, dx, CUDA_R_16F, incx, CUDA_R_32F));
  std::vector<__half> ygot(yh.size()), xgot(xh.size());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(ygot.data(), dy, ygot.size() * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(xgot.data(), dx, xgot.size() * 2, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const float y1 = __half2float(yh[at(i, incy)]) + alpha * __half2float(xh[at(i, incx)]);
    const float x1 = alpha * __half2float(xh[i * incx]);
    bad += std::fabs(__half2float(ygot[at(i, incy)]) - y1) > 2e-3f * (1 + std::fabs(y1));
    bad += std::fabs(__half2float(xgot[i * incx]) - x1) > 2e-3f * (1 + std::fabs(x1));
  }
  for (size_t i = 0; i < yh.size(); ++i)  // the gaps between elements stay as they were
    if (i % 3 != 0) bad += __half2float(ygot[i]) != __half2float(yh[i]);
  if (bad) {
    std::printf("FAIL AxpyEx/ScalEx half: %d wrong\n", bad);
    ++failures;
  }
  // swap x and y, then copy (the swapped) x over y: elements follow BLAS's walk of each vector
  auto down = [](void* d, size_t count) {
    std::vector<__half> v(count);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(v.data(), d, count * 2, cudaMemcpyDeviceToHost));
    return v;
  };
  BLAS_OK(cublasSwapEx(h, n, dx, CUDA_R_16F, incx, dy, CUDA_R_16F, incy));
  const std::vector<__half> xs = down(dx, xh.size()), ys = down(dy, yh.size());
  BLAS_OK(cublasCopyEx(h, n, dx, CUDA_R_16F, incx, dy, CUDA_R_16F, incy));
  const std::vector<__half> yc2 = down(dy, yh.size());
  bad = 0;
  for (int i = 0; i < n; ++i) {
    const float xi = __half2float(xgot[at(i, incx)]), yi = __half2float(ygot[at(i, incy)]);
    bad += __half2float(xs[at(i, incx)]) != yi || __half2float(ys[at(i, incy)]) != xi;
    bad += __half2float(yc2[at(i, incy)]) != yi;
  }
  if (bad) {
    std::printf("FAIL SwapEx/CopyEx half: %d wrong\n", bad);
    ++failures;
  }
  // bfloat16 dot, complex dotc, and a combination cuBLAS does not serve
  std::vector<__nv_bfloat16> xb(n), yb(n);
  float wantb = 0;
  for (int i = 0; i < n; ++i) {
    xb[i] = __float2bfloat16(xf[i]);
    yb[i] = __float2bfloat16(yf[i]);
    wantb += __bfloat162float(xb[i]) * __bfloat162float(yb[i]);
  }
  void* dxb = device(xb);
  void* dyb = device(yb);
  __nv_bfloat16 gotb;
  BLAS_OK(
      cublasDotEx(h, n, dxb, CUDA_R_16BF, 1, dyb, CUDA_R_16BF, 1, &gotb, CUDA_R_16BF, CUDA_R_32F));
  if (std::fabs(__bfloat162float(gotb) - wantb) > 2e-2 * (1 + std::fabs(wantb))) {
    std::printf("FAIL DotEx bf16 = %g, want %g\n", __bfloat162float(gotb), wantb);
    ++failures;
  }
  std::vector<cuComplex> xc(n), yc(n);
  std::complex<double> wantc = 0;
  for (int i = 0; i < n; ++i) {
    xc[i] = {xf[i], yf[i]};
    yc[i] = {yf[i], -xf[i] * 0.5f};
    wantc +=
        std::conj(std::complex<double>(xc[i].x, xc[i].y)) * std::complex<double>(yc[i].x, yc[i].y);
  }
  void* dxc = device(xc);
  void* dyc = device(yc);
  cuComplex gotc;
  BLAS_OK(
      cublasDotcEx(h, n, dxc, CUDA_C_32F, 1, dyc, CUDA_C_32F, 1, &gotc, CUDA_C_32F, CUDA_C_32F));
  if (std::abs(std::complex<double>(gotc.x, gotc.y) - wantc) > 1e-4 * (1 + std::abs(wantc))) {
    std::printf("FAIL DotcEx complex = (%g, %g)\n", gotc.x, gotc.y);
    ++failures;
  }
  EXPECT_BLAS(
      cublasDotEx(h, n, dx, CUDA_R_16F, 1, dyb, CUDA_R_64F, 1, &got, CUDA_R_16F, CUDA_R_32F),
      CUBLAS_STATUS_NOT_SUPPORTED);
  for (void* p : {dx, dy, dxb, dyb, dxc, dyc}) CHECK(cudaFree(p));
}

// Complex symm, syrk, trsm, trmm, and trsmBatched in S and Z, against std::complex<double>.
template <typename T, typename R>
void ComplexLevel3(cublasHandle_t h, Rng& rng) {
  const bool single = sizeof(R) == 4;
  const double tol = single ? 1e-4 : 1e-11;
  ComplexKit<T, R> kit{rng, tol};
  const int m = 5, n = 4, ld = 7;
  auto at = [&](const std::vector<T>& v, int i, int j) {
    return Cx(v[i + static_cast<size_t>(j) * ld]);
  };
  const T alpha = {static_cast<R>(0.5), static_cast<R>(0.25)}, beta = {static_cast<R>(-1), 0};
  // A: an m x m triangle/symmetric source (lower stored), B and C m x n, all with ld.
  std::vector<T> A = kit.Fill(static_cast<size_t>(ld) * m, 0.3),
                 B = kit.Fill(static_cast<size_t>(ld) * n),
                 C = kit.Fill(static_cast<size_t>(ld) * n);
  for (int i = 0; i < m; ++i) A[i + static_cast<size_t>(i) * ld] = {static_cast<R>(2), 0};
  auto sym = [&](int i, int j) { return i >= j ? at(A, i, j) : at(A, j, i); };
  auto tri = [&](int i, int j) { return i >= j ? at(A, i, j) : C64(0); };
  T* dA = kit.Device(A);
  T* dB = kit.Device(B);
  T* dC = kit.Device(C);
  // symm, left, lower: C = alpha S B + beta C
  BLAS_OK(Pick<R>(cublasCsymm, cublasZsymm)(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, m, n,
                                            &alpha, dA, ld, dB, ld, &beta, dC, ld));
  std::vector<C64> want(C.size());
  for (size_t i = 0; i < C.size(); ++i) want[i] = Cx(C[i]);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      C64 s = 0;
      for (int l = 0; l < m; ++l) s += sym(i, l) * at(B, l, j);
      want[i + static_cast<size_t>(j) * ld] = Cx(alpha) * s + Cx(beta) * at(C, i, j);
    }
  kit.Check("symm", kit.Host(dC, C.size()), want);
  // syrk, lower, T: C = alpha B^T B + beta C on n x n (only the lower triangle)
  std::vector<T> C2 = kit.Fill(static_cast<size_t>(ld) * n);
  T* dC2 = kit.Device(C2);
  BLAS_OK(Pick<R>(cublasCsyrk, cublasZsyrk)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, m, &alpha,
                                            dB, ld, &beta, dC2, ld));
  std::vector<C64> want2(C2.size());
  for (size_t i = 0; i < C2.size(); ++i) want2[i] = Cx(C2[i]);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      C64 s = 0;
      for (int l = 0; l < m; ++l) s += at(B, l, i) * at(B, l, j);
      want2[i + static_cast<size_t>(j) * ld] = Cx(alpha) * s + Cx(beta) * at(C2, i, j);
    }
  kit.Check("syrk", kit.Host(dC2, C2.size()), want2);
  EXPECT_BLAS(Pick<R>(cublasCsyrk, cublasZsyrk)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, n, m,
                                                &alpha, dB, ld, &beta, dC2, ld),
              CUBLAS_STATUS_INVALID_VALUE);  // a symmetric product: no conjugate transpose
  // trmm then trsm, left, lower, conjugate transpose: X = alpha op(T) B, then op(T) Y = X / alpha
  T* dX = kit.Device(std::vector<T>(static_cast<size_t>(ld) * n));
  BLAS_OK(Pick<R>(cublasCtrmm, cublasZtrmm)(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER,
                                            CUBLAS_OP_C, CUBLAS_DIAG_NON_UNIT, m, n, &alpha, dA, ld,
                                            dB, ld, dX, ld));
  std::vector<C64> wx(static_cast<size_t>(ld) * n, C64(0));
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      C64 s = 0;
      for (int l = 0; l < m; ++l) s += std::conj(tri(l, i)) * at(B, l, j);
      wx[i + static_cast<size_t>(j) * ld] = Cx(alpha) * s;
    }
  std::vector<T> X = kit.Host(dX, wx.size());
  for (int j = 0; j < n; ++j)  // rows past m are not the product's
    for (int i = m; i < ld; ++i)
      wx[i + static_cast<size_t>(j) * ld] = Cx(X[i + static_cast<size_t>(j) * ld]);
  kit.Check("trmm", X, wx);
  const T inv = {static_cast<R>(1.6), static_cast<R>(-0.8)};  // 1 / alpha
  BLAS_OK(Pick<R>(cublasCtrsm, cublasZtrsm)(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER,
                                            CUBLAS_OP_C, CUBLAS_DIAG_NON_UNIT, m, n, &inv, dA, ld,
                                            dX, ld));
  std::vector<C64> wb(wx.size());
  const std::vector<T> Y = kit.Host(dX, wx.size());
  for (size_t i = 0; i < wb.size(); ++i) wb[i] = Cx(Y[i]);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) wb[i + static_cast<size_t>(j) * ld] = at(B, i, j);
  kit.Check("trsm", Y, wb);
  // trsmBatched: two right-side solves, X op(T) = alpha B, checked by multiplying back
  std::vector<T> B0 = kit.Fill(static_cast<size_t>(ld) * m),
                 B1 = kit.Fill(static_cast<size_t>(ld) * m);
  T* dB0 = kit.Device(B0);
  T* dB1 = kit.Device(B1);
  const T* As[2] = {dA, dA};
  T* Bs[2] = {dB0, dB1};
  T** dAs = nullptr;
  T** dBs = nullptr;
  CHECK(cudaMalloc(&dAs, sizeof As));
  CHECK(cudaMalloc(&dBs, sizeof Bs));
  CHECK(cudaMemcpy(dAs, As, sizeof As, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dBs, Bs, sizeof Bs, cudaMemcpyHostToDevice));
  const T one = {1, 0};
  BLAS_OK(Pick<R>(cublasCtrsmBatched, cublasZtrsmBatched)(
      h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, 3, m, &one, dAs,
      ld, dBs, ld, 2));
  for (int b = 0; b < 2; ++b) {
    const std::vector<T>& orig = b ? B1 : B0;
    const std::vector<T> got = kit.Host(b ? dB1 : dB0, orig.size());
    std::vector<C64> back(orig.size());
    for (size_t i = 0; i < back.size(); ++i) back[i] = Cx(got[i]);
    for (int j = 0; j < m; ++j)  // (X T)(i, j) over the unit-diagonal lower triangle == B
      for (int i = 0; i < 3; ++i) {
        C64 s = 0;
        for (int l = j; l < m; ++l)
          s += Cx(got[i + static_cast<size_t>(l) * ld]) * (l == j ? C64(1) : tri(l, j));
        back[i + static_cast<size_t>(j) * ld] = s;
      }
    std::vector<C64> orig_c(orig.size());
    for (size_t i = 0; i < orig.size(); ++i) orig_c[i] = Cx(orig[i]);
    for (size_t i = 0; i < orig_c.size(); ++i)
      if (std::abs(back[i] - orig_c[i]) > tol * 10 * (1 + std::abs(orig_c[i]))) {
        std::printf("FAIL %strsmBatched[%d][%zu]\n", single ? "C" : "Z", b, i);
        ++failures;
        break;
      }
  }
  for (void* p : {static_cast<void*>(dA), static_cast<void*>(dB), static_cast<void*>(dC),
                  static_cast<void*>(dC2), static_cast<void*>(dX), static_cast<void*>(dB0),
                  static_cast<void*>(dB1), static_cast<void*>(dAs), static_cast<void*>(dBs)})
    CHECK(cudaFree(p));
}

// Complex level 2 (geru, gerc, hemv, hbmv, hpmv, her2, hpr2, gbmv, the triangular products and
// solves) and hemm, against std::complex<double> over the dense matrix each storage describes.
template <typename T, typename R>
void ComplexLevel2(cublasHandle_t h, Rng& rng) {
  const bool single = sizeof(R) == 4;
  const double tol = single ? 1e-4 : 1e-11;
  ComplexKit<T, R> kit{rng, tol};
  const int n = 6, ld = 8, k = 1;
  const T alpha = {static_cast<R>(0.5), static_cast<R>(-0.75)}, beta = {static_cast<R>(0.25), 1};
  const std::vector<T> A = kit.Fill(static_cast<size_t>(ld) * n), x = kit.Fill(n), y = kit.Fill(n);
  T* dA = kit.Device(A);
  T* dx = kit.Device(x);
  // The Hermitian matrix whose lower (upper) triangle `a` holds at (i, j), via `at`.
  auto herm = [](auto at, bool upper) {
    return [=](int i, int j) -> C64 {
      if (i == j) return C64(at(i, i).real(), 0);
      return (upper ? i < j : i > j) ? at(i, j) : std::conj(at(j, i));
    };
  };
  auto full = [&](int i, int j) { return Cx(A[i + static_cast<size_t>(j) * ld]); };
  auto mv = [&](auto M, bool conj_trans, const std::vector<T>& vy) {
    std::vector<C64> out = kit.Wide(vy);
    for (int i = 0; i < n; ++i) {
      C64 acc = 0;
      for (int j = 0; j < n; ++j) acc += (conj_trans ? std::conj(M(j, i)) : M(i, j)) * Cx(x[j]);
      out[i] = Cx(alpha) * acc + Cx(beta) * Cx(vy[i]);
    }
    return out;
  };
  {  // hemv, lower
    T* dy = kit.Device(y);
    BLAS_OK(Pick<R>(cublasChemv, cublasZhemv)(h, CUBLAS_FILL_MODE_LOWER, n, &alpha, dA, ld, dx, 1,
                                              &beta, dy, 1));
    kit.Check("hemv", kit.Host(dy, n), mv(herm(full, false), false, y));
    CHECK(cudaFree(dy));
  }
  {  // hbmv, upper, one super-diagonal: band (i, j) at A[k + i - j + j * ld]
    T* dy = kit.Device(y);
    BLAS_OK(Pick<R>(cublasChbmv, cublasZhbmv)(h, CUBLAS_FILL_MODE_UPPER, n, k, &alpha, dA, ld, dx,
                                              1, &beta, dy, 1));
    auto band = [&](int i, int j) -> C64 {
      return j - i > k || i > j ? C64(0) : Cx(A[k + i - j + static_cast<size_t>(j) * ld]);
    };
    auto hb = [&](int i, int j) -> C64 {
      if (i == j) return C64(band(i, i).real(), 0);
      return i < j ? band(i, j) : std::conj(band(j, i));
    };
    kit.Check("hbmv", kit.Host(dy, n), mv(hb, false, y));
    CHECK(cudaFree(dy));
  }
  {  // hpmv, upper packed: (i, j), i <= j, at AP[i + j(j+1)/2]
    const std::vector<T> P = kit.Fill(n * (n + 1) / 2);
    T* dP = kit.Device(P);
    T* dy = kit.Device(y);
    BLAS_OK(Pick<R>(cublasChpmv, cublasZhpmv)(h, CUBLAS_FILL_MODE_UPPER, n, &alpha, dP, dx, 1,
                                              &beta, dy, 1));
    auto packed = [&](int i, int j) { return Cx(P[i + static_cast<size_t>(j) * (j + 1) / 2]); };
    kit.Check("hpmv", kit.Host(dy, n), mv(herm(packed, true), false, y));
    CHECK(cudaFree(dy));
    // hpr2 on the same packed matrix: AP += alpha x y^H + conj(alpha) y x^H, diagonal real
    T* dy2 = kit.Device(y);
    BLAS_OK(
        Pick<R>(cublasChpr2, cublasZhpr2)(h, CUBLAS_FILL_MODE_UPPER, n, &alpha, dx, 1, dy2, 1, dP));
    std::vector<C64> want = kit.Wide(P);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i) {
        C64& w = want[i + static_cast<size_t>(j) * (j + 1) / 2];
        w += Cx(alpha) * Cx(x[i]) * std::conj(Cx(y[j])) +
             std::conj(Cx(alpha)) * Cx(y[i]) * std::conj(Cx(x[j]));
        if (i == j) w = C64(w.real(), 0);
      }
    kit.Check("hpr2", kit.Host(dP, P.size()), want);
    CHECK(cudaFree(dy2));
    CHECK(cudaFree(dP));
  }
  {  // her2, lower, and geru / gerc, each on a copy of A
    T* dy = kit.Device(y);
    T* d2 = kit.Device(A);
    BLAS_OK(Pick<R>(cublasCher2, cublasZher2)(h, CUBLAS_FILL_MODE_LOWER, n, &alpha, dx, 1, dy, 1,
                                              d2, ld));
    std::vector<C64> want = kit.Wide(A);
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) {
        C64& w = want[i + static_cast<size_t>(j) * ld];
        w += Cx(alpha) * Cx(x[i]) * std::conj(Cx(y[j])) +
             std::conj(Cx(alpha)) * Cx(y[i]) * std::conj(Cx(x[j]));
        if (i == j) w = C64(w.real(), 0);
      }
    kit.Check("her2", kit.Host(d2, A.size()), want);
    for (int conj = 0; conj < 2; ++conj) {
      T* d3 = kit.Device(A);
      BLAS_OK((conj ? Pick<R>(cublasCgerc, cublasZgerc) : Pick<R>(cublasCgeru, cublasZgeru))(
          h, n, n, &alpha, dx, 1, dy, 1, d3, ld));
      std::vector<C64> w3 = kit.Wide(A);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          w3[i + static_cast<size_t>(j) * ld] +=
              Cx(alpha) * Cx(x[i]) * (conj ? std::conj(Cx(y[j])) : Cx(y[j]));
      kit.Check(conj ? "gerc" : "geru", kit.Host(d3, A.size()), w3);
      CHECK(cudaFree(d3));
    }
    CHECK(cudaFree(d2));
    CHECK(cudaFree(dy));
  }
  {  // gbmv, conjugate transpose, kl 1, ku 2: band (i, j) at A[ku + i - j + j * ld]
    const int kl = 1, ku = 2;
    T* dy = kit.Device(y);
    BLAS_OK(Pick<R>(cublasCgbmv, cublasZgbmv)(h, CUBLAS_OP_C, n, n, kl, ku, &alpha, dA, ld, dx, 1,
                                              &beta, dy, 1));
    auto band = [&](int i, int j) -> C64 {
      return i - j > kl || j - i > ku ? C64(0) : Cx(A[ku + i - j + static_cast<size_t>(j) * ld]);
    };
    kit.Check("gbmv C", kit.Host(dy, n), mv(band, true, y));
    CHECK(cudaFree(dy));
  }
  {  // trmv (lower, conjugate transpose), then trsv undoing it; tbmv and tpmv
    std::vector<T> D = A;
    for (int i = 0; i < n; ++i) D[i + static_cast<size_t>(i) * ld] = {2, 0};
    T* dD = kit.Device(D);
    T* dv = kit.Device(x);
    BLAS_OK(Pick<R>(cublasCtrmv, cublasZtrmv)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C,
                                              CUBLAS_DIAG_NON_UNIT, n, dD, ld, dv, 1));
    std::vector<C64> want(n);
    for (int i = 0; i < n; ++i)
      for (int j = i; j < n; ++j)  // op(T)(i, j) = conj(T(j, i)), T lower
        want[i] += std::conj(Cx(D[j + static_cast<size_t>(i) * ld])) * Cx(x[j]);
    kit.Check("trmv", kit.Host(dv, n), want);
    BLAS_OK(Pick<R>(cublasCtrsv, cublasZtrsv)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C,
                                              CUBLAS_DIAG_NON_UNIT, n, dD, ld, dv, 1));
    kit.Check("trsv", kit.Host(dv, n), kit.Wide(x));
    T* dw = kit.Device(x);
    BLAS_OK(Pick<R>(cublasCtbmv, cublasZtbmv)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                              CUBLAS_DIAG_UNIT, n, k, dD, ld, dw, 1));
    std::vector<C64> wb(n);
    for (int i = 0; i < n; ++i) {
      wb[i] = Cx(x[i]);  // unit diagonal
      if (i + 1 < n)
        wb[i] += Cx(D[k + i - (i + 1) + static_cast<size_t>(i + 1) * ld]) * Cx(x[i + 1]);
    }
    kit.Check("tbmv", kit.Host(dw, n), wb);
    BLAS_OK(Pick<R>(cublasCtbsv, cublasZtbsv)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                              CUBLAS_DIAG_UNIT, n, k, dD, ld, dw, 1));
    kit.Check("tbsv", kit.Host(dw, n), kit.Wide(x));
    const std::vector<T> P = kit.Fill(n * (n + 1) / 2, 0.2);
    T* dP = kit.Device(P);
    T* dp = kit.Device(x);
    BLAS_OK(Pick<R>(cublasCtpmv, cublasZtpmv)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                                              CUBLAS_DIAG_UNIT, n, dP, dp, 1));
    std::vector<C64> wp(n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j)  // op(T)(i, j) = T(j, i), T upper packed, unit diagonal
        wp[i] += (i == j ? C64(1) : Cx(P[j + static_cast<size_t>(i) * (i + 1) / 2])) * Cx(x[j]);
    kit.Check("tpmv", kit.Host(dp, n), wp);
    BLAS_OK(Pick<R>(cublasCtpsv, cublasZtpsv)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                                              CUBLAS_DIAG_UNIT, n, dP, dp, 1));
    kit.Check("tpsv", kit.Host(dp, n), kit.Wide(x));
    for (T* p : {dD, dv, dw, dP, dp}) CHECK(cudaFree(p));
  }
  {  // hemm, right side, upper: C = alpha B H + beta C with B 3 x n
    const int m = 3;
    const std::vector<T> B = kit.Fill(static_cast<size_t>(ld) * n),
                         C = kit.Fill(static_cast<size_t>(ld) * n);
    T* dB = kit.Device(B);
    T* dC = kit.Device(C);
    BLAS_OK(Pick<R>(cublasChemm, cublasZhemm)(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, m, n,
                                              &alpha, dA, ld, dB, ld, &beta, dC, ld));
    auto H = herm(full, true);
    std::vector<C64> want = kit.Wide(C);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        C64 acc = 0;
        for (int l = 0; l < n; ++l) acc += Cx(B[i + static_cast<size_t>(l) * ld]) * H(l, j);
        want[i + static_cast<size_t>(j) * ld] =
            Cx(alpha) * acc + Cx(beta) * Cx(C[i + static_cast<size_t>(j) * ld]);
      }
    kit.Check("hemm", kit.Host(dC, C.size()), want);
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
  }
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dx));
}

// The Hermitian updates with real scalars (her, hpr, herk, her2k, herkx), the complex symmetric
// forms (symv, syr, syr2, syr2k, syrkx) and the Ex forms of csyrk and cherk, complex geam, dgmm,
// gemmBatched and gemm3m, the complex batched LU, solve and inverses, the complex rotations,
// rotEx, rotm, rotg and rotmg, and the triangular storage conversions trttp and tpttr, against
// std::complex<double>. Each update must leave the
// other triangle as it was; a Hermitian update's diagonal is real.
template <typename T, typename R>
void HermitianAndSymmetric(cublasHandle_t h, Rng& rng) {
  const bool single = sizeof(R) == 4;
  const double tol = single ? 1e-4 : 1e-11;
  ComplexKit<T, R> kit{rng, tol};
  const int n = 5, k = 3, ld = 7;
  const T alpha = {static_cast<R>(0.5), static_cast<R>(-0.75)}, beta = {static_cast<R>(0.25), 1};
  const R ralpha = static_cast<R>(0.75), rbeta = static_cast<R>(-0.5);
  const size_t nn = static_cast<size_t>(ld) * n;
  auto at = [&](const std::vector<T>& v, int i, int j) {
    return Cx(v[i + static_cast<size_t>(j) * ld]);
  };
  auto stored = [](bool upper, int i, int j) { return upper ? i <= j : i >= j; };
  // A square matrix with a real diagonal: a Hermitian update's input.
  auto hermitian_input = [&]() {
    std::vector<T> v = kit.Fill(nn);
    for (int i = 0; i < n; ++i) v[i + static_cast<size_t>(i) * ld].y = 0;
    return v;
  };
  const std::vector<T> x = kit.Fill(n), y = kit.Fill(n);
  T* dx = kit.Device(x);
  T* dy = kit.Device(y);
  {  // her, lower: A += ralpha x x^H; hpr, upper packed, the same update
    const std::vector<T> A = hermitian_input();
    T* dA = kit.Device(A);
    BLAS_OK(Pick<R>(cublasCher, cublasZher)(h, CUBLAS_FILL_MODE_LOWER, n, &ralpha, dx, 1, dA, ld));
    std::vector<C64> want = kit.Wide(A);
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i)
        want[i + static_cast<size_t>(j) * ld] += C64(ralpha) * Cx(x[i]) * std::conj(Cx(x[j]));
    kit.Check("her", kit.Host(dA, A.size()), want);
    std::vector<T> P = kit.Fill(n * (n + 1) / 2);
    for (int j = 0; j < n; ++j) P[j + static_cast<size_t>(j) * (j + 1) / 2].y = 0;
    T* dP = kit.Device(P);
    BLAS_OK(Pick<R>(cublasChpr, cublasZhpr)(h, CUBLAS_FILL_MODE_UPPER, n, &ralpha, dx, 1, dP));
    std::vector<C64> wp = kit.Wide(P);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i)
        wp[i + static_cast<size_t>(j) * (j + 1) / 2] +=
            C64(ralpha) * Cx(x[i]) * std::conj(Cx(x[j]));
    kit.Check("hpr", kit.Host(dP, P.size()), wp);
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dP));
  }
  // The rank-k updates read n x k (N) or k x n (T, C) operands with ld.
  const std::vector<T> A = kit.Fill(static_cast<size_t>(ld) * n), B = kit.Fill(A.size());
  T* dA = kit.Device(A);
  T* dB = kit.Device(B);
  // op(X)(i, l): X itself (N), its transpose (T) or its conjugate transpose (C).
  auto op = [&](const std::vector<T>& v, cublasOperation_t t, int i, int l) {
    if (t == CUBLAS_OP_N) return at(v, i, l);
    return t == CUBLAS_OP_T ? at(v, l, i) : std::conj(at(v, l, i));
  };
  // C(i, j) = a * sum_l op(X)(i, l) op2(Y)(l, j) over C's `uplo` triangle, + b * C(i, j); op2 is
  // the conjugate transpose when `herm`, the transpose otherwise.
  auto rank_k = [&](const std::vector<T>& C, bool upper, cublasOperation_t t,
                    const std::vector<T>& X, const std::vector<T>& Y, C64 a, C64 b, bool herm) {
    std::vector<C64> want = kit.Wide(C);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        if (!stored(upper, i, j)) continue;
        C64 acc = 0;
        for (int l = 0; l < k; ++l) {
          const C64 yjl = op(Y, t, j, l);
          acc += op(X, t, i, l) * (herm ? std::conj(yjl) : yjl);
        }
        want[i + static_cast<size_t>(j) * ld] = a * acc + b * at(C, i, j);
      }
    return want;
  };
  {  // herk, upper, N then C; T is not a Hermitian product's
    for (cublasOperation_t t : {CUBLAS_OP_N, CUBLAS_OP_C}) {
      const std::vector<T> C = hermitian_input();
      T* dC = kit.Device(C);
      BLAS_OK(Pick<R>(cublasCherk, cublasZherk)(h, CUBLAS_FILL_MODE_UPPER, t, n, k, &ralpha, dA, ld,
                                                &rbeta, dC, ld));
      kit.Check(t == CUBLAS_OP_N ? "herk N" : "herk C", kit.Host(dC, C.size()),
                rank_k(C, true, t, A, A, C64(ralpha), C64(rbeta), true));
      EXPECT_BLAS(Pick<R>(cublasCherk, cublasZherk)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k,
                                                    &ralpha, dA, ld, &rbeta, dC, ld),
                  CUBLAS_STATUS_INVALID_VALUE);
      CHECK(cudaFree(dC));
    }
  }
  if constexpr (sizeof(R) == 4) {  // CherkEx, Cherk3mEx on FP32 complex operands: cherk's product
    for (int three_m = 0; three_m < 2; ++three_m) {
      const std::vector<T> C = hermitian_input();
      T* dC = kit.Device(C);
      BLAS_OK((three_m ? cublasCherk3mEx : cublasCherkEx)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, n,
                                                          k, &ralpha, dA, CUDA_C_32F, ld, &rbeta,
                                                          dC, CUDA_C_32F, ld));
      kit.Check(three_m ? "herk3mEx" : "herkEx", kit.Host(dC, C.size()),
                rank_k(C, false, CUBLAS_OP_C, A, A, C64(ralpha), C64(rbeta), true));
      CHECK(cudaFree(dC));
    }
  }
  {  // her2k, lower, N: C = alpha A B^H + conj(alpha) B A^H + rbeta C
    const std::vector<T> C = hermitian_input();
    T* dC = kit.Device(C);
    BLAS_OK(Pick<R>(cublasCher2k, cublasZher2k)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k,
                                                &alpha, dA, ld, dB, ld, &rbeta, dC, ld));
    std::vector<C64> want = rank_k(C, false, CUBLAS_OP_N, A, B, Cx(alpha), C64(rbeta), true);
    const std::vector<C64> other =
        rank_k(C, false, CUBLAS_OP_N, B, A, std::conj(Cx(alpha)), C64(0), true);
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) want[i + static_cast<size_t>(j) * ld] += other[i + j * ld];
    kit.Check("her2k", kit.Host(dC, C.size()), want);
    CHECK(cudaFree(dC));
  }
  {  // herkx, upper, C: C = a A^H (2A) + rbeta C with a real-valued alpha (a Hermitian result)
    std::vector<T> A2 = A;
    for (T& v : A2) v = {2 * v.x, 2 * v.y};
    T* dA2 = kit.Device(A2);
    const T a = {static_cast<R>(0.5), 0};
    const std::vector<T> C = hermitian_input();
    T* dC = kit.Device(C);
    BLAS_OK(Pick<R>(cublasCherkx, cublasZherkx)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_C, n, k, &a,
                                                dA, ld, dA2, ld, &rbeta, dC, ld));
    kit.Check("herkx", kit.Host(dC, C.size()),
              rank_k(C, true, CUBLAS_OP_C, A, A2, Cx(a), C64(rbeta), true));
    CHECK(cudaFree(dA2));
    CHECK(cudaFree(dC));
  }
  {  // syr2k (upper, T) and syrkx (lower, N), complex symmetric: transposes, no conjugates
    const std::vector<T> C = kit.Fill(nn);
    T* dC = kit.Device(C);
    BLAS_OK(Pick<R>(cublasCsyr2k, cublasZsyr2k)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k,
                                                &alpha, dA, ld, dB, ld, &beta, dC, ld));
    std::vector<C64> want = rank_k(C, true, CUBLAS_OP_T, A, B, Cx(alpha), Cx(beta), false);
    const std::vector<C64> other = rank_k(C, true, CUBLAS_OP_T, B, A, Cx(alpha), C64(0), false);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i) want[i + static_cast<size_t>(j) * ld] += other[i + j * ld];
    kit.Check("syr2k", kit.Host(dC, C.size()), want);
    T* dC2 = kit.Device(C);
    BLAS_OK(Pick<R>(cublasCsyrkx, cublasZsyrkx)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k,
                                                &alpha, dA, ld, dB, ld, &beta, dC2, ld));
    kit.Check("syrkx", kit.Host(dC2, C.size()),
              rank_k(C, false, CUBLAS_OP_N, A, B, Cx(alpha), Cx(beta), false));
    if constexpr (sizeof(R) == 4) {  // CsyrkEx, Csyrk3mEx: csyrk's product
      for (int three_m = 0; three_m < 2; ++three_m) {
        CHECK(cudaMemcpy(dC2, C.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
        BLAS_OK((three_m ? cublasCsyrk3mEx : cublasCsyrkEx)(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                                                            n, k, &alpha, dA, CUDA_C_32F, ld, &beta,
                                                            dC2, CUDA_C_32F, ld));
        kit.Check(three_m ? "syrk3mEx" : "syrkEx", kit.Host(dC2, C.size()),
                  rank_k(C, true, CUBLAS_OP_T, A, A, Cx(alpha), Cx(beta), false));
      }
    }
    CHECK(cudaFree(dC));
    CHECK(cudaFree(dC2));
  }
  {  // symv (upper), syr (lower), syr2 (upper): complex symmetric, no conjugates
    const std::vector<T> S = kit.Fill(nn);
    auto sym = [&](bool upper, int i, int j) {
      return stored(upper, i, j) ? at(S, i, j) : at(S, j, i);
    };
    T* dS = kit.Device(S);
    T* dv = kit.Device(y);
    BLAS_OK(Pick<R>(cublasCsymv, cublasZsymv)(h, CUBLAS_FILL_MODE_UPPER, n, &alpha, dS, ld, dx, 1,
                                              &beta, dv, 1));
    std::vector<C64> wv(n);
    for (int i = 0; i < n; ++i) {
      C64 acc = 0;
      for (int j = 0; j < n; ++j) acc += sym(true, i, j) * Cx(x[j]);
      wv[i] = Cx(alpha) * acc + Cx(beta) * Cx(y[i]);
    }
    kit.Check("symv", kit.Host(dv, n), wv);
    BLAS_OK(Pick<R>(cublasCsyr, cublasZsyr)(h, CUBLAS_FILL_MODE_LOWER, n, &alpha, dx, 1, dS, ld));
    std::vector<C64> w1 = kit.Wide(S);
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i)
        w1[i + static_cast<size_t>(j) * ld] += Cx(alpha) * Cx(x[i]) * Cx(x[j]);
    kit.Check("syr", kit.Host(dS, S.size()), w1);
    T* dS2 = kit.Device(S);
    BLAS_OK(Pick<R>(cublasCsyr2, cublasZsyr2)(h, CUBLAS_FILL_MODE_UPPER, n, &alpha, dx, 1, dy, 1,
                                              dS2, ld));
    std::vector<C64> w2 = kit.Wide(S);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i)
        w2[i + static_cast<size_t>(j) * ld] +=
            Cx(alpha) * (Cx(x[i]) * Cx(y[j]) + Cx(y[i]) * Cx(x[j]));
    kit.Check("syr2", kit.Host(dS2, S.size()), w2);
    for (T* p : {dS, dv, dS2}) CHECK(cudaFree(p));
  }
  {  // geam (C, N), dgmm (left), gemm3m (N, T) and gemmBatched (C, N) on n x n matrices
    const std::vector<T> G = kit.Fill(nn), H = kit.Fill(nn);
    T* dG = kit.Device(G);
    T* dH = kit.Device(H);
    T* dO = kit.Device(std::vector<T>(nn));
    BLAS_OK(Pick<R>(cublasCgeam, cublasZgeam)(h, CUBLAS_OP_C, CUBLAS_OP_N, n, n, &alpha, dG, ld,
                                              &beta, dH, ld, dO, ld));
    std::vector<C64> wg(nn, C64(0));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        wg[i + static_cast<size_t>(j) * ld] =
            Cx(alpha) * std::conj(at(G, j, i)) + Cx(beta) * at(H, i, j);
    kit.Check("geam", kit.Host(dO, nn), wg);
    BLAS_OK(Pick<R>(cublasCdgmm, cublasZdgmm)(h, CUBLAS_SIDE_LEFT, n, n, dG, ld, dx, 1, dO, ld));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) wg[i + static_cast<size_t>(j) * ld] = Cx(x[i]) * at(G, i, j);
    kit.Check("dgmm", kit.Host(dO, nn), wg);
    auto gemm = [&](cublasOperation_t ta, cublasOperation_t tb, const std::vector<T>& C) {
      std::vector<C64> w = kit.Wide(C);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          C64 acc = 0;
          for (int l = 0; l < n; ++l) acc += op(G, ta, i, l) * op(H, tb, l, j);
          w[i + static_cast<size_t>(j) * ld] = Cx(alpha) * acc + Cx(beta) * at(C, i, j);
        }
      return w;
    };
    const std::vector<T> C0 = kit.Fill(nn), C1 = kit.Fill(nn);
    T* dC0 = kit.Device(C0);
    BLAS_OK(Pick<R>(cublasCgemm3m, cublasZgemm3m)(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &alpha, dG,
                                                  ld, dH, ld, &beta, dC0, ld));
    kit.Check("gemm3m", kit.Host(dC0, nn), gemm(CUBLAS_OP_N, CUBLAS_OP_T, C0));
    T* dC1 = kit.Device(C1);
    CHECK(cudaMemcpy(dC0, C0.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
    const T* As[2] = {dG, dG};
    const T* Bs[2] = {dH, dH};
    T* Cs[2] = {dC0, dC1};
    void** arrays = nullptr;
    CHECK(cudaMalloc(&arrays, 6 * sizeof(void*)));
    const void* host_arrays[6] = {As[0], As[1], Bs[0], Bs[1], Cs[0], Cs[1]};
    CHECK(cudaMemcpy(arrays, host_arrays, sizeof host_arrays, cudaMemcpyHostToDevice));
    BLAS_OK(Pick<R>(cublasCgemmBatched, cublasZgemmBatched)(
        h, CUBLAS_OP_C, CUBLAS_OP_N, n, n, n, &alpha, reinterpret_cast<const T* const*>(arrays), ld,
        reinterpret_cast<const T* const*>(arrays + 2), ld, &beta,
        reinterpret_cast<T* const*>(arrays + 4), ld, 2));
    kit.Check("gemmBatched[0]", kit.Host(dC0, nn), gemm(CUBLAS_OP_C, CUBLAS_OP_N, C0));
    kit.Check("gemmBatched[1]", kit.Host(dC1, nn), gemm(CUBLAS_OP_C, CUBLAS_OP_N, C1));
    for (void* p : {static_cast<void*>(dG), static_cast<void*>(dH), static_cast<void*>(dO),
                    static_cast<void*>(dC0), static_cast<void*>(dC1), static_cast<void*>(arrays)})
      CHECK(cudaFree(p));
  }
  {  // rot with a complex s, then with a real one: x' = c x + s y, y' = c y - conj(s) x
    const R c = static_cast<R>(0.6);
    const T s = {static_cast<R>(0.64), static_cast<R>(-0.48)};
    const R rs = static_cast<R>(0.8);
    T* rx = kit.Device(x);
    T* ry = kit.Device(y);
    BLAS_OK(Pick<R>(cublasCrot, cublasZrot)(h, n, rx, 1, ry, -1, &c, &s));
    std::vector<C64> wx(n), wy(n);
    for (int i = 0; i < n; ++i) {  // y walks from its far end (incy -1)
      const C64 xi = Cx(x[i]), yi = Cx(y[n - 1 - i]);
      wx[i] = C64(c) * xi + Cx(s) * yi;
      wy[n - 1 - i] = C64(c) * yi - std::conj(Cx(s)) * xi;
    }
    kit.Check("rot x", kit.Host(rx, n), wx);
    kit.Check("rot y", kit.Host(ry, n), wy);
    BLAS_OK(Pick<R>(cublasCsrot, cublasZdrot)(h, n, rx, 1, ry, 1, &c, &rs));
    std::vector<C64> vx(n), vy(n);
    for (int i = 0; i < n; ++i) {
      vx[i] = C64(c) * wx[i] + C64(rs) * wy[i];
      vy[i] = C64(c) * wy[i] - C64(rs) * wx[i];
    }
    kit.Check("srot x", kit.Host(rx, n), vx);
    kit.Check("srot y", kit.Host(ry, n), vy);
    // rotEx with real c and s of x's precision: the same rotation once more
    const cudaDataType xt = single ? CUDA_C_32F : CUDA_C_64F, rt = single ? CUDA_R_32F : CUDA_R_64F;
    BLAS_OK(cublasRotEx(h, n, rx, xt, 1, ry, xt, 1, &c, &rs, rt, xt));
    for (int i = 0; i < n; ++i) {
      const C64 px = vx[i], py = vy[i];
      vx[i] = C64(c) * px + C64(rs) * py;
      vy[i] = C64(c) * py - C64(rs) * px;
    }
    kit.Check("rotEx x", kit.Host(rx, n), vx);
    kit.Check("rotEx y", kit.Host(ry, n), vy);
    CHECK(cudaFree(rx));
    CHECK(cudaFree(ry));
  }
  {  // trttp then tpttr, each triangle: full -> packed -> a second full matrix's triangle
    const std::vector<T> F = kit.Fill(nn), G = kit.Fill(nn);
    T* dF = kit.Device(F);
    T* dG = kit.Device(G);
    T* dP = kit.Device(std::vector<T>(n * (n + 1) / 2));
    for (bool upper : {true, false}) {
      const cublasFillMode_t fill = upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
      BLAS_OK(Pick<R>(cublasCtrttp, cublasZtrttp)(h, fill, n, dF, ld, dP));
      std::vector<C64> wp;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          if (stored(upper, i, j)) wp.push_back(at(F, i, j));
      kit.Check(upper ? "trttp U" : "trttp L", kit.Host(dP, wp.size()), wp);
      CHECK(cudaMemcpy(dG, G.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
      BLAS_OK(Pick<R>(cublasCtpttr, cublasZtpttr)(h, fill, n, dP, dG, ld));
      std::vector<C64> wg = kit.Wide(G);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          if (stored(upper, i, j)) wg[i + static_cast<size_t>(j) * ld] = at(F, i, j);
      kit.Check(upper ? "tpttr U" : "tpttr L", kit.Host(dG, nn), wg);
    }
    for (T* p : {dF, dG, dP}) CHECK(cudaFree(p));
  }
  {  // rotg, complex and real, host pointer mode and device: c^2 + |s|^2 = 1 and
     // [c s; -conj(s) c] [a; b] = [r; 0] with r written over a
    auto near = [&](C64 got, C64 want, const char* what) {
      if (std::abs(got - want) > tol * 10 * (1 + std::abs(want))) {
        std::printf("FAIL %s%s: (%g, %g), want (%g, %g)\n", kit.prefix, what, got.real(),
                    got.imag(), want.real(), want.imag());
        ++failures;
      }
    };
    const T a0 = kit.Fill(1)[0], b0 = kit.Fill(1)[0];
    T a = a0, b = b0, s = {};
    R c = 0;
    BLAS_OK(Pick<R>(cublasCrotg, cublasZrotg)(h, &a, &b, &c, &s));
    near(C64(c * c + std::norm(Cx(s))), 1, "rotg c^2 + |s|^2");
    near(C64(c) * Cx(a0) + Cx(s) * Cx(b0), Cx(a), "rotg r");
    near(-std::conj(Cx(s)) * Cx(a0) + C64(c) * Cx(b0), 0, "rotg 0");
    const R ra0 = a0.x, rb0 = b0.x;
    R ra = ra0, rb = rb0, rc = 0, rs = 0;
    BLAS_OK(Pick<R>(cublasSrotg, cublasDrotg)(h, &ra, &rb, &rc, &rs));
    near(C64(rc * rc + rs * rs), 1, "rotg real c^2 + s^2");
    near(C64(rc * ra0 + rs * rb0), C64(ra), "rotg real r");
    near(C64(-rs * ra0 + rc * rb0), 0, "rotg real 0");
    // Device pointer mode: the same generator in stream order, on device memory
    R* d = nullptr;
    const R in[4] = {ra0, rb0, 0, 0};
    CHECK(cudaMalloc(&d, sizeof in));
    CHECK(cudaMemcpy(d, in, sizeof in, cudaMemcpyHostToDevice));
    BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    BLAS_OK(Pick<R>(cublasSrotg, cublasDrotg)(h, d, d + 1, d + 2, d + 3));
    BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    R out[4];
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost));
    near(C64(out[0]), C64(ra), "rotg device r");
    near(C64(out[2]), C64(rc), "rotg device c");
    near(C64(out[3]), C64(rs), "rotg device s");
    CHECK(cudaFree(d));
    // rotmg: H with H [x1; y1] = [x1'; 0], the weighted norm d1 x1^2 + d2 y1^2 kept
    R d1 = static_cast<R>(2 + rng.UniformD(0, 1)), d2 = static_cast<R>(1 + rng.UniformD(0, 1));
    const R x1 = static_cast<R>(rng.UniformD(0.5, 1)), y1 = static_cast<R>(rng.UniformD(-1, 1));
    const double weight = double(d1) * x1 * x1 + double(d2) * y1 * y1;
    R x = x1, param[5] = {};
    BLAS_OK(Pick<R>(cublasSrotmg, cublasDrotmg)(h, &d1, &d2, &x, &y1, param));
    double h11 = param[1], h21 = param[2], h12 = param[3], h22 = param[4];
    if (param[0] == 0) h11 = h22 = 1;
    if (param[0] == 1) h12 = 1, h21 = -1;
    if (param[0] == -2) h11 = h22 = 1, h12 = h21 = 0;
    near(C64(h11 * x1 + h12 * y1), C64(x), "rotmg x1");
    near(C64(h21 * x1 + h22 * y1), 0, "rotmg y1");
    near(C64(double(d1) * x * x), C64(weight), "rotmg weight");
  }
  {  // batched LU of two matrices: getrf, getrs (conjugate transpose), getri and matinv,
     // each checked by multiplying back
    const int m = 4, batch = 2;
    std::vector<std::vector<T>> M(batch);
    std::vector<T*> dM(batch), dLU(batch), dX(batch), dInv(batch), dInv2(batch);
    const std::vector<T> rhs = kit.Fill(static_cast<size_t>(m) * 2);
    for (int b = 0; b < batch; ++b) {
      M[b] = kit.Fill(static_cast<size_t>(m) * m);
      for (int i = 0; i < m; ++i) M[b][i + static_cast<size_t>(i) * m].x += 3;  // well conditioned
      dM[b] = kit.Device(M[b]);
      dLU[b] = kit.Device(M[b]);
      dX[b] = kit.Device(rhs);
      dInv[b] = kit.Device(std::vector<T>(static_cast<size_t>(m) * m));
      dInv2[b] = kit.Device(std::vector<T>(static_cast<size_t>(m) * m));
    }
    auto device_array = [](const std::vector<T*>& ptrs) {
      T** d = nullptr;
      CHECK(cudaMalloc(&d, ptrs.size() * sizeof(T*)));
      CHECK(cudaMemcpy(d, ptrs.data(), ptrs.size() * sizeof(T*), cudaMemcpyHostToDevice));
      return d;
    };
    T** aM = device_array(dM);
    T** aLU = device_array(dLU);
    T** aX = device_array(dX);
    T** aInv = device_array(dInv);
    T** aInv2 = device_array(dInv2);
    int *piv = nullptr, *info = nullptr;
    CHECK(cudaMalloc(&piv, sizeof(int) * m * batch));
    CHECK(cudaMalloc(&info, sizeof(int) * batch));
    BLAS_OK(Pick<R>(cublasCgetrfBatched, cublasZgetrfBatched)(h, m, aLU, m, piv, info, batch));
    int host_info = -1;
    BLAS_OK(Pick<R>(cublasCgetrsBatched, cublasZgetrsBatched)(h, CUBLAS_OP_C, m, 2, aLU, m, piv, aX,
                                                              m, &host_info, batch));
    BLAS_OK(
        Pick<R>(cublasCgetriBatched, cublasZgetriBatched)(h, m, aLU, m, piv, aInv, m, info, batch));
    BLAS_OK(
        Pick<R>(cublasCmatinvBatched, cublasZmatinvBatched)(h, m, aM, m, aInv2, m, info, batch));
    std::vector<int> infos(batch, -1);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(infos.data(), info, sizeof(int) * batch, cudaMemcpyDeviceToHost));
    if (host_info != 0 || infos[0] != 0 || infos[1] != 0) {
      std::printf("FAIL %sgetrsBatched/matinvBatched info: %d %d %d\n", kit.prefix, host_info,
                  infos[0], infos[1]);
      ++failures;
    }
    for (int b = 0; b < batch; ++b) {
      auto mat = [&](int i, int j) { return Cx(M[b][i + static_cast<size_t>(j) * m]); };
      const std::vector<T> X = kit.Host(dX[b], rhs.size());
      std::vector<C64> back(rhs.size());  // M^H X, to be rhs
      for (int c = 0; c < 2; ++c)
        for (int i = 0; i < m; ++i)
          for (int l = 0; l < m; ++l)
            back[i + static_cast<size_t>(c) * m] +=
                std::conj(mat(l, i)) * Cx(X[l + static_cast<size_t>(c) * m]);
      kit.Check("getrsBatched", std::vector<T>(rhs), back);
      for (T* inv : {dInv[b], dInv2[b]}) {
        const std::vector<T> I = kit.Host(inv, static_cast<size_t>(m) * m);
        std::vector<T> product(I.size());
        std::vector<C64> eye(I.size());
        for (int j = 0; j < m; ++j) {
          eye[j + static_cast<size_t>(j) * m] = 1;
          for (int i = 0; i < m; ++i) {
            C64 acc = 0;
            for (int l = 0; l < m; ++l) acc += mat(i, l) * Cx(I[l + static_cast<size_t>(j) * m]);
            product[i + static_cast<size_t>(j) * m] = {static_cast<R>(acc.real()),
                                                       static_cast<R>(acc.imag())};
          }
        }
        kit.Check(inv == dInv[b] ? "getriBatched" : "matinvBatched", product, eye);
      }
    }
    for (int b = 0; b < batch; ++b)
      for (T* p : {dM[b], dLU[b], dX[b], dInv[b], dInv2[b]}) CHECK(cudaFree(p));
    for (T** p : {aM, aLU, aX, aInv, aInv2}) CHECK(cudaFree(p));
    CHECK(cudaFree(piv));
    CHECK(cudaFree(info));
  }
  {  // rotm on real vectors, each flag: -2 (identity), -1 (full H), 0 (unit diagonal), 1
    std::vector<R> u(n), v(n);
    for (int i = 0; i < n; ++i) {
      u[i] = static_cast<R>(rng.UniformD(-1, 1));
      v[i] = static_cast<R>(rng.UniformD(-1, 1));
    }
    R *du = nullptr, *dv = nullptr;
    CHECK(cudaMalloc(&du, n * sizeof(R)));
    CHECK(cudaMalloc(&dv, n * sizeof(R)));
    for (int flag = -2; flag <= 1; ++flag) {
      const R p[5] = {static_cast<R>(flag), static_cast<R>(0.5), static_cast<R>(-0.25),
                      static_cast<R>(0.75), static_cast<R>(1.5)};
      CHECK(cudaMemcpy(du, u.data(), n * sizeof(R), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(dv, v.data(), n * sizeof(R), cudaMemcpyHostToDevice));
      BLAS_OK(Pick<R>(cublasSrotm, cublasDrotm)(h, n, du, 1, dv, 1, p));
      // H = [h11 h12; h21 h22]; flag 0 fixes h11 = h22 = 1, flag 1 fixes h12 = 1, h21 = -1.
      double h11 = p[1], h21 = p[2], h12 = p[3], h22 = p[4];
      if (flag == 0) h11 = h22 = 1;
      if (flag == 1) h12 = 1, h21 = -1;
      if (flag == -2) h11 = h22 = 1, h12 = h21 = 0;
      std::vector<double> wu(n), wv(n);
      for (int i = 0; i < n; ++i) {
        wu[i] = h11 * u[i] + h12 * v[i];
        wv[i] = h21 * u[i] + h22 * v[i];
      }
      std::vector<R> gu(n), gv(n);
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(gu.data(), du, n * sizeof(R), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(gv.data(), dv, n * sizeof(R), cudaMemcpyDeviceToHost));
      Compare(single ? "Srotm x" : "Drotm x", gu, wu, Tol<R>());
      Compare(single ? "Srotm y" : "Drotm y", gv, wv, Tol<R>());
    }
    CHECK(cudaFree(du));
    CHECK(cudaFree(dv));
  }
  for (T* p : {dx, dy, dA, dB}) CHECK(cudaFree(p));
}

// The handle's emulation settings and SM count target: each value set reads back, one cuBLAS
// does not take is refused, and an SGEMM under BF16x9 emulation (eager) computes the FP32
// product (within FP32's tolerance, as the emulation promises).
void HandleSettings(cublasHandle_t h, Rng& rng) {
  cublasEmulationStrategy_t strategy{};
  BLAS_OK(cublasGetEmulationStrategy(h, &strategy));
  if (strategy != CUBLAS_EMULATION_STRATEGY_DEFAULT) {
    std::printf("FAIL: a new handle's emulation strategy is %d\n", static_cast<int>(strategy));
    ++failures;
  }
  BLAS_OK(cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_EAGER));
  BLAS_OK(cublasGetEmulationStrategy(h, &strategy));
  if (strategy != CUBLAS_EMULATION_STRATEGY_EAGER) {
    std::printf("FAIL: the emulation strategy set reads back as %d\n", static_cast<int>(strategy));
    ++failures;
  }
  EXPECT_BLAS(cublasSetEmulationStrategy(h, static_cast<cublasEmulationStrategy_t>(7)),
              CUBLAS_STATUS_INVALID_VALUE);
  cudaEmulationMantissaControl control{};
  int bits = 0, target = 0;
  BLAS_OK(cublasSetFixedPointEmulationMantissaControl(h, CUDA_EMULATION_MANTISSA_CONTROL_FIXED));
  BLAS_OK(cublasSetFixedPointEmulationMaxMantissaBitCount(h, 40));
  BLAS_OK(cublasSetSmCountTarget(h, 4));
  BLAS_OK(cublasGetFixedPointEmulationMantissaControl(h, &control));
  BLAS_OK(cublasGetFixedPointEmulationMaxMantissaBitCount(h, &bits));
  BLAS_OK(cublasGetSmCountTarget(h, &target));
  if (control != CUDA_EMULATION_MANTISSA_CONTROL_FIXED || bits != 40 || target != 4) {
    std::printf("FAIL: settings read back as control %d, bits %d, SM target %d\n",
                static_cast<int>(control), bits, target);
    ++failures;
  }
  BLAS_OK(cublasSetSmCountTarget(h, 0));
  const int n = 24;
  Buf<float> A(n * n, rng), B(n * n, rng), C(n * n, rng);
  const float alpha = 1.5f, beta = 0.5f;
  BLAS_OK(cublasSetMathMode(h, CUBLAS_FP32_EMULATED_BF16X9_MATH));
  BLAS_OK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, A.d, n, B.d, n, &beta, C.d, n));
  std::vector<double> want(n * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double acc = 0;
      for (int l = 0; l < n; ++l) acc += double(A.h[i + l * n]) * B.h[l + j * n];
      want[i + j * n] = alpha * acc + beta * double(C.h[i + j * n]);
    }
  Compare("Sgemm under BF16x9 emulation", C.Down(), want, Tol<float>());
  BLAS_OK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  BLAS_OK(cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_DEFAULT));
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 29));
  cublasHandle_t h;
  BLAS_OK(cublasCreate(&h));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  BLAS_OK(cublasSetStream(h, stream));
  RealRoutines<float>(h, rng);
  RealRoutines<double>(h, rng);
  ComplexLevel1<cuComplex, float>(h, rng);
  ComplexLevel1<cuDoubleComplex, double>(h, rng);
  MixedPrecision(h, rng);
  ComplexLevel3<cuComplex, float>(h, rng);
  ComplexLevel3<cuDoubleComplex, double>(h, rng);
  ComplexLevel2<cuComplex, float>(h, rng);
  ComplexLevel2<cuDoubleComplex, double>(h, rng);
  HermitianAndSymmetric<cuComplex, float>(h, rng);
  HermitianAndSymmetric<cuDoubleComplex, double>(h, rng);
  HandleSettings(h, rng);
  BLAS_OK(cublasDestroy(h));
  CHECK(cudaStreamDestroy(stream));
  return Finish(failures, "cublas_level2");
}
