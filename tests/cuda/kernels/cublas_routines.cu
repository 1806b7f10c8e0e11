// tests/cuda/kernels/cublas_routines.cu - every forwarded cuBLAS routine on random data.
//
// Built as users build cuBLAS programs (nvcc -cudart shared ... -lcublas) and run
// unmodified against the stub libcublas.so.13. Each routine's result is checked
// against a double-precision loop on the host; both pointer modes, a non-default
// stream, strides and leading dimensions larger than the matrix. Bad calls must
// get NVIDIA's status codes, and a handle's workspace must count against the
// tenant's memory (cudaMemGetInfo).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <unistd.h>

#include <complex>
#include <string>
#include <vector>

#include "blas_test.h"

namespace {

using namespace blas_test;

// cudaMemcpy device-to-host once the routines on the handle's (non-blocking) stream are done.
cudaError_t Fetch(void* dst, const void* src, size_t bytes) {
  cudaError_t e = cudaDeviceSynchronize();
  return e != cudaSuccess ? e : cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}

void CompareScalar(const char* what, double got, double want, double tol) {
  if (!Near(got, want, tol)) {
    std::printf("FAIL %s = %.10g, want %.10g\n", what, got, want);
    ++failures;
  }
}

// Element (i, j) of op(X), X column-major with leading dimension ld.
template <typename T>
double OpAt(const std::vector<T>& x, int ld, bool trans, int i, int j) {
  return trans ? static_cast<double>(x[j + static_cast<size_t>(i) * ld])
               : static_cast<double>(x[i + static_cast<size_t>(j) * ld]);
}

// The S or D entry point for T.
template <typename T>
struct Blas;
#define BLAS_TRAITS(T, P, p)                                            \
  template <>                                                           \
  struct Blas<T> {                                                      \
    static constexpr auto axpy = cublas##P##axpy;                       \
    static constexpr auto dot = cublas##P##dot;                         \
    static constexpr auto nrm2 = cublas##P##nrm2;                       \
    static constexpr auto asum = cublas##P##asum;                       \
    static constexpr auto amax = cublasI##p##amax;                      \
    static constexpr auto amin = cublasI##p##amin;                      \
    static constexpr auto scal = cublas##P##scal;                       \
    static constexpr auto copy = cublas##P##copy;                       \
    static constexpr auto swap = cublas##P##swap;                       \
    static constexpr auto rot = cublas##P##rot;                         \
    static constexpr auto gemv = cublas##P##gemv;                       \
    static constexpr auto ger = cublas##P##ger;                         \
    static constexpr auto symv = cublas##P##symv;                       \
    static constexpr auto trsv = cublas##P##trsv;                       \
    static constexpr auto gemm = cublas##P##gemm;                       \
    static constexpr auto symm = cublas##P##symm;                       \
    static constexpr auto syrk = cublas##P##syrk;                       \
    static constexpr auto trsm = cublas##P##trsm;                       \
    static constexpr auto trmm = cublas##P##trmm;                       \
    static constexpr auto geam = cublas##P##geam;                       \
    static constexpr auto dgmm = cublas##P##dgmm;                       \
    static constexpr auto gemm_batched = cublas##P##gemmBatched;        \
    static constexpr auto gemm_strided = cublas##P##gemmStridedBatched; \
    static constexpr auto getrf = cublas##P##getrfBatched;              \
    static constexpr auto getrs = cublas##P##getrsBatched;              \
    static constexpr auto getri = cublas##P##getriBatched;              \
    static constexpr auto matinv = cublas##P##matinvBatched;            \
  };
BLAS_TRAITS(float, S, s)
BLAS_TRAITS(double, D, d)

template <typename T>
void Level1(cublasHandle_t h, Rng& rng) {
  using B = Blas<T>;
  const int n = 1000;
  const double tol = Tol<T>();
  Buf<T> x(2 * n, rng), y(n, rng);  // x with stride 2
  const T alpha = static_cast<T>(0.75);
  // axpy: y += alpha * x[::2]
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = y.h[i] + alpha * static_cast<double>(x.h[2 * i]);
  BLAS_OK(B::axpy(h, n, &alpha, x.d, 2, y.d, 1));
  Compare("axpy", y.Down(), want, tol);
  y.h = y.Down();
  // dot in host mode, then in device mode into device memory
  double d = 0;
  for (int i = 0; i < n; ++i) d += static_cast<double>(x.h[2 * i]) * y.h[i];
  T got = 0;
  BLAS_OK(B::dot(h, n, x.d, 2, y.d, 1, &got));
  CompareScalar("dot (host mode)", got, d, tol * 10);
  T* dres = nullptr;
  CHECK(cudaMalloc(&dres, 2 * sizeof(T)));
  BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  BLAS_OK(B::dot(h, n, x.d, 2, y.d, 1, dres));
  BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  cudaStream_t s;
  BLAS_OK(cublasGetStream(h, &s));
  CHECK(cudaMemcpyAsync(&got, dres, sizeof(T), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  CompareScalar("dot (device mode)", got, d, tol * 10);
  // nrm2, asum, amax, amin
  double nrm = 0, asum = 0;
  int imax = 0, imin = 0;
  for (int i = 0; i < n; ++i) {
    const double v = y.h[i];
    nrm += v * v;
    asum += std::fabs(v);
    if (std::fabs(v) > std::fabs(static_cast<double>(y.h[imax]))) imax = i;
    if (std::fabs(v) < std::fabs(static_cast<double>(y.h[imin]))) imin = i;
  }
  BLAS_OK(B::nrm2(h, n, y.d, 1, &got));
  CompareScalar("nrm2", got, std::sqrt(nrm), tol);
  BLAS_OK(B::asum(h, n, y.d, 1, &got));
  CompareScalar("asum", got, asum, tol);
  int idx = 0;
  BLAS_OK(B::amax(h, n, y.d, 1, &idx));
  if (idx != imax + 1) std::printf("FAIL amax = %d, want %d\n", idx, imax + 1), ++failures;
  BLAS_OK(B::amin(h, n, y.d, 1, &idx));
  if (idx != imin + 1) std::printf("FAIL amin = %d, want %d\n", idx, imin + 1), ++failures;
  // scal with alpha in device memory
  const T two = 2;
  CHECK(cudaMemcpy(dres + 1, &two, sizeof(T), cudaMemcpyHostToDevice));
  BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  BLAS_OK(B::scal(h, n, dres + 1, y.d, 1));
  BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  for (int i = 0; i < n; ++i) want[i] = 2.0 * y.h[i];
  Compare("scal (device alpha)", y.Down(), want, tol);
  y.h = y.Down();
  // copy x[::2] -> y, swap, rot
  BLAS_OK(B::copy(h, n, x.d, 2, y.d, 1));
  for (int i = 0; i < n; ++i) want[i] = x.h[2 * i];
  Compare("copy", y.Down(), want, 0);
  Buf<T> u(n, rng), v(n, rng);
  BLAS_OK(B::swap(h, n, u.d, 1, v.d, 1));
  Compare("swap", u.Down(), std::vector<double>(v.h.begin(), v.h.end()), 0);
  const T c = static_cast<T>(0.6), sn = static_cast<T>(0.8);
  std::vector<double> wu(n), wv(n);
  for (int i = 0; i < n; ++i) {  // after the swap u holds v.h and v holds u.h
    wu[i] = c * static_cast<double>(v.h[i]) + sn * static_cast<double>(u.h[i]);
    wv[i] = c * static_cast<double>(u.h[i]) - sn * static_cast<double>(v.h[i]);
  }
  BLAS_OK(B::rot(h, n, u.d, 1, v.d, 1, &c, &sn));
  Compare("rot x", u.Down(), wu, tol);
  Compare("rot y", v.Down(), wv, tol);
  CHECK(cudaFree(dres));
}

template <typename T>
void Level2(cublasHandle_t h, Rng& rng) {
  using B = Blas<T>;
  const int m = 37, n = 29, lda = 41;
  const double tol = Tol<T>();
  const T alpha = static_cast<T>(1.5), beta = static_cast<T>(-0.5);
  Buf<T> A(size_t(lda) * n, rng), x(m, rng), y(m, rng);
  for (bool trans : {false, true}) {
    const int lx = trans ? m : n, ly = trans ? n : m;
    y.Up();
    std::vector<double> want(ly);
    for (int i = 0; i < ly; ++i) {
      double acc = 0;
      for (int j = 0; j < lx; ++j) acc += OpAt(A.h, lda, trans, i, j) * x.h[j];
      want[i] = alpha * acc + beta * static_cast<double>(y.h[i]);
    }
    BLAS_OK(B::gemv(h, trans ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, &alpha, A.d, lda, x.d, 1, &beta,
                    y.d, 1));
    std::vector<T> got = y.Down();
    got.resize(ly);
    Compare(trans ? "gemv T" : "gemv N", got, want, tol);
  }
  // ger: A += alpha x y^T (m x n)
  Buf<T> gy(n, rng);
  std::vector<double> want(A.h.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = A.h[i];
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i)
      want[i + size_t(j) * lda] += alpha * static_cast<double>(x.h[i]) * gy.h[j];
  BLAS_OK(B::ger(h, m, n, &alpha, x.d, 1, gy.d, 1, A.d, lda));
  Compare("ger", A.Down(), want, tol);
  // symv (upper triangle of a square A), trsv (lower, non-unit, well conditioned)
  const int k = 31;
  Buf<T> S(size_t(k) * k, rng), sx(k, rng), sy(k, rng);
  std::vector<double> wy(k);
  for (int i = 0; i < k; ++i) {
    double acc = 0;
    for (int j = 0; j < k; ++j) {
      const int r = std::min(i, j), c = std::max(i, j);  // upper: row <= col
      acc += static_cast<double>(S.h[r + size_t(c) * k]) * sx.h[j];
    }
    wy[i] = alpha * acc + beta * static_cast<double>(sy.h[i]);
  }
  BLAS_OK(B::symv(h, CUBLAS_FILL_MODE_UPPER, k, &alpha, S.d, k, sx.d, 1, &beta, sy.d, 1));
  Compare("symv", sy.Down(), wy, tol);
  for (int i = 0; i < k; ++i) S.h[i + size_t(i) * k] = static_cast<T>(k);
  S.Up();
  std::vector<double> sol(k);  // forward substitution
  for (int i = 0; i < k; ++i) {
    double acc = sx.h[i];
    for (int j = 0; j < i; ++j) acc -= static_cast<double>(S.h[i + size_t(j) * k]) * sol[j];
    sol[i] = acc / static_cast<double>(S.h[i + size_t(i) * k]);
  }
  BLAS_OK(
      B::trsv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, k, S.d, k, sx.d, 1));
  Compare("trsv", sx.Down(), sol, tol * 10);
}

template <typename T>
void Level3(cublasHandle_t h, Rng& rng) {
  using B = Blas<T>;
  const double tol = Tol<T>() * 10;
  const T alpha = static_cast<T>(0.5), beta = static_cast<T>(2);
  const int m = 33, n = 21, k = 17, ld = 40;
  // gemm in three transpose combinations, leading dimensions > rows
  for (int combo = 0; combo < 3; ++combo) {
    const bool ta = combo == 1, tb = combo == 2;
    Buf<T> A(size_t(ld) * 40, rng), Bm(size_t(ld) * 40, rng), C(size_t(ld) * n, rng);
    std::vector<double> want(C.h.begin(), C.h.end());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int l = 0; l < k; ++l) acc += OpAt(A.h, ld, ta, i, l) * OpAt(Bm.h, ld, tb, l, j);
        want[i + size_t(j) * ld] =
            alpha * acc + beta * static_cast<double>(C.h[i + size_t(j) * ld]);
      }
    BLAS_OK(B::gemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                    &alpha, A.d, ld, Bm.d, ld, &beta, C.d, ld));
    Compare("gemm", C.Down(), want, tol);
  }
  // symm (left, upper): C = alpha*A*B + beta*C, A m x m symmetric
  {
    Buf<T> A(size_t(m) * m, rng), Bm(size_t(m) * n, rng), C(size_t(m) * n, rng);
    std::vector<double> want(C.h.size());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int l = 0; l < m; ++l)
          acc += static_cast<double>(A.h[std::min(i, l) + size_t(std::max(i, l)) * m]) *
                 Bm.h[l + size_t(j) * m];
        want[i + size_t(j) * m] = alpha * acc + beta * static_cast<double>(C.h[i + size_t(j) * m]);
      }
    BLAS_OK(B::symm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, m, n, &alpha, A.d, m, Bm.d, m,
                    &beta, C.d, m));
    Compare("symm", C.Down(), want, tol);
  }
  // syrk (lower, N): C = alpha*A*A^T + beta*C on the lower triangle only
  {
    Buf<T> A(size_t(n) * k, rng), C(size_t(n) * n, rng);
    std::vector<double> want(C.h.begin(), C.h.end());
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) {
        double acc = 0;
        for (int l = 0; l < k; ++l)
          acc += static_cast<double>(A.h[i + size_t(l) * n]) * A.h[j + size_t(l) * n];
        want[i + size_t(j) * n] = alpha * acc + beta * static_cast<double>(C.h[i + size_t(j) * n]);
      }
    BLAS_OK(B::syrk(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &alpha, A.d, n, &beta, C.d, n));
    Compare("syrk", C.Down(), want, tol);
  }
  // trsm (left, lower, N, non-unit): solve A X = alpha B; trmm (left, upper, N): C = alpha A B
  {
    Buf<T> A(size_t(m) * m, rng), Bm(size_t(m) * n, rng), C(size_t(m) * n, rng);
    for (int i = 0; i < m; ++i) A.h[i + size_t(i) * m] = static_cast<T>(m);
    A.Up();
    std::vector<double> X(Bm.h.size());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = alpha * static_cast<double>(Bm.h[i + size_t(j) * m]);
        for (int l = 0; l < i; ++l)
          acc -= static_cast<double>(A.h[i + size_t(l) * m]) * X[l + size_t(j) * m];
        X[i + size_t(j) * m] = acc / static_cast<double>(A.h[i + size_t(i) * m]);
      }
    std::vector<double> P(C.h.size());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int l = i; l < m; ++l)
          acc += static_cast<double>(A.h[i + size_t(l) * m]) * Bm.h[l + size_t(j) * m];
        P[i + size_t(j) * m] = alpha * acc;
      }
    BLAS_OK(B::trmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                    m, n, &alpha, A.d, m, Bm.d, m, C.d, m));
    Compare("trmm", C.Down(), P, tol);
    BLAS_OK(B::trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                    m, n, &alpha, A.d, m, Bm.d, m));
    Compare("trsm", Bm.Down(), X, tol);
  }
  // geam (A^T + B), dgmm (diag(x) * A)
  {
    Buf<T> A(size_t(n) * m, rng), Bm(size_t(m) * n, rng), C(size_t(m) * n, rng), x(m, rng);
    std::vector<double> want(C.h.size()), wd(C.h.size());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        want[i + size_t(j) * m] = alpha * static_cast<double>(A.h[j + size_t(i) * n]) +
                                  beta * static_cast<double>(Bm.h[i + size_t(j) * m]);
        wd[i + size_t(j) * m] = static_cast<double>(x.h[i]) * Bm.h[i + size_t(j) * m];
      }
    BLAS_OK(B::geam(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &alpha, A.d, n, &beta, Bm.d, m, C.d, m));
    Compare("geam", C.Down(), want, tol);
    BLAS_OK(B::dgmm(h, CUBLAS_SIDE_LEFT, m, n, Bm.d, m, x.d, 1, C.d, m));
    Compare("dgmm", C.Down(), wd, tol);
  }
}

// Batched and strided GEMM (S/D), then batched LU, solve and inverse.
template <typename T>
void Batched(cublasHandle_t h, Rng& rng) {
  using B = Blas<T>;
  const double tol = Tol<T>() * 10;
  const int m = 12, n = 10, k = 8, batch = 5;
  const T alpha = static_cast<T>(1.25), beta = static_cast<T>(0.5);
  Buf<T> A(size_t(m) * k * batch, rng), Bm(size_t(k) * n * batch, rng),
      C(size_t(m) * n * batch, rng);
  auto want_for = [&](const std::vector<T>& c0) {
    std::vector<double> want(c0.size());
    for (int b = 0; b < batch; ++b)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          double acc = 0;
          for (int l = 0; l < k; ++l)
            acc += static_cast<double>(A.h[size_t(b) * m * k + i + size_t(l) * m]) *
                   Bm.h[size_t(b) * k * n + l + size_t(j) * k];
          const size_t at = size_t(b) * m * n + i + size_t(j) * m;
          want[at] = alpha * acc + beta * static_cast<double>(c0[at]);
        }
    return want;
  };
  std::vector<double> want = want_for(C.h);
  BLAS_OK(B::gemm_strided(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, A.d, m, m * k, Bm.d, k,
                          k * n, &beta, C.d, m, m * n, batch));
  Compare("gemmStridedBatched", C.Down(), want, tol);
  // the same through arrays of pointers in device memory
  C.Up();
  std::vector<T*> pa, pb, pc;
  for (int b = 0; b < batch; ++b) {
    pa.push_back(A.d + size_t(b) * m * k);
    pb.push_back(Bm.d + size_t(b) * k * n);
    pc.push_back(C.d + size_t(b) * m * n);
  }
  T** arrays = nullptr;
  CHECK(cudaMalloc(&arrays, 3 * batch * sizeof(T*)));
  CHECK(cudaMemcpy(arrays, pa.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(arrays + batch, pb.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(arrays + 2 * batch, pc.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
  BLAS_OK(B::gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, arrays, m, arrays + batch,
                          k, &beta, arrays + 2 * batch, m, batch));
  Compare("gemmBatched", C.Down(), want, tol);

  // LU of diagonally dominant matrices, then solve and invert.
  const int N = 9;
  Buf<T> M(size_t(N) * N * batch, rng), rhs(size_t(N) * batch, rng),
      inv(size_t(N) * N * batch, rng);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < N; ++i) M.h[size_t(b) * N * N + i + size_t(i) * N] += static_cast<T>(N);
  M.Up();
  const std::vector<T> M0 = M.h;
  std::vector<T*> pm, pr, pi;
  for (int b = 0; b < batch; ++b) {
    pm.push_back(M.d + size_t(b) * N * N);
    pr.push_back(rhs.d + size_t(b) * N);
    pi.push_back(inv.d + size_t(b) * N * N);
  }
  T** marr = nullptr;
  int *piv = nullptr, *info = nullptr;
  CHECK(cudaMalloc(&marr, 3 * batch * sizeof(T*)));
  CHECK(cudaMalloc(&piv, N * batch * sizeof(int)));
  CHECK(cudaMalloc(&info, batch * sizeof(int)));
  CHECK(cudaMemcpy(marr, pm.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(marr + batch, pr.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(marr + 2 * batch, pi.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
  BLAS_OK(B::getrf(h, N, marr, N, piv, info, batch));
  std::vector<int> infos(batch);
  CHECK(Fetch(infos.data(), info, batch * sizeof(int)));
  for (int b = 0; b < batch; ++b)
    if (infos[b] != 0) std::printf("FAIL getrf info[%d] = %d\n", b, infos[b]), ++failures;
  int host_info = -7;
  BLAS_OK(B::getrs(h, CUBLAS_OP_N, N, 1, marr, N, piv, marr + batch, N, &host_info, batch));
  if (host_info != 0) std::printf("FAIL getrs info = %d\n", host_info), ++failures;
  BLAS_OK(B::getri(h, N, marr, N, piv, marr + 2 * batch, N, info, batch));
  const std::vector<T> xs = rhs.Down(), invs = inv.Down();
  std::vector<double> resid, eye, ones;
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < N; ++i) {
      double r = 0;
      for (int j = 0; j < N; ++j)
        r += static_cast<double>(M0[size_t(b) * N * N + i + size_t(j) * N]) * xs[size_t(b) * N + j];
      resid.push_back(r);
      ones.push_back(rhs.h[size_t(b) * N + i]);
      for (int j = 0; j < N; ++j) {
        double p = 0;
        for (int l = 0; l < N; ++l)
          p += static_cast<double>(M0[size_t(b) * N * N + i + size_t(l) * N]) *
               invs[size_t(b) * N * N + l + size_t(j) * N];
        eye.push_back(p - (i == j ? 1.0 : 0.0));
      }
    }
  Compare("getrs residual", resid, ones, tol * 10);
  Compare("getri A*inv(A) - I", eye, std::vector<double>(eye.size(), 0.0), tol * 10);
  // matinv straight from the original matrices
  M.h = M0;
  M.Up();
  BLAS_OK(B::matinv(h, N, marr, N, marr + 2 * batch, N, info, batch));
  const std::vector<T> inv2 = inv.Down();
  Compare("matinvBatched", inv2, std::vector<double>(invs.begin(), invs.end()), tol * 10);
  CHECK(cudaFree(arrays));
  CHECK(cudaFree(marr));
  CHECK(cudaFree(piv));
  CHECK(cudaFree(info));
}

// Complex, half and mixed-precision GEMMs.
// Complex dotu/dotc, gemv (N, T, C) and strided batched gemm, against std::complex<double>.
template <typename T>
void Complex(cublasHandle_t h, Rng& rng) {
  using C = std::complex<double>;
  constexpr bool kSingle = sizeof(T) == 8;
  const double tol = kSingle ? 2e-4 : 1e-10;
  auto draw = [&](size_t n) {
    std::vector<C> v(n);
    for (auto& x : v) x = {rng.UniformD(-1, 1), rng.UniformD(-1, 1)};
    if (kSingle)  // values the single-precision copy holds exactly
      for (auto& x : v) x = {double(float(x.real())), double(float(x.imag()))};
    return v;
  };
  auto up = [&](const std::vector<C>& v) {
    std::vector<T> t(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      t[i] = {decltype(t[i].x)(v[i].real()), decltype(t[i].x)(v[i].imag())};
    T* d = nullptr;
    CHECK(cudaMalloc(&d, t.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, t.data(), t.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
  };
  auto down = [&](const T* d, size_t n) {
    std::vector<T> t(n);
    CHECK(Fetch(t.data(), d, n * sizeof(T)));
    std::vector<double> out;
    for (const T& x : t) out.push_back(x.x), out.push_back(x.y);
    return out;
  };
  auto flat = [](const std::vector<C>& v) {
    std::vector<double> out;
    for (const C& x : v) out.push_back(x.real()), out.push_back(x.imag());
    return out;
  };
  const char* name = kSingle ? "C" : "Z";
  std::string what;
  // dotu and dotc over strided vectors, the result in host memory.
  {
    const int n = 37, incx = 2, incy = 3;
    std::vector<C> x = draw(n * incx), y = draw(n * incy);
    C u = 0, c = 0;
    for (int i = 0; i < n; ++i)
      u += x[i * incx] * y[i * incy], c += std::conj(x[i * incx]) * y[i * incy];
    T *dx = up(x), *dy = up(y);
    T ru{}, rc{};
    if constexpr (kSingle) {
      BLAS_OK(cublasCdotu(h, n, dx, incx, dy, incy, &ru));
      BLAS_OK(cublasCdotc(h, n, dx, incx, dy, incy, &rc));
    } else {
      BLAS_OK(cublasZdotu(h, n, dx, incx, dy, incy, &ru));
      BLAS_OK(cublasZdotc(h, n, dx, incx, dy, incy, &rc));
    }
    Compare((what = std::string(name) + "dotu").c_str(), std::vector<double>{ru.x, ru.y}, flat({u}),
            tol);
    Compare((what = std::string(name) + "dotc").c_str(), std::vector<double>{rc.x, rc.y}, flat({c}),
            tol);
    cudaFree(dx), cudaFree(dy);
  }
  // gemv: y = alpha op(A) x + beta y, A m x n with lda > m.
  for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C}) {
    const int m = 19, n = 13, lda = 23, incx = 2;
    const int xs = op == CUBLAS_OP_N ? n : m, ys = op == CUBLAS_OP_N ? m : n;
    std::vector<C> a = draw(size_t(lda) * n), x = draw(size_t(xs) * incx), y = draw(ys);
    const C alpha(0.75, -0.5), beta(-0.25, 1.0);
    std::vector<C> want(ys);
    for (int i = 0; i < ys; ++i) {
      C acc = 0;
      for (int l = 0; l < xs; ++l) {
        const C e = op == CUBLAS_OP_N ? a[i + l * lda] : a[l + i * lda];
        acc += (op == CUBLAS_OP_C ? std::conj(e) : e) * x[l * incx];
      }
      want[i] = alpha * acc + beta * y[i];
    }
    T *da = up(a), *dx = up(x), *dy = up(y);
    const T al = {decltype(T{}.x)(alpha.real()), decltype(T{}.x)(alpha.imag())};
    const T be = {decltype(T{}.x)(beta.real()), decltype(T{}.x)(beta.imag())};
    if constexpr (kSingle)
      BLAS_OK(cublasCgemv(h, op, m, n, &al, da, lda, dx, incx, &be, dy, 1));
    else
      BLAS_OK(cublasZgemv(h, op, m, n, &al, da, lda, dx, incx, &be, dy, 1));
    Compare((what = std::string(name) + "gemv op " + std::to_string(op)).c_str(), down(dy, ys),
            flat(want), tol);
    cudaFree(da), cudaFree(dx), cudaFree(dy);
  }
  // Strided batched gemm, op(A) conjugate-transposed: C_i = alpha A_i^H B_i + beta C_i.
  {
    const int m = 9, n = 7, k = 11, batch = 3;
    const long long sa = k * m + 5, sb = k * n + 3, sc = m * n + 1;
    std::vector<C> a = draw(sa * batch), b = draw(sb * batch), c = draw(sc * batch);
    const C alpha(0.5, 0.25), beta(1.0, -0.5);
    std::vector<C> want = c;
    for (int i = 0; i < batch; ++i)
      for (int col = 0; col < n; ++col)
        for (int row = 0; row < m; ++row) {
          C acc = 0;
          for (int l = 0; l < k; ++l)
            acc += std::conj(a[i * sa + l + row * k]) * b[i * sb + l + col * k];
          want[i * sc + row + col * m] = alpha * acc + beta * c[i * sc + row + col * m];
        }
    T *da = up(a), *db = up(b), *dc = up(c);
    const T al = {decltype(T{}.x)(alpha.real()), decltype(T{}.x)(alpha.imag())};
    const T be = {decltype(T{}.x)(beta.real()), decltype(T{}.x)(beta.imag())};
    if constexpr (kSingle)
      BLAS_OK(cublasCgemmStridedBatched(h, CUBLAS_OP_C, CUBLAS_OP_N, m, n, k, &al, da, k, sa, db, k,
                                        sb, &be, dc, m, sc, batch));
    else
      BLAS_OK(cublasZgemmStridedBatched(h, CUBLAS_OP_C, CUBLAS_OP_N, m, n, k, &al, da, k, sa, db, k,
                                        sb, &be, dc, m, sc, batch));
    Compare((what = std::string(name) + "gemmStridedBatched").c_str(), down(dc, c.size()),
            flat(want), tol);
    cudaFree(da), cudaFree(db), cudaFree(dc);
  }
}

void OtherTypes(cublasHandle_t h, Rng& rng) {
  const int m = 16, n = 12, k = 20;
  // Cgemm and Zgemm against std::complex<double>
  std::vector<std::complex<double>> a(m * k), b(k * n), c(m * n);
  for (auto& v : a) v = {rng.UniformD(-1, 1), rng.UniformD(-1, 1)};
  for (auto& v : b) v = {rng.UniformD(-1, 1), rng.UniformD(-1, 1)};
  const std::complex<double> alpha(0.5, -0.25);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      std::complex<double> acc = 0;
      for (int l = 0; l < k; ++l) acc += a[i + l * m] * b[l + j * k];
      c[i + j * m] = alpha * acc;
    }
  std::vector<double> want_re;
  for (auto& v : c) want_re.push_back(v.real()), want_re.push_back(v.imag());
  {
    std::vector<cuComplex> ha, hb;
    for (auto& v : a) ha.push_back({float(v.real()), float(v.imag())});
    for (auto& v : b) hb.push_back({float(v.real()), float(v.imag())});
    cuComplex *da, *db, *dc;
    CHECK(cudaMalloc(&da, ha.size() * 8));
    CHECK(cudaMalloc(&db, hb.size() * 8));
    CHECK(cudaMalloc(&dc, c.size() * 8));
    CHECK(cudaMemcpy(da, ha.data(), ha.size() * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, hb.data(), hb.size() * 8, cudaMemcpyHostToDevice));
    const cuComplex al = {0.5f, -0.25f}, be = {0, 0};
    BLAS_OK(cublasCgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, da, m, db, k, &be, dc, m));
    std::vector<float> got(c.size() * 2);
    CHECK(Fetch(got.data(), dc, got.size() * 4));
    Compare("Cgemm", got, want_re, 1e-4);
    cudaFree(da), cudaFree(db), cudaFree(dc);
  }
  {
    cuDoubleComplex *da, *db, *dc;
    CHECK(cudaMalloc(&da, a.size() * 16));
    CHECK(cudaMalloc(&db, b.size() * 16));
    CHECK(cudaMalloc(&dc, c.size() * 16));
    CHECK(cudaMemcpy(da, a.data(), a.size() * 16, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), b.size() * 16, cudaMemcpyHostToDevice));
    const cuDoubleComplex al = {0.5, -0.25}, be = {0, 0};
    BLAS_OK(cublasZgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, da, m, db, k, &be, dc, m));
    std::vector<double> got(c.size() * 2);
    CHECK(Fetch(got.data(), dc, got.size() * 8));
    Compare("Zgemm", got, want_re, 1e-10);
    cudaFree(da), cudaFree(db), cudaFree(dc);
  }
  // Hgemm, and GemmEx with half / bfloat16 inputs and FP32 compute, and FP32 strided Ex.
  std::vector<float> fa(m * k), fb(k * n);
  for (auto& v : fa) v = __half2float(__float2half(static_cast<float>(rng.UniformD(-1, 1))));
  for (auto& v : fb) v = __half2float(__float2half(static_cast<float>(rng.UniformD(-1, 1))));
  std::vector<double> want(m * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double acc = 0;
      for (int l = 0; l < k; ++l) acc += double(fa[i + l * m]) * fb[l + j * k];
      want[i + j * m] = acc;
    }
  std::vector<__half> ha(fa.size()), hb(fb.size());
  for (size_t i = 0; i < fa.size(); ++i) ha[i] = __float2half(fa[i]);
  for (size_t i = 0; i < fb.size(); ++i) hb[i] = __float2half(fb[i]);
  __half *dha, *dhb, *dhc;
  float* dfc;
  CHECK(cudaMalloc(&dha, ha.size() * 2));
  CHECK(cudaMalloc(&dhb, hb.size() * 2));
  CHECK(cudaMalloc(&dhc, want.size() * 2));
  CHECK(cudaMalloc(&dfc, want.size() * 4 * 3));
  CHECK(cudaMemcpy(dha, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dhb, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
  const __half hone = __float2half(1.0f), hzero = __float2half(0.0f);
  BLAS_OK(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &hone, dha, m, dhb, k, &hzero, dhc, m));
  std::vector<__half> hc(want.size());
  CHECK(Fetch(hc.data(), dhc, hc.size() * 2));
  std::vector<float> hcf(hc.size());
  for (size_t i = 0; i < hc.size(); ++i) hcf[i] = __half2float(hc[i]);
  Compare("Hgemm", hcf, want, 1e-2);
  const float one = 1, zero = 0;
  BLAS_OK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dha, CUDA_R_16F, m, dhb,
                       CUDA_R_16F, k, &zero, dfc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT));
  std::vector<float> got(want.size());
  CHECK(Fetch(got.data(), dfc, got.size() * 4));
  Compare("GemmEx 16F->32F", got, want, 1e-4);
  // bf16 inputs: the same values rounded to bfloat16
  std::vector<__nv_bfloat16> ba(fa.size()), bb(fb.size());
  for (size_t i = 0; i < fa.size(); ++i) ba[i] = __float2bfloat16(fa[i]);
  for (size_t i = 0; i < fb.size(); ++i) bb[i] = __float2bfloat16(fb[i]);
  std::vector<double> wantb(m * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double acc = 0;
      for (int l = 0; l < k; ++l)
        acc += double(__bfloat162float(ba[i + l * m])) * __bfloat162float(bb[l + j * k]);
      wantb[i + j * m] = acc;
    }
  CHECK(cudaDeviceSynchronize());  // the 16F GemmEx may still read dha
  CHECK(cudaMemcpy(dha, ba.data(), ba.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dhb, bb.data(), bb.size() * 2, cudaMemcpyHostToDevice));
  // CUBLAS_GEMM_AUTOTUNE (CUDA 13's sample GemmExAutoTuning) is a hint like any algo.
  BLAS_OK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dha, CUDA_R_16BF, m, dhb,
                       CUDA_R_16BF, k, &zero, dfc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_AUTOTUNE));
  CHECK(Fetch(got.data(), dfc, got.size() * 4));
  Compare("GemmEx 16BF->32F", got, wantb, 1e-4);
  // Strided and pointer-array Ex, FP32 throughout: 3 copies of the same product.
  float *dfa, *dfb;
  CHECK(cudaMalloc(&dfa, fa.size() * 4));
  CHECK(cudaMalloc(&dfb, fb.size() * 4));
  CHECK(cudaMemcpy(dfa, fa.data(), fa.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dfb, fb.data(), fb.size() * 4, cudaMemcpyHostToDevice));
  BLAS_OK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dfa, CUDA_R_32F, m,
                                     0, dfb, CUDA_R_32F, k, 0, &zero, dfc, CUDA_R_32F, m, m * n, 3,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  std::vector<float> got3(want.size() * 3);
  CHECK(Fetch(got3.data(), dfc, got3.size() * 4));
  std::vector<double> want3;
  for (int r = 0; r < 3; ++r) want3.insert(want3.end(), want.begin(), want.end());
  Compare("GemmStridedBatchedEx", got3, want3, 1e-4);
  CHECK(cudaMemset(dfc, 0, want.size() * 4 * 3));
  const void* ptrs[6] = {dfa, dfa, dfb, dfb, dfc, dfc + m * n};
  void** dptrs;
  CHECK(cudaMalloc(&dptrs, sizeof ptrs));
  CHECK(cudaMemcpy(dptrs, ptrs, sizeof ptrs, cudaMemcpyHostToDevice));
  BLAS_OK(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dptrs, CUDA_R_32F, m,
                              dptrs + 2, CUDA_R_32F, k, &zero, dptrs + 4, CUDA_R_32F, m, 2,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CHECK(Fetch(got3.data(), dfc, got3.size() * 4));
  got3.resize(want.size() * 2);
  want3.resize(want.size() * 2);
  Compare("GemmBatchedEx", got3, want3, 1e-4);
  // An unsupported type combination is refused as NVIDIA refuses it.
  EXPECT_BLAS(
      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dfa, CUDA_R_8U, m, dfb, CUDA_R_32F,
                   k, &zero, dfc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_NOT_SUPPORTED);
  for (void* p :
       {(void*)dha, (void*)dhb, (void*)dhc, (void*)dfc, (void*)dfa, (void*)dfb, (void*)dptrs})
    CHECK(cudaFree(p));
}

// Bad calls get NVIDIA's status codes, never a crash, and change nothing: first those
// NVIDIA's cuBLAS documents, then what only Remora checks.
void BadCalls(cublasHandle_t h) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 64 * sizeof(float)));
  const float one = 1;
  float host[64] = {};
  EXPECT_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &one, d, 4, d, 4, &one, d, 4),
              CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 4, &one, d, 4, d, 8, &one, d, 8),
              CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  EXPECT_BLAS(cublasSgemm(h, static_cast<cublasOperation_t>(9), CUBLAS_OP_N, 4, 4, 4, &one, d, 4, d,
                          4, &one, d, 4),
              CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_BLAS(cublasSmatinvBatched(h, 33, nullptr, 33, nullptr, 33, nullptr, 1),
              CUBLAS_STATUS_INVALID_VALUE);  // n > 32
  EXPECT_BLAS(cublasSetPointerMode(h, static_cast<cublasPointerMode_t>(5)),
              CUBLAS_STATUS_INVALID_VALUE);
  float r = 0;
  if (UnderRemora("cuBLAS bad pointers and handles")) {
    // 16 x 16 reaches 256 floats: past the end of a 64-float allocation
    EXPECT_BLAS(
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, d, 16, d, 16, &one, d, 16),
        CUBLAS_STATUS_INVALID_VALUE);
    // host memory passed as device memory
    EXPECT_BLAS(cublasSaxpy(h, 8, &one, host, 1, d, 1), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_BLAS(cublasSaxpy(h, 8, nullptr, d, 1, d, 1), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_BLAS(cublasSaxpy(h, 8, &one, d, 0, d, 1), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_BLAS(cublasSdot(h, 8, d, 1, d, 1, nullptr), CUBLAS_STATUS_INVALID_VALUE);
    // a handle that was never created, and one destroyed
    cublasHandle_t bogus = reinterpret_cast<cublasHandle_t>(&r);
    EXPECT_BLAS(cublasSdot(bogus, 8, d, 1, d, 1, &r), CUBLAS_STATUS_NOT_INITIALIZED);
    cublasHandle_t gone;
    BLAS_OK(cublasCreate(&gone));
    BLAS_OK(cublasDestroy(gone));
    EXPECT_BLAS(cublasSscal(gone, 8, &one, d, 1), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_BLAS(cublasDestroy(gone), CUBLAS_STATUS_NOT_INITIALIZED);
    // a routine Remora does not forward is exported (this program loads) and refused by name;
    // NVIDIA's library runs it
    const cuComplex cone = {1, 0};
    auto* cd = reinterpret_cast<cuComplex*>(d);
    const cublasStatus_t hemv =
        cublasChemv(h, CUBLAS_FILL_MODE_LOWER, 2, &cone, cd, 2, cd, 1, &cone, cd + 2, 1);
    if (hemv != CUBLAS_STATUS_SUCCESS && hemv != CUBLAS_STATUS_NOT_SUPPORTED) {
      std::printf("FAIL: cublasChemv -> %s\n", cublasGetStatusName(hemv));
      ++failures;
    }
  }
  // the session is still healthy: a good call works, and no CUDA error is pending
  BLAS_OK(cublasSdot(h, 8, d, 1, d, 1, &r));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGetLastError());
  CHECK(cudaFree(d));
}

// Set/Get Vector/Matrix, strided and with leading dimensions.
void Copies(Rng& rng, cudaStream_t s) {
  const int rows = 7, cols = 5, lda = 9, ldb = 8;
  std::vector<double> A(lda * cols), back(lda * cols, 0);
  for (double& v : A) v = rng.UniformD(-1, 1);
  double* d;
  CHECK(cudaMalloc(&d, ldb * cols * sizeof(double)));
  BLAS_OK(cublasSetMatrix(rows, cols, sizeof(double), A.data(), lda, d, ldb));
  BLAS_OK(cublasGetMatrixAsync(rows, cols, sizeof(double), d, ldb, back.data(), lda, s));
  CHECK(cudaStreamSynchronize(s));
  int bad = 0;
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) bad += back[i + j * lda] != A[i + j * lda];
  std::vector<double> v(12), w(24, 0);
  for (double& x : v) x = rng.UniformD(-1, 1);
  BLAS_OK(cublasSetVectorAsync(12, sizeof(double), v.data(), 1, d, 2, s));
  CHECK(cudaStreamSynchronize(s));  // s is non-blocking: the legacy stream does not wait for it
  BLAS_OK(cublasGetVector(12, sizeof(double), d, 2, w.data(), 2));
  for (int i = 0; i < 12; ++i) bad += w[2 * i] != v[i];
  if (bad) std::printf("FAIL Set/GetMatrix/Vector: %d wrong\n", bad), ++failures;
  // A leading dimension that is not positive is refused; one below the rows reaches the copy,
  // whose rows then overlap, and fails there (NVIDIA's cuBLAS on an H200 says so).
  EXPECT_BLAS(cublasSetMatrix(rows, cols, sizeof(double), A.data(), 0, d, ldb),
              CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_BLAS(cublasSetMatrix(rows, cols, sizeof(double), A.data(), 3, d, ldb),
              CUBLAS_STATUS_MAPPING_ERROR);
  CHECK(cudaFree(d));
}

}  // namespace

// Managed memory and pinned host memory are device memory to cuBLAS on a GPU with unified
// addressing: an SGEMV over A managed, x pinned and y managed, against the host.
void HostMemoryOperands(cublasHandle_t h, Rng& rng) {
  int managed = 0, mapped = 0;
  CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  CHECK(cudaDeviceGetAttribute(&mapped, cudaDevAttrCanMapHostMemory, 0));
  if (!managed || !mapped) {
    std::printf("cuBLAS over managed and pinned memory: skipped (the device has neither)\n");
    return;
  }
  const int m = 70, n = 45;
  float *a, *x, *y;
  CHECK(cudaMallocManaged(&a, sizeof(float) * m * n));
  CHECK(cudaMallocHost(&x, sizeof(float) * n));
  CHECK(cudaMallocManaged(&y, sizeof(float) * m));
  for (int i = 0; i < m * n; ++i) a[i] = rng.Uniform(-1, 1);
  for (int j = 0; j < n; ++j) x[j] = rng.Uniform(-1, 1);
  for (int i = 0; i < m; ++i) y[i] = rng.Uniform(-1, 1);
  std::vector<double> want(m);
  const float alpha = 0.75f, beta = -0.5f;
  for (int i = 0; i < m; ++i) {
    double acc = 0;
    for (int j = 0; j < n; ++j) acc += double(a[i + j * m]) * x[j];
    want[i] = alpha * acc + beta * y[i];
  }
  BLAS_OK(cublasSgemv(h, CUBLAS_OP_N, m, n, &alpha, a, m, x, 1, &beta, y, 1));
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < m; ++i) failures += !Near(y[i], want[i], Tol<float>());
  CHECK(cudaFree(a));
  CHECK(cudaFreeHost(x));
  CHECK(cudaFree(y));
}

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  size_t free0 = 0, total = 0;
  CHECK(cudaMemGetInfo(&free0, &total));
  cublasHandle_t h;
  BLAS_OK(cublasCreate(&h));
  size_t free1 = 0;
  CHECK(cudaMemGetInfo(&free1, &total));
  // A handle's workspace is the tenant's memory, as everything it holds.
  REQUIRE(free1 + (4u << 20) <= free0);
  int version = 0;
  BLAS_OK(cublasGetVersion(h, &version));
  REQUIRE(version >= 130000);
  REQUIRE(std::strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE),
                      "CUBLAS_STATUS_INVALID_VALUE") == 0);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  BLAS_OK(cublasSetStream(h, s));
  cudaStream_t got;
  BLAS_OK(cublasGetStream(h, &got));
  REQUIRE(got == s);
  Level1<float>(h, rng);
  Level1<double>(h, rng);
  Level2<float>(h, rng);
  Level2<double>(h, rng);
  Level3<float>(h, rng);
  Level3<double>(h, rng);
  Batched<float>(h, rng);
  Batched<double>(h, rng);
  OtherTypes(h, rng);
  Complex<cuComplex>(h, rng);
  Complex<cuDoubleComplex>(h, rng);
  Copies(rng, s);
  HostMemoryOperands(h, rng);
  // The default stream too.
  BLAS_OK(cublasSetStream(h, nullptr));
  Level1<float>(h, rng);
  BadCalls(h);
  BLAS_OK(cublasDestroy(h));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaDeviceSynchronize());
  // Under Remora the workspace went back with the handle, and the server's copies of pointer
  // arrays once the work that read them was done (a moment after it). NVIDIA's cuBLAS keeps
  // memory of its own after the handle is gone (seen on an H200), so natively this is not asked.
  if (UnderRemora("memory returned with the handle")) {
    size_t free2 = 0;
    for (int i = 0; i < 100 && free2 != free0; ++i) {
      if (i) usleep(10000);
      CHECK(cudaMemGetInfo(&free2, &total));
    }
    REQUIRE(free2 == free0);
  }
  return Finish(failures, "cublas_routines");
}
