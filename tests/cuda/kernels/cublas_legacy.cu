// tests/cuda/kernels/cublas_legacy.cu - the legacy cuBLAS API (cublas.h), as SHOC's and Altis's
// GEMM benchmarks call it: cublasInit, cublasAlloc, routines without a handle taking scalars by
// value and options as characters, failures read from cublasGetError, cublasShutdown.
//
// Built as such programs are (nvcc ... -lcublas) and run unmodified. Results are checked
// against double-precision loops on random data.
#include <cublas.h>

#include <vector>

#include "common.h"

namespace {

int failures = 0;

#define LEGACY_OK(what)                                                           \
  do {                                                                            \
    const cublasStatus s_ = cublasGetError();                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                            \
      std::printf("FAIL %s: cublasGetError -> %d\n", what, static_cast<int>(s_)); \
      ++failures;                                                                 \
    }                                                                             \
  } while (0)

template <typename T>
void Compare(const char* what, const std::vector<T>& got, const std::vector<double>& want) {
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-11;
  for (size_t i = 0; i < want.size(); ++i)
    if (!Near(static_cast<double>(got[i]), want[i], tol)) {
      std::printf("FAIL %s[%zu] = %.10g, want %.10g\n", what, i, static_cast<double>(got[i]),
                  want[i]);
      ++failures;
      return;
    }
}

template <typename T>
std::vector<T> Random(Rng& rng, size_t n) {
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(rng.UniformD(-1, 1));
  return v;
}

// C = alpha op(A) op(B) + beta C through cublasSgemm / cublasDgemm, A and B copied in with
// cublasSetMatrix and C read back with cublasGetMatrix.
template <typename T>
void Gemm(Rng& rng, char ta, char tb) {
  const int m = 33, n = 20, k = 17;
  const bool na = ta == 'N' || ta == 'n', nb = tb == 'N' || tb == 'n';
  const int lda = na ? m : k, ldb = nb ? k : n, ldc = m;
  const int acols = na ? k : m, bcols = nb ? n : k;
  const std::vector<T> A = Random<T>(rng, size_t(lda) * acols),
                       B = Random<T>(rng, size_t(ldb) * bcols), C = Random<T>(rng, size_t(ldc) * n);
  T *dA = nullptr, *dB = nullptr, *dC = nullptr;
  REQUIRE(cublasAlloc(lda * acols, sizeof(T), reinterpret_cast<void**>(&dA)) ==
          CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasAlloc(ldb * bcols, sizeof(T), reinterpret_cast<void**>(&dB)) ==
          CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasAlloc(ldc * n, sizeof(T), reinterpret_cast<void**>(&dC)) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetMatrix(lda, acols, sizeof(T), A.data(), lda, dA, lda) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetMatrix(ldb, bcols, sizeof(T), B.data(), ldb, dB, ldb) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetMatrix(ldc, n, sizeof(T), C.data(), ldc, dC, ldc) == CUBLAS_STATUS_SUCCESS);
  const T alpha = static_cast<T>(0.75), beta = static_cast<T>(-0.5);
  if constexpr (sizeof(T) == 4)
    cublasSgemm(ta, tb, m, n, k, alpha, dA, lda, dB, ldb, beta, dC, ldc);
  else
    cublasDgemm(ta, tb, m, n, k, alpha, dA, lda, dB, ldb, beta, dC, ldc);
  LEGACY_OK("gemm");
  std::vector<T> got(C.size());
  REQUIRE(cublasGetMatrix(ldc, n, sizeof(T), dC, ldc, got.data(), ldc) == CUBLAS_STATUS_SUCCESS);
  auto a = [&](int i, int l) {
    return double(na ? A[i + size_t(l) * lda] : A[l + size_t(i) * lda]);
  };
  auto b = [&](int l, int j) {
    return double(nb ? B[l + size_t(j) * ldb] : B[j + size_t(l) * ldb]);
  };
  std::vector<double> want(C.size());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int l = 0; l < k; ++l) s += a(i, l) * b(l, j);
      want[i + size_t(j) * ldc] = alpha * s + beta * double(C[i + size_t(j) * ldc]);
    }
  Compare(sizeof(T) == 4 ? "Sgemm" : "Dgemm", got, want);
  for (T* p : {dA, dB, dC}) REQUIRE(cublasFree(p) == CUBLAS_STATUS_SUCCESS);
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 41));
  REQUIRE(cublasInit() == CUBLAS_STATUS_SUCCESS);
  LEGACY_OK("init");
  Gemm<float>(rng, 'N', 'T');
  Gemm<double>(rng, 't', 'n');

  // Level 1 on one pair of vectors: values returned, not written through a pointer.
  const int n = 100;
  const std::vector<float> x = Random<float>(rng, n), y = Random<float>(rng, n);
  float *dx = nullptr, *dy = nullptr;
  REQUIRE(cublasAlloc(n, sizeof(float), reinterpret_cast<void**>(&dx)) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasAlloc(n, sizeof(float), reinterpret_cast<void**>(&dy)) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetVector(n, sizeof(float), x.data(), 1, dx, 1) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetVector(n, sizeof(float), y.data(), 1, dy, 1) == CUBLAS_STATUS_SUCCESS);
  double dot = 0, norm = 0;
  int amax = 0;
  for (int i = 0; i < n; ++i) {
    dot += double(x[i]) * y[i];
    norm += double(x[i]) * x[i];
    if (std::fabs(x[i]) > std::fabs(x[amax])) amax = i;
  }
  Compare("Sdot", std::vector<float>{cublasSdot(n, dx, 1, dy, 1)}, {dot});
  Compare("Snrm2", std::vector<float>{cublasSnrm2(n, dx, 1)}, {std::sqrt(norm)});
  if (cublasIsamax(n, dx, 1) != amax + 1) {
    std::printf("FAIL Isamax: %d, want %d\n", cublasIsamax(n, dx, 1), amax + 1);
    ++failures;
  }
  LEGACY_OK("level 1");
  // y = 2 x + y on a stream of the program's, then x scaled by -3.
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  REQUIRE(cublasSetKernelStream(stream) == CUBLAS_STATUS_SUCCESS);
  cublasSaxpy(n, 2.0f, dx, 1, dy, 1);
  cublasSscal(n, -3.0f, dx, 1);
  LEGACY_OK("axpy, scal");
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> gx(n), gy(n);
  REQUIRE(cublasGetVector(n, sizeof(float), dx, 1, gx.data(), 1) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasGetVector(n, sizeof(float), dy, 1, gy.data(), 1) == CUBLAS_STATUS_SUCCESS);
  std::vector<double> wx(n), wy(n);
  for (int i = 0; i < n; ++i) {
    wx[i] = -3.0 * x[i];
    wy[i] = 2.0 * x[i] + y[i];
  }
  Compare("Sscal", gx, wx);
  Compare("Saxpy", gy, wy);

  // An option character no routine takes: the routine does nothing, and cublasGetError says
  // why once, then SUCCESS.
  cublasSgemm('X', 'N', 2, 2, 2, 1.0f, dx, 2, dy, 2, 0.0f, dy, 2);
  const cublasStatus bad = cublasGetError();
  if (bad != CUBLAS_STATUS_INVALID_VALUE) {
    std::printf("FAIL: cublasSgemm('X', ...) left %d, want CUBLAS_STATUS_INVALID_VALUE\n",
                static_cast<int>(bad));
    ++failures;
  }
  LEGACY_OK("cleared");
  REQUIRE(cublasFree(dx) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasFree(dy) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasShutdown() == CUBLAS_STATUS_SUCCESS);
  CHECK(cudaStreamDestroy(stream));
  return Finish(failures, "cublas_legacy");
}
