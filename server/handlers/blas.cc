// server/handlers/blas.cc - cuBLAS: handles, and every routine of blas_ops.def, checked then
// queued.
//
// A tenant's cuBLAS handle is a server-side cublasHandle_t with a workspace
// charged to the tenant. Each routine arrives as one BlasRequest: its shape
// (proto/blas.h) says what every pointer reaches, and each is checked against
// the tenant's allocations before the call is queued on the tenant's stream.
// Batched routines' pointer arrays come by value; the server checks every
// matrix they name and copies them into device memory of its own, so the
// library never reads a pointer array the tenant could change afterwards.
// Host-mode results (dot, nrm2, ...) are written to a scratch slot of the
// handle in device pointer mode and copied back into the reply.
#include <cublas_v2.h>

#include <array>
#include <cstring>
#include <optional>

#include "proto/arena.h"
#include "proto/blas.h"
#include "server/handlers/util.h"
#include "server/log.h"
#include "server/session.h"

namespace remora::server {

namespace {
// cuBLAS's own workspace for a handle (its default outside Hopper), and the
// scratch slots for host-mode results before it.
constexpr uint64_t kBlasWorkspace = 4ull << 20;
constexpr uint64_t kResultSlot = 256;
constexpr uint64_t kResultSlots = 16;
constexpr uint64_t kScratch = kResultSlot * kResultSlots;
}  // namespace

// The rows of proto/blas_settings.def, numbered 1 to kBlasSettings.
constexpr size_t kBlasSettings = 0
#define BLAS_SETTING(id, Name, Type, Valid) +1
#include "proto/blas_settings.def"
    ;
using BlasSettings = std::array<int64_t, kBlasSettings>;

struct BlasHandle {
  cublasHandle_t h = nullptr;
  cublasLtHandle_t lt = nullptr;  // for matmuls naming this handle (BlasHandleAsLt)
  CUdeviceptr memory = 0;         // scratch, then the server's workspace
  CUdeviceptr tenant_workspace = 0;
  uint64_t tenant_workspace_bytes = 0;
  uint64_t next_slot = 0;
  // proto/blas_settings.def's values (row id - 1): the library's own at creation, then the
  // tenant's; applied before each routine once the tenant has set any.
  BlasSettings settings{};
  bool settings_set = false;
};

namespace {

// Sets every value of `v` on `h`; the first failing setter's status.
cublasStatus_t ApplySettings(const BlasTable& t, cublasHandle_t h, const BlasSettings& v) {
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
#define BLAS_SETTING(id, Name, Type, Valid) \
  if (st == CUBLAS_STATUS_SUCCESS) st = t.cublasSet##Name(h, static_cast<Type>(v[id - 1]));
#include "proto/blas_settings.def"
  return st;
}

// The library's values on a new handle (0 where its getter fails: one it does not have).
BlasSettings ReadSettings(const BlasTable& t, cublasHandle_t h) {
  BlasSettings v{};
#define BLAS_SETTING(id, Name, Type, Valid)                                       \
  {                                                                               \
    Type value{};                                                                 \
    if (t.cublasGet##Name(h, &value) == CUBLAS_STATUS_SUCCESS) v[id - 1] = value; \
  }
#include "proto/blas_settings.def"
  return v;
}

// Whether `v` is a value row `setting` takes (false for an unknown row).
bool ValidSetting(uint32_t setting, int64_t v) {
  switch (setting) {
#define BLAS_SETTING(id, Name, Type, Valid)                               \
  case id:                                                                \
    static_assert(id >= 1 && id <= kBlasSettings, "settings are 1 to N"); \
    return Valid;
#include "proto/blas_settings.def"
    default:
      return false;
  }
}

}  // namespace

struct Session::BlasCall {
  const BlasOp* op = nullptr;
  BlasPlan plan;
  std::shared_ptr<BlasHandle> handle;
  uint64_t stream = 0;
  bool device_scalars = false;
  uint32_t math_mode = 0;
  std::optional<BlasSettings> settings;  // to apply first: the handle's, once set
  std::vector<int64_t> ints;
  std::array<uint64_t, kBlasMaxPtrs> ptrs{};  // arrays replaced by the server's copies
  // Scalars sent by value, scalar i at i * kScalarSlot: aligned for any element type, however
  // the wire packs them (crot's real c then complex s).
  static constexpr size_t kScalarSlot = 48;  // rotm's 5 doubles, rounded to 16
  alignas(16) std::array<std::byte, kBlasMaxScalars * kScalarSlot> scalars{};
  std::array<uint64_t, kBlasMaxScalars> scalar_ptrs{};
  CUdeviceptr result = 0;         // device address for the result
  std::vector<uint64_t> arrays;   // pointer arrays' values, to copy to the device
  CUdeviceptr arrays_device = 0;  // where they go
  CUdeviceptr workspace = 0;
  uint64_t workspace_bytes = 0;
  std::shared_ptr<v1::BlasReply> reply;  // BlasSync: the host-mode result
  CUdeviceptr result_slot = 0;           // BlasSync: scratch the result lands in
};

namespace {

using BlasCall = Session::BlasCall;

// Arguments of a call, converting to whatever the entry point's parameter is.
struct IntArg {
  int64_t v;
  template <typename U>
  requires(std::is_arithmetic_v<U> || std::is_enum_v<U>) operator U() const {
    return static_cast<U>(v);
  }
};
struct PtrArg {
  uint64_t v;
  template <typename U>
  operator U*() const {
    return reinterpret_cast<U*>(static_cast<uintptr_t>(v));
  }
};

IntArg I(const BlasCall& c, size_t i) {
  return {c.ints[i]};
}
PtrArg P(const BlasCall& c, size_t i) {
  return {c.ptrs[i]};
}
PtrArg S(const BlasCall& c, size_t i) {
  if (c.device_scalars) return {c.scalar_ptrs[i]};
  return {reinterpret_cast<uintptr_t>(c.scalars.data() + i * BlasCall::kScalarSlot)};
}
PtrArg R(const BlasCall& c) {
  return {c.result};
}

using RunFn = cublasStatus_t (*)(const BlasTable&, cublasHandle_t, const BlasCall&);

// One runner per shape: the entry point `Fn` called with the arguments in
// the order proto/blas.h lays them out.
template <auto Fn>
cublasStatus_t RunAxpy(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), S(c, 0), P(c, 0), I(c, 1), P(c, 1), I(c, 2));
}
template <auto Fn>
cublasStatus_t RunDot(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), P(c, 1), I(c, 2), R(c));
}
template <auto Fn>
cublasStatus_t RunNorm(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), R(c));
}
template <auto Fn>
cublasStatus_t RunIndex(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), R(c));
}
template <auto Fn>
cublasStatus_t RunScal(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), S(c, 0), P(c, 0), I(c, 1));
}
template <auto Fn>
cublasStatus_t RunCopy(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), P(c, 1), I(c, 2));
}
template <auto Fn>
constexpr RunFn RunSwap = RunCopy<Fn>;
template <auto Fn>
cublasStatus_t RunRot(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), P(c, 1), I(c, 2), S(c, 0), S(c, 1));
}
template <auto Fn>
cublasStatus_t RunGemv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), S(c, 0), P(c, 0), I(c, 3), P(c, 1), I(c, 4), S(c, 1),
                 P(c, 2), I(c, 5));
}
template <auto Fn>
cublasStatus_t RunGer(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), S(c, 0), P(c, 0), I(c, 2), P(c, 1), I(c, 3), P(c, 2),
                 I(c, 4));
}
template <auto Fn>
cublasStatus_t RunSymv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), S(c, 0), P(c, 0), I(c, 2), P(c, 1), I(c, 3), S(c, 1), P(c, 2),
                 I(c, 4));
}
template <auto Fn>
cublasStatus_t RunTrsv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), P(c, 0), I(c, 4), P(c, 1), I(c, 5));
}
template <auto Fn>
cublasStatus_t RunGemm(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), S(c, 0), P(c, 0), I(c, 5), P(c, 1),
                 I(c, 6), S(c, 1), P(c, 2), I(c, 7));
}
template <auto Fn>
cublasStatus_t RunSymm(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), S(c, 0), P(c, 0), I(c, 4), P(c, 1), I(c, 5),
                 S(c, 1), P(c, 2), I(c, 6));
}
template <auto Fn>
cublasStatus_t RunSyrk(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), S(c, 0), P(c, 0), I(c, 4), S(c, 1), P(c, 1),
                 I(c, 5));
}
template <auto Fn>
cublasStatus_t RunTrsm(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), I(c, 5), S(c, 0), P(c, 0), I(c, 6),
                 P(c, 1), I(c, 7));
}
template <auto Fn>
cublasStatus_t RunTrmm(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), I(c, 5), S(c, 0), P(c, 0), I(c, 6),
                 P(c, 1), I(c, 7), P(c, 2), I(c, 8));
}
template <auto Fn>
cublasStatus_t RunGeam(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), S(c, 0), P(c, 0), I(c, 4), S(c, 1), P(c, 1),
                 I(c, 5), P(c, 2), I(c, 6));
}
template <auto Fn>
cublasStatus_t RunDgmm(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), P(c, 0), I(c, 3), P(c, 1), I(c, 4), P(c, 2),
                 I(c, 5));
}
template <auto Fn>
cublasStatus_t RunGemmEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), S(c, 0), P(c, 0), I(c, 5), I(c, 6),
                 P(c, 1), I(c, 7), I(c, 8), S(c, 1), P(c, 2), I(c, 9), I(c, 10), I(c, 11),
                 I(c, 12));
}
template <auto Fn>
cublasStatus_t RunGemmBatched(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), S(c, 0), P(c, 0), I(c, 5), P(c, 1),
                 I(c, 6), S(c, 1), P(c, 2), I(c, 7), I(c, 8));
}
template <auto Fn>
cublasStatus_t RunGemmStrided(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), S(c, 0), P(c, 0), I(c, 5), I(c, 6),
                 P(c, 1), I(c, 7), I(c, 8), S(c, 1), P(c, 2), I(c, 9), I(c, 10), I(c, 11));
}
template <auto Fn>
cublasStatus_t RunGemmBatchedEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), S(c, 0), P(c, 0), I(c, 5), I(c, 6),
                 P(c, 1), I(c, 7), I(c, 8), S(c, 1), P(c, 2), I(c, 9), I(c, 10), I(c, 11), I(c, 12),
                 I(c, 13));
}
template <auto Fn>
cublasStatus_t RunGemmStridedEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), S(c, 0), P(c, 0), I(c, 5), I(c, 6),
                 I(c, 7), P(c, 1), I(c, 8), I(c, 9), I(c, 10), S(c, 1), P(c, 2), I(c, 11), I(c, 12),
                 I(c, 13), I(c, 14), I(c, 15), I(c, 16));
}
template <auto Fn>
cublasStatus_t RunGetrf(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), P(c, 1), P(c, 2), I(c, 2));
}
template <auto Fn>
cublasStatus_t RunGetrs(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  // getrs's info is host memory, checked arguments only: the reply carries it.
  int* info = reinterpret_cast<int*>(c.reply->mutable_result()->data());
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), P(c, 0), I(c, 3), P(c, 1), P(c, 2), I(c, 4), info,
                 I(c, 5));
}
template <auto Fn>
cublasStatus_t RunGetri(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), P(c, 1), P(c, 2), I(c, 2), P(c, 3), I(c, 3));
}
template <auto Fn>
cublasStatus_t RunMatinv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), P(c, 1), I(c, 2), P(c, 2), I(c, 3));
}

template <auto Fn>
cublasStatus_t RunTbsv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), P(c, 0), I(c, 5), P(c, 1),
                 I(c, 6));
}
template <auto Fn>
cublasStatus_t RunTpsv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), P(c, 0), P(c, 1), I(c, 4));
}
template <auto Fn>
cublasStatus_t RunGbmv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), S(c, 0), P(c, 0), I(c, 5), P(c, 1),
                 I(c, 6), S(c, 1), P(c, 2), I(c, 7));
}
template <auto Fn>
cublasStatus_t RunSbmv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), S(c, 0), P(c, 0), I(c, 3), P(c, 1), I(c, 4), S(c, 1),
                 P(c, 2), I(c, 5));
}
template <auto Fn>
cublasStatus_t RunSpmv(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), S(c, 0), P(c, 0), P(c, 1), I(c, 2), S(c, 1), P(c, 2),
                 I(c, 3));
}
template <auto Fn>
cublasStatus_t RunSyr(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), S(c, 0), P(c, 0), I(c, 2), P(c, 1), I(c, 3));
}
template <auto Fn>
cublasStatus_t RunSyr2(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), S(c, 0), P(c, 0), I(c, 2), P(c, 1), I(c, 3), P(c, 2),
                 I(c, 4));
}
template <auto Fn>
cublasStatus_t RunSpr(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), S(c, 0), P(c, 0), I(c, 2), P(c, 1));
}
template <auto Fn>
cublasStatus_t RunSpr2(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), S(c, 0), P(c, 0), I(c, 2), P(c, 1), I(c, 3), P(c, 2));
}
template <auto Fn>
cublasStatus_t RunSyr2k(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), S(c, 0), P(c, 0), I(c, 4), P(c, 1), I(c, 5),
                 S(c, 1), P(c, 2), I(c, 6));
}
template <auto Fn>
constexpr RunFn RunScalReal = RunScal<Fn>;
template <auto Fn>
constexpr RunFn RunNormReal = RunNorm<Fn>;

template <auto Fn>
cublasStatus_t RunDotEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), I(c, 2), P(c, 1), I(c, 3), I(c, 4), R(c), I(c, 5),
                 I(c, 6));
}
template <auto Fn>
cublasStatus_t RunAxpyEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), S(c, 0), I(c, 1), P(c, 0), I(c, 2), I(c, 3), P(c, 1), I(c, 4), I(c, 5),
                 I(c, 6));
}
template <auto Fn>
cublasStatus_t RunScalEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), S(c, 0), I(c, 1), P(c, 0), I(c, 2), I(c, 3), I(c, 4));
}
template <auto Fn>
cublasStatus_t RunNormEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), I(c, 2), R(c), I(c, 3), I(c, 4));
}
template <auto Fn>
cublasStatus_t RunCopyEx(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), I(c, 2), P(c, 1), I(c, 3), I(c, 4));
}

template <auto Fn>
cublasStatus_t RunTrsmBatched(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), I(c, 2), I(c, 3), I(c, 4), I(c, 5), S(c, 0), P(c, 0), I(c, 6),
                 P(c, 1), I(c, 7), I(c, 8));
}

// The Hermitian forms take the symmetric ones' arguments, with real scalars; so do the
// complex rotations the real one's.
template <auto Fn>
constexpr RunFn RunHer = RunSyr<Fn>;
template <auto Fn>
constexpr RunFn RunHpr = RunSpr<Fn>;
template <auto Fn>
constexpr RunFn RunHerk = RunSyrk<Fn>;
template <auto Fn>
constexpr RunFn RunHer2k = RunSyr2k<Fn>;
template <auto Fn>
constexpr RunFn RunRotMixed = RunRot<Fn>;
template <auto Fn>
constexpr RunFn RunRotReal = RunRot<Fn>;
template <auto Fn>
cublasStatus_t RunRotm(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), P(c, 0), I(c, 1), P(c, 1), I(c, 2), S(c, 0));
}

template <auto Fn>
cublasStatus_t RunTpttr(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), P(c, 0), P(c, 1), I(c, 2));
}
template <auto Fn>
cublasStatus_t RunTrttp(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, I(c, 0), I(c, 1), P(c, 0), I(c, 2), P(c, 1));
}

template <auto Fn>
cublasStatus_t RunRotg(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, P(c, 0), P(c, 1), P(c, 2), P(c, 3));
}
template <auto Fn>
cublasStatus_t RunRotmg(const BlasTable& t, cublasHandle_t h, const BlasCall& c) {
  return (t.*Fn)(h, P(c, 0), P(c, 1), P(c, 2), P(c, 3), P(c, 4));
}

struct Runner {
  uint32_t op;
  RunFn run;
};
constexpr Runner kRunners[] = {
#define BLAS_OP(op, Name, Shape, Elem, Fn) {op, Run##Shape<&BlasTable::Fn>},
#include "proto/blas_ops.def"
};

RunFn FindRunner(uint32_t op) {
  for (const Runner& r : kRunners)
    if (r.op == op) return r.run;
  return nullptr;
}

Status BlasError(const BlasTable& t, cublasStatus_t s, const std::string& what) {
  return Error(BlasStatusToCuda(s), what + ": " + BlasStatusName(t, s));
}

}  // namespace

// ---- Handles -------------------------------------------------------------------

Status Session::OnBlasCreate(const v1::Empty&, v1::HandleReply& rep) {
  ASSIGN_OR_RETURN(const BlasTable* t, env_.device->blas());
  cublasHandle_t h = nullptr;
  if (cublasStatus_t s = t->cublasCreate_v2(&h); s != CUBLAS_STATUS_SUCCESS)
    return BlasError(*t, s, "cublasCreate");
  Result<CUdeviceptr> memory =
      AllocateCharged(kScratch + kBlasWorkspace, "took for a cuBLAS handle");
  if (!memory.ok()) {
    (void)t->cublasDestroy_v2(h);
    return memory.status();
  }
  auto handle = std::make_shared<BlasHandle>();
  handle->h = h;
  handle->memory = *memory;
  handle->settings = ReadSettings(*t, h);
  const uint64_t id = next_handle_++;
  blas_.Put(id, std::move(handle));
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnBlasDestroy(const v1::BlasHandleRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(std::shared_ptr<BlasHandle> handle, blas_.Get(req.handle()));
  blas_.Erase(req.handle());
  Held held;
  held.epoch = epoch_;
  ReleaseBlas(*env_.device, *handle, held);
  held.charged = arena::AlignUp(kScratch + kBlasWorkspace, 256);
  allocated_bytes_ -= held.charged;
  // The handle goes once the tenant's work that may use it is done.
  return GiveBackWhenDone(std::move(held), /*reply=*/true);
}

Status Session::OnBlasSetWorkspace(const v1::BlasWorkspaceRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(std::shared_ptr<BlasHandle> handle, blas_.Get(req.handle()));
  if (req.size() != 0) {
    if (req.workspace() % 256 != 0)
      return Error(err::kInvalidValue,
                   "a cuBLAS workspace must be 256-byte aligned, not " + Hex(req.workspace()));
  }
  handle->tenant_workspace = req.size() ? req.workspace() : 0;
  handle->tenant_workspace_bytes = req.size();
  return OkStatus();
}

Status Session::OnBlasSetting(const v1::BlasSettingRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(std::shared_ptr<BlasHandle> handle, blas_.Get(req.handle()));
  if (!ValidSetting(req.setting(), req.value()))
    return Error(err::kInvalidValue, "cuBLAS setting " + std::to_string(req.setting()) +
                                         " does not take " + std::to_string(req.value()));
  handle->settings[req.setting() - 1] = req.value();
  handle->settings_set = true;
  return OkStatus();
}

Status Session::OnBlasGetSetting(const v1::BlasSettingRequest& req, v1::BlasSettingReply& rep) {
  ASSIGN_OR_RETURN(std::shared_ptr<BlasHandle> handle, blas_.Get(req.handle()));
  if (req.setting() == 0 || req.setting() > kBlasSettings)
    return Error(err::kInvalidValue, "no cuBLAS setting " + std::to_string(req.setting()));
  rep.set_value(handle->settings[req.setting() - 1]);
  return OkStatus();
}

bool ReleaseBlas(Device& dev, const BlasHandle& handle, Held& held) {
  // The library is loaded: the handle came from it.
  if (Result<const BlasTable*> t = dev.blas(); t.ok())
    held.destroy_when_idle.push_back([t = *t, h = handle.h] { (void)t->cublasDestroy_v2(h); });
  if (handle.lt) ReleaseBlasLt(dev, handle.lt, held);
  held.allocations[handle.memory] = arena::AlignUp(kScratch + kBlasWorkspace, 256);
  return false;
}

Result<cublasLtContext*> Session::BlasHandleAsLt(uint64_t id) {
  ASSIGN_OR_RETURN(std::shared_ptr<BlasHandle> handle, blas_.Get(id));
  if (!handle->lt) {
    ASSIGN_OR_RETURN(const BlasLtTable* t, env_.device->blaslt());
    if (cublasStatus_t s = t->cublasLtCreate(&handle->lt); s != CUBLAS_STATUS_SUCCESS)
      return Error(BlasStatusToCuda(s), "cublasLtCreate for cuBLAS handle " + std::to_string(id) +
                                            ": " + BlasLtStatusName(*t, s));
  }
  return handle->lt;
}

// ---- Routines ------------------------------------------------------------------

Result<std::shared_ptr<Session::BlasCall>> Session::PrepareBlas(const v1::BlasRequest& req,
                                                                bool host_result) {
  const BlasOp* op = FindBlasOp(req.op());
  if (!op)
    return Error(err::kNotSupported,
                 "cuBLAS routine " + std::to_string(req.op()) + " is not forwarded by this server");
  auto c = std::make_shared<BlasCall>();
  c->op = op;
  ASSIGN_OR_RETURN(c->handle, blas_.Get(req.handle()));
  RETURN_IF_ERROR(streams_.Check(req.stream()));
  c->ints.assign(req.ints().begin(), req.ints().end());
  ASSIGN_OR_RETURN(c->plan, PlanBlas(*op, c->ints));
  const BlasShapeInfo& info = *op->info;
  const std::string what = "cublas" + std::string(op->name);
  if (static_cast<size_t>(req.ptrs_size()) != info.ptrs)
    return Error(err::kInvalidValue, what + " takes " + std::to_string(info.ptrs) + " pointers");
  if (info.pointers_are_scalars && !req.device_scalars())
    return Error(err::kInvalidValue, what + " runs in device pointer mode only");
  if (BlasResultOnHost(*op, req.device_scalars()) != host_result)
    return Error(
        err::kInvalidValue,
        what + (host_result ? " has no host result" : " returns a host result: call BlasSync"));
  c->stream = req.stream();
  c->device_scalars = req.device_scalars();
  c->math_mode = req.math_mode();
  if (c->handle->settings_set) c->settings = c->handle->settings;

  // Scalars: their values, or device pointers to them.
  if (req.device_scalars()) {
    if (static_cast<size_t>(req.scalar_ptrs_size()) != info.scalars)
      return Error(err::kInvalidValue, what + ": wrong number of scalar pointers");
    for (int i = 0; i < req.scalar_ptrs_size(); ++i) {
      RETURN_IF_ERROR(CheckDeviceRange(req.scalar_ptrs(i), c->plan.scalar_bytes[i], "scalar"));
      c->scalar_ptrs[i] = req.scalar_ptrs(i);
    }
  } else {
    if (req.scalars().size() != c->plan.ScalarOffset(info.scalars))
      return Error(err::kInvalidValue, what + ": scalars of the wrong size");
    for (size_t i = 0; i < info.scalars; ++i) {
      if (c->plan.scalar_bytes[i] > BlasCall::kScalarSlot)
        return Error(err::kInvalidValue, what + ": a scalar larger than any cuBLAS takes");
      std::memcpy(c->scalars.data() + i * BlasCall::kScalarSlot,
                  req.scalars().data() + c->plan.ScalarOffset(i), c->plan.scalar_bytes[i]);
    }
  }

  // The result: the tenant's device memory, or a scratch slot copied back.
  if (info.result && !host_result) {
    RETURN_IF_ERROR(CheckDeviceRange(req.result_ptr(), c->plan.result_bytes, "result"));
    c->result = req.result_ptr();
  }
  if (host_result) {
    c->reply = std::make_shared<v1::BlasReply>();
    c->reply->mutable_result()->resize(c->plan.result_bytes);
    if (op->shape != BlasShape::kGetrs) {
      BlasHandle& h = *c->handle;
      c->result_slot = h.memory + (h.next_slot++ % kResultSlots) * kResultSlot;
      c->result = c->result_slot;
    }
  }

  // Pointers: each reaches what the shape says; arrays name `batch` matrices each.
  size_t arrays = 0;
  for (size_t i = 0; i < info.ptrs; ++i) {
    const uint64_t p = req.ptrs(static_cast<int>(i)), bytes = c->plan.bytes[i];
    const std::string arg = what + " pointer argument " + std::to_string(i + 1);
    if (c->plan.array[i]) {
      const size_t first = arrays * c->plan.batch;
      if (static_cast<size_t>(req.arrays_size()) < first + c->plan.batch)
        return Error(err::kInvalidValue, arg + ": its pointer array did not come with the call");
      for (int64_t b = 0; b < c->plan.batch; ++b) {
        const uint64_t m = req.arrays(static_cast<int>(first + b));
        if (bytes) RETURN_IF_ERROR(CheckDeviceRange(m, bytes, arg.c_str()));
      }
      ++arrays;
      continue;
    }
    c->ptrs[i] = p;
    if (bytes == 0 || (p == 0 && c->plan.nullable[i])) continue;
    RETURN_IF_ERROR(CheckDeviceRange(p, bytes, arg.c_str()));
  }
  if (static_cast<size_t>(req.arrays_size()) != arrays * c->plan.batch)
    return Error(err::kInvalidValue, what + ": pointer arrays of the wrong length");
  c->arrays.assign(req.arrays().begin(), req.arrays().end());

  // The workspace: the tenant's while it still owns it, else the handle's own.
  BlasHandle& h = *c->handle;
  if (h.tenant_workspace &&
      !CheckDeviceRange(h.tenant_workspace, h.tenant_workspace_bytes, "workspace").ok()) {
    Log(Level::kWarn, "cublas",
        {{"session", id_}, {"event", "workspace_freed"}, {"workspace", Hex(h.tenant_workspace)}});
    h.tenant_workspace = 0;
    h.tenant_workspace_bytes = 0;
  }
  c->workspace = h.tenant_workspace ? h.tenant_workspace : h.memory + kScratch;
  c->workspace_bytes = h.tenant_workspace ? h.tenant_workspace_bytes : kBlasWorkspace;
  return c;
}

Status Session::SubmitBlas(std::shared_ptr<BlasCall> c) {
  ASSIGN_OR_RETURN(const BlasTable* t, env_.device->blas());
  const RunFn run = FindRunner(c->op->op);
  if (!run)
    return Error(err::kNotSupported, "no runner for cuBLAS routine " + std::string(c->op->name));
  const uint64_t array_bytes = c->arrays.size() * sizeof(uint64_t);
  if (array_bytes) {
    ASSIGN_OR_RETURN(c->arrays_device,
                     AllocateCharged(array_bytes, "passed cuBLAS pointer arrays of"));
    size_t slot = 0;
    for (size_t i = 0; i < c->op->info->ptrs; ++i)
      if (c->plan.array[i])
        c->ptrs[i] = c->arrays_device + slot++ * c->plan.batch * sizeof(uint64_t);
  }
  Status sub = work_->Submit(c->stream, [t, dev = env_.device, run, c](CUstream s) -> Status {
    cublasHandle_t h = c->handle->h;
    const std::string what = "cublas" + std::string(c->op->name);
    if (c->arrays_device)
      RETURN_IF_ERROR(
          dev->Check(dev->drv().cuMemcpyHtoDAsync(c->arrays_device, c->arrays.data(),
                                                  c->arrays.size() * sizeof(uint64_t), s),
                     "cuMemcpyHtoDAsync"));
    // The pointer mode covers scalars and result alike: a host-mode result
    // goes to device scratch, so its call runs in device mode.
    const bool device_mode = c->device_scalars || c->result_slot != 0;
    cublasStatus_t st = t->cublasSetStream_v2(h, s);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = t->cublasSetWorkspace_v2(h, reinterpret_cast<void*>(c->workspace), c->workspace_bytes);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = t->cublasSetPointerMode_v2(
          h, device_mode ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = t->cublasSetMathMode(h, static_cast<cublasMath_t>(c->math_mode));
    if (st == CUBLAS_STATUS_SUCCESS && c->settings) st = ApplySettings(*t, h, *c->settings);
    if (st == CUBLAS_STATUS_SUCCESS) st = run(*t, h, *c);
    if (st != CUBLAS_STATUS_SUCCESS) return BlasError(*t, st, what);
    if (c->result_slot)
      return dev->Check(dev->drv().cuMemcpyDtoHAsync(c->reply->mutable_result()->data(),
                                                     c->result_slot, c->plan.result_bytes, s),
                        "cuMemcpyDtoHAsync");
    return OkStatus();
  });
  if (c->arrays_device) ReleaseChargedWhenDone(c->arrays_device, array_bytes, c);
  return sub;
}

Status Session::OnBlas(const v1::BlasRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(std::shared_ptr<BlasCall> c, PrepareBlas(req, /*host_result=*/false));
  return SubmitBlas(std::move(c));
}

Status Session::OnBlasSync(const v1::BlasRequest& req, v1::BlasReply&) {
  ASSIGN_OR_RETURN(std::shared_ptr<BlasCall> c, PrepareBlas(req, /*host_result=*/true));
  std::shared_ptr<v1::BlasReply> reply = c->reply;
  const uint64_t stream = c->stream;
  RETURN_IF_ERROR(SubmitBlas(std::move(c)));
  return ReplyWhenDone(stream, std::move(reply));
}

}  // namespace remora::server
