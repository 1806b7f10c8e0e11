// tests/cuda/kernels/cublas_xt.cu - cuBLASXt's level-3 routines on random data.
//
// Built as users build cuBLAS programs (nvcc ... -lcublas) and run unmodified. Matrices in host
// memory (the routines' purpose), in device memory and mixed, with leading dimensions larger
// than the matrix, transposes, and a block dimension that leaves partial tiles at the edges;
// each result against a double-precision loop on the host. The routines block: the result is
// read at once, with no synchronization. beta = 0 must not read C (it holds NaNs), k = 0 must
// scale C by beta. The handle's tiles are the tenant's memory while a routine runs.
#include <cublasXt.h>

#include <complex>
#include <limits>
#include <type_traits>
#include <vector>

#include "common.h"

namespace {

int failures = 0;

#define XT_OK(call) STATUS_OK(call, CUBLAS_STATUS_SUCCESS, cublasGetStatusName)

template <typename T>
double Tol() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-10;
}

// A column-major matrix in host memory, rows x cols, columns ld apart.
template <typename T>
struct Mat {
  size_t rows, cols, ld;
  std::vector<T> h;
  Mat(size_t r, size_t c, size_t l, Rng& rng) : rows(r), cols(c), ld(l), h(l * (c ? c : 1)) {
    for (T& v : h) v = Random<T>(rng);
  }
  T& at(size_t r, size_t c) { return h[c * ld + r]; }
  template <typename U>
  static U Random(Rng& rng) {
    if constexpr (std::is_same_v<U, cuDoubleComplex>)
      return U{rng.UniformD(-1, 1), rng.UniformD(-1, 1)};
    else
      return static_cast<U>(rng.UniformD(-1, 1));
  }
};

// The same matrix in device memory.
template <typename T>
T* ToDevice(const Mat<T>& m) {
  return ::ToDevice(m.h);
}

std::complex<double> C(const cuDoubleComplex& v) {
  return {v.x, v.y};
}
double C(double v) {
  return v;
}
double C(float v) {
  return v;
}

// op(M)[r][c] for a transpose flag.
template <typename T>
auto Op(Mat<T>& m, bool t, size_t r, size_t c) {
  return t ? C(m.at(c, r)) : C(m.at(r, c));
}

template <typename T>
void Compare(const char* what, Mat<T>& got, const std::vector<decltype(C(T{}))>& want, size_t rows,
             size_t cols) {
  int bad = 0;
  for (size_t c = 0; c < cols; ++c)
    for (size_t r = 0; r < rows; ++r) {
      const auto g = C(got.at(r, c)), w = want[c * rows + r];
      if (std::abs(g - w) > Tol<T>() * std::fmax(1.0, std::abs(w)) && bad++ < 3)
        std::printf("FAIL: %s [%zu,%zu] = %g, want %g\n", what, r, c, std::abs(g), std::abs(w));
    }
  failures += bad;
}

// C = alpha op(A) op(B) + beta C, A, B and C where `where` says (h: host, d: device).
template <typename T>
void Gemm(cublasXtHandle_t h, Rng& rng, const char* where, bool ta, bool tb, size_t m, size_t n,
          size_t k, T alpha, T beta, bool nan_c) {
  using R = decltype(C(T{}));
  Mat<T> a(ta ? k : m, ta ? m : k, (ta ? k : m) + 3, rng);
  Mat<T> b(tb ? n : k, tb ? k : n, (tb ? n : k) + 1, rng);
  Mat<T> c(m, n, m + 2, rng);
  if constexpr (!std::is_same_v<T, cuDoubleComplex>)
    if (nan_c)
      for (T& v : c.h) v = std::numeric_limits<T>::quiet_NaN();
  std::vector<R> want(m * n);
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < m; ++i) {
      R s{};
      for (size_t p = 0; p < k; ++p) s += Op(a, ta, i, p) * Op(b, tb, p, j);
      want[j * m + i] = C(alpha) * s + (nan_c ? R{} : C(beta) * C(c.at(i, j)));
    }
  T* ad = where[0] == 'd' ? ToDevice(a) : nullptr;
  T* bd = where[1] == 'd' ? ToDevice(b) : nullptr;
  T* cd = where[2] == 'd' ? ToDevice(c) : nullptr;
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const T* A = ad ? ad : a.h.data();
  const T* B = bd ? bd : b.h.data();
  T* Cp = cd ? cd : c.h.data();
  if constexpr (std::is_same_v<T, float>)
    XT_OK(cublasXtSgemm(h, oa, ob, m, n, k, &alpha, A, a.ld, B, b.ld, &beta, Cp, c.ld));
  else if constexpr (std::is_same_v<T, double>)
    XT_OK(cublasXtDgemm(h, oa, ob, m, n, k, &alpha, A, a.ld, B, b.ld, &beta, Cp, c.ld));
  else
    XT_OK(cublasXtZgemm(h, oa, ob, m, n, k, &alpha, A, a.ld, B, b.ld, &beta, Cp, c.ld));
  if (cd) c.h = FromDevice(cd, c.h.size());
  char what[64];
  std::snprintf(what, sizeof what, "gemm %s %c%c %zux%zux%zu", where, ta ? 'T' : 'N',
                tb ? 'T' : 'N', m, n, k);
  Compare(what, c, want, m, n);
  for (T* p : {ad, bd, cd})
    if (p) CHECK(cudaFree(p));
}

// A lower-triangular matrix with a dominant diagonal (well conditioned).
template <typename T>
void MakeLower(Mat<T>& a) {
  for (size_t c = 0; c < a.cols; ++c)
    for (size_t r = 0; r < a.rows; ++r)
      if (r < c)
        a.at(r, c) = T(1e30);  // never read: the upper part
      else if (r == c)
        a.at(r, c) = T(4 + a.at(r, c));
}

template <typename T>
void Others(cublasXtHandle_t h, Rng& rng) {
  const size_t m = 70, n = 45, k = 38;
  const T alpha = T(0.75), beta = T(-0.5);
  {  // syrk, lower, op(A) = A^T: C = alpha A^T A + beta C (n x n), host memory
    Mat<T> a(k, n, k + 1, rng), c(n, n, n + 4, rng);
    std::vector<double> want(n * n);
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < n; ++i) {
        double s = 0;
        for (size_t p = 0; p < k; ++p) s += double(a.at(p, i)) * double(a.at(p, j));
        want[j * n + i] = i >= j ? alpha * s + beta * double(c.at(i, j)) : double(c.at(i, j));
      }
    if constexpr (sizeof(T) == 4)
      XT_OK(cublasXtSsyrk(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, k, &alpha, a.h.data(), a.ld,
                          &beta, c.h.data(), c.ld));
    else
      XT_OK(cublasXtDsyrk(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, k, &alpha, a.h.data(), a.ld,
                          &beta, c.h.data(), c.ld));
    Compare("syrk", c, want, n, n);
  }
  {  // symm, right, upper: C = alpha B A + beta C, A symmetric n x n from its upper part; A on
     // the device, B and C on the host
    Mat<T> a(n, n, n, rng), b(m, n, m + 1, rng), c(m, n, m + 3, rng);
    auto sym = [&](size_t r, size_t c2) { return double(r <= c2 ? a.at(r, c2) : a.at(c2, r)); };
    std::vector<double> want(m * n);
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < m; ++i) {
        double s = 0;
        for (size_t p = 0; p < n; ++p) s += double(b.at(i, p)) * sym(p, j);
        want[j * m + i] = alpha * s + beta * double(c.at(i, j));
      }
    T* ad = ToDevice(a);
    if constexpr (sizeof(T) == 4)
      XT_OK(cublasXtSsymm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, m, n, &alpha, ad, a.ld,
                          b.h.data(), b.ld, &beta, c.h.data(), c.ld));
    else
      XT_OK(cublasXtDsymm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, m, n, &alpha, ad, a.ld,
                          b.h.data(), b.ld, &beta, c.h.data(), c.ld));
    CHECK(cudaFree(ad));
    Compare("symm", c, want, m, n);
  }
  {  // trsm, left, lower, no transpose: solve A X = alpha B in place (host memory)
    Mat<T> a(m, m, m + 2, rng), b(m, n, m + 1, rng);
    MakeLower(a);
    Mat<T> b0 = b;
    if constexpr (sizeof(T) == 4)
      XT_OK(cublasXtStrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, m, n, &alpha, a.h.data(), a.ld, b.h.data(), b.ld));
    else
      XT_OK(cublasXtDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, m, n, &alpha, a.h.data(), a.ld, b.h.data(), b.ld));
    std::vector<double> want(m * n);  // A X, which must equal alpha B
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < m; ++i) want[j * m + i] = alpha * double(b0.at(i, j));
    Mat<T> ax = b;
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < m; ++i) {
        double s = 0;
        for (size_t p = 0; p <= i; ++p) s += double(a.at(i, p)) * double(b.at(p, j));
        ax.at(i, j) = T(s);
      }
    Compare("trsm", ax, want, m, n);
  }
  {  // trmm, left, lower, transposed, unit diagonal: C = alpha A^T B (A, B host; C device)
    Mat<T> a(m, m, m, rng), b(m, n, m + 5, rng), c(m, n, m, rng);
    MakeLower(a);
    std::vector<double> want(m * n);
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < m; ++i) {
        double s = double(b.at(i, j));  // the unit diagonal
        for (size_t p = i + 1; p < m; ++p) s += double(a.at(p, i)) * double(b.at(p, j));
        want[j * m + i] = alpha * s;
      }
    T* cd = ToDevice(c);
    if constexpr (sizeof(T) == 4)
      XT_OK(cublasXtStrmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                          CUBLAS_DIAG_UNIT, m, n, &alpha, a.h.data(), a.ld, b.h.data(), b.ld, cd,
                          c.ld));
    else
      XT_OK(cublasXtDtrmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                          CUBLAS_DIAG_UNIT, m, n, &alpha, a.h.data(), a.ld, b.h.data(), b.ld, cd,
                          c.ld));
    c.h = FromDevice(cd, c.h.size());
    CHECK(cudaFree(cd));
    Compare("trmm", c, want, m, n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  cublasXtHandle_t h;
  XT_OK(cublasXtCreate(&h));
  int devices[1] = {0};
  XT_OK(cublasXtDeviceSelect(h, 1, devices));
  XT_OK(cublasXtSetBlockDim(h, 64));
  int dim = 0;
  XT_OK(cublasXtGetBlockDim(h, &dim));
  REQUIRE(dim == 64);
  XT_OK(cublasXtSetPinningMemMode(h, CUBLASXT_PINNING_ENABLED));
  cublasXtPinnedMemMode_t mode = CUBLASXT_PINNING_DISABLED;
  XT_OK(cublasXtGetPinningMemMode(h, &mode));
  REQUIRE(mode == CUBLASXT_PINNING_ENABLED);
  XT_OK(cublasXtSetPinningMemMode(h, CUBLASXT_PINNING_DISABLED));

  // Tiles of 64: 150 x 130 x 170 leaves partial tiles in every dimension.
  Gemm<float>(h, rng, "hhh", true, false, 150, 130, 170, 1.25f, -0.5f, false);
  Gemm<float>(h, rng, "hhh", false, true, 65, 64, 129, -1.0f, 0.25f, false);
  Gemm<double>(h, rng, "dhh", false, true, 100, 90, 80, 0.5, 0.0, true);  // beta 0: C unread
  Gemm<double>(h, rng, "hdd", true, true, 70, 130, 66, 1.0, 1.0, false);
  Gemm<double>(h, rng, "hhh", false, false, 33, 20, 0, 1.0, 3.0, false);  // k 0: C = beta C
  Gemm<cuDoubleComplex>(h, rng, "hhd", false, false, 40, 70, 65, cuDoubleComplex{0.5, -1},
                        cuDoubleComplex{0.25, 0.5}, false);
  Others<float>(h, rng);
  Others<double>(h, rng);

  // Remora's tiles are the tenant's memory while a routine runs, and given back after it.
  if (UnderRemora("tile memory")) {
    size_t free0 = 0, free1 = 0, total = 0;
    CHECK(cudaMemGetInfo(&free0, &total));
    Gemm<float>(h, rng, "hhh", false, false, 64, 64, 64, 1.0f, 0.0f, false);
    CHECK(cudaMemGetInfo(&free1, &total));
    REQUIRE(free1 == free0);
  }
  XT_OK(cublasXtDestroy(h));
  return Finish(failures, "cublas_xt");
}
