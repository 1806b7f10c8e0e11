// client_stub/cufft.cc - libcufft.so.12: NVIDIA's cuFFT, its transforms computed on the host on
// the emulated GPU.
//
// NVIDIA's libcufft carries machine code only and asks NVIDIA's driver for a private interface;
// the emulated GPU can run neither. This library stands in the stub directory for NVIDIA's. On a
// GPU it opens NVIDIA's own (the toolkit's, or one beside the program's other CUDA libraries) and
// forwards every call unchanged. On the emulated GPU it keeps its own plans: an execution copies
// the input (and the output's span, so what lies between the elements a layout names survives)
// to the host on the plan's stream, transforms it in double precision (fft_host.h), and copies
// the output back on that stream, returning when it is there. Layouts, strides, embeddings,
// batches, in-place padding and the six transform types are cuFFT's; callbacks and multi-GPU
// descriptors are refused by name with CUFFT_NOT_SUPPORTED.
#pragma GCC visibility push(default)
#include <cufft.h>
#include <cufftXt.h>
#pragma GCC visibility pop

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "client_stub/fft_host.h"
#include "client_stub/no_destructor.h"
#include "client_stub/nvidia_library.h"

namespace remora::client_stub {
namespace {

void* Nvidia() {
  static void* const lib = OpenNvidiaLibrary("libcufft.so.12", "REMORA_NVIDIA_CUFFT",
                                             "nvidia/cufft/lib", reinterpret_cast<void*>(&Nvidia),
                                             "cuFFT's calls fail with CUFFT_SETUP_FAILED");
  return lib;
}

// Calls NVIDIA's `name` with the arguments that follow.
#define REMORA_NVIDIA(name, ...) \
  REMORA_CALL_NVIDIA(::remora::client_stub::Nvidia, CUFFT_SETUP_FAILED, name, __VA_ARGS__)

// A routine Remora does not serve: one line on stderr, CUFFT_NOT_SUPPORTED.
cufftResult Refuse(const char* name, const char* why) {
  std::fprintf(stderr, "remora: %s is not supported%s: %s\n", name,
               OnEmulatedGpu() ? " on the emulated GPU" : "", why);
  return CUFFT_NOT_SUPPORTED;
}

constexpr const char* kNoCallbacks =
    "callbacks are device code cuFFT links into its own kernels, which the emulated GPU does not "
    "run";
constexpr const char* kOneGpu = "multi-GPU descriptors need several devices; this is one";

// The element kinds of a transform type.
struct Kinds {
  bool in_complex, out_complex, dbl;
};
std::optional<Kinds> KindsOf(cufftType t) {
  switch (t) {
    case CUFFT_C2C:
      return Kinds{true, true, false};
    case CUFFT_R2C:
      return Kinds{false, true, false};
    case CUFFT_C2R:
      return Kinds{true, false, false};
    case CUFFT_Z2Z:
      return Kinds{true, true, true};
    case CUFFT_D2Z:
      return Kinds{false, true, true};
    case CUFFT_Z2D:
      return Kinds{true, false, true};
  }
  return std::nullopt;
}

struct Plan {
  bool made = false;
  cufftType type = CUFFT_C2C;
  std::vector<long long> n;  // the transform's dims
  bool advanced = false;     // embeddings, strides and distances given
  std::vector<long long> inembed, onembed;
  long long istride = 1, idist = 0, ostride = 1, odist = 0, batch = 1;
  cudaStream_t stream = nullptr;
  std::map<int, long long> properties;
};

class Plans {
 public:
  cufftHandle Add() {
    std::lock_guard lock(mu_);
    const cufftHandle h = next_++;
    plans_.emplace(h, Plan{});
    return h;
  }
  bool Remove(cufftHandle h) {
    std::lock_guard lock(mu_);
    return plans_.erase(h) > 0;
  }
  // CUFFT_SUCCESS for a live handle, else CUFFT_INVALID_PLAN.
  cufftResult Check(cufftHandle h) {
    std::lock_guard lock(mu_);
    return plans_.count(h) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
  }
  // Runs f(plan) under the lock; CUFFT_INVALID_PLAN for a handle not live.
  template <class F>
  cufftResult With(cufftHandle h, F&& f) {
    std::lock_guard lock(mu_);
    auto it = plans_.find(h);
    return it == plans_.end() ? CUFFT_INVALID_PLAN : f(it->second);
  }

 private:
  std::mutex mu_;
  cufftHandle next_ = 1;
  std::map<cufftHandle, Plan> plans_;
};

Plans& AllPlans() {
  static NoDestructor<Plans> p;  // plans may be destroyed during static teardown
  return *p;
}

// Checks and records a plan's shape. `inembed`/`onembed` null: the basic layout (cuFFT then
// ignores the strides and distances).
cufftResult Make(Plan& p, int rank, const long long* n, const long long* inembed, long long istride,
                 long long idist, const long long* onembed, long long ostride, long long odist,
                 cufftType type, long long batch, size_t* work) {
  if (!KindsOf(type)) return CUFFT_INVALID_TYPE;
  if (rank < 1 || rank > 3 || n == nullptr || batch < 1) return CUFFT_INVALID_SIZE;
  p.n.assign(n, n + rank);
  for (long long d : p.n)
    if (d < 1) return CUFFT_INVALID_SIZE;
  p.advanced = inembed != nullptr && onembed != nullptr;
  if (p.advanced) {
    if (istride < 1 || ostride < 1 || idist < 0 || odist < 0) return CUFFT_INVALID_VALUE;
    p.inembed.assign(inembed, inembed + rank);
    p.onembed.assign(onembed, onembed + rank);
    for (int d = 1; d < rank; ++d)
      if (p.inembed[d] < 1 || p.onembed[d] < 1) return CUFFT_INVALID_SIZE;
  }
  p.istride = istride;
  p.idist = idist;
  p.ostride = ostride;
  p.odist = odist;
  p.type = type;
  p.batch = batch;
  p.made = true;
  if (work) *work = 0;  // transforms need no device workspace here
  return CUFFT_SUCCESS;
}

cufftResult MakeInt(cufftHandle h, int rank, const int* n, const int* inembed, int istride,
                    int idist, const int* onembed, int ostride, int odist, cufftType type,
                    long long batch, size_t* work) {
  if (rank < 1 || rank > 3 || n == nullptr) return CUFFT_INVALID_SIZE;
  long long n64[3], in64[3], on64[3];
  for (int d = 0; d < rank; ++d) {
    n64[d] = n[d];
    in64[d] = inembed ? inembed[d] : 0;
    on64[d] = onembed ? onembed[d] : 0;
  }
  return AllPlans().With(h, [&](Plan& p) {
    return Make(p, rank, n64, inembed ? in64 : nullptr, istride, idist, onembed ? on64 : nullptr,
                ostride, odist, type, batch, work);
  });
}

// Where one side's elements lie: a row-major index over `embed` (embed[0] unused), times
// `stride`, plus `dist` per batch.
struct Layout {
  std::vector<long long> dims;   // the logical dims on this side
  std::vector<long long> embed;  // storage dims
  long long stride = 1, dist = 0;

  long long Offset(long long b, const long long* idx) const {
    long long off = 0;
    for (size_t d = 0; d < dims.size(); ++d) off = off * (d ? embed[d] : 1) + idx[d];
    return b * dist + off * stride;
  }
  // Elements from the first to one past the last a batch of `batch` names.
  long long Extent(long long batch) const {
    std::vector<long long> last(dims);
    for (long long& l : last) --l;
    return Offset(batch - 1, last.data()) + 1;
  }
};

// The two sides' layouts for plan `p` executed in place or not.
void Layouts(const Plan& p, bool in_place, Layout* in, Layout* out) {
  const Kinds k = *KindsOf(p.type);
  std::vector<long long> half(p.n);
  half.back() = half.back() / 2 + 1;
  in->dims = k.in_complex && !k.out_complex ? half : p.n;
  out->dims = k.out_complex && !k.in_complex ? half : p.n;
  if (p.advanced) {
    in->embed = p.inembed;
    out->embed = p.onembed;
    in->stride = p.istride;
    out->stride = p.ostride;
    in->dist = p.idist;
    out->dist = p.odist;
    return;
  }
  // Basic: dense, except that a real side of an in-place transform has its rows padded to the
  // complex side's length in reals.
  in->embed = in->dims;
  out->embed = out->dims;
  if (in_place && k.in_complex != k.out_complex)
    (k.in_complex ? out : in)->embed.back() = 2 * half.back();
  for (Layout* l : {in, out}) {
    l->stride = 1;
    l->dist = 1;
    for (long long e : l->embed) l->dist *= e;
  }
}

// Calls f(idx) for every row-major index over `dims`.
template <class F>
void ForEach(const std::vector<long long>& dims, F&& f) {
  std::vector<long long> idx(dims.size(), 0);
  for (;;) {
    f(idx.data());
    size_t d = dims.size();
    while (d > 0 && ++idx[d - 1] == dims[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

long long Linear(const std::vector<long long>& dims, const long long* idx) {
  long long off = 0;
  for (size_t d = 0; d < dims.size(); ++d) off = off * dims[d] + idx[d];
  return off;
}

// Host copies of device memory, on `stream`, each complete when it returns.
bool Download(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  return cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
         cudaStreamSynchronize(stream) == cudaSuccess;
}
bool Upload(void* device, const void* host, size_t bytes, cudaStream_t stream) {
  return cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream) == cudaSuccess &&
         cudaStreamSynchronize(stream) == cudaSuccess;
}

fft::Complex Load(const std::vector<unsigned char>& buf, long long i, const Kinds& k,
                  bool complex) {
  if (k.dbl) {
    double v[2] = {0, 0};
    std::memcpy(v, buf.data() + size_t(i) * (complex ? 16 : 8), complex ? 16 : 8);
    return {v[0], v[1]};
  }
  float v[2] = {0, 0};
  std::memcpy(v, buf.data() + size_t(i) * (complex ? 8 : 4), complex ? 8 : 4);
  return {v[0], v[1]};
}
void Store(std::vector<unsigned char>& buf, long long i, const Kinds& k, bool complex,
           fft::Complex z) {
  if (k.dbl) {
    const double v[2] = {z.real(), z.imag()};
    std::memcpy(buf.data() + size_t(i) * (complex ? 16 : 8), v, complex ? 16 : 8);
    return;
  }
  const float v[2] = {float(z.real()), float(z.imag())};
  std::memcpy(buf.data() + size_t(i) * (complex ? 8 : 4), v, complex ? 8 : 4);
}

// Executes plan `h` as type `want` from `in` to `out` (the same pointer: in place). `direction`
// is the sign for complex-to-complex transforms; real-to-complex are forward, the reverse inverse.
cufftResult Execute(cufftHandle h, cufftType want, const void* in, void* out, int direction) {
  Plan p;
  if (cufftResult r = AllPlans().With(h, [&](Plan& live) {
        p = live;
        return CUFFT_SUCCESS;
      }))
    return r;
  if (!p.made || p.type != want) return CUFFT_INVALID_PLAN;
  if (in == nullptr || out == nullptr) return CUFFT_INVALID_VALUE;
  const Kinds k = *KindsOf(p.type);
  int sign = k.in_complex && k.out_complex ? direction
             : k.in_complex                ? CUFFT_INVERSE
                                           : CUFFT_FORWARD;
  if (sign != CUFFT_FORWARD && sign != CUFFT_INVERSE) return CUFFT_INVALID_VALUE;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(p.stream, &capture) == cudaSuccess &&
      capture != cudaStreamCaptureStatusNone)
    return Refuse("a cuFFT execution in stream capture",
                  "its transforms run on the host, which a graph cannot hold");
  const bool in_place = in == out;
  Layout li, lo;
  Layouts(p, in_place, &li, &lo);
  const size_t real = k.dbl ? 8 : 4;
  const size_t in_bytes = size_t(li.Extent(p.batch)) * real * (k.in_complex ? 2 : 1);
  const size_t out_bytes = size_t(lo.Extent(p.batch)) * real * (k.out_complex ? 2 : 1);
  try {
    std::vector<unsigned char> src(in_place ? std::max(in_bytes, out_bytes) : in_bytes);
    std::vector<unsigned char> dst(in_place ? 0 : out_bytes);
    if (!Download(src.data(), in, src.size(), p.stream) ||
        (!in_place && !Download(dst.data(), out, dst.size(), p.stream))) {
      (void)cudaGetLastError();  // cuFFT's own runtime would have kept it from the program
      return CUFFT_EXEC_FAILED;
    }
    if (in_place) dst = src;
    long long total = 1;
    for (long long d : p.n) total *= d;
    std::vector<fft::Complex> full(static_cast<size_t>(total));
    for (long long b = 0; b < p.batch; ++b) {
      ForEach(li.dims, [&](const long long* idx) {
        full[size_t(Linear(p.n, idx))] = Load(src, li.Offset(b, idx), k, k.in_complex);
      });
      if (k.in_complex && !k.out_complex) {
        // The rest of the spectrum by Hermitian symmetry: X[k] = conj(X[-k]).
        std::vector<long long> neg(p.n.size());
        ForEach(p.n, [&](const long long* idx) {
          if (idx[p.n.size() - 1] < li.dims.back()) return;
          for (size_t d = 0; d < p.n.size(); ++d) neg[d] = (p.n[d] - idx[d]) % p.n[d];
          full[size_t(Linear(p.n, idx))] = std::conj(full[size_t(Linear(p.n, neg.data()))]);
        });
      }
      fft::Transform(full, p.n, sign);
      ForEach(lo.dims, [&](const long long* idx) {
        const fft::Complex z = full[size_t(Linear(p.n, idx))];
        Store(dst, lo.Offset(b, idx), k, k.out_complex, k.out_complex ? z : fft::Complex(z.real()));
      });
    }
    if (!Upload(out, dst.data(), in_place ? dst.size() : out_bytes, p.stream)) {
      (void)cudaGetLastError();
      return CUFFT_EXEC_FAILED;
    }
  } catch (const std::bad_alloc&) {
    return CUFFT_ALLOC_FAILED;
  }
  return CUFFT_SUCCESS;
}

// The cuFFT type of an Xt plan's (input, output, execution) data types.
std::optional<cufftType> XtType(cudaDataType in, cudaDataType out, cudaDataType exec) {
  struct Row {
    cudaDataType in, out, exec;
    cufftType type;
  };
  static constexpr Row kRows[] = {{CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, CUFFT_C2C},
                                  {CUDA_R_32F, CUDA_C_32F, CUDA_C_32F, CUFFT_R2C},
                                  {CUDA_C_32F, CUDA_R_32F, CUDA_C_32F, CUFFT_C2R},
                                  {CUDA_C_64F, CUDA_C_64F, CUDA_C_64F, CUFFT_Z2Z},
                                  {CUDA_R_64F, CUDA_C_64F, CUDA_C_64F, CUFFT_D2Z},
                                  {CUDA_C_64F, CUDA_R_64F, CUDA_C_64F, CUFFT_Z2D}};
  for (const Row& r : kRows)
    if (r.in == in && r.out == out && r.exec == exec) return r.type;
  return std::nullopt;
}

}  // namespace
}  // namespace remora::client_stub

namespace cs = remora::client_stub;

extern "C" {

cufftResult cufftCreate(cufftHandle* handle) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftCreate, handle);
  if (handle == nullptr) return CUFFT_INVALID_VALUE;
  *handle = cs::AllPlans().Add();
  return CUFFT_SUCCESS;
}
cufftResult cufftDestroy(cufftHandle plan) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftDestroy, plan);
  return cs::AllPlans().Remove(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long* n, long long* inembed,
                                long long istride, long long idist, long long* onembed,
                                long long ostride, long long odist, cufftType type, long long batch,
                                size_t* workSize) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftMakePlanMany64, plan, rank, n, inembed, istride, idist, onembed,
                         ostride, odist, type, batch, workSize);
  return cs::AllPlans().With(plan, [&](cs::Plan& p) {
    return cs::Make(p, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch,
                    workSize);
  });
}
cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed, int istride,
                              int idist, int* onembed, int ostride, int odist, cufftType type,
                              int batch, size_t* workSize) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftMakePlanMany, plan, rank, n, inembed, istride, idist, onembed,
                         ostride, odist, type, batch, workSize);
  return cs::MakeInt(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch,
                     workSize);
}
cufftResult cufftMakePlan1d(cufftHandle plan, int nx, cufftType type, int batch, size_t* workSize) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftMakePlan1d, plan, nx, type, batch, workSize);
  int n[] = {nx};
  return cs::MakeInt(plan, 1, n, nullptr, 1, 0, nullptr, 1, 0, type, batch, workSize);
}
cufftResult cufftMakePlan2d(cufftHandle plan, int nx, int ny, cufftType type, size_t* workSize) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftMakePlan2d, plan, nx, ny, type, workSize);
  int n[] = {nx, ny};
  return cs::MakeInt(plan, 2, n, nullptr, 1, 0, nullptr, 1, 0, type, 1, workSize);
}
cufftResult cufftMakePlan3d(cufftHandle plan, int nx, int ny, int nz, cufftType type,
                            size_t* workSize) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftMakePlan3d, plan, nx, ny, nz, type, workSize);
  int n[] = {nx, ny, nz};
  return cs::MakeInt(plan, 3, n, nullptr, 1, 0, nullptr, 1, 0, type, 1, workSize);
}

// cufftPlan*: create, then make; a plan that cannot be made is destroyed again.
#define REMORA_CREATE_AND_MAKE(make_call)          \
  if (plan == nullptr) return CUFFT_INVALID_VALUE; \
  cufftHandle h;                                   \
  if (cufftResult r = cufftCreate(&h)) return r;   \
  if (cufftResult r = make_call) {                 \
    cufftDestroy(h);                               \
    return r;                                      \
  }                                                \
  *plan = h;                                       \
  return CUFFT_SUCCESS

cufftResult cufftPlan1d(cufftHandle* plan, int nx, cufftType type, int batch) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftPlan1d, plan, nx, type, batch);
  REMORA_CREATE_AND_MAKE(cufftMakePlan1d(h, nx, type, batch, nullptr));
}
cufftResult cufftPlan2d(cufftHandle* plan, int nx, int ny, cufftType type) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftPlan2d, plan, nx, ny, type);
  REMORA_CREATE_AND_MAKE(cufftMakePlan2d(h, nx, ny, type, nullptr));
}
cufftResult cufftPlan3d(cufftHandle* plan, int nx, int ny, int nz, cufftType type) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftPlan3d, plan, nx, ny, nz, type);
  REMORA_CREATE_AND_MAKE(cufftMakePlan3d(h, nx, ny, nz, type, nullptr));
}
cufftResult cufftPlanMany(cufftHandle* plan, int rank, int* n, int* inembed, int istride, int idist,
                          int* onembed, int ostride, int odist, cufftType type, int batch) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftPlanMany, plan, rank, n, inembed, istride, idist, onembed, ostride,
                         odist, type, batch);
  REMORA_CREATE_AND_MAKE(cufftMakePlanMany(h, rank, n, inembed, istride, idist, onembed, ostride,
                                           odist, type, batch, nullptr));
}

// Work sizes: the host does the work, so none is needed on the device.
#define REMORA_NO_WORK(name, ...)                                    \
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(name, __VA_ARGS__); \
  if (workSize == nullptr) return CUFFT_INVALID_VALUE;               \
  *workSize = 0;                                                     \
  return CUFFT_SUCCESS

cufftResult cufftEstimate1d(int nx, cufftType type, int batch, size_t* workSize) {
  REMORA_NO_WORK(cufftEstimate1d, nx, type, batch, workSize);
}
cufftResult cufftEstimate2d(int nx, int ny, cufftType type, size_t* workSize) {
  REMORA_NO_WORK(cufftEstimate2d, nx, ny, type, workSize);
}
cufftResult cufftEstimate3d(int nx, int ny, int nz, cufftType type, size_t* workSize) {
  REMORA_NO_WORK(cufftEstimate3d, nx, ny, nz, type, workSize);
}
cufftResult cufftEstimateMany(int rank, int* n, int* inembed, int istride, int idist, int* onembed,
                              int ostride, int odist, cufftType type, int batch, size_t* workSize) {
  REMORA_NO_WORK(cufftEstimateMany, rank, n, inembed, istride, idist, onembed, ostride, odist, type,
                 batch, workSize);
}
cufftResult cufftGetSize1d(cufftHandle handle, int nx, cufftType type, int batch,
                           size_t* workSize) {
  REMORA_NO_WORK(cufftGetSize1d, handle, nx, type, batch, workSize);
}
cufftResult cufftGetSize2d(cufftHandle handle, int nx, int ny, cufftType type, size_t* workSize) {
  REMORA_NO_WORK(cufftGetSize2d, handle, nx, ny, type, workSize);
}
cufftResult cufftGetSize3d(cufftHandle handle, int nx, int ny, int nz, cufftType type,
                           size_t* workSize) {
  REMORA_NO_WORK(cufftGetSize3d, handle, nx, ny, nz, type, workSize);
}
cufftResult cufftGetSizeMany(cufftHandle handle, int rank, int* n, int* inembed, int istride,
                             int idist, int* onembed, int ostride, int odist, cufftType type,
                             int batch, size_t* workArea) {
  size_t* workSize = workArea;
  REMORA_NO_WORK(cufftGetSizeMany, handle, rank, n, inembed, istride, idist, onembed, ostride,
                 odist, type, batch, workArea);
}
cufftResult cufftGetSizeMany64(cufftHandle plan, int rank, long long* n, long long* inembed,
                               long long istride, long long idist, long long* onembed,
                               long long ostride, long long odist, cufftType type, long long batch,
                               size_t* workSize) {
  REMORA_NO_WORK(cufftGetSizeMany64, plan, rank, n, inembed, istride, idist, onembed, ostride,
                 odist, type, batch, workSize);
}
cufftResult cufftGetSize(cufftHandle handle, size_t* workSize) {
  REMORA_NO_WORK(cufftGetSize, handle, workSize);
}
cufftResult cufftXtGetSizeMany(cufftHandle plan, int rank, long long* n, long long* inembed,
                               long long istride, long long idist, cudaDataType inputtype,
                               long long* onembed, long long ostride, long long odist,
                               cudaDataType outputtype, long long batch, size_t* workSize,
                               cudaDataType executiontype) {
  REMORA_NO_WORK(cufftXtGetSizeMany, plan, rank, n, inembed, istride, idist, inputtype, onembed,
                 ostride, odist, outputtype, batch, workSize, executiontype);
}

cufftResult cufftSetWorkArea(cufftHandle plan, void* workArea) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftSetWorkArea, plan, workArea);
  return cs::AllPlans().Check(plan);
}
cufftResult cufftXtSetWorkArea(cufftHandle plan, void** workArea) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtSetWorkArea, plan, workArea);
  return cs::AllPlans().Check(plan);
}
cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftSetAutoAllocation, plan, autoAllocate);
  return cs::AllPlans().Check(plan);
}
cufftResult cufftXtSetWorkAreaPolicy(cufftHandle plan, cufftXtWorkAreaPolicy policy,
                                     size_t* workSize) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtSetWorkAreaPolicy, plan, policy, workSize);
  if (policy != CUFFT_WORKAREA_MINIMAL && policy != CUFFT_WORKAREA_USER &&
      policy != CUFFT_WORKAREA_PERFORMANCE)
    return CUFFT_INVALID_VALUE;
  return cs::AllPlans().Check(plan);
}
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftSetStream, plan, stream);
  return cs::AllPlans().With(plan, [&](cs::Plan& p) {
    p.stream = stream;
    return CUFFT_SUCCESS;
  });
}

cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata,
                         int direction) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftExecC2C, plan, idata, odata, direction);
  return cs::Execute(plan, CUFFT_C2C, idata, odata, direction);
}
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleComplex* odata,
                         int direction) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftExecZ2Z, plan, idata, odata, direction);
  return cs::Execute(plan, CUFFT_Z2Z, idata, odata, direction);
}
cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftExecR2C, plan, idata, odata);
  return cs::Execute(plan, CUFFT_R2C, idata, odata, CUFFT_FORWARD);
}
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal* idata, cufftDoubleComplex* odata) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftExecD2Z, plan, idata, odata);
  return cs::Execute(plan, CUFFT_D2Z, idata, odata, CUFFT_FORWARD);
}
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftExecC2R, plan, idata, odata);
  return cs::Execute(plan, CUFFT_C2R, idata, odata, CUFFT_INVERSE);
}
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleReal* odata) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftExecZ2D, plan, idata, odata);
  return cs::Execute(plan, CUFFT_Z2D, idata, odata, CUFFT_INVERSE);
}

cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long* n, long long* inembed,
                                long long istride, long long idist, cudaDataType inputtype,
                                long long* onembed, long long ostride, long long odist,
                                cudaDataType outputtype, long long batch, size_t* workSize,
                                cudaDataType executiontype) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftXtMakePlanMany, plan, rank, n, inembed, istride, idist, inputtype,
                         onembed, ostride, odist, outputtype, batch, workSize, executiontype);
  const std::optional<cufftType> type = cs::XtType(inputtype, outputtype, executiontype);
  if (!type)
    return cs::Refuse("cufftXtMakePlanMany of these data types",
                      "the emulated GPU's cuFFT transforms single and double precision");
  return cufftMakePlanMany64(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, *type,
                             batch, workSize);
}
cufftResult cufftXtExec(cufftHandle plan, void* input, void* output, int direction) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtExec, plan, input, output, direction);
  cufftType type = CUFFT_C2C;
  if (cufftResult r = cs::AllPlans().With(plan, [&](cs::Plan& p) {
        type = p.type;
        return p.made ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
      }))
    return r;
  return cs::Execute(plan, type, input, output, direction);
}

cufftResult cufftGetVersion(int* version) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftGetVersion, version);
  if (version == nullptr) return CUFFT_INVALID_VALUE;
  *version = CUFFT_VERSION;
  return CUFFT_SUCCESS;
}
cufftResult cufftGetProperty(libraryPropertyType type, int* value) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftGetProperty, type, value);
  if (value == nullptr) return CUFFT_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUFFT_VER_MAJOR;
      return CUFFT_SUCCESS;
    case MINOR_VERSION:
      *value = CUFFT_VER_MINOR;
      return CUFFT_SUCCESS;
    case PATCH_LEVEL:
      *value = CUFFT_VER_PATCH;
      return CUFFT_SUCCESS;
  }
  return CUFFT_INVALID_TYPE;
}

cufftResult cufftSetPlanPropertyInt64(cufftHandle plan, cufftProperty property,
                                      const long long int inputValueInt) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftSetPlanPropertyInt64, plan, property, inputValueInt);
  return cs::AllPlans().With(plan, [&](cs::Plan& p) {
    p.properties[int(property)] = inputValueInt;
    return CUFFT_SUCCESS;
  });
}
cufftResult cufftGetPlanPropertyInt64(cufftHandle plan, cufftProperty property,
                                      long long int* returnPtrValue) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftGetPlanPropertyInt64, plan, property, returnPtrValue);
  if (returnPtrValue == nullptr) return CUFFT_INVALID_VALUE;
  return cs::AllPlans().With(plan, [&](cs::Plan& p) {
    auto it = p.properties.find(int(property));
    *returnPtrValue = it == p.properties.end() ? 0 : it->second;
    return CUFFT_SUCCESS;
  });
}
cufftResult cufftResetPlanProperty(cufftHandle plan, cufftProperty property) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftResetPlanProperty, plan, property);
  return cs::AllPlans().With(plan, [&](cs::Plan& p) {
    p.properties.erase(int(property));
    return CUFFT_SUCCESS;
  });
}

// Callbacks and multi-GPU descriptors: NVIDIA's on a GPU, refused by name on the emulated one.
cufftResult cufftXtSetCallback(cufftHandle plan, void** callback_routine,
                               cufftXtCallbackType cbType, void** caller_info) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftXtSetCallback, plan, callback_routine, cbType, caller_info);
  return cs::Refuse("cufftXtSetCallback", cs::kNoCallbacks);
}
cufftResult cufftXtClearCallback(cufftHandle plan, cufftXtCallbackType cbType) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtClearCallback, plan, cbType);
  return cs::AllPlans().Check(plan);  // none was set
}
cufftResult cufftXtSetCallbackSharedSize(cufftHandle plan, cufftXtCallbackType cbType,
                                         size_t sharedSize) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftXtSetCallbackSharedSize, plan, cbType, sharedSize);
  return cs::Refuse("cufftXtSetCallbackSharedSize", cs::kNoCallbacks);
}
cufftResult cufftXtSetJITCallback(cufftHandle plan, const char* lto_callback_symbol_name,
                                  const void* lto_callback_fatbin, size_t lto_callback_fatbin_size,
                                  cufftXtCallbackType type, void** caller_info) {
  if (!cs::OnEmulatedGpu())
    return REMORA_NVIDIA(cufftXtSetJITCallback, plan, lto_callback_symbol_name, lto_callback_fatbin,
                         lto_callback_fatbin_size, type, caller_info);
  return cs::Refuse("cufftXtSetJITCallback", cs::kNoCallbacks);
}
cufftResult cufftXtSetGPUs(cufftHandle handle, int nGPUs, int* whichGPUs) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtSetGPUs, handle, nGPUs, whichGPUs);
  return cs::Refuse("cufftXtSetGPUs", cs::kOneGpu);
}
cufftResult cufftXtMalloc(cufftHandle plan, cudaLibXtDesc** descriptor, cufftXtSubFormat format) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtMalloc, plan, descriptor, format);
  return cs::Refuse("cufftXtMalloc", cs::kOneGpu);
}
cufftResult cufftXtMemcpy(cufftHandle plan, void* dstPointer, void* srcPointer,
                          cufftXtCopyType type) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtMemcpy, plan, dstPointer, srcPointer, type);
  return cs::Refuse("cufftXtMemcpy", cs::kOneGpu);
}
cufftResult cufftXtFree(cudaLibXtDesc* descriptor) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtFree, descriptor);
  return cs::Refuse("cufftXtFree", cs::kOneGpu);
}
#define REMORA_XT_DESCRIPTOR(name, ...)                                        \
  cufftResult name(cufftHandle plan, cudaLibXtDesc* input,                     \
                   cudaLibXtDesc* output __VA_OPT__(, int direction)) {        \
    if (!cs::OnEmulatedGpu())                                                  \
      return REMORA_NVIDIA(name, plan, input, output __VA_OPT__(, direction)); \
    return cs::Refuse(#name, cs::kOneGpu);                                     \
  }
REMORA_XT_DESCRIPTOR(cufftXtExecDescriptor, direction)
REMORA_XT_DESCRIPTOR(cufftXtExecDescriptorC2C, direction)
REMORA_XT_DESCRIPTOR(cufftXtExecDescriptorZ2Z, direction)
REMORA_XT_DESCRIPTOR(cufftXtExecDescriptorR2C)
REMORA_XT_DESCRIPTOR(cufftXtExecDescriptorC2R)
REMORA_XT_DESCRIPTOR(cufftXtExecDescriptorD2Z)
REMORA_XT_DESCRIPTOR(cufftXtExecDescriptorZ2D)
cufftResult cufftXtQueryPlan(cufftHandle plan, void* queryStruct, cufftXtQueryType queryType) {
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(cufftXtQueryPlan, plan, queryStruct, queryType);
  return cs::Refuse("cufftXtQueryPlan", "the emulated GPU's plans have no multi-GPU factors");
}

// Exports of NVIDIA's cuFFT that CUDA 13's headers do not declare, so no program is built
// against them: refused by name on a GPU too (their arguments are unknown, so they cannot be
// forwarded faithfully).
__attribute__((visibility("default"))) cufftResult cufftDebug() {
  return cs::Refuse("cufftDebug", "it is undocumented, with no declaration in CUDA's headers");
}
__attribute__((visibility("default"))) cufftResult cufftXtMakePlanGuru64() {
  return cs::Refuse("cufftXtMakePlanGuru64",
                    "it is undocumented, with no declaration in CUDA's headers");
}

}  // extern "C"
