// client_stub/cublas_xt.cc - cuBLASXt (cublasXt.h) of libcublas.so.13, over the stub's cuBLAS.
//
// cuBLASXt takes matrices wherever they are (host or device memory), runs level-3 routines on
// the GPU and returns when the result is in place, as NVIDIA's does. Each operand in host
// memory is copied to the tenant's device memory and back through the stub runtime; one
// already in device memory (an allocation, or pinned or managed memory kernels reach) is used
// where it is. Gemm works tile by tile, blockDim x blockDim as cublasXtSetBlockDim says, so
// a product of host matrices needs three tiles of device memory, not the matrices; the other
// routines stage each host operand whole. Every tile's product is the forwarded cuBLAS routine
// of the same name (cublas.cc), so every check and quota applies to it. One device serves a
// tenant: cublasXtDeviceSelect takes device 0 only. The CPU share of a hybrid computation
// (cublasXtSetCpuRoutine, cublasXtSetCpuRatio) is not served: those stay refusals
// (cublas_refused.def).
#pragma GCC visibility push(default)
#include <cublasXt.h>
#include <cublas_v2.h>
#pragma GCC visibility pop

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>

#include "client_stub/blas_common.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"

// The opaque handle cublasXt.h declares.
struct cublasXtContext {
  cublasHandle_t blas = nullptr;  // the stub's handle every tile runs on
  cudaStream_t stream = nullptr;  // the handle's own: copies and products in order
  int block_dim = 1024;
  cublasXtPinnedMemMode_t pinning = CUBLASXT_PINNING_DISABLED;
};

namespace remora::client_stub {
namespace {

using XtHandles = HandleRegistry<cublasXtContext>;

XtHandles& LiveXt() {
  static NoDestructor<XtHandles> h;
  return *h;
}

// Device memory of the tenant's, freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_) (void)cudaFree(p_);
  }
  cudaError_t Reserve(size_t bytes) {
    return p_ ? cudaSuccess : cudaMalloc(&p_, std::max<size_t>(bytes, 1));
  }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

bool Fits(size_t v) {
  return v <= static_cast<size_t>(INT_MAX);
}

// A column-major matrix of an Xt routine: `rows` x `cols` elements of `elem` bytes at `ptr`,
// columns `ld` elements apart.
struct Matrix {
  const void* ptr;
  size_t rows, cols, ld, elem;

  const char* At(size_t r, size_t c) const {
    return static_cast<const char*>(ptr) + (c * ld + r) * elem;
  }
  bool Valid() const { return ld >= std::max<size_t>(rows, 1) && (ptr || rows * cols == 0); }
  uint64_t Bytes() const { return rows * cols == 0 ? 0 : ((cols - 1) * ld + rows) * elem; }
  bool OnTheDevice() const {
    return rows * cols == 0 || OnDevice(reinterpret_cast<uint64_t>(ptr), Bytes());
  }
};

// The rows x cols block of `m` at (r, c), as the device routines see it: `m`'s own memory when
// it is on the device, else a copy in `buf` (columns `rows` apart) made when `read`.
struct View {
  void* ptr = nullptr;
  int ld = 1;
};

cudaError_t Stage(const Matrix& m, size_t r, size_t c, size_t rows, size_t cols, bool on_device,
                  bool read, DeviceBuffer& buf, size_t buf_elems, cudaStream_t s, View* out) {
  if (on_device) {
    if (!Fits(m.ld)) return cudaErrorNotSupported;
    *out = {const_cast<char*>(m.At(r, c)), static_cast<int>(std::max<size_t>(m.ld, 1))};
    return cudaSuccess;
  }
  if (cudaError_t e = buf.Reserve(buf_elems * m.elem)) return e;
  *out = {buf.get(), static_cast<int>(std::max<size_t>(rows, 1))};
  if (!read || rows * cols == 0) return cudaSuccess;
  return cudaMemcpy2DAsync(buf.get(), rows * m.elem, m.At(r, c), m.ld * m.elem, rows * m.elem, cols,
                           cudaMemcpyHostToDevice, s);
}

// Copies a staged block back into host matrix `m`.
cudaError_t Unstage(const Matrix& m, size_t r, size_t c, size_t rows, size_t cols, const View& v,
                    cudaStream_t s) {
  if (rows * cols == 0) return cudaSuccess;
  return cudaMemcpy2DAsync(const_cast<char*>(m.At(r, c)), m.ld * m.elem, v.ptr, rows * m.elem,
                           rows * m.elem, cols, cudaMemcpyDeviceToHost, s);
}

template <typename T>
bool IsZero(const T& v) {
  if constexpr (std::is_same_v<T, cuComplex> || std::is_same_v<T, cuDoubleComplex>)
    return v.x == 0 && v.y == 0;
  else
    return v == 0;
}

template <typename T>
T One() {
  if constexpr (std::is_same_v<T, cuComplex> || std::is_same_v<T, cuDoubleComplex>)
    return T{1, 0};
  else
    return T{1};
}

bool Trans(cublasOperation_t op) {
  return op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}
bool ValidOp(cublasOperation_t op) {
  return op == CUBLAS_OP_N || Trans(op);
}

// The handle's settings with its stream bound to its cuBLAS handle, or NOT_INITIALIZED.
cublasStatus_t Open(cublasXtHandle_t handle, cublasXtContext* out) {
  std::optional<cublasXtContext> h = LiveXt().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *out = *h;
  return cublasSetStream_v2(h->blas, h->stream);
}

// Waits for the handle's work: an Xt routine returns with its result in place.
cublasStatus_t Finish(const cublasXtContext& h, cublasStatus_t s) {
  const cudaError_t e = cudaStreamSynchronize(h.stream);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : ToStatus(e);
}

template <typename T>
using GemmFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const T*, const T*, int, const T*, int, const T*, T*, int);

// C = alpha op(A) op(B) + beta C, tile by tile.
template <typename T>
cublasStatus_t XtGemm(cublasXtHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, size_t m,
                      size_t n, size_t k, const T* alpha, const void* A, size_t lda, const void* B,
                      size_t ldb, const T* beta, void* C, size_t ldc, GemmFn<T> gemm) {
  cublasXtContext h;
  if (cublasStatus_t s = Open(handle, &h)) return s;
  const Matrix a{A, Trans(ta) ? k : m, Trans(ta) ? m : k, lda, sizeof(T)};
  const Matrix b{B, Trans(tb) ? n : k, Trans(tb) ? k : n, ldb, sizeof(T)};
  const Matrix c{C, m, n, ldc, sizeof(T)};
  if (!ValidOp(ta) || !ValidOp(tb) || !alpha || !beta || !a.Valid() || !b.Valid() || !c.Valid())
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const size_t bd = static_cast<size_t>(h.block_dim);
  const bool a_dev = a.OnTheDevice(), b_dev = b.OnTheDevice(), c_dev = c.OnTheDevice();
  DeviceBuffer abuf, bbuf, cbuf;
  // Tile buffers as large as the blocks the matrices have, for host operands only.
  const size_t mt = std::min(bd, m), nt = std::min(bd, n), kt = std::min(bd, k);
  const T one = One<T>();
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  for (size_t j = 0; j < n && !status; j += bd) {
    const size_t nb = std::min(bd, n - j);
    for (size_t i = 0; i < m && !status; i += bd) {
      const size_t mb = std::min(bd, m - i);
      View cv;
      if (cudaError_t e =
              Stage(c, i, j, mb, nb, c_dev, !IsZero(*beta), cbuf, mt * nt, h.stream, &cv)) {
        status = ToStatus(e);
        break;
      }
      // At least one product, so that k = 0 still scales C by beta.
      for (size_t p = 0; (p < k || p == 0) && !status; p += bd) {
        const size_t kb = std::min(bd, k - p);
        View av, bv;
        const cudaError_t e =
            Trans(ta) ? Stage(a, p, i, kb, mb, a_dev, true, abuf, mt * kt, h.stream, &av)
                      : Stage(a, i, p, mb, kb, a_dev, true, abuf, mt * kt, h.stream, &av);
        const cudaError_t e2 =
            e           ? e
            : Trans(tb) ? Stage(b, j, p, nb, kb, b_dev, true, bbuf, kt * nt, h.stream, &bv)
                        : Stage(b, p, j, kb, nb, b_dev, true, bbuf, kt * nt, h.stream, &bv);
        if (e2) {
          status = ToStatus(e2);
          break;
        }
        status =
            gemm(h.blas, ta, tb, static_cast<int>(mb), static_cast<int>(nb), static_cast<int>(kb),
                 alpha, static_cast<const T*>(av.ptr), av.ld, static_cast<const T*>(bv.ptr), bv.ld,
                 p == 0 ? beta : &one, static_cast<T*>(cv.ptr), cv.ld);
      }
      if (!status && !c_dev)
        if (cudaError_t e = Unstage(c, i, j, mb, nb, cv, h.stream)) status = ToStatus(e);
    }
  }
  return Finish(h, status);
}

// Runs `routine` on device views of `mats` (each staged whole when on the host; `read` and
// `write` say which are read and written), then copies the written ones back.
template <size_t N, typename F>
cublasStatus_t XtWhole(cublasXtHandle_t handle, const std::array<Matrix, N>& mats,
                       const std::array<bool, N>& read, const std::array<bool, N>& write,
                       F routine) {
  cublasXtContext h;
  if (cublasStatus_t s = Open(handle, &h)) return s;
  for (const Matrix& m : mats)
    if (!m.Valid()) return CUBLAS_STATUS_INVALID_VALUE;
  std::array<DeviceBuffer, N> bufs;
  std::array<View, N> views;
  std::array<bool, N> dev{};
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  for (size_t i = 0; i < N && !status; ++i) {
    const Matrix& m = mats[i];
    dev[i] = m.OnTheDevice();
    if (!Fits(m.rows) || !Fits(m.cols)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (cudaError_t e = Stage(m, 0, 0, m.rows, m.cols, dev[i], read[i], bufs[i], m.rows * m.cols,
                              h.stream, &views[i]))
      status = ToStatus(e);  // cudaErrorNotSupported: CUBLAS_STATUS_NOT_SUPPORTED
  }
  if (!status) status = routine(h.blas, views);
  for (size_t i = 0; i < N && !status; ++i)
    if (write[i] && !dev[i])
      if (cudaError_t e = Unstage(mats[i], 0, 0, mats[i].rows, mats[i].cols, views[i], h.stream))
        status = ToStatus(e);
  return Finish(h, status);
}

template <typename T>
const T* In(const View& v) {
  return static_cast<const T*>(v.ptr);
}
template <typename T>
T* Out(const View& v) {
  return static_cast<T*>(v.ptr);
}

bool Sides(cublasSideMode_t side, cublasFillMode_t uplo) {
  return (side == CUBLAS_SIDE_LEFT || side == CUBLAS_SIDE_RIGHT) &&
         (uplo == CUBLAS_FILL_MODE_LOWER || uplo == CUBLAS_FILL_MODE_UPPER);
}

template <typename T, typename Fn>
cublasStatus_t XtSymm(cublasXtHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,
                      size_t m, size_t n, const T* alpha, const T* A, size_t lda, const T* B,
                      size_t ldb, const T* beta, T* C, size_t ldc, Fn symm) {
  if (!Sides(side, uplo) || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  const size_t ka = side == CUBLAS_SIDE_LEFT ? m : n;
  return XtWhole<3>(
      handle,
      {Matrix{A, ka, ka, lda, sizeof(T)}, {B, m, n, ldb, sizeof(T)}, {C, m, n, ldc, sizeof(T)}},
      {true, true, !IsZero(*beta)}, {false, false, true}, [&](cublasHandle_t b, auto& v) {
        return symm(b, side, uplo, int(m), int(n), alpha, In<T>(v[0]), v[0].ld, In<T>(v[1]),
                    v[1].ld, beta, Out<T>(v[2]), v[2].ld);
      });
}

template <typename T, typename Fn>
cublasStatus_t XtSyrk(cublasXtHandle_t handle, cublasFillMode_t uplo, cublasOperation_t trans,
                      size_t n, size_t k, const T* alpha, const T* A, size_t lda, const T* beta,
                      T* C, size_t ldc, Fn syrk) {
  if (!Sides(CUBLAS_SIDE_LEFT, uplo) || !ValidOp(trans) || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool t = Trans(trans);
  return XtWhole<2>(handle,
                    {Matrix{A, t ? k : n, t ? n : k, lda, sizeof(T)}, {C, n, n, ldc, sizeof(T)}},
                    {true, !IsZero(*beta)}, {false, true}, [&](cublasHandle_t b, auto& v) {
                      return syrk(b, uplo, trans, int(n), int(k), alpha, In<T>(v[0]), v[0].ld, beta,
                                  Out<T>(v[1]), v[1].ld);
                    });
}

bool Diag(cublasDiagType_t d) {
  return d == CUBLAS_DIAG_UNIT || d == CUBLAS_DIAG_NON_UNIT;
}

template <typename T, typename Fn>
cublasStatus_t XtTrsm(cublasXtHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,
                      cublasOperation_t trans, cublasDiagType_t diag, size_t m, size_t n,
                      const T* alpha, const T* A, size_t lda, T* B, size_t ldb, Fn trsm) {
  if (!Sides(side, uplo) || !ValidOp(trans) || !Diag(diag) || !alpha)
    return CUBLAS_STATUS_INVALID_VALUE;
  const size_t ka = side == CUBLAS_SIDE_LEFT ? m : n;
  return XtWhole<2>(handle, {Matrix{A, ka, ka, lda, sizeof(T)}, {B, m, n, ldb, sizeof(T)}},
                    {true, true}, {false, true}, [&](cublasHandle_t b, auto& v) {
                      return trsm(b, side, uplo, trans, diag, int(m), int(n), alpha, In<T>(v[0]),
                                  v[0].ld, Out<T>(v[1]), v[1].ld);
                    });
}

template <typename T, typename Fn>
cublasStatus_t XtTrmm(cublasXtHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,
                      cublasOperation_t trans, cublasDiagType_t diag, size_t m, size_t n,
                      const T* alpha, const T* A, size_t lda, const T* B, size_t ldb, T* C,
                      size_t ldc, Fn trmm) {
  if (!Sides(side, uplo) || !ValidOp(trans) || !Diag(diag) || !alpha)
    return CUBLAS_STATUS_INVALID_VALUE;
  const size_t ka = side == CUBLAS_SIDE_LEFT ? m : n;
  return XtWhole<3>(
      handle,
      {Matrix{A, ka, ka, lda, sizeof(T)}, {B, m, n, ldb, sizeof(T)}, {C, m, n, ldc, sizeof(T)}},
      {true, true, false}, {false, false, true}, [&](cublasHandle_t b, auto& v) {
        return trmm(b, side, uplo, trans, diag, int(m), int(n), alpha, In<T>(v[0]), v[0].ld,
                    In<T>(v[1]), v[1].ld, Out<T>(v[2]), v[2].ld);
      });
}

}  // namespace
}  // namespace remora::client_stub

using remora::client_stub::LiveXt;

extern "C" {

cublasStatus_t cublasXtCreate(cublasXtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = nullptr;
  auto h = std::make_unique<cublasXtContext>();
  if (cublasStatus_t s = cublasCreate_v2(&h->blas)) return s;
  if (cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking) != cudaSuccess) {
    (void)cublasDestroy_v2(h->blas);
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  *handle = LiveXt().Add(std::move(h));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasXtDestroy(cublasXtHandle_t handle) {
  std::unique_ptr<cublasXtContext> h = LiveXt().Remove(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  (void)cudaStreamDestroy(h->stream);
  return cublasDestroy_v2(h->blas);
}

// One board per device, and a tenant sees one device.
cublasStatus_t cublasXtGetNumBoards(int nbDevices, int deviceId[], int* nbBoards) {
  if (!nbBoards || nbDevices < 0 || (nbDevices > 0 && !deviceId))
    return CUBLAS_STATUS_INVALID_VALUE;
  *nbBoards = nbDevices;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasXtMaxBoards(int* nbGpuBoards) {
  if (!nbGpuBoards) return CUBLAS_STATUS_INVALID_VALUE;
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n)) return remora::client_stub::ToStatus(e);
  *nbGpuBoards = n;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasXtDeviceSelect(cublasXtHandle_t handle, int nbDevices, int deviceId[]) {
  if (!LiveXt().Find(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count)) return remora::client_stub::ToStatus(e);
  if (nbDevices <= 0 || !deviceId) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < nbDevices; ++i)
    if (deviceId[i] < 0 || deviceId[i] >= count) return CUBLAS_STATUS_INVALID_VALUE;
  if (nbDevices > 1) return CUBLAS_STATUS_NOT_SUPPORTED;  // the same device twice
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasXtSetBlockDim(cublasXtHandle_t handle, int blockDim) {
  if (blockDim <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  return LiveXt().Update(handle, [&](cublasXtContext& h) { h.block_dim = blockDim; })
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasXtGetBlockDim(cublasXtHandle_t handle, int* blockDim) {
  if (!blockDim) return CUBLAS_STATUS_INVALID_VALUE;
  std::optional<cublasXtContext> h = LiveXt().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *blockDim = h->block_dim;
  return CUBLAS_STATUS_SUCCESS;
}

// Pinning is how NVIDIA's library speeds up host copies; copies here go through the shared
// arena either way, so the mode is kept and reported only.
cublasStatus_t cublasXtSetPinningMemMode(cublasXtHandle_t handle, cublasXtPinnedMemMode_t mode) {
  if (mode != CUBLASXT_PINNING_DISABLED && mode != CUBLASXT_PINNING_ENABLED)
    return CUBLAS_STATUS_INVALID_VALUE;
  return LiveXt().Update(handle, [&](cublasXtContext& h) { h.pinning = mode; })
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasXtGetPinningMemMode(cublasXtHandle_t handle, cublasXtPinnedMemMode_t* mode) {
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  std::optional<cublasXtContext> h = LiveXt().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = h->pinning;
  return CUBLAS_STATUS_SUCCESS;
}

#define XT_GEMM(X, T)                                                                              \
  cublasStatus_t cublasXt##X##gemm(cublasXtHandle_t handle, cublasOperation_t transa,              \
                                   cublasOperation_t transb, size_t m, size_t n, size_t k,         \
                                   const T* alpha, const T* A, size_t lda, const T* B, size_t ldb, \
                                   const T* beta, T* C, size_t ldc) {                              \
    return remora::client_stub::XtGemm<T>(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb,  \
                                          beta, C, ldc, &cublas##X##gemm_v2);                      \
  }
XT_GEMM(S, float)
XT_GEMM(D, double)
XT_GEMM(C, cuComplex)
XT_GEMM(Z, cuDoubleComplex)
#undef XT_GEMM

#define XT_REAL(X, T)                                                                             \
  cublasStatus_t cublasXt##X##symm(cublasXtHandle_t handle, cublasSideMode_t side,                \
                                   cublasFillMode_t uplo, size_t m, size_t n, const T* alpha,     \
                                   const T* A, size_t lda, const T* B, size_t ldb, const T* beta, \
                                   T* C, size_t ldc) {                                            \
    return remora::client_stub::XtSymm(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C,  \
                                       ldc, &cublas##X##symm_v2);                                 \
  }                                                                                               \
  cublasStatus_t cublasXt##X##syrk(cublasXtHandle_t handle, cublasFillMode_t uplo,                \
                                   cublasOperation_t trans, size_t n, size_t k, const T* alpha,   \
                                   const T* A, size_t lda, const T* beta, T* C, size_t ldc) {     \
    return remora::client_stub::XtSyrk(handle, uplo, trans, n, k, alpha, A, lda, beta, C, ldc,    \
                                       &cublas##X##syrk_v2);                                      \
  }                                                                                               \
  cublasStatus_t cublasXt##X##trsm(cublasXtHandle_t handle, cublasSideMode_t side,                \
                                   cublasFillMode_t uplo, cublasOperation_t trans,                \
                                   cublasDiagType_t diag, size_t m, size_t n, const T* alpha,     \
                                   const T* A, size_t lda, T* B, size_t ldb) {                    \
    return remora::client_stub::XtTrsm(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B,   \
                                       ldb, &cublas##X##trsm_v2);                                 \
  }                                                                                               \
  cublasStatus_t cublasXt##X##trmm(                                                               \
      cublasXtHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,                      \
      cublasOperation_t trans, cublasDiagType_t diag, size_t m, size_t n, const T* alpha,         \
      const T* A, size_t lda, const T* B, size_t ldb, T* C, size_t ldc) {                         \
    return remora::client_stub::XtTrmm(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B,   \
                                       ldb, C, ldc, &cublas##X##trmm_v2);                         \
  }
XT_REAL(S, float)
XT_REAL(D, double)
#undef XT_REAL

}  // extern "C"
