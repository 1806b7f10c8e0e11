// client_stub/cublas.cc - libcublas.so.13: cuBLAS over the tenant's one session.
//
// A handle is a server-side cublasHandle_t; its stream, pointer mode and math
// mode are kept here and sent with each routine. Every routine of
// proto/blas_ops.def travels as one BlasRequest (proto/blas.h lays out its
// arguments); obvious mistakes (dimensions, leading dimensions, enums, null
// scalars, pointers outside the tenant's allocations) are answered here at
// once, with the status NVIDIA's library gives. The server checks again.
// Routines are stream-ordered and do not wait, except those returning a value
// to host memory (dot, nrm2, ... in host pointer mode, getrs's info), as on a
// GPU. Batched routines' pointer arrays are read here (in stream order) and
// sent by value. Set/GetVector and Set/GetMatrix are copies through the
// runtime this process loaded with it.
#pragma GCC visibility push(default)
#include <cublas_v2.h>
#pragma GCC visibility pop

#include <cuda_runtime_api.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "client_stub/blas_common.h"
#include "client_stub/connection.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"
#include "proto/blas.h"

// The opaque handle cublas_api.h declares.
struct cublasContext {
  uint64_t id = 0;  // the server's
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  // The workspace last given to the server (cublasSetWorkspace), to send only a change; none
  // at first, as the server's handle starts.
  uint64_t workspace = 0;
  uint64_t workspace_bytes = 0;
};

namespace remora::client_stub {
namespace {

enum class Op : uint32_t {
#define BLAS_OP(op, Name, Shape, Elem, Fn) k##Name = op,
#include "proto/blas_ops.def"
};

// Live handles; a destroyed or foreign one is CUBLAS_STATUS_NOT_INITIALIZED.
using Handles = HandleRegistry<cublasContext>;

Handles& Live() {
  static NoDestructor<Handles> h;
  return *h;
}

// Reads `n` device pointers at `array` in `stream`'s order.
cublasStatus_t ReadArray(const void* array, int64_t n, cudaStream_t stream,
                         google::protobuf::RepeatedField<uint64_t>* out) {
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(uint64_t);
  if (!array || !OnDevice(reinterpret_cast<uint64_t>(array), bytes))
    return CUBLAS_STATUS_INVALID_VALUE;
  std::vector<uint64_t> values(n);
  cudaError_t e = cudaMemcpyAsync(values.data(), array, bytes, cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return ToStatus(e);
  out->Add(values.begin(), values.end());
  return CUBLAS_STATUS_SUCCESS;
}

// Forwards routine `op` with its integers, pointers (signature order), scalars
// (alpha, beta, ... as the caller passed them) and result.
cublasStatus_t Forward(cublasHandle_t handle, Op id, std::span<const int64_t> ints,
                       std::initializer_list<const void*> ptrs,
                       std::initializer_list<const void*> scalars = {}, void* result = nullptr) {
  std::optional<cublasContext> h = Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  const BlasOp* op = FindBlasOp(static_cast<uint32_t>(id));
  Result<BlasPlan> plan = PlanBlas(*op, ints);
  if (!plan.ok() && plan.status().code() == err::kNotSupported)
    SayOnce(plan.status().message() + "; Remora does not forward it: CUBLAS_STATUS_NOT_SUPPORTED");
  if (!plan.ok()) return static_cast<cublasStatus_t>(CudaToBlasStatus(plan.status().code()));
  const bool device =
      h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE || op->info->pointers_are_scalars;
  v1::BlasRequest req;
  req.set_op(op->op);
  req.set_handle(h->id);
  req.set_stream(StreamId(h->stream));
  req.set_device_scalars(device);
  req.set_math_mode(h->math_mode);
  req.mutable_ints()->Add(ints.begin(), ints.end());
  size_t si = 0;
  for (const void* s : scalars) {
    const uint32_t bytes = plan->scalar_bytes[si++];
    if (!s) return CUBLAS_STATUS_INVALID_VALUE;
    if (device) {
      if (!OnDevice(reinterpret_cast<uint64_t>(s), bytes)) return CUBLAS_STATUS_INVALID_VALUE;
      req.add_scalar_ptrs(reinterpret_cast<uint64_t>(s));
    } else {
      req.mutable_scalars()->append(static_cast<const char*>(s), bytes);
    }
  }
  const bool on_host = BlasResultOnHost(*op, device);
  if (op->info->result) {
    if (!result) return CUBLAS_STATUS_INVALID_VALUE;
    if (!on_host) {
      if (!OnDevice(reinterpret_cast<uint64_t>(result), plan->result_bytes))
        return CUBLAS_STATUS_INVALID_VALUE;
      req.set_result_ptr(reinterpret_cast<uint64_t>(result));
    }
  }
  size_t i = 0;
  for (const void* p : ptrs) {
    const uint64_t v = reinterpret_cast<uint64_t>(p);
    req.add_ptrs(v);
    if (plan->array[i]) {
      if (cublasStatus_t s = ReadArray(p, plan->batch, h->stream, req.mutable_arrays())) return s;
      const int first = req.arrays_size() - static_cast<int>(plan->batch);
      for (int b = first; plan->bytes[i] && b < req.arrays_size(); ++b)
        if (!OnDevice(req.arrays(b), plan->bytes[i])) return CUBLAS_STATUS_INVALID_VALUE;
    } else if (plan->bytes[i] && !(v == 0 && plan->nullable[i]) && !OnDevice(v, plan->bytes[i])) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    ++i;
  }
  Connection& c = Connection::Get();
  if (!on_host) return ToStatus(c.Post(CallId::kBlas, req));
  v1::BlasReply rep;
  const cudaError_t e = c.Call(CallId::kBlasSync, req, &rep);
  if (e != cudaSuccess) return ToStatus(e);
  if (rep.result().size() != plan->result_bytes) return CUBLAS_STATUS_INTERNAL_ERROR;
  std::memcpy(result, rep.result().data(), rep.result().size());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t Forward(cublasHandle_t handle, Op id, std::initializer_list<int64_t> ints,
                       std::initializer_list<const void*> ptrs,
                       std::initializer_list<const void*> scalars = {}, void* result = nullptr) {
  return Forward(handle, id, std::span<const int64_t>(ints.begin(), ints.size()), ptrs, scalars,
                 result);
}

// Integer i of a routine of shape `shape` is a stride between a batch's matrices: 64-bit in the
// 32-bit API too.
bool IsStride(BlasShape shape, size_t i) {
  if (shape == BlasShape::kGemmStrided) return i == 6 || i == 8 || i == 10;
  if (shape == BlasShape::kGemmStridedEx) return i == 7 || i == 10 || i == 13;
  return false;
}

// The integers of a _64 call fit the 32 bits the server's library takes (strides excepted):
// CUBLAS_STATUS_SUCCESS, or CUBLAS_STATUS_NOT_SUPPORTED named on stderr.
cublasStatus_t Narrow(const BlasOp& op, std::span<const int64_t> ints) {
  for (size_t i = 0; i < ints.size(); ++i) {
    if (IsStride(op.shape, i) || (ints[i] >= INT32_MIN && ints[i] <= INT32_MAX)) continue;
    SayOnce("cublas" + std::string(op.name) + "_64: " + std::to_string(ints[i]) +
            " is past the 32-bit integers Remora forwards: CUBLAS_STATUS_NOT_SUPPORTED");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

// The _64 form of a routine: Forward's, once Narrow passes its integers. An index routine's
// int64_t result gets its high half zeroed (host pointer mode: before the call; device: in
// stream order after it).
cublasStatus_t Forward_64(cublasHandle_t handle, Op id, std::span<const int64_t> ints,
                          std::initializer_list<const void*> ptrs,
                          std::initializer_list<const void*> scalars = {}, void* result = nullptr) {
  const BlasOp* op = FindBlasOp(static_cast<uint32_t>(id));
  if (cublasStatus_t s = Narrow(*op, ints)) return s;
  if (op->shape != BlasShape::kIndex || !result)
    return Forward(handle, id, ints, ptrs, scalars, result);
  std::optional<cublasContext> h = Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (h->pointer_mode == CUBLAS_POINTER_MODE_HOST) {
    std::memset(result, 0, sizeof(int64_t));
    return Forward(handle, id, ints, ptrs, scalars, result);
  }
  if (!OnDevice(reinterpret_cast<uint64_t>(result), sizeof(int64_t)))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (cublasStatus_t s = Forward(handle, id, ints, ptrs, scalars, result)) return s;
  return ToStatus(
      cudaMemsetAsync(static_cast<char*>(result) + sizeof(int32_t), 0, sizeof(int32_t), h->stream));
}

cublasStatus_t Forward_64(cublasHandle_t handle, Op id, std::initializer_list<int64_t> ints,
                          std::initializer_list<const void*> ptrs,
                          std::initializer_list<const void*> scalars = {}, void* result = nullptr) {
  return Forward_64(handle, id, std::span<const int64_t>(ints.begin(), ints.size()), ptrs, scalars,
                    result);
}

// Copies a strided vector or a matrix between host and device through the runtime.
cublasStatus_t Copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                      size_t height, cudaMemcpyKind kind, const cudaStream_t* stream) {
  if (width == 0 || height == 0) return CUBLAS_STATUS_SUCCESS;
  if (!dst || !src) return CUBLAS_STATUS_INVALID_VALUE;
  cudaError_t e = stream ? cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, *stream)
                         : cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_MAPPING_ERROR;
}

cublasStatus_t CopyVector(int64_t n, int64_t es, const void* src, int64_t inc_src, void* dst,
                          int64_t inc_dst, cudaMemcpyKind kind, const cudaStream_t* stream) {
  if (n < 0 || es <= 0 || inc_src <= 0 || inc_dst <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  return Copy2D(dst, size_t(inc_dst) * es, src, size_t(inc_src) * es, es, n, kind, stream);
}

// NVIDIA's order (seen on an H200, cuBLAS 13.0): a negative size or a leading dimension that is
// not positive is CUBLAS_STATUS_INVALID_VALUE; one below the rows reaches the copy, whose pitch is
// then shorter than a row, and that copy's failure is CUBLAS_STATUS_MAPPING_ERROR. It is answered
// here without the copy, so that no CUDA error is left behind for the program to read: NVIDIA's
// cuBLAS copies through a runtime of its own.
cublasStatus_t CopyMatrix(int64_t rows, int64_t cols, int64_t es, const void* src, int64_t ld_src,
                          void* dst, int64_t ld_dst, cudaMemcpyKind kind,
                          const cudaStream_t* stream) {
  if (rows < 0 || cols < 0 || es <= 0 || ld_src <= 0 || ld_dst <= 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (rows > 0 && cols > 0 && (ld_src < rows || ld_dst < rows)) return CUBLAS_STATUS_MAPPING_ERROR;
  return Copy2D(dst, size_t(ld_dst) * es, src, size_t(ld_src) * es, size_t(rows) * es, cols, kind,
                stream);
}

// One scalar argument of a routine that reads and writes its scalars in place (rotg, rotmg):
// the caller's memory, its size, and whether the routine writes it.
struct InPlace {
  const void* in;
  void* out;  // null: read only
  size_t bytes;
};

// Forwards rotg or rotmg, whose pointers are their scalars: in device pointer mode with the
// caller's pointers, in stream order; in host mode through a block of device memory the
// arguments are copied into and back from on the handle's stream, returning with the results in
// place, as cuBLAS does. A null argument is CUBLAS_STATUS_INVALID_VALUE.
template <size_t N>
cublasStatus_t ForwardInPlace(cublasHandle_t handle, Op id, const std::array<InPlace, N>& args) {
  std::optional<cublasContext> h = Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  for (const InPlace& a : args)
    if (!a.in) return CUBLAS_STATUS_INVALID_VALUE;
  std::array<const void*, N> at;
  auto forward = [&] {
    if constexpr (N == 4)
      return Forward(handle, id, {}, {at[0], at[1], at[2], at[3]});
    else
      return Forward(handle, id, {}, {at[0], at[1], at[2], at[3], at[4]});
  };
  if (h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE) {
    for (size_t i = 0; i < N; ++i) at[i] = args[i].in;
    return forward();
  }
  size_t total = 0;
  for (const InPlace& a : args) total += (a.bytes + 15) & ~size_t{15};
  void* memory = nullptr;
  if (cudaMalloc(&memory, total) != cudaSuccess) return CUBLAS_STATUS_ALLOC_FAILED;
  std::unique_ptr<void, decltype(&cudaFree)> owned(memory, &cudaFree);
  char* const block = static_cast<char*>(memory);
  cudaError_t e = cudaSuccess;
  size_t off = 0;
  for (size_t i = 0; i < N && e == cudaSuccess; ++i) {
    at[i] = block + off;
    e = cudaMemcpyAsync(block + off, args[i].in, args[i].bytes, cudaMemcpyHostToDevice, h->stream);
    off += (args[i].bytes + 15) & ~size_t{15};
  }
  if (e != cudaSuccess) return ToStatus(e);
  if (cublasStatus_t st = forward(); st != CUBLAS_STATUS_SUCCESS) return st;
  for (size_t i = 0; i < N && e == cudaSuccess; ++i)
    if (args[i].out)
      e = cudaMemcpyAsync(args[i].out, at[i], args[i].bytes, cudaMemcpyDeviceToHost, h->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(h->stream);
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : ToStatus(e);
}

// A grouped batch is its groups' batched gemms, in order: group g takes the next group_size[g]
// pointers of each device pointer array, the g-th entry of each host array of dimensions and
// options, and alpha and beta at index g of their arrays (host or device memory, per the
// pointer mode; `scalar_bytes` each). Every group's arguments are checked before any is sent,
// so a call that fails does nothing.
template <class G, class Ints>
cublasStatus_t GemmGrouped(cublasHandle_t h, Op id, G group_count, const G group_size[],
                           const void* const A[], const void* const B[], void* const C[],
                           const void* alpha, const void* beta, size_t scalar_bytes, Ints ints) {
  constexpr bool kWide = sizeof(G) == sizeof(int64_t);  // the _64 form
  if (group_count < 0 || (group_count > 0 && group_size == nullptr))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (group_count > 0 && (!A || !B || !C || !alpha || !beta)) return CUBLAS_STATUS_INVALID_VALUE;
  const BlasOp& op = *FindBlasOp(static_cast<uint32_t>(id));
  for (G g = 0; g < group_count; ++g) {
    if (group_size[g] < 0) return CUBLAS_STATUS_INVALID_VALUE;
    const auto args = ints(g);
    if (kWide)
      if (cublasStatus_t s = Narrow(op, args)) return s;
    Result<BlasPlan> plan = PlanBlas(op, args);
    if (!plan.ok()) return static_cast<cublasStatus_t>(CudaToBlasStatus(plan.status().code()));
  }
  int64_t first = 0;
  for (G g = 0; g < group_count; ++g) {
    const auto args = ints(g);
    const auto* a = static_cast<const char*>(alpha) + g * scalar_bytes;
    const auto* b = static_cast<const char*>(beta) + g * scalar_bytes;
    const cublasStatus_t st =
        Forward(h, id, std::span<const int64_t>(args), {A + first, B + first, C + first}, {a, b});
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    first += group_size[g];
  }
  return CUBLAS_STATUS_SUCCESS;
}

// A batch of gemv's matrices and vectors: device arrays of `batch` pointers each, read in stream
// order (arrays), or bases and strides in elements of `elem` bytes.
struct GemvBatch {
  const void* a = nullptr;
  const void* x = nullptr;
  const void* y = nullptr;
  bool arrays = false;
  int64_t sa = 0, sx = 0, sy = 0;
  size_t elem = 0;
};

// Forwards one gemv (`gemv`, integers `ints`) per matrix of `b`, in order on the handle's stream,
// with the same alpha and beta; the integers (fit to 32 bits for a _64 form: `wide`) and the
// batch count are checked before anything is sent.
cublasStatus_t GemvBatched(cublasHandle_t handle, Op gemv, std::array<int64_t, 6> ints,
                           const void* alpha, const void* beta, int64_t batch, bool wide,
                           const GemvBatch& b) {
  std::optional<cublasContext> h = Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  const BlasOp& op = *FindBlasOp(static_cast<uint32_t>(gemv));
  if (wide)
    if (cublasStatus_t s = Narrow(op, ints)) return s;
  Result<BlasPlan> plan = PlanBlas(op, ints);
  if (!plan.ok()) return static_cast<cublasStatus_t>(CudaToBlasStatus(plan.status().code()));
  if (batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  google::protobuf::RepeatedField<uint64_t> a, x, y;
  if (b.arrays && batch > 0) {
    for (auto [array, out] : {std::pair{b.a, &a}, {b.x, &x}, {b.y, &y}})
      if (cublasStatus_t s = ReadArray(array, batch, h->stream, out)) return s;
  }
  for (int64_t i = 0; i < batch; ++i) {
    const auto at = [&](const void* base, int64_t stride) -> const void* {
      return static_cast<const char*>(base) + i * stride * static_cast<int64_t>(b.elem);
    };
    const void* ai = b.arrays ? reinterpret_cast<const void*>(a[i]) : at(b.a, b.sa);
    const void* xi = b.arrays ? reinterpret_cast<const void*>(x[i]) : at(b.x, b.sx);
    const void* yi = b.arrays ? reinterpret_cast<const void*>(y[i]) : at(b.y, b.sy);
    if (cublasStatus_t s = Forward(handle, gemv, ints, {ai, xi, yi}, {alpha, beta})) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

// Sets or reads a proto/blas_settings.def value of `handle` on the server, which keeps it and
// applies it before the handle's routines.
cublasStatus_t SetSetting(cublasHandle_t handle, uint32_t setting, int64_t value) {
  std::optional<cublasContext> h = Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  v1::BlasSettingRequest req;
  req.set_handle(h->id);
  req.set_setting(setting);
  req.set_value(value);
  return ToStatus(Connection::Get().Call(CallId::kBlasSetting, req));
}

cublasStatus_t GetSetting(cublasHandle_t handle, uint32_t setting, int64_t* value) {
  std::optional<cublasContext> h = Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  v1::BlasSettingRequest req;
  req.set_handle(h->id);
  req.set_setting(setting);
  v1::BlasSettingReply rep;
  const cudaError_t e = Connection::Get().Call(CallId::kBlasGetSetting, req, &rep);
  if (e != cudaSuccess) return ToStatus(e);
  *value = rep.value();
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace
}  // namespace remora::client_stub

using remora::client_stub::CopyMatrix;
using remora::client_stub::CopyVector;
using remora::client_stub::Forward;
using remora::client_stub::Forward_64;
using remora::client_stub::ForwardInPlace;
using remora::client_stub::GemmGrouped;
using remora::client_stub::GemvBatched;
using remora::client_stub::InPlace;
using remora::client_stub::SayOnce;
using Op = remora::client_stub::Op;

extern "C" {

// ---- Handles and settings -----------------------------------------------------------

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  using namespace remora::client_stub;
  const cublasStatus_t s = CreateHandle(Live(), remora::CallId::kBlasCreate, handle);
  if (s == CUBLAS_STATUS_SUCCESS) NoteBlasHandle(*handle, (*handle)->id);
  return s;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  using namespace remora::client_stub;
  if (Live().Find(handle)) NoteBlasHandle(handle, 0);
  return DestroyHandle(Live(), remora::CallId::kBlasDestroy, handle);
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  return remora::client_stub::Live().Update(handle, [&](cublasContext& h) { h.stream = stream; })
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
  std::optional<cublasContext> h = remora::client_stub::Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *stream = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
    return CUBLAS_STATUS_INVALID_VALUE;
  return remora::client_stub::Live().Update(handle,
                                            [&](cublasContext& h) { h.pointer_mode = mode; })
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  std::optional<cublasContext> h = remora::client_stub::Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = h->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  return remora::client_stub::Live().Update(handle, [&](cublasContext& h) { h.math_mode = mode; })
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  std::optional<cublasContext> h = remora::client_stub::Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = h->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  using namespace remora;
  using namespace remora::client_stub;
  std::optional<cublasContext> h = Live().Find(handle);
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes && (!workspace || !OnDevice(reinterpret_cast<uint64_t>(workspace), bytes)))
    return CUBLAS_STATUS_INVALID_VALUE;
  // Frameworks set the same workspace before every routine (PyTorch does): a repeat is no news.
  const auto ws = reinterpret_cast<uint64_t>(workspace);
  if (h->workspace == ws && h->workspace_bytes == bytes) return CUBLAS_STATUS_SUCCESS;
  v1::BlasWorkspaceRequest req;
  req.set_handle(h->id);
  req.set_workspace(ws);
  req.set_size(bytes);
  const cublasStatus_t s = ToStatus(Connection::Get().Call(CallId::kBlasSetWorkspace, req));
  if (s == CUBLAS_STATUS_SUCCESS)
    Live().Update(handle, [&](cublasContext& c) {
      c.workspace = ws;
      c.workspace_bytes = bytes;
    });
  return s;
}

// An export of NVIDIA's cuBLAS its headers do not declare, which NVIDIA's cuSOLVER calls on
// every handle it creates (with `--remote-libs cublas`, over this stub): a hint the server's
// cuBLAS has no use for, accepted on a live handle with its arguments left untouched.
// cublasGetEnvironmentMode, which nothing here was seen to call, stays refused.
extern "C" __attribute__((visibility("default"))) cublasStatus_t cublasSetEnvironmentMode(
    cublasHandle_t handle, int) {
  return remora::client_stub::Live().Find(handle) ? CUBLAS_STATUS_SUCCESS
                                                  : CUBLAS_STATUS_NOT_INITIALIZED;
}

// The settings of proto/blas_settings.def (emulation on tensor cores, the SM count target).
#define BLAS_SETTING(id, Name, Type, Valid)                                     \
  cublasStatus_t cublasSet##Name(cublasHandle_t h, Type value) {                \
    return remora::client_stub::SetSetting(h, id, static_cast<int64_t>(value)); \
  }                                                                             \
  cublasStatus_t cublasGet##Name(cublasHandle_t h, Type* value) {               \
    if (!value) return CUBLAS_STATUS_INVALID_VALUE;                             \
    int64_t v = 0;                                                              \
    const cublasStatus_t s = remora::client_stub::GetSetting(h, id, &v);        \
    if (s == CUBLAS_STATUS_SUCCESS) *value = static_cast<Type>(v);              \
    return s;                                                                   \
  }
#include "proto/blas_settings.def"

cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int* version) {
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

size_t cublasGetCudartVersion(void) {
  return CUDART_VERSION;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  return remora::client_stub::BlasStatusName(status);
}

const char* cublasGetStatusString(cublasStatus_t status) {
  return remora::client_stub::BlasStatusString(status);
}

// ---- Host <-> device copies ----------------------------------------------------------

// The copies in both forms: I is int, or int64_t for the _64 ones (W).
#define COPIES(I, W)                                                                              \
  cublasStatus_t cublasSetVector##W(I n, I es, const void* x, I incx, void* y, I incy) {          \
    return CopyVector(n, es, x, incx, y, incy, cudaMemcpyHostToDevice, nullptr);                  \
  }                                                                                               \
  cublasStatus_t cublasGetVector##W(I n, I es, const void* x, I incx, void* y, I incy) {          \
    return CopyVector(n, es, x, incx, y, incy, cudaMemcpyDeviceToHost, nullptr);                  \
  }                                                                                               \
  cublasStatus_t cublasSetVectorAsync##W(I n, I es, const void* x, I incx, void* y, I incy,       \
                                         cudaStream_t s) {                                        \
    return CopyVector(n, es, x, incx, y, incy, cudaMemcpyHostToDevice, &s);                       \
  }                                                                                               \
  cublasStatus_t cublasGetVectorAsync##W(I n, I es, const void* x, I incx, void* y, I incy,       \
                                         cudaStream_t s) {                                        \
    return CopyVector(n, es, x, incx, y, incy, cudaMemcpyDeviceToHost, &s);                       \
  }                                                                                               \
  cublasStatus_t cublasSetMatrix##W(I rows, I cols, I es, const void* A, I lda, void* B, I ldb) { \
    return CopyMatrix(rows, cols, es, A, lda, B, ldb, cudaMemcpyHostToDevice, nullptr);           \
  }                                                                                               \
  cublasStatus_t cublasGetMatrix##W(I rows, I cols, I es, const void* A, I lda, void* B, I ldb) { \
    return CopyMatrix(rows, cols, es, A, lda, B, ldb, cudaMemcpyDeviceToHost, nullptr);           \
  }                                                                                               \
  cublasStatus_t cublasSetMatrixAsync##W(I rows, I cols, I es, const void* A, I lda, void* B,     \
                                         I ldb, cudaStream_t s) {                                 \
    return CopyMatrix(rows, cols, es, A, lda, B, ldb, cudaMemcpyHostToDevice, &s);                \
  }                                                                                               \
  cublasStatus_t cublasGetMatrixAsync##W(I rows, I cols, I es, const void* A, I lda, void* B,     \
                                         I ldb, cudaStream_t s) {                                 \
    return CopyMatrix(rows, cols, es, A, lda, B, ldb, cudaMemcpyDeviceToHost, &s);                \
  }
COPIES(int, )
COPIES(int64_t, _64)

// ---- Level 1 ---------------------------------------------------------------------------
// Each routine lists its integers, pointers, scalars and result in the order
// proto/blas.h gives for its shape.

#define AXPY(Name, T) AXPY_(Name, T, int, ) AXPY_(Name, T, int64_t, _64)
#define AXPY_(Name, T, I, W)                                                                     \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, const T* alpha, const T* x, I incx, \
                                      T* y, I incy) {                                            \
    return Forward##W(h, Op::k##Name, {n, incx, incy}, {x, y}, {alpha});                         \
  }
AXPY(Saxpy, float)
AXPY(Daxpy, double)
#define DOT(Name, T) DOT_(Name, T, int, ) DOT_(Name, T, int64_t, _64)
#define DOT_(Name, T, I, W)                                                                  \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, const T* x, I incx, const T* y, \
                                      I incy, T* result) {                                   \
    return Forward##W(h, Op::k##Name, {n, incx, incy}, {x, y}, {}, result);                  \
  }
DOT(Sdot, float)
DOT(Ddot, double)
DOT(Cdotu, cuComplex)
DOT(Zdotu, cuDoubleComplex)
DOT(Cdotc, cuComplex)
DOT(Zdotc, cuDoubleComplex)
#define NORM(Name, T, R) NORM_(Name, T, R, int, ) NORM_(Name, T, R, int64_t, _64)
#define NORM_(Name, T, R, I, W)                                                               \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, const T* x, I incx, R* result) { \
    return Forward##W(h, Op::k##Name, {n, incx}, {x}, {}, result);                            \
  }
// The index routines' _64 forms return an int64_t.
#define INDEX(Name, T) NORM_(Name, T, int, int, ) NORM_(Name, T, int64_t, int64_t, _64)
NORM(Snrm2, float, float)
NORM(Dnrm2, double, double)
NORM(Sasum, float, float)
NORM(Dasum, double, double)
INDEX(Isamax, float)
INDEX(Idamax, double)
INDEX(Isamin, float)
INDEX(Idamin, double)
// x = alpha x, alpha of type A: x's own, or the real one of a complex x (Csscal, Zdscal).
#define SCAL(Name, T, A) SCAL_(Name, T, A, int, ) SCAL_(Name, T, A, int64_t, _64)
#define SCAL_(Name, T, A, I, W)                                                              \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, const A* alpha, T* x, I incx) { \
    return Forward##W(h, Op::k##Name, {n, incx}, {x}, {alpha});                              \
  }
SCAL(Sscal, float, float)
SCAL(Dscal, double, double)
#define COPY(Name, T, CT) COPY_(Name, T, CT, int, ) COPY_(Name, T, CT, int64_t, _64)
#define COPY_(Name, T, CT, I, W)                                                            \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, CT* x, I incx, T* y, I incy) { \
    return Forward##W(h, Op::k##Name, {n, incx, incy}, {x, y});                             \
  }
COPY(Scopy, float, const float)
COPY(Dcopy, double, const double)
COPY(Sswap, float, float)
COPY(Dswap, double, double)
#define ROT(Name, T) ROT_(Name, T, int, ) ROT_(Name, T, int64_t, _64)
#define ROT_(Name, T, I, W)                                                              \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, T* x, I incx, T* y, I incy, \
                                      const T* c, const T* s) {                          \
    return Forward##W(h, Op::k##Name, {n, incx, incy}, {x, y}, {c, s});                  \
  }
ROT(Srot, float)
ROT(Drot, double)
// Complex rotations: c real, s complex (Crot, Zrot) or real (Csrot, Zdrot).
#define ROT_COMPLEX(Name, T, R, ST) \
  ROT_COMPLEX_(Name, T, R, ST, int, ) ROT_COMPLEX_(Name, T, R, ST, int64_t, _64)
#define ROT_COMPLEX_(Name, T, R, ST, I, W)                                               \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, T* x, I incx, T* y, I incy, \
                                      const R* c, const ST* s) {                         \
    return Forward##W(h, Op::k##Name, {n, incx, incy}, {x, y}, {c, s});                  \
  }
ROT_COMPLEX(Crot, cuComplex, float, cuComplex)
ROT_COMPLEX(Zrot, cuDoubleComplex, double, cuDoubleComplex)
ROT_COMPLEX(Csrot, cuComplex, float, float)
ROT_COMPLEX(Zdrot, cuDoubleComplex, double, double)
#define ROTM(Name, T) ROTM_(Name, T, int, ) ROTM_(Name, T, int64_t, _64)
#define ROTM_(Name, T, I, W)                                                             \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I n, T* x, I incx, T* y, I incy, \
                                      const T* param) {                                  \
    return Forward##W(h, Op::k##Name, {n, incx, incy}, {x, y}, {param});                 \
  }
ROTM(Srotm, float)
ROTM(Drotm, double)

// The rotation generators, their scalars in place: a, b, c (real) and s (rotg); d1, d2, x1,
// y1 (read only) and param[5] (rotmg).
#define ROTG(X, T, R)                                                                    \
  cublasStatus_t cublas##X##rotg_v2(cublasHandle_t h, T* a, T* b, R* c, T* s) {          \
    return ForwardInPlace<4>(                                                            \
        h, Op::k##X##rotg,                                                               \
        {{{a, a, sizeof(T)}, {b, b, sizeof(T)}, {c, c, sizeof(R)}, {s, s, sizeof(T)}}}); \
  }
ROTG(S, float, float)
ROTG(D, double, double)
ROTG(C, cuComplex, float)
ROTG(Z, cuDoubleComplex, double)
#define ROTMG(X, T)                                                                      \
  cublasStatus_t cublas##X##rotmg_v2(cublasHandle_t h, T* d1, T* d2, T* x1, const T* y1, \
                                     T* param) {                                         \
    return ForwardInPlace<5>(h, Op::k##X##rotmg,                                         \
                             {{{d1, d1, sizeof(T)},                                      \
                               {d2, d2, sizeof(T)},                                      \
                               {x1, x1, sizeof(T)},                                      \
                               {y1, nullptr, sizeof(T)},                                 \
                               {param, param, 5 * sizeof(T)}}});                         \
  }
ROTMG(S, float)
ROTMG(D, double)

// rotEx with one real type for c and s: the rotation of that precision (x and y real or
// complex, computed in their own type); a half-precision or complex-s form is not forwarded.
#define ROT_EX(I, W)                                                                               \
  cublasStatus_t cublasRotEx##W(cublasHandle_t h, I n, void* x, cudaDataType xType, I incx,        \
                                void* y, cudaDataType yType, I incy, const void* c, const void* s, \
                                cudaDataType csType, cudaDataType executiontype) {                 \
    const auto* cf = static_cast<const float*>(c);                                                 \
    const auto* sf = static_cast<const float*>(s);                                                 \
    const auto* cd = static_cast<const double*>(c);                                                \
    const auto* sd = static_cast<const double*>(s);                                                \
    if (xType == yType && xType == executiontype) {                                                \
      if (xType == CUDA_R_32F && csType == CUDA_R_32F)                                             \
        return cublasSrot_v2##W(h, n, static_cast<float*>(x), incx, static_cast<float*>(y), incy,  \
                                cf, sf);                                                           \
      if (xType == CUDA_R_64F && csType == CUDA_R_64F)                                             \
        return cublasDrot_v2##W(h, n, static_cast<double*>(x), incx, static_cast<double*>(y),      \
                                incy, cd, sd);                                                     \
      if (xType == CUDA_C_32F && csType == CUDA_R_32F)                                             \
        return cublasCsrot_v2##W(h, n, static_cast<cuComplex*>(x), incx,                           \
                                 static_cast<cuComplex*>(y), incy, cf, sf);                        \
      if (xType == CUDA_C_64F && csType == CUDA_R_64F)                                             \
        return cublasZdrot_v2##W(h, n, static_cast<cuDoubleComplex*>(x), incx,                     \
                                 static_cast<cuDoubleComplex*>(y), incy, cd, sd);                  \
    }                                                                                              \
    SayOnce("cublasRotEx: x " + std::to_string(xType) + ", y " + std::to_string(yType) +           \
            ", c/s " + std::to_string(csType) + ", execution " + std::to_string(executiontype) +   \
            " is not forwarded: CUBLAS_STATUS_NOT_SUPPORTED");                                     \
    return CUBLAS_STATUS_NOT_SUPPORTED;                                                            \
  }
ROT_EX(int, )
ROT_EX(int64_t, _64)
AXPY(Caxpy, cuComplex)
AXPY(Zaxpy, cuDoubleComplex)
SCAL(Cscal, cuComplex, cuComplex)
SCAL(Zscal, cuDoubleComplex, cuDoubleComplex)
COPY(Ccopy, cuComplex, const cuComplex)
COPY(Zcopy, cuDoubleComplex, const cuDoubleComplex)
COPY(Cswap, cuComplex, cuComplex)
COPY(Zswap, cuDoubleComplex, cuDoubleComplex)
INDEX(Icamax, cuComplex)
INDEX(Izamax, cuDoubleComplex)
INDEX(Icamin, cuComplex)
INDEX(Izamin, cuDoubleComplex)
NORM(Scasum, cuComplex, float)
NORM(Dzasum, cuDoubleComplex, double)
NORM(Scnrm2, cuComplex, float)
NORM(Dznrm2, cuDoubleComplex, double)
SCAL(Csscal, cuComplex, float)
SCAL(Zdscal, cuDoubleComplex, double)
// iamaxEx and iaminEx: the index routine of x's type (real or complex, single or double).
#define INDEX_EX(Which, I, W)                                                                    \
  cublasStatus_t cublasI##Which##Ex##W(cublasHandle_t h, I n, const void* x, cudaDataType xType, \
                                       I incx, I* result) {                                      \
    switch (xType) {                                                                             \
      case CUDA_R_32F:                                                                           \
        return cublasIs##Which##_v2##W(h, n, static_cast<const float*>(x), incx, result);        \
      case CUDA_R_64F:                                                                           \
        return cublasId##Which##_v2##W(h, n, static_cast<const double*>(x), incx, result);       \
      case CUDA_C_32F:                                                                           \
        return cublasIc##Which##_v2##W(h, n, static_cast<const cuComplex*>(x), incx, result);    \
      case CUDA_C_64F:                                                                           \
        return cublasIz##Which##_v2##W(h, n, static_cast<const cuDoubleComplex*>(x), incx,       \
                                       result);                                                  \
      default:                                                                                   \
        SayOnce("cublasI" #Which "Ex: xType " + std::to_string(xType) +                          \
                " is not forwarded: CUBLAS_STATUS_NOT_SUPPORTED");                               \
        return CUBLAS_STATUS_NOT_SUPPORTED;                                                      \
    }                                                                                            \
  }
INDEX_EX(amax, int, )
INDEX_EX(amax, int64_t, _64)
INDEX_EX(amin, int, )
INDEX_EX(amin, int64_t, _64)

// ---- Level 2 ---------------------------------------------------------------------------

#define GEMV(Name, T) GEMV_(Name, T, int, ) GEMV_(Name, T, int64_t, _64)
#define GEMV_(Name, T, I, W)                                                                     \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasOperation_t trans, I m, I n,       \
                                      const T* alpha, const T* A, I lda, const T* x, I incx,     \
                                      const T* beta, T* y, I incy) {                             \
    return Forward##W(h, Op::k##Name, {trans, m, n, lda, incx, incy}, {A, x, y}, {alpha, beta}); \
  }
GEMV(Sgemv, float)
GEMV(Dgemv, double)
GEMV(Cgemv, cuComplex)
GEMV(Zgemv, cuDoubleComplex)
#define GER(Name, T) GER_(Name, T, int, ) GER_(Name, T, int64_t, _64)
#define GER_(Name, T, I, W)                                                                   \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, I m, I n, const T* alpha, const T* x, \
                                      I incx, const T* y, I incy, T* A, I lda) {              \
    return Forward##W(h, Op::k##Name, {m, n, incx, incy, lda}, {x, y, A}, {alpha});           \
  }
GER(Sger, float)
GER(Dger, double)
GER(Zgerc, cuDoubleComplex)
GER(Cgerc, cuComplex)
GER(Zgeru, cuDoubleComplex)
GER(Cgeru, cuComplex)
#define SYMV(Name, T) SYMV_(Name, T, int, ) SYMV_(Name, T, int64_t, _64)
#define SYMV_(Name, T, I, W)                                                                 \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo, I n,          \
                                      const T* alpha, const T* A, I lda, const T* x, I incx, \
                                      const T* beta, T* y, I incy) {                         \
    return Forward##W(h, Op::k##Name, {uplo, n, lda, incx, incy}, {A, x, y}, {alpha, beta}); \
  }
SYMV(Ssymv, float)
SYMV(Dsymv, double)
SYMV(Zhemv, cuDoubleComplex)
SYMV(Chemv, cuComplex)
SYMV(Csymv, cuComplex)
SYMV(Zsymv, cuDoubleComplex)
#define TRSV(Name, T) TRSV_(Name, T, int, ) TRSV_(Name, T, int64_t, _64)
#define TRSV_(Name, T, I, W)                                                               \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo,             \
                                      cublasOperation_t trans, cublasDiagType_t diag, I n, \
                                      const T* A, I lda, T* x, I incx) {                   \
    return Forward##W(h, Op::k##Name, {uplo, trans, diag, n, lda, incx}, {A, x});          \
  }
TRSV(Strsv, float)
TRSV(Dtrsv, double)
TRSV(Strmv, float)
TRSV(Dtrmv, double)
TRSV(Ztrsv, cuDoubleComplex)
TRSV(Ctrsv, cuComplex)
TRSV(Ztrmv, cuDoubleComplex)
TRSV(Ctrmv, cuComplex)
#define TBSV(Name, T) TBSV_(Name, T, int, ) TBSV_(Name, T, int64_t, _64)
#define TBSV_(Name, T, I, W)                                                                    \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo,                  \
                                      cublasOperation_t trans, cublasDiagType_t diag, I n, I k, \
                                      const T* A, I lda, T* x, I incx) {                        \
    return Forward##W(h, Op::k##Name, {uplo, trans, diag, n, k, lda, incx}, {A, x});            \
  }
TBSV(Stbmv, float)
TBSV(Dtbmv, double)
TBSV(Stbsv, float)
TBSV(Dtbsv, double)
TBSV(Ztbsv, cuDoubleComplex)
TBSV(Ctbsv, cuComplex)
TBSV(Ztbmv, cuDoubleComplex)
TBSV(Ctbmv, cuComplex)
#define TPSV(Name, T) TPSV_(Name, T, int, ) TPSV_(Name, T, int64_t, _64)
#define TPSV_(Name, T, I, W)                                                               \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo,             \
                                      cublasOperation_t trans, cublasDiagType_t diag, I n, \
                                      const T* AP, T* x, I incx) {                         \
    return Forward##W(h, Op::k##Name, {uplo, trans, diag, n, incx}, {AP, x});              \
  }
TPSV(Stpmv, float)
TPSV(Dtpmv, double)
TPSV(Stpsv, float)
TPSV(Dtpsv, double)
TPSV(Ztpsv, cuDoubleComplex)
TPSV(Ctpsv, cuComplex)
TPSV(Ztpmv, cuDoubleComplex)
TPSV(Ctpmv, cuComplex)
#define GBMV(Name, T) GBMV_(Name, T, int, ) GBMV_(Name, T, int64_t, _64)
#define GBMV_(Name, T, I, W)                                                                       \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasOperation_t trans, I m, I n, I kl,   \
                                      I ku, const T* alpha, const T* A, I lda, const T* x, I incx, \
                                      const T* beta, T* y, I incy) {                               \
    return Forward##W(h, Op::k##Name, {trans, m, n, kl, ku, lda, incx, incy}, {A, x, y},           \
                      {alpha, beta});                                                              \
  }
GBMV(Sgbmv, float)
GBMV(Dgbmv, double)
GBMV(Zgbmv, cuDoubleComplex)
GBMV(Cgbmv, cuComplex)
#define SBMV(Name, T) SBMV_(Name, T, int, ) SBMV_(Name, T, int64_t, _64)
#define SBMV_(Name, T, I, W)                                                                    \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo, I n, I k,        \
                                      const T* alpha, const T* A, I lda, const T* x, I incx,    \
                                      const T* beta, T* y, I incy) {                            \
    return Forward##W(h, Op::k##Name, {uplo, n, k, lda, incx, incy}, {A, x, y}, {alpha, beta}); \
  }
SBMV(Ssbmv, float)
SBMV(Dsbmv, double)
SBMV(Zhbmv, cuDoubleComplex)
SBMV(Chbmv, cuComplex)
#define SPMV(Name, T) SPMV_(Name, T, int, ) SPMV_(Name, T, int64_t, _64)
#define SPMV_(Name, T, I, W)                                                             \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo, I n,      \
                                      const T* alpha, const T* AP, const T* x, I incx,   \
                                      const T* beta, T* y, I incy) {                     \
    return Forward##W(h, Op::k##Name, {uplo, n, incx, incy}, {AP, x, y}, {alpha, beta}); \
  }
SPMV(Sspmv, float)
SPMV(Dspmv, double)
SPMV(Zhpmv, cuDoubleComplex)
SPMV(Chpmv, cuComplex)
// A += alpha x x^T, or alpha x x^H with a real alpha (S: alpha's type).
#define SYR(Name, T, S) SYR_(Name, T, S, int, ) SYR_(Name, T, S, int64_t, _64)
#define SYR_(Name, T, S, I, W)                                                           \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo, I n,      \
                                      const S* alpha, const T* x, I incx, T* A, I lda) { \
    return Forward##W(h, Op::k##Name, {uplo, n, incx, lda}, {x, A}, {alpha});            \
  }
SYR(Ssyr, float, float)
SYR(Dsyr, double, double)
SYR(Csyr, cuComplex, cuComplex)
SYR(Zsyr, cuDoubleComplex, cuDoubleComplex)
SYR(Cher, cuComplex, float)
SYR(Zher, cuDoubleComplex, double)
#define SYR2(Name, T) SYR2_(Name, T, int, ) SYR2_(Name, T, int64_t, _64)
#define SYR2_(Name, T, I, W)                                                                  \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo, I n,           \
                                      const T* alpha, const T* x, I incx, const T* y, I incy, \
                                      T* A, I lda) {                                          \
    return Forward##W(h, Op::k##Name, {uplo, n, incx, incy, lda}, {x, y, A}, {alpha});        \
  }
SYR2(Ssyr2, float)
SYR2(Dsyr2, double)
SYR2(Zher2, cuDoubleComplex)
SYR2(Cher2, cuComplex)
SYR2(Csyr2, cuComplex)
SYR2(Zsyr2, cuDoubleComplex)
#define SPR(Name, T, S) SPR_(Name, T, S, int, ) SPR_(Name, T, S, int64_t, _64)
#define SPR_(Name, T, S, I, W)                                                      \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo, I n, \
                                      const S* alpha, const T* x, I incx, T* AP) {  \
    return Forward##W(h, Op::k##Name, {uplo, n, incx}, {x, AP}, {alpha});           \
  }
SPR(Sspr, float, float)
SPR(Dspr, double, double)
SPR(Chpr, cuComplex, float)
SPR(Zhpr, cuDoubleComplex, double)
#define SPR2(Name, T) SPR2_(Name, T, int, ) SPR2_(Name, T, int64_t, _64)
#define SPR2_(Name, T, I, W)                                                                  \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo, I n,           \
                                      const T* alpha, const T* x, I incx, const T* y, I incy, \
                                      T* AP) {                                                \
    return Forward##W(h, Op::k##Name, {uplo, n, incx, incy}, {x, y, AP}, {alpha});            \
  }
SPR2(Sspr2, float)
SPR2(Dspr2, double)
SPR2(Zhpr2, cuDoubleComplex)
SPR2(Chpr2, cuComplex)

// ---- Level 3 ---------------------------------------------------------------------------

#define GEMM(Name, Sym, T) GEMM_(Name, Sym, T, int, ) GEMM_(Name, Sym, T, int64_t, _64)
#define GEMM_(Name, Sym, T, I, W)                                                                  \
  cublasStatus_t Sym##W(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n,    \
                        I k, const T* alpha, const T* A, I lda, const T* B, I ldb, const T* beta,  \
                        T* C, I ldc) {                                                             \
    return Forward##W(h, Op::k##Name, {ta, tb, m, n, k, lda, ldb, ldc}, {A, B, C}, {alpha, beta}); \
  }
GEMM(Sgemm, cublasSgemm_v2, float)
GEMM(Dgemm, cublasDgemm_v2, double)
GEMM(Cgemm, cublasCgemm_v2, cuComplex)
GEMM(Zgemm, cublasZgemm_v2, cuDoubleComplex)
GEMM(Hgemm, cublasHgemm, __half)
GEMM(Cgemm3m, cublasCgemm3m, cuComplex)
GEMM(Zgemm3m, cublasZgemm3m, cuDoubleComplex)
#define SYMM(Name, T) SYMM_(Name, T, int, ) SYMM_(Name, T, int64_t, _64)
#define SYMM_(Name, T, I, W)                                                                       \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasSideMode_t side,                     \
                                      cublasFillMode_t uplo, I m, I n, const T* alpha, const T* A, \
                                      I lda, const T* B, I ldb, const T* beta, T* C, I ldc) {      \
    return Forward##W(h, Op::k##Name, {side, uplo, m, n, lda, ldb, ldc}, {A, B, C},                \
                      {alpha, beta});                                                              \
  }
SYMM(Ssymm, float)
SYMM(Dsymm, double)
SYMM(Csymm, cuComplex)
SYMM(Zsymm, cuDoubleComplex)
SYMM(Zhemm, cuDoubleComplex)
SYMM(Chemm, cuComplex)
// C = alpha op(A) op(A)^T + beta C; herk's alpha and beta are real (S: their type).
#define SYRK(Name, T, S) SYRK_(Name, T, S, int, ) SYRK_(Name, T, S, int64_t, _64)
#define SYRK_(Name, T, S, I, W)                                                              \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasFillMode_t uplo,               \
                                      cublasOperation_t trans, I n, I k, const S* alpha,     \
                                      const T* A, I lda, const S* beta, T* C, I ldc) {       \
    return Forward##W(h, Op::k##Name, {uplo, trans, n, k, lda, ldc}, {A, C}, {alpha, beta}); \
  }
SYRK(Ssyrk, float, float)
SYRK(Dsyrk, double, double)
SYRK(Csyrk, cuComplex, cuComplex)
SYRK(Zsyrk, cuDoubleComplex, cuDoubleComplex)
SYRK(Cherk, cuComplex, float)
SYRK(Zherk, cuDoubleComplex, double)
// The Ex forms of csyrk and cherk, and their 3m forms (the same product), on FP32 complex
// operands are csyrk and cherk; cuBLAS's 8-bit complex inputs are not forwarded.
#define RANKK_EX(Name, Fn, S) RANKK_EX_(Name, Fn, S, int, ) RANKK_EX_(Name, Fn, S, int64_t, _64)
#define RANKK_EX_(Name, Fn, S, I, W)                                                               \
  cublasStatus_t cublas##Name##W(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, \
                                 I n, I k, const S* alpha, const void* A, cudaDataType Atype,      \
                                 I lda, const S* beta, void* C, cudaDataType Ctype, I ldc) {       \
    if (Atype != CUDA_C_32F || Ctype != CUDA_C_32F) {                                              \
      SayOnce("cublas" #Name ": Atype " + std::to_string(Atype) + ", Ctype " +                     \
              std::to_string(Ctype) +                                                              \
              " (only CUDA_C_32F's are forwarded): CUBLAS_STATUS_NOT_SUPPORTED");                  \
      return CUBLAS_STATUS_NOT_SUPPORTED;                                                          \
    }                                                                                              \
    return Fn##W(h, uplo, trans, n, k, alpha, static_cast<const cuComplex*>(A), lda, beta,         \
                 static_cast<cuComplex*>(C), ldc);                                                 \
  }
RANKK_EX(CsyrkEx, cublasCsyrk_v2, cuComplex)
RANKK_EX(Csyrk3mEx, cublasCsyrk_v2, cuComplex)
RANKK_EX(CherkEx, cublasCherk_v2, float)
RANKK_EX(Cherk3mEx, cublasCherk_v2, float)
// syr2k and syrkx; her2k's and herkx's beta is real (Beta: its type).
#define SYR2K(Name, Sym, T, Beta) \
  SYR2K_(Name, Sym, T, Beta, int, ) SYR2K_(Name, Sym, T, Beta, int64_t, _64)
#define SYR2K_(Name, Sym, T, Beta, I, W)                                                       \
  cublasStatus_t Sym##W(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, I n, \
                        I k, const T* alpha, const T* A, I lda, const T* B, I ldb,             \
                        const Beta* beta, T* C, I ldc) {                                       \
    return Forward##W(h, Op::k##Name, {uplo, trans, n, k, lda, ldb, ldc}, {A, B, C},           \
                      {alpha, beta});                                                          \
  }
SYR2K(Ssyr2k, cublasSsyr2k_v2, float, float)
SYR2K(Dsyr2k, cublasDsyr2k_v2, double, double)
SYR2K(Ssyrkx, cublasSsyrkx, float, float)
SYR2K(Dsyrkx, cublasDsyrkx, double, double)
SYR2K(Csyr2k, cublasCsyr2k_v2, cuComplex, cuComplex)
SYR2K(Zsyr2k, cublasZsyr2k_v2, cuDoubleComplex, cuDoubleComplex)
SYR2K(Csyrkx, cublasCsyrkx, cuComplex, cuComplex)
SYR2K(Zsyrkx, cublasZsyrkx, cuDoubleComplex, cuDoubleComplex)
SYR2K(Cher2k, cublasCher2k_v2, cuComplex, float)
SYR2K(Zher2k, cublasZher2k_v2, cuDoubleComplex, double)
SYR2K(Cherkx, cublasCherkx, cuComplex, float)
SYR2K(Zherkx, cublasZherkx, cuDoubleComplex, double)
#define TRSM(Name, T) TRSM_(Name, T, int, ) TRSM_(Name, T, int64_t, _64)
#define TRSM_(Name, T, I, W)                                                                       \
  cublasStatus_t cublas##Name##_v2##W(                                                             \
      cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t trans,     \
      cublasDiagType_t diag, I m, I n, const T* alpha, const T* A, I lda, T* B, I ldb) {           \
    return Forward##W(h, Op::k##Name, {side, uplo, trans, diag, m, n, lda, ldb}, {A, B}, {alpha}); \
  }
TRSM(Strsm, float)
TRSM(Dtrsm, double)
TRSM(Ctrsm, cuComplex)
TRSM(Ztrsm, cuDoubleComplex)
#define TRMM(Name, T) TRMM_(Name, T, int, ) TRMM_(Name, T, int64_t, _64)
#define TRMM_(Name, T, I, W)                                                                       \
  cublasStatus_t cublas##Name##_v2##W(cublasHandle_t h, cublasSideMode_t side,                     \
                                      cublasFillMode_t uplo, cublasOperation_t trans,              \
                                      cublasDiagType_t diag, I m, I n, const T* alpha, const T* A, \
                                      I lda, const T* B, I ldb, T* C, I ldc) {                     \
    return Forward##W(h, Op::k##Name, {side, uplo, trans, diag, m, n, lda, ldb, ldc}, {A, B, C},   \
                      {alpha});                                                                    \
  }
TRMM(Strmm, float)
TRMM(Dtrmm, double)
TRMM(Ctrmm, cuComplex)
TRMM(Ztrmm, cuDoubleComplex)
#define GEAM(Name, T) GEAM_(Name, T, int, ) GEAM_(Name, T, int64_t, _64)
#define GEAM_(Name, T, I, W)                                                                    \
  cublasStatus_t cublas##Name##W(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,  \
                                 I m, I n, const T* alpha, const T* A, I lda, const T* beta,    \
                                 const T* B, I ldb, T* C, I ldc) {                              \
    return Forward##W(h, Op::k##Name, {ta, tb, m, n, lda, ldb, ldc}, {A, B, C}, {alpha, beta}); \
  }
GEAM(Sgeam, float)
GEAM(Dgeam, double)
GEAM(Cgeam, cuComplex)
GEAM(Zgeam, cuDoubleComplex)
#define DGMM(Name, T) DGMM_(Name, T, int, ) DGMM_(Name, T, int64_t, _64)
#define DGMM_(Name, T, I, W)                                                                    \
  cublasStatus_t cublas##Name##W(cublasHandle_t h, cublasSideMode_t mode, I m, I n, const T* A, \
                                 I lda, const T* x, I incx, T* C, I ldc) {                      \
    return Forward##W(h, Op::k##Name, {mode, m, n, lda, incx, ldc}, {A, x, C});                 \
  }
DGMM(Sdgmm, float)
DGMM(Ddgmm, double)
DGMM(Cdgmm, cuComplex)
DGMM(Zdgmm, cuDoubleComplex)

// Triangular storage: packed AP to full A's `uplo` triangle (tpttr) and back (trttp).
#define TPTTR(X, T)                                                                            \
  cublasStatus_t cublas##X##tpttr(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* AP, \
                                  T* A, int lda) {                                             \
    return Forward(h, Op::k##X##tpttr, {uplo, n, lda}, {AP, A});                               \
  }                                                                                            \
  cublasStatus_t cublas##X##trttp(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* A,  \
                                  int lda, T* AP) {                                            \
    return Forward(h, Op::k##X##trttp, {uplo, n, lda}, {A, AP});                               \
  }
TPTTR(S, float)
TPTTR(D, double)
TPTTR(C, cuComplex)
TPTTR(Z, cuDoubleComplex)

// ---- Mixed precision and batches ------------------------------------------------------
// Each in both forms: I is int, or int64_t for the _64 entry points (W).

#define GEMM_EX(I, W)                                                                             \
  cublasStatus_t cublasGemmEx##W(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,    \
                                 I m, I n, I k, const void* alpha, const void* A,                 \
                                 cudaDataType Atype, I lda, const void* B, cudaDataType Btype,    \
                                 I ldb, const void* beta, void* C, cudaDataType Ctype, I ldc,     \
                                 cublasComputeType_t compute, cublasGemmAlgo_t algo) {            \
    return Forward##W(h, Op::kGemmEx,                                                             \
                      {ta, tb, m, n, k, Atype, lda, Btype, ldb, Ctype, ldc, compute, algo},       \
                      {A, B, C}, {alpha, beta});                                                  \
  }                                                                                               \
  /* sgemmEx: gemmEx computing in FP32, scaled by floats. */                                      \
  cublasStatus_t cublasSgemmEx##W(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,   \
                                  I m, I n, I k, const float* alpha, const void* A,               \
                                  cudaDataType Atype, I lda, const void* B, cudaDataType Btype,   \
                                  I ldb, const float* beta, void* C, cudaDataType Ctype, I ldc) { \
    return cublasGemmEx##W(h, ta, tb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,      \
                           Ctype, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);                  \
  }
GEMM_EX(int, )
GEMM_EX(int64_t, _64)
// cgemmEx and cgemm3mEx on FP32 complex operands are cgemm; cuBLAS's 8-bit complex inputs are
// not forwarded.
#define CGEMM_EX(Name, I, W)                                                                   \
  cublasStatus_t cublas##Name##W(                                                              \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,             \
      const cuComplex* alpha, const void* A, cudaDataType Atype, I lda, const void* B,         \
      cudaDataType Btype, I ldb, const cuComplex* beta, void* C, cudaDataType Ctype, I ldc) {  \
    if (Atype != CUDA_C_32F || Btype != CUDA_C_32F || Ctype != CUDA_C_32F) {                   \
      SayOnce("cublas" #Name ": Atype " + std::to_string(Atype) + ", Btype " +                 \
              std::to_string(Btype) + ", Ctype " + std::to_string(Ctype) +                     \
              " (only CUDA_C_32F's are forwarded): CUBLAS_STATUS_NOT_SUPPORTED");              \
      return CUBLAS_STATUS_NOT_SUPPORTED;                                                      \
    }                                                                                          \
    return cublasCgemm_v2##W(h, ta, tb, m, n, k, alpha, static_cast<const cuComplex*>(A), lda, \
                             static_cast<const cuComplex*>(B), ldb, beta,                      \
                             static_cast<cuComplex*>(C), ldc);                                 \
  }
CGEMM_EX(CgemmEx, int, )
CGEMM_EX(CgemmEx, int64_t, _64)
CGEMM_EX(Cgemm3mEx, int, )
CGEMM_EX(Cgemm3mEx, int64_t, _64)

#define TRSM_BATCHED(Name, T) TRSM_BATCHED_(Name, T, int, ) TRSM_BATCHED_(Name, T, int64_t, _64)
#define TRSM_BATCHED_(Name, T, I, W)                                                             \
  cublasStatus_t cublas##Name##W(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, \
                                 cublasOperation_t trans, cublasDiagType_t diag, I m, I n,       \
                                 const T* alpha, const T* const A[], I lda, T* const B[], I ldb, \
                                 I batch) {                                                      \
    return Forward##W(h, Op::k##Name, {side, uplo, trans, diag, m, n, lda, ldb, batch}, {A, B},  \
                      {alpha});                                                                  \
  }
TRSM_BATCHED(StrsmBatched, float)
TRSM_BATCHED(DtrsmBatched, double)
TRSM_BATCHED(CtrsmBatched, cuComplex)
TRSM_BATCHED(ZtrsmBatched, cuDoubleComplex)

#define LEVEL1_EX(I, W)                                                                            \
  cublasStatus_t cublasDotEx##W(cublasHandle_t h, I n, const void* x, cudaDataType xType, I incx,  \
                                const void* y, cudaDataType yType, I incy, void* result,           \
                                cudaDataType resultType, cudaDataType executionType) {             \
    return Forward##W(h, Op::kDotEx, {n, xType, incx, yType, incy, resultType, executionType},     \
                      {x, y}, {}, result);                                                         \
  }                                                                                                \
  cublasStatus_t cublasDotcEx##W(cublasHandle_t h, I n, const void* x, cudaDataType xType, I incx, \
                                 const void* y, cudaDataType yType, I incy, void* result,          \
                                 cudaDataType resultType, cudaDataType executionType) {            \
    return Forward##W(h, Op::kDotcEx, {n, xType, incx, yType, incy, resultType, executionType},    \
                      {x, y}, {}, result);                                                         \
  }                                                                                                \
  cublasStatus_t cublasAxpyEx##W(cublasHandle_t h, I n, const void* alpha, cudaDataType alphaType, \
                                 const void* x, cudaDataType xType, I incx, void* y,               \
                                 cudaDataType yType, I incy, cudaDataType executiontype) {         \
    return Forward##W(h, Op::kAxpyEx, {n, alphaType, xType, incx, yType, incy, executiontype},     \
                      {x, y}, {alpha});                                                            \
  }                                                                                                \
  cublasStatus_t cublasScalEx##W(cublasHandle_t h, I n, const void* alpha, cudaDataType alphaType, \
                                 void* x, cudaDataType xType, I incx,                              \
                                 cudaDataType executionType) {                                     \
    return Forward##W(h, Op::kScalEx, {n, alphaType, xType, incx, executionType}, {x}, {alpha});   \
  }                                                                                                \
  cublasStatus_t cublasNrm2Ex##W(cublasHandle_t h, I n, const void* x, cudaDataType xType, I incx, \
                                 void* result, cudaDataType resultType,                            \
                                 cudaDataType executionType) {                                     \
    return Forward##W(h, Op::kNrm2Ex, {n, xType, incx, resultType, executionType}, {x}, {},        \
                      result);                                                                     \
  }                                                                                                \
  cublasStatus_t cublasAsumEx##W(cublasHandle_t h, I n, const void* x, cudaDataType xType, I incx, \
                                 void* result, cudaDataType resultType,                            \
                                 cudaDataType executiontype) {                                     \
    return Forward##W(h, Op::kAsumEx, {n, xType, incx, resultType, executiontype}, {x}, {},        \
                      result);                                                                     \
  }                                                                                                \
  cublasStatus_t cublasCopyEx##W(cublasHandle_t h, I n, const void* x, cudaDataType xType, I incx, \
                                 void* y, cudaDataType yType, I incy) {                            \
    return Forward##W(h, Op::kCopyEx, {n, xType, incx, yType, incy}, {x, y});                      \
  }                                                                                                \
  cublasStatus_t cublasSwapEx##W(cublasHandle_t h, I n, void* x, cudaDataType xType, I incx,       \
                                 void* y, cudaDataType yType, I incy) {                            \
    return Forward##W(h, Op::kSwapEx, {n, xType, incx, yType, incy}, {x, y});                      \
  }
LEVEL1_EX(int, )
LEVEL1_EX(int64_t, _64)

#define GEMM_BATCHED(Name, T) GEMM_BATCHED_(Name, T, int, ) GEMM_BATCHED_(Name, T, int64_t, _64)
#define GEMM_BATCHED_(Name, T, I, W)                                                            \
  cublasStatus_t cublas##Name##W(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,  \
                                 I m, I n, I k, const T* alpha, const T* const A[], I lda,      \
                                 const T* const B[], I ldb, const T* beta, T* const C[], I ldc, \
                                 I batch) {                                                     \
    return Forward##W(h, Op::k##Name, {ta, tb, m, n, k, lda, ldb, ldc, batch}, {A, B, C},       \
                      {alpha, beta});                                                           \
  }
GEMM_BATCHED(SgemmBatched, float)
GEMM_BATCHED(DgemmBatched, double)
GEMM_BATCHED(CgemmBatched, cuComplex)
GEMM_BATCHED(ZgemmBatched, cuDoubleComplex)

#define GEMM_GROUPED(X, T, I, W)                                                                   \
  cublasStatus_t cublas##X##gemmGroupedBatched##W(                                                 \
      cublasHandle_t h, const cublasOperation_t ta[], const cublasOperation_t tb[], const I m[],   \
      const I n[], const I k[], const T alpha[], const T* const A[], const I lda[],                \
      const T* const B[], const I ldb[], const T beta[], T* const C[], const I ldc[],              \
      I group_count, const I group_size[]) {                                                       \
    return GemmGrouped(h, Op::k##X##gemmBatched, group_count, group_size,                          \
                       reinterpret_cast<const void* const*>(A),                                    \
                       reinterpret_cast<const void* const*>(B), reinterpret_cast<void* const*>(C), \
                       alpha, beta, sizeof(T), [&](I g) {                                          \
                         return std::array<int64_t, 9>{ta[g],  tb[g],  m[g],   n[g],         k[g], \
                                                       lda[g], ldb[g], ldc[g], group_size[g]};     \
                       });                                                                         \
  }
GEMM_GROUPED(S, float, int, )
GEMM_GROUPED(S, float, int64_t, _64)
GEMM_GROUPED(D, double, int, )
GEMM_GROUPED(D, double, int64_t, _64)

#define GEMM_GROUPED_EX(I, W)                                                                      \
  cublasStatus_t cublasGemmGroupedBatchedEx##W(                                                    \
      cublasHandle_t h, const cublasOperation_t ta[], const cublasOperation_t tb[], const I m[],   \
      const I n[], const I k[], const void* alpha, const void* const A[], cudaDataType Atype,      \
      const I lda[], const void* const B[], cudaDataType Btype, const I ldb[], const void* beta,   \
      void* const C[], cudaDataType Ctype, const I ldc[], I group_count, const I group_size[],     \
      cublasComputeType_t compute) {                                                               \
    /* The scalars' type is the compute type's (cublasGemmEx's scaleType). */                      \
    size_t scalar_bytes = 4;                                                                       \
    if (compute == CUBLAS_COMPUTE_16F || compute == CUBLAS_COMPUTE_16F_PEDANTIC) scalar_bytes = 2; \
    if (compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC) scalar_bytes = 8; \
    return GemmGrouped(                                                                            \
        h, Op::kGemmBatchedEx, group_count, group_size, A, B, C, alpha, beta, scalar_bytes,        \
        [&](I g) {                                                                                 \
          return std::array<int64_t, 14>{                                                          \
              ta[g], tb[g],  m[g],  n[g],   k[g],          Atype,   lda[g],                        \
              Btype, ldb[g], Ctype, ldc[g], group_size[g], compute, CUBLAS_GEMM_DEFAULT};          \
        });                                                                                        \
  }
GEMM_GROUPED_EX(int, )
GEMM_GROUPED_EX(int64_t, _64)

#define GEMM_STRIDED(Name, T) GEMM_STRIDED_(Name, T, int, ) GEMM_STRIDED_(Name, T, int64_t, _64)
#define GEMM_STRIDED_(Name, T, I, W)                                                             \
  cublasStatus_t cublas##Name##W(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,   \
                                 I m, I n, I k, const T* alpha, const T* A, I lda, long long sa, \
                                 const T* B, I ldb, long long sb, const T* beta, T* C, I ldc,    \
                                 long long sc, I batch) {                                        \
    return Forward##W(h, Op::k##Name, {ta, tb, m, n, k, lda, sa, ldb, sb, ldc, sc, batch},       \
                      {A, B, C}, {alpha, beta});                                                 \
  }
GEMM_STRIDED(SgemmStridedBatched, float)
GEMM_STRIDED(DgemmStridedBatched, double)
GEMM_STRIDED(CgemmStridedBatched, cuComplex)
GEMM_STRIDED(ZgemmStridedBatched, cuDoubleComplex)

#define GEMM_BATCHED_EX(I, W)                                                                      \
  cublasStatus_t cublasGemmBatchedEx##W(                                                           \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,                 \
      const void* alpha, const void* const A[], cudaDataType Atype, I lda, const void* const B[],  \
      cudaDataType Btype, I ldb, const void* beta, void* const C[], cudaDataType Ctype, I ldc,     \
      I batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {                               \
    return Forward##W(h, Op::kGemmBatchedEx,                                                       \
                      {ta, tb, m, n, k, Atype, lda, Btype, ldb, Ctype, ldc, batch, compute, algo}, \
                      {A, B, C}, {alpha, beta});                                                   \
  }                                                                                                \
  cublasStatus_t cublasGemmStridedBatchedEx##W(                                                    \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,                 \
      const void* alpha, const void* A, cudaDataType Atype, I lda, long long sa, const void* B,    \
      cudaDataType Btype, I ldb, long long sb, const void* beta, void* C, cudaDataType Ctype,      \
      I ldc, long long sc, I batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {          \
    return Forward##W(                                                                             \
        h, Op::kGemmStridedBatchedEx,                                                              \
        {ta, tb, m, n, k, Atype, lda, sa, Btype, ldb, sb, Ctype, ldc, sc, batch, compute, algo},   \
        {A, B, C}, {alpha, beta});                                                                 \
  }                                                                                                \
  /* hgemmBatched and hgemmStridedBatched: the Ex forms on FP16 operands computing in FP16. */     \
  cublasStatus_t cublasHgemmBatched##W(                                                            \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,                 \
      const __half* alpha, const __half* const A[], I lda, const __half* const B[], I ldb,         \
      const __half* beta, __half* const C[], I ldc, I batch) {                                     \
    return cublasGemmBatchedEx##W(h, ta, tb, m, n, k, alpha,                                       \
                                  reinterpret_cast<const void* const*>(A), CUDA_R_16F, lda,        \
                                  reinterpret_cast<const void* const*>(B), CUDA_R_16F, ldb, beta,  \
                                  reinterpret_cast<void* const*>(C), CUDA_R_16F, ldc, batch,       \
                                  CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);                        \
  }                                                                                                \
  cublasStatus_t cublasHgemmStridedBatched##W(                                                     \
      cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,                 \
      const __half* alpha, const __half* A, I lda, long long sa, const __half* B, I ldb,           \
      long long sb, const __half* beta, __half* C, I ldc, long long sc, I batch) {                 \
    return cublasGemmStridedBatchedEx##W(h, ta, tb, m, n, k, alpha, A, CUDA_R_16F, lda, sa, B,     \
                                         CUDA_R_16F, ldb, sb, beta, C, CUDA_R_16F, ldc, sc, batch, \
                                         CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);                 \
  }
GEMM_BATCHED_EX(int, )
GEMM_BATCHED_EX(int64_t, _64)

// gemvBatched and gemvStridedBatched: one gemv per matrix, in order (GemvBatched).
#define GEMV_BATCHED(X, T, I, W)                                                                   \
  cublasStatus_t cublas##X##gemvBatched##W(                                                        \
      cublasHandle_t h, cublasOperation_t trans, I m, I n, const T* alpha, const T* const A[],     \
      I lda, const T* const x[], I incx, const T* beta, T* const y[], I incy, I batch) {           \
    return GemvBatched(h, Op::k##X##gemv, {trans, m, n, lda, incx, incy}, alpha, beta, batch,      \
                       sizeof(I) == 8, {.a = A, .x = x, .y = y, .arrays = true});                  \
  }                                                                                                \
  cublasStatus_t cublas##X##gemvStridedBatched##W(                                                 \
      cublasHandle_t h, cublasOperation_t trans, I m, I n, const T* alpha, const T* A, I lda,      \
      long long sa, const T* x, I incx, long long sx, const T* beta, T* y, I incy, long long sy,   \
      I batch) {                                                                                   \
    return GemvBatched(h, Op::k##X##gemv, {trans, m, n, lda, incx, incy}, alpha, beta, batch,      \
                       sizeof(I) == 8,                                                             \
                       {.a = A, .x = x, .y = y, .sa = sa, .sx = sx, .sy = sy, .elem = sizeof(T)}); \
  }
GEMV_BATCHED(S, float, int, )
GEMV_BATCHED(S, float, int64_t, _64)
GEMV_BATCHED(D, double, int, )
GEMV_BATCHED(D, double, int64_t, _64)
GEMV_BATCHED(C, cuComplex, int, )
GEMV_BATCHED(C, cuComplex, int64_t, _64)
GEMV_BATCHED(Z, cuDoubleComplex, int, )
GEMV_BATCHED(Z, cuDoubleComplex, int64_t, _64)

// ---- Batched LU and inverse -------------------------------------------------------------

#define GETRF(Name, T)                                                                           \
  cublasStatus_t cublas##Name(cublasHandle_t h, int n, T* const A[], int lda, int* P, int* info, \
                              int batch) {                                                       \
    return Forward(h, Op::k##Name, {n, lda, batch}, {A, P, info});                               \
  }
GETRF(SgetrfBatched, float)
GETRF(DgetrfBatched, double)
GETRF(CgetrfBatched, cuComplex)
GETRF(ZgetrfBatched, cuDoubleComplex)
#define GETRS(Name, T)                                                                          \
  cublasStatus_t cublas##Name(cublasHandle_t h, cublasOperation_t trans, int n, int nrhs,       \
                              const T* const A[], int lda, const int* P, T* const B[], int ldb, \
                              int* info, int batch) {                                           \
    cublasStatus_t s =                                                                          \
        Forward(h, Op::k##Name, {trans, n, nrhs, lda, ldb, batch}, {A, P, B}, {}, info);        \
    /* info names the first bad argument; the stub knows no more than "one was bad". */         \
    if (s == CUBLAS_STATUS_INVALID_VALUE && info) *info = -1;                                   \
    return s;                                                                                   \
  }
GETRS(SgetrsBatched, float)
GETRS(DgetrsBatched, double)
GETRS(CgetrsBatched, cuComplex)
GETRS(ZgetrsBatched, cuDoubleComplex)
#define GETRI(Name, T)                                                                            \
  cublasStatus_t cublas##Name(cublasHandle_t h, int n, const T* const A[], int lda, const int* P, \
                              T* const C[], int ldc, int* info, int batch) {                      \
    return Forward(h, Op::k##Name, {n, lda, ldc, batch}, {A, P, C, info});                        \
  }
GETRI(SgetriBatched, float)
GETRI(DgetriBatched, double)
GETRI(CgetriBatched, cuComplex)
GETRI(ZgetriBatched, cuDoubleComplex)
#define MATINV(Name, T)                                                             \
  cublasStatus_t cublas##Name(cublasHandle_t h, int n, const T* const A[], int lda, \
                              T* const Ainv[], int lda_inv, int* info, int batch) { \
    return Forward(h, Op::k##Name, {n, lda, lda_inv, batch}, {A, Ainv, info});      \
  }
MATINV(SmatinvBatched, float)
MATINV(DmatinvBatched, double)
MATINV(CmatinvBatched, cuComplex)
MATINV(ZmatinvBatched, cuDoubleComplex)

}  // extern "C"
