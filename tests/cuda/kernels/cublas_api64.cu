// tests/cuda/kernels/cublas_api64.cu - cuBLAS's 64-bit integer API (the _64 entry points),
// gemv over batches (arrays of pointers and strided, real and complex, every operation), sgemmEx
// and cgemmEx, hgemm over batches, iamaxEx and iaminEx, and the atomics mode, on random data.
//
// Built as users build cuBLAS programs (nvcc ... -lcublas) and run unmodified. Each result is
// checked against a double-precision loop on the host. An index routine's _64 form writes a whole
// int64_t: its result starts as all ones bits, in host and in device memory.
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <complex>
#include <tuple>
#include <vector>

#include "blas_test.h"

namespace {

using namespace blas_test;
using Z = std::complex<double>;

// The real type of T: T itself, or the type of a complex T's parts.
template <typename T>
struct RealOf {
  using type = T;
};
template <>
struct RealOf<cuComplex> {
  using type = float;
};
template <>
struct RealOf<cuDoubleComplex> {
  using type = double;
};
template <typename T>
using Real = typename RealOf<T>::type;
template <typename T>
constexpr bool kComplex = sizeof(T) == 2 * sizeof(Real<T>);

// Element i of an array of T, as a complex double.
template <typename T>
Z At(const std::vector<T>& a, int64_t i) {
  const auto* p = reinterpret_cast<const Real<T>*>(a.data());
  if constexpr (kComplex<T>)
    return {p[2 * i], p[2 * i + 1]};
  else
    return {static_cast<double>(p[i]), 0};
}

// Random host data of n elements of T (real, or complex as two reals), and its device copy.
template <typename T>
struct Data {
  std::vector<T> h;
  T* d = nullptr;
  Data(size_t n, Rng& rng) : h(n) {
    auto* p = reinterpret_cast<Real<T>*>(h.data());
    for (size_t i = 0; i < n * sizeof(T) / sizeof(Real<T>); ++i)
      p[i] = static_cast<Real<T>>(rng.UniformD(-1, 1));
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    CHECK(cudaMemcpy(d, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~Data() { cudaFree(d); }
  Data(const Data&) = delete;
  Data& operator=(const Data&) = delete;
  std::vector<T> Down() const {
    CHECK(cudaDeviceSynchronize());
    std::vector<T> out(h.size());
    CHECK(cudaMemcpy(out.data(), d, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
};

// Counts a failure unless got[i] is within tol of want[i] (relative, per component).
template <typename T>
void Check(const char* what, const std::vector<T>& got, const std::vector<Z>& want, double tol) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const Z g = At(got, static_cast<int64_t>(i));
    if ((!Near(g.real(), want[i].real(), tol) || !Near(g.imag(), want[i].imag(), tol)) && bad++ < 3)
      std::printf("  %s[%zu] = (%.8g, %.8g), want (%.8g, %.8g)\n", what, i, g.real(), g.imag(),
                  want[i].real(), want[i].imag());
  }
  if (bad) {
    std::printf("FAIL %s: %d of %zu wrong\n", what, bad, want.size());
    ++failures;
  }
}

template <typename T>
std::vector<Z> AsZ(const std::vector<T>& v) {
  std::vector<Z> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = At(v, static_cast<int64_t>(i));
  return out;
}

// op(A)(i, j) of an m x n (before op) column-major A at `a` with leading dimension lda.
Z OpA(const std::vector<Z>& a, int64_t off, int64_t lda, cublasOperation_t op, int64_t i,
      int64_t j) {
  if (op == CUBLAS_OP_N) return a[off + i + j * lda];
  const Z v = a[off + j + i * lda];
  return op == CUBLAS_OP_C ? std::conj(v) : v;
}

// y = alpha op(A) x + beta y for one matrix: A at aoff, x and y strided from xoff and yoff.
void GemvRef(cublasOperation_t op, int64_t m, int64_t n, Z alpha, const std::vector<Z>& a,
             int64_t aoff, int64_t lda, const std::vector<Z>& x, int64_t xoff, int64_t incx, Z beta,
             std::vector<Z>& y, int64_t yoff, int64_t incy) {
  const int64_t rows = op == CUBLAS_OP_N ? m : n, cols = op == CUBLAS_OP_N ? n : m;
  for (int64_t i = 0; i < rows; ++i) {
    Z s = 0;
    for (int64_t j = 0; j < cols; ++j) s += OpA(a, aoff, lda, op, i, j) * x[xoff + j * incx];
    y[yoff + i * incy] = alpha * s + beta * y[yoff + i * incy];
  }
}

// C = alpha op(A) op(B) + beta C (m x n, inner k), matrices at offsets into their arrays.
void GemmRef(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, Z alpha,
             const std::vector<Z>& a, int64_t aoff, int64_t lda, const std::vector<Z>& b,
             int64_t boff, int64_t ldb, Z beta, std::vector<Z>& c, int64_t coff, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      Z s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += OpA(a, aoff, lda, ta, i, p) * OpA(b, boff, ldb, tb, p, j);
      c[coff + i + j * ldc] = alpha * s + beta * c[coff + i + j * ldc];
    }
}

template <typename T>
T Scalar(double re, double im) {
  if constexpr (kComplex<T>) {
    T v;
    v.x = static_cast<Real<T>>(re);
    v.y = static_cast<Real<T>>(im);
    return v;
  } else {
    return static_cast<T>(re);
  }
}

// gemvBatched and gemvStridedBatched of T, each operation, x and y strided, against GemvRef.
template <typename T, typename Batched, typename Strided>
void GemvBatches(cublasHandle_t h, Rng& rng, Batched batched, Strided strided, double tol) {
  constexpr bool complex = kComplex<T>;
  const int64_t m = 13, n = 9, lda = 16, incx = 2, incy = 3, batch = 5;
  const int64_t sa = lda * n + 7, sx = 40, sy = 45;
  const T alpha = Scalar<T>(0.75, complex ? -0.5 : 0), beta = Scalar<T>(-1.25, complex ? 0.25 : 0);
  const Z za = At(std::vector<T>{alpha}, 0), zb = At(std::vector<T>{beta}, 0);
  for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C}) {
    if (op == CUBLAS_OP_C && !complex) continue;
    Data<T> a(sa * batch, rng), x(sx * batch, rng), y(sy * batch, rng);
    const std::vector<Z> az = AsZ(a.h), xz = AsZ(x.h);
    std::vector<Z> want = AsZ(y.h);
    for (int64_t b = 0; b < batch; ++b)
      GemvRef(op, m, n, za, az, b * sa, lda, xz, b * sx, incx, zb, want, b * sy, incy);

    // Strided: the matrices sa elements apart, x and y sx and sy.
    BLAS_OK(strided(h, op, m, n, &alpha, a.d, lda, sa, x.d, incx, sx, &beta, y.d, incy, sy, batch));
    Check(complex ? "gemvStridedBatched (complex)" : "gemvStridedBatched", y.Down(), want, tol);

    // Arrays of pointers to the same matrices and vectors, listed in reverse: the order is the
    // arrays', not the memory's. y starts again from its first values.
    CHECK(cudaMemcpy(y.d, y.h.data(), y.h.size() * sizeof(T), cudaMemcpyHostToDevice));
    std::vector<const T*> ap(batch), xp(batch);
    std::vector<T*> yp(batch);
    for (int64_t b = 0; b < batch; ++b) {
      ap[b] = a.d + (batch - 1 - b) * sa;
      xp[b] = x.d + (batch - 1 - b) * sx;
      yp[b] = y.d + (batch - 1 - b) * sy;
    }
    const T** apd = ToDevice(ap);
    const T** xpd = ToDevice(xp);
    T** ypd = ToDevice(yp);
    BLAS_OK(batched(h, op, m, n, &alpha, apd, lda, xpd, incx, &beta, ypd, incy, batch));
    Check(complex ? "gemvBatched (complex)" : "gemvBatched", y.Down(), want, tol);
    EXPECT_BLAS(batched(h, op, m, n, &alpha, apd, lda, xpd, incx, &beta, ypd, incy, -1),
                CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cudaFree(apd));
    CHECK(cudaFree(xpd));
    CHECK(cudaFree(ypd));
  }
}

// The _64 forms of level 1, 2 and 3 routines, copies and the Ex gemm.
void Api64(cublasHandle_t h, Rng& rng) {
  const int64_t m = 37, n = 23, k = 19, lda = 40, ldb = 24, ldc = 41;
  // sgemm_v2_64, A transposed: A is k x m.
  {
    Data<float> a(lda * m, rng), b(ldb * n, rng), c(ldc * n, rng);
    const float alpha = 1.5f, beta = -0.5f;
    std::vector<Z> want = AsZ(c.h);
    GemmRef(CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, alpha, AsZ(a.h), 0, lda, AsZ(b.h), 0, ldb, beta,
            want, 0, ldc);
    BLAS_OK(cublasSgemm_v2_64(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a.d, lda, b.d, ldb,
                              &beta, c.d, ldc));
    Check("sgemm_v2_64", c.Down(), want, 2e-4);
  }
  // dgemv_v2_64 with strided vectors.
  {
    Data<double> a(lda * n, rng), x(n * 2, rng), y(m * 3, rng);
    const double alpha = -0.75, beta = 2;
    std::vector<Z> want = AsZ(y.h);
    GemvRef(CUBLAS_OP_N, m, n, alpha, AsZ(a.h), 0, lda, AsZ(x.h), 0, 2, beta, want, 0, 3);
    BLAS_OK(cublasDgemv_v2_64(h, CUBLAS_OP_N, m, n, &alpha, a.d, lda, x.d, 2, &beta, y.d, 3));
    Check("dgemv_v2_64", y.Down(), want, 1e-10);
  }
  // sdot_v2_64 and isamax_v2_64 / isamin_v2_64, results in host and then device memory.
  {
    const int64_t len = 301;
    Data<float> x(len, rng), y(len, rng);
    double dot = 0;
    int64_t imax = 0, imin = 0;
    for (int64_t i = 0; i < len; ++i) {
      dot += double(x.h[i]) * y.h[i];
      if (std::fabs(x.h[i]) > std::fabs(x.h[imax])) imax = i;
      if (std::fabs(x.h[i]) < std::fabs(x.h[imin])) imin = i;
    }
    float got = 0;
    BLAS_OK(cublasSdot_v2_64(h, len, x.d, 1, y.d, 1, &got));
    if (!Near(got, dot, 1e-4)) {
      std::printf("FAIL sdot_v2_64 = %g, want %g\n", got, dot);
      ++failures;
    }
    int64_t index = -1;
    BLAS_OK(cublasIsamax_v2_64(h, len, x.d, 1, &index));
    int64_t low = -1;
    BLAS_OK(cublasIsamin_v2_64(h, len, x.d, 1, &low));
    int64_t* dev;
    CHECK(cudaMalloc(&dev, 2 * sizeof(int64_t)));
    CHECK(cudaMemset(dev, 0xff, 2 * sizeof(int64_t)));
    BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    BLAS_OK(cublasIsamax_v2_64(h, len, x.d, 1, dev));
    BLAS_OK(cublasIamaxEx_64(h, len, x.d, CUDA_R_32F, 1, dev + 1));
    BLAS_OK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    CHECK(cudaDeviceSynchronize());
    int64_t on_device[2];
    CHECK(cudaMemcpy(on_device, dev, sizeof on_device, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(dev));
    for (auto [what, v, want] : {std::tuple{"isamax_v2_64", index, imax + 1},
                                 {"isamin_v2_64", low, imin + 1},
                                 {"isamax_v2_64 (device memory)", on_device[0], imax + 1},
                                 {"iamaxEx_64 (device memory)", on_device[1], imax + 1}}) {
      if (v != want) {
        std::printf("FAIL %s = %lld, want %lld\n", what, static_cast<long long>(v),
                    static_cast<long long>(want));
        ++failures;
      }
    }
  }
  // setMatrix_64 and getMatrix_64 through a device matrix with a wider leading dimension.
  {
    std::vector<double> host(m * n), back(m * n, 0);
    for (double& v : host) v = rng.UniformD(-1, 1);
    double* d;
    CHECK(cudaMalloc(&d, lda * n * sizeof(double)));
    BLAS_OK(cublasSetMatrix_64(m, n, sizeof(double), host.data(), m, d, lda));
    BLAS_OK(cublasGetMatrix_64(m, n, sizeof(double), d, lda, back.data(), m));
    CHECK(cudaFree(d));
    if (host != back) {
      std::printf("FAIL setMatrix_64 / getMatrix_64: the matrix came back changed\n");
      ++failures;
    }
  }
  // gemmStridedBatchedEx_64 in FP64.
  {
    const int64_t batch = 3, stride = ldc * n + 5;
    Data<double> a(lda * k * batch + 100, rng), b(ldb * n * batch + 100, rng),
        c(stride * batch, rng);
    const double alpha = 0.5, beta = 1.25;
    std::vector<Z> want = AsZ(c.h);
    const std::vector<Z> az = AsZ(a.h), bz = AsZ(b.h);
    for (int64_t i = 0; i < batch; ++i)
      GemmRef(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, az, i * lda * k, lda, bz, i * ldb * n, ldb,
              beta, want, i * stride, ldc);
    BLAS_OK(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.d,
                                          CUDA_R_64F, lda, lda * k, b.d, CUDA_R_64F, ldb, ldb * n,
                                          &beta, c.d, CUDA_R_64F, ldc, stride, batch,
                                          CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
    Check("gemmStridedBatchedEx_64", c.Down(), want, 1e-10);
  }
  if (UnderRemora("a _64 dimension past 32 bits")) {
    // Remora's server takes 32-bit integers: a larger one is refused by name, nothing sent.
    Data<float> x(16, rng);
    const float alpha = 2;
    EXPECT_BLAS(cublasSscal_v2_64(h, int64_t{1} << 32, &alpha, x.d, 1),
                CUBLAS_STATUS_NOT_SUPPORTED);
    Check("sscal_v2_64 refused", x.Down(), AsZ(x.h), 0);
  }
}

// sgemmEx (FP16 operands, FP32 result) and cgemmEx (FP32 complex).
void GemmExForms(cublasHandle_t h, Rng& rng) {
  const int m = 24, n = 17, k = 33;
  {
    std::vector<__half> a(m * k), b(k * n);
    std::vector<Z> az(a.size()), bz(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      az[i] = __half2float(a[i] = __float2half(rng.Uniform(-1, 1)));
    for (size_t i = 0; i < b.size(); ++i)
      bz[i] = __half2float(b[i] = __float2half(rng.Uniform(-1, 1)));
    __half *ad, *bd;
    CHECK(cudaMalloc(&ad, a.size() * sizeof(__half)));
    CHECK(cudaMalloc(&bd, b.size() * sizeof(__half)));
    CHECK(cudaMemcpy(ad, a.data(), a.size() * sizeof(__half), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(bd, b.data(), b.size() * sizeof(__half), cudaMemcpyHostToDevice));
    Data<float> c(m * n, rng);
    const float alpha = 1.25f, beta = -0.5f;
    std::vector<Z> want = AsZ(c.h);
    GemmRef(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, az, 0, m, bz, 0, k, beta, want, 0, m);
    BLAS_OK(cublasSgemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, ad, CUDA_R_16F, m, bd,
                          CUDA_R_16F, k, &beta, c.d, CUDA_R_32F, m));
    Check("sgemmEx (FP16 operands)", c.Down(), want, 1e-3);
    CHECK(cudaFree(ad));
    CHECK(cudaFree(bd));
  }
  {
    Data<cuComplex> a(k * m, rng), b(k * n, rng), c(m * n, rng);
    const cuComplex alpha = make_cuComplex(0.5f, 1), beta = make_cuComplex(-1, 0.25f);
    std::vector<Z> want = AsZ(c.h);
    GemmRef(CUBLAS_OP_C, CUBLAS_OP_N, m, n, k, Z(0.5, 1), AsZ(a.h), 0, k, AsZ(b.h), 0, k,
            Z(-1, 0.25), want, 0, m);
    BLAS_OK(cublasCgemmEx(h, CUBLAS_OP_C, CUBLAS_OP_N, m, n, k, &alpha, a.d, CUDA_C_32F, k, b.d,
                          CUDA_C_32F, k, &beta, c.d, CUDA_C_32F, m));
    Check("cgemmEx", c.Down(), want, 2e-4);
  }
}

// hgemmBatched and hgemmStridedBatched against a loop over the same half values.
void HalfBatches(cublasHandle_t h, Rng& rng) {
  const int m = 16, n = 12, k = 20, batch = 4;
  const int sa = m * k, sb = k * n, sc = m * n;
  std::vector<__half> a(sa * batch), b(sb * batch), c(sc * batch);
  std::vector<Z> az(a.size()), bz(b.size()), cz(c.size());
  for (size_t i = 0; i < a.size(); ++i)
    az[i] = __half2float(a[i] = __float2half(rng.Uniform(-1, 1)));
  for (size_t i = 0; i < b.size(); ++i)
    bz[i] = __half2float(b[i] = __float2half(rng.Uniform(-1, 1)));
  for (size_t i = 0; i < c.size(); ++i)
    cz[i] = __half2float(c[i] = __float2half(rng.Uniform(-1, 1)));
  std::vector<Z> want = cz;
  for (int i = 0; i < batch; ++i)
    GemmRef(CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, 0.5, az, i * sa, m, bz, i * sb, n, 0.25, want,
            i * sc, m);
  __half *ad, *bd, *cd;
  CHECK(cudaMalloc(&ad, a.size() * sizeof(__half)));
  CHECK(cudaMalloc(&bd, b.size() * sizeof(__half)));
  CHECK(cudaMalloc(&cd, c.size() * sizeof(__half)));
  CHECK(cudaMemcpy(ad, a.data(), a.size() * sizeof(__half), cudaMemcpyHostToDevice));
  // B is k x n transposed: stored n x k.
  CHECK(cudaMemcpy(bd, b.data(), b.size() * sizeof(__half), cudaMemcpyHostToDevice));
  const __half alpha = __float2half(0.5f), beta = __float2half(0.25f);
  auto down = [&] {
    CHECK(cudaDeviceSynchronize());
    std::vector<__half> got(c.size());
    CHECK(cudaMemcpy(got.data(), cd, c.size() * sizeof(__half), cudaMemcpyDeviceToHost));
    std::vector<float> out(got.size());
    for (size_t i = 0; i < got.size(); ++i) out[i] = __half2float(got[i]);
    return out;
  };
  CHECK(cudaMemcpy(cd, c.data(), c.size() * sizeof(__half), cudaMemcpyHostToDevice));
  BLAS_OK(cublasHgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, ad, m, sa, bd, n,
                                    sb, &beta, cd, m, sc, batch));
  Check("hgemmStridedBatched", down(), want, 2e-2);

  CHECK(cudaMemcpy(cd, c.data(), c.size() * sizeof(__half), cudaMemcpyHostToDevice));
  std::vector<const __half*> ap(batch), bp(batch);
  std::vector<__half*> cp(batch);
  for (int i = 0; i < batch; ++i) {
    ap[i] = ad + i * sa;
    bp[i] = bd + i * sb;
    cp[i] = cd + i * sc;
  }
  const __half** apd = ToDevice(ap);
  const __half** bpd = ToDevice(bp);
  __half** cpd = ToDevice(cp);
  BLAS_OK(cublasHgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, apd, m, bpd, n, &beta,
                             cpd, m, batch));
  Check("hgemmBatched", down(), want, 2e-2);
  for (void* p : {static_cast<void*>(ad), static_cast<void*>(bd), static_cast<void*>(cd),
                  static_cast<void*>(apd), static_cast<void*>(bpd), static_cast<void*>(cpd)})
    CHECK(cudaFree(p));
}

// iamaxEx and iaminEx on double and complex vectors; the atomics mode set and read back.
void IndexExAndAtomics(cublasHandle_t h, Rng& rng) {
  const int len = 77, inc = 2;
  Data<double> x(len * inc, rng);
  Data<cuComplex> z(len, rng);
  int want_max = 0, want_min = 0, zmax = 0;
  for (int i = 0; i < len; ++i) {
    if (std::fabs(x.h[i * inc]) > std::fabs(x.h[want_max * inc])) want_max = i;
    if (std::fabs(x.h[i * inc]) < std::fabs(x.h[want_min * inc])) want_min = i;
    auto l1 = [&](int j) { return std::fabs(z.h[j].x) + std::fabs(z.h[j].y); };
    if (l1(i) > l1(zmax)) zmax = i;
  }
  int got_max = 0, got_min = 0, got_z = 0;
  BLAS_OK(cublasIamaxEx(h, len, x.d, CUDA_R_64F, inc, &got_max));
  BLAS_OK(cublasIaminEx(h, len, x.d, CUDA_R_64F, inc, &got_min));
  BLAS_OK(cublasIamaxEx(h, len, z.d, CUDA_C_32F, 1, &got_z));
  if (got_max != want_max + 1 || got_min != want_min + 1 || got_z != zmax + 1) {
    std::printf("FAIL iamaxEx/iaminEx: %d %d %d, want %d %d %d\n", got_max, got_min, got_z,
                want_max + 1, want_min + 1, zmax + 1);
    ++failures;
  }
  cublasAtomicsMode_t mode = CUBLAS_ATOMICS_ALLOWED;
  BLAS_OK(cublasGetAtomicsMode(h, &mode));
  if (mode != CUBLAS_ATOMICS_NOT_ALLOWED) {
    std::printf("FAIL a new handle's atomics mode is %d\n", mode);
    ++failures;
  }
  BLAS_OK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_ALLOWED));
  BLAS_OK(cublasGetAtomicsMode(h, &mode));
  if (mode != CUBLAS_ATOMICS_ALLOWED) {
    std::printf("FAIL the atomics mode read back is %d\n", mode);
    ++failures;
  }
  BLAS_OK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 41));
  cublasHandle_t h;
  BLAS_OK(cublasCreate(&h));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  BLAS_OK(cublasSetStream(h, stream));
  Api64(h, rng);
  GemvBatches<float>(h, rng, cublasSgemvBatched, cublasSgemvStridedBatched, 2e-4);
  GemvBatches<double>(h, rng, cublasDgemvBatched_64, cublasDgemvStridedBatched_64, 1e-10);
  GemvBatches<cuComplex>(h, rng, cublasCgemvBatched_64, cublasCgemvStridedBatched, 2e-4);
  GemvBatches<cuDoubleComplex>(h, rng, cublasZgemvBatched, cublasZgemvStridedBatched_64, 1e-10);
  GemmExForms(h, rng);
  HalfBatches(h, rng);
  IndexExAndAtomics(h, rng);
  BLAS_OK(cublasDestroy(h));
  CHECK(cudaStreamDestroy(stream));
  return Finish(failures, "cublas_api64");
}
