// tests/cuda/kernels/cusolver_dense.cu - NVIDIA's cuSOLVER (-lcusolver, which loads cuBLAS and
// cuBLASLt): LU with pivoting (single and double), Cholesky, QR and the symmetric eigensolver
// of random matrices on a stream, each checked on the host by what it must satisfy (A x = b,
// A^T A = R^T R, A V = V diag(w) with V orthonormal), with cuSOLVER's info 0.
//
// On a GPU NVIDIA's libraries run it. On the emulated GPU cuSOLVER's kernels run from their PTX
// for newer GPUs and its cuBLAS calls go to the server's cuBLAS through Remora's stub
// (`remora run --remote-libs cublas`).
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common.h"

namespace {

int failures = 0;
cudaStream_t g_stream = nullptr;  // the solver's: non-blocking, so results are read after it

#define SOLVER_OK(call)                                                                    \
  do {                                                                                     \
    const cusolverStatus_t s_ = (call);                                                    \
    if (s_ != CUSOLVER_STATUS_SUCCESS) {                                                   \
      std::printf("FAIL: %s:%d %s -> cusolverStatus %d\n", __FILE__, __LINE__, #call, s_); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

void Check(const char* what, double err, double tol) {
  if (err <= tol) return;
  std::printf("FAIL %s: error %.3g over %.3g\n", what, err, tol);
  ++failures;
}

// The solver's results, read once its stream has finished.
template <class T>
std::vector<T> Down(const T* d, size_t n) {
  CHECK(cudaStreamSynchronize(g_stream));
  return FromDevice(d, n);
}

int Info(const int* d_info) {
  CHECK(cudaStreamSynchronize(g_stream));
  int info = -1;
  CHECK(cudaMemcpy(&info, d_info, sizeof(int), cudaMemcpyDeviceToHost));
  return info;
}

// max |A x - b| / (|A| |x| + |b|), A column-major n x n.
template <class T>
double Residual(const std::vector<T>& a, const std::vector<T>& x, const std::vector<T>& b, int n) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    double s = 0, scale = std::fabs(double(b[i]));
    for (int j = 0; j < n; ++j) {
      s += double(a[i + size_t(j) * n]) * x[j];
      scale += std::fabs(double(a[i + size_t(j) * n]) * x[j]);
    }
    worst = std::max(worst, std::fabs(s - b[i]) / scale);
  }
  return worst;
}

template <class T, class BufferSize, class Getrf, class Getrs>
void LuSolve(cusolverDnHandle_t h, Rng& rng, int n, BufferSize buffer_size, Getrf getrf,
             Getrs getrs, const char* what, double tol) {
  std::vector<T> a(size_t(n) * n), b(n);
  for (T& v : a) v = T(rng.Uniform(-1, 1));
  for (T& v : b) v = T(rng.Uniform(-1, 1));
  T *da = ToDevice(a), *db = ToDevice(b), *work;
  int *piv, *info;
  CHECK(cudaMalloc(&piv, n * sizeof(int)));
  CHECK(cudaMalloc(&info, sizeof(int)));
  int lwork = 0;
  SOLVER_OK(buffer_size(h, n, n, da, n, &lwork));
  CHECK(cudaMalloc(&work, std::max(lwork, 1) * sizeof(T)));
  SOLVER_OK(getrf(h, n, n, da, n, work, piv, info));
  SOLVER_OK(getrs(h, CUBLAS_OP_N, n, 1, da, n, piv, db, n, info));
  const int got_info = Info(info);
  if (got_info != 0) {
    std::printf("FAIL %s: info %d\n", what, got_info);
    ++failures;
  }
  Check(what, Residual(a, Down(db, n), b, n), tol);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(work),
                  static_cast<void*>(piv), static_cast<void*>(info)})
    CHECK(cudaFree(p));
}

// A^T A + n I: symmetric positive definite.
std::vector<double> Spd(Rng& rng, int n) {
  std::vector<double> a(size_t(n) * n), s(size_t(n) * n);
  for (double& v : a) v = rng.UniformD(-1, 1);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = i == j ? n : 0;
      for (int k = 0; k < n; ++k) acc += a[k + size_t(i) * n] * a[k + size_t(j) * n];
      s[i + size_t(j) * n] = acc;
    }
  return s;
}

void Cholesky(cusolverDnHandle_t h, Rng& rng, int n) {
  const std::vector<double> s = Spd(rng, n);
  std::vector<double> b(n);
  for (double& v : b) v = rng.UniformD(-1, 1);
  double *da = ToDevice(s), *db = ToDevice(b), *work;
  int* info;
  CHECK(cudaMalloc(&info, sizeof(int)));
  int lwork = 0;
  SOLVER_OK(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, da, n, &lwork));
  CHECK(cudaMalloc(&work, std::max(lwork, 1) * sizeof(double)));
  SOLVER_OK(cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, n, da, n, work, lwork, info));
  SOLVER_OK(cusolverDnDpotrs(h, CUBLAS_FILL_MODE_LOWER, n, 1, da, n, db, n, info));
  if (Info(info) != 0) {
    std::printf("FAIL potrf: info %d\n", Info(info));
    ++failures;
  }
  Check("potrf/potrs", Residual(s, Down(db, n), b, n), 1e-12);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(work),
                  static_cast<void*>(info)})
    CHECK(cudaFree(p));
}

// geqrf of an m x n matrix: R (its upper triangle) satisfies A^T A = R^T R.
void Qr(cusolverDnHandle_t h, Rng& rng, int m, int n) {
  std::vector<double> a(size_t(m) * n);
  for (double& v : a) v = rng.UniformD(-1, 1);
  double *da = ToDevice(a), *tau, *work;
  int* info;
  CHECK(cudaMalloc(&tau, n * sizeof(double)));
  CHECK(cudaMalloc(&info, sizeof(int)));
  int lwork = 0;
  SOLVER_OK(cusolverDnDgeqrf_bufferSize(h, m, n, da, m, &lwork));
  CHECK(cudaMalloc(&work, std::max(lwork, 1) * sizeof(double)));
  SOLVER_OK(cusolverDnDgeqrf(h, m, n, da, m, tau, work, lwork, info));
  const std::vector<double> qr = Down(da, a.size());
  double worst = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double ata = 0, rtr = 0;
      for (int k = 0; k < m; ++k) ata += a[k + size_t(i) * m] * a[k + size_t(j) * m];
      for (int k = 0; k <= std::min(i, j); ++k)
        rtr += qr[k + size_t(i) * m] * qr[k + size_t(j) * m];
      worst = std::max(worst, std::fabs(ata - rtr) / m);
    }
  if (Info(info) != 0) ++failures;
  Check("geqrf", worst, 1e-12);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(tau), static_cast<void*>(work),
                  static_cast<void*>(info)})
    CHECK(cudaFree(p));
}

// syevd: A V = V diag(w), V^T V = I, w ascending.
void Eigen(cusolverDnHandle_t h, Rng& rng, int n) {
  const std::vector<double> s = Spd(rng, n);
  double *da = ToDevice(s), *w, *work;
  int* info;
  CHECK(cudaMalloc(&w, n * sizeof(double)));
  CHECK(cudaMalloc(&info, sizeof(int)));
  int lwork = 0;
  SOLVER_OK(cusolverDnDsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, da,
                                        n, w, &lwork));
  CHECK(cudaMalloc(&work, std::max(lwork, 1) * sizeof(double)));
  SOLVER_OK(cusolverDnDsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, da, n, w, work,
                             lwork, info));
  const std::vector<double> v = Down(da, s.size()), ev = Down(w, n);
  double av = 0, orth = 0, order = 0;
  for (int j = 0; j < n; ++j) {
    if (j && ev[j] < ev[j - 1]) order = 1;
    for (int i = 0; i < n; ++i) {
      double acc = 0;
      for (int k = 0; k < n; ++k) acc += s[i + size_t(k) * n] * v[k + size_t(j) * n];
      av = std::max(av, std::fabs(acc - ev[j] * v[i + size_t(j) * n]) / ev[n - 1]);
      double dot = 0;
      for (int k = 0; k < n; ++k) dot += v[k + size_t(i) * n] * v[k + size_t(j) * n];
      orth = std::max(orth, std::fabs(dot - (i == j ? 1.0 : 0.0)));
    }
  }
  if (Info(info) != 0) ++failures;
  Check("syevd A V = V w", av, 1e-12);
  Check("syevd V orthonormal", orth, 1e-12);
  Check("syevd ascending", order, 0);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(w), static_cast<void*>(work),
                  static_cast<void*>(info)})
    CHECK(cudaFree(p));
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 4)));
  CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cusolverDnHandle_t h;
  SOLVER_OK(cusolverDnCreate(&h));
  SOLVER_OK(cusolverDnSetStream(h, g_stream));
  LuSolve<double>(h, rng, 48, cusolverDnDgetrf_bufferSize, cusolverDnDgetrf, cusolverDnDgetrs,
                  "Dgetrf/Dgetrs", 1e-12);
  LuSolve<float>(h, rng, 40, cusolverDnSgetrf_bufferSize, cusolverDnSgetrf, cusolverDnSgetrs,
                 "Sgetrf/Sgetrs", 1e-4);
  Cholesky(h, rng, 48);
  Qr(h, rng, 60, 32);
  Eigen(h, rng, 32);
  SOLVER_OK(cusolverDnDestroy(h));
  CHECK(cudaStreamDestroy(g_stream));
  return Finish(failures, "cusolver_dense");
}
