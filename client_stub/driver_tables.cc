// client_stub/driver_tables.cc - the private export tables NVIDIA's runtime asks its driver for
// (cuGetExportTable), so that NVIDIA's runtime, shared or linked statically into a program or a
// library, runs over Remora's libcuda.so.1 like any other driver-API user.
//
// Each table is an array of entry points named by a UUID; slot 0 holds the table's size in
// bytes. What each slot is and what the runtime needs of it, as observed on CUDA 13.0, is in
// client_stub/README.md ("NVIDIA's runtime over libcuda.so.1"). A slot the runtime is not
// known to need answers CUDA_ERROR_NOT_SUPPORTED and names itself on stderr.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client_stub/driver_internal.h"
#include "client_stub/image_module.h"
#include "client_stub/md2.h"
#include "client_stub/no_destructor.h"
#include "client_stub/once.h"

namespace remora::client_stub::driver {
namespace {

using Slot = const void*;

template <int kTable, int kSlot>
CUresult RefusedSlot() {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr,
                 "remora: NVIDIA's runtime called slot %d of private export table %d, which "
                 "Remora's libcuda.so.1 does not serve (CUDA_ERROR_NOT_SUPPORTED)\n",
                 kSlot, kTable);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Fills every slot after the size with RefusedSlot, then the served ones.
template <int kTable, size_t kN>
struct Table {
  Slot slot[kN];
  template <size_t... I>
  constexpr explicit Table(std::index_sequence<I...>)
      : slot{reinterpret_cast<Slot>(sizeof(Slot) * kN),
             reinterpret_cast<Slot>(&RefusedSlot<kTable, int(I) + 1>)...} {}
  constexpr Table() : Table(std::make_index_sequence<kN - 1>()) {}
};

// ---- CUDART_INTERFACE: modules from fat binaries, and the primary context ------------------

CUresult ModuleFromWrapper(CUmodule* module, const void* wrapper) {
  return cuModuleLoadData(module, wrapper);
}
CUresult ModuleFromWrapperEx(CUmodule* module, const void* wrapper, void* a3, void* a4, unsigned) {
  if (a3 != nullptr || a4 != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return cuModuleLoadData(module, wrapper);
}
CUresult ModuleFromFatbin(const void* fatbin, CUmodule* module, void* a3, void* a4, unsigned a5) {
  if (a3 != nullptr || a4 != nullptr || a5 != 0) return CUDA_ERROR_NOT_SUPPORTED;
  return cuModuleLoadFatBinary(module, fatbin);
}
// The primary context of `dev`, without a reference of its own.
CUresult PrimaryContext(CUcontext* ctx, CUdevice dev) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(dev)) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = TheContext();
  return CUDA_SUCCESS;
}
CUresult Noop(size_t) {
  return CUDA_SUCCESS;
}
CUresult CreateContext(CUcontext* ctx, unsigned flags, CUdevice dev) {
  return cuCtxCreate(ctx, nullptr, flags, dev);
}

// ---- TOOLS_TLS: the calling thread's context, as the libraries' own runtime asks it --------

// NVIDIA's cuBLAS, cuFFT and cuSOLVER ask this before their first kernel and fail (cuBLAS with
// CUBLAS_STATUS_NOT_SUPPORTED) if it is refused. No current context is an error, as it is in
// NVIDIA's driver, with the answer cleared.
CUresult ThreadContext(CUcontext* ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = nullptr;
  if (CUresult r = cuCtxGetCurrent(ctx)) return r;
  return *ctx != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// ---- The table cuBLAS keys its per-context and per-stream state by ------------------------

// On the H200 NVIDIA's cuBLAS 13 asked for it (and failed with CUBLAS_STATUS_NOT_SUPPORTED
// when it was missing). Three of its 93 slots are known, from a public reimplementation, not
// yet seen working against cuBLAS: a context's key, a stream's private handle (here the
// public one: NULL is the legacy or the per-thread stream), and a private handle's identity.
CUresult ContextKey(CUcontext ctx, uint64_t* key) {
  if (key == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != TheContext()) return CUDA_ERROR_INVALID_CONTEXT;
  *key = reinterpret_cast<uintptr_t>(ctx);
  return CUDA_SUCCESS;
}
CUresult PrivateStream(CUcontext, CUstream stream, void** out, int per_thread) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (stream == nullptr) stream = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  CUcontext owner = nullptr;
  if (CUresult r = cuStreamGetCtx(stream, &owner)) return r;
  *out = stream;
  return CUDA_SUCCESS;
}
CUresult StreamIdentity(CUcontext, const void* stream, uint64_t* id) {
  if (stream == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *id = reinterpret_cast<uintptr_t>(stream);
  return CUDA_SUCCESS;
}

// ---- TOOLS_RUNTIME_CALLBACK_HOOKS: two buffers the runtime writes into ---------------------

alignas(64) uint64_t g_hooks_buffer[1024];
alignas(64) uint8_t g_hooks_flags[14];
void HooksBuffer(void** p, size_t* n) {
  *p = g_hooks_buffer;
  *n = sizeof g_hooks_buffer / sizeof g_hooks_buffer[0];
}
void HooksFlags(void** p, size_t* n) {
  *p = g_hooks_flags;
  *n = sizeof g_hooks_flags;
}

// ---- CONTEXT_LOCAL_STORAGE: values the runtime keeps per context --------------------------

using StorageDtor = void (*)(CUcontext, void*, void*);
struct Stored {
  void* value;
  StorageDtor dtor;
};
std::mutex g_storage_mu;
std::map<std::pair<CUcontext, void*>, Stored>& Storage() {
  static NoDestructor<std::map<std::pair<CUcontext, void*>, Stored>> s;  // outlives exit
  return *s;
}
CUcontext ContextOrCurrent(CUcontext ctx) {
  if (ctx != nullptr) return ctx;
  CUcontext cur = nullptr;
  (void)cuCtxGetCurrent(&cur);
  return cur;
}
CUresult StoragePut(CUcontext ctx, void* key, void* value, StorageDtor dtor) {
  ctx = ContextOrCurrent(ctx);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(g_storage_mu);
  Storage()[{ctx, key}] = {value, dtor};
  return CUDA_SUCCESS;
}
// Its arguments are not known for certain: it forgets `key` of the current context, or `b` of
// context `a`, whichever is stored.
CUresult StorageDelete(void* a, void* b) {
  std::lock_guard lock(g_storage_mu);
  if (Storage().erase({ContextOrCurrent(nullptr), a}) == 0)
    Storage().erase({static_cast<CUcontext>(a), b});
  return CUDA_SUCCESS;
}
CUresult StorageGet(void** value, CUcontext ctx, void* key) {
  ctx = ContextOrCurrent(ctx);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(g_storage_mu);
  auto it = Storage().find({ctx, key});
  if (it == Storage().end()) return CUDA_ERROR_INVALID_VALUE;  // the runtime needs "absent"
  *value = it->second.value;
  return CUDA_SUCCESS;
}

// ---- CONTEXT_CHECKS -----------------------------------------------------------------------

CUresult ContextCheck(CUcontext, uint32_t* result, const void** detail) {
  if (result) *result = 0;
  if (detail) *detail = nullptr;
  return CUDA_SUCCESS;
}
uint32_t CheckFlags() {
  return 0;
}

// ---- Tables -------------------------------------------------------------------------------

CUresult IntegrityCheck(uint32_t runtime_version, uint64_t unix_seconds, uint64_t* result);

struct Tables {
  Table<1, 10> cudart;
  Table<2, 3> tools_tls;
  Table<3, 7> hooks;
  Table<4, 4> storage;
  Table<5, 4> checks;
  Table<6, 3> integrity;
  Table<7, 2> ctx_create;
  Table<8, 93> blas_state;
  Tables() {
    cudart.slot[1] = reinterpret_cast<Slot>(&ModuleFromWrapper);
    cudart.slot[2] = reinterpret_cast<Slot>(&PrimaryContext);
    cudart.slot[6] = reinterpret_cast<Slot>(&ModuleFromWrapperEx);
    cudart.slot[7] = reinterpret_cast<Slot>(&Noop);
    cudart.slot[8] = reinterpret_cast<Slot>(&ModuleFromFatbin);
    tools_tls.slot[2] = reinterpret_cast<Slot>(&ThreadContext);
    hooks.slot[2] = reinterpret_cast<Slot>(&HooksBuffer);
    hooks.slot[6] = reinterpret_cast<Slot>(&HooksFlags);
    storage.slot[0] = reinterpret_cast<Slot>(&StoragePut);  // this table has no size slot
    storage.slot[1] = reinterpret_cast<Slot>(&StorageDelete);
    storage.slot[2] = reinterpret_cast<Slot>(&StorageGet);
    checks.slot[2] = reinterpret_cast<Slot>(&ContextCheck);
    checks.slot[3] = reinterpret_cast<Slot>(&CheckFlags);
    integrity.slot[1] = reinterpret_cast<Slot>(&IntegrityCheck);
    ctx_create.slot[1] = reinterpret_cast<Slot>(&CreateContext);
    blas_state.slot[4] = reinterpret_cast<Slot>(&ContextKey);
    blas_state.slot[39] = reinterpret_cast<Slot>(&StreamIdentity);
    blas_state.slot[51] = reinterpret_cast<Slot>(&PrivateStream);
  }
};
const Tables& TheTables() {
  static const Tables t;
  return t;
}

// The key NVIDIA's runtime checks the answer with.
constexpr Md2Digest kIntegrityKey = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                     0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

// What the runtime hashes on its side and compares: the versions, this process and thread,
// where the tables and this function are, the time it passed, and each device's identity.
CUresult IntegrityCheck(uint32_t runtime_version, uint64_t unix_seconds, uint64_t* result) {
  DriverCallScope scope;
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int driver_version = 0, count = 0;
  (void)cuDriverGetVersion(&driver_version);
  if (CUresult r = cuDeviceGetCount(&count)) return r;
  struct {
    uint32_t driver_version, runtime_version, process, thread;
    const void *cudart_table, *integrity_table, *function;
    uint64_t unix_seconds;
  } self{uint32_t(driver_version),
         runtime_version,
         uint32_t(getpid()),
         uint32_t(uintptr_t(pthread_self())),
         TheTables().cudart.slot,
         TheTables().integrity.slot,
         reinterpret_cast<const void*>(&IntegrityCheck),
         unix_seconds};
  static_assert(sizeof self == 48);
  HmacMd2 mac(kIntegrityKey);
  mac.Update(std::span(reinterpret_cast<const uint8_t*>(&self), sizeof self));
  for (int d = 0; d < count; ++d) {
    struct {
      CUuuid uuid;
      int32_t domain, bus, device;
    } dev{};
    static_assert(sizeof dev == 28);
    if (CUresult r = cuDeviceGetUuid(&dev.uuid, d)) return r;
    (void)cuDeviceGetAttribute(&dev.domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    (void)cuDeviceGetAttribute(&dev.bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    (void)cuDeviceGetAttribute(&dev.device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    mac.Update(std::span(reinterpret_cast<const uint8_t*>(&dev), sizeof dev));
  }
  const Md2Digest digest = mac.Final();
  std::memcpy(result, digest.data(), digest.size());
  return CUDA_SUCCESS;
}

struct Known {
  uint8_t id[16];
  const Slot* table;
};

}  // namespace

void DestroyContextStorage(CUcontext ctx) {
  std::vector<std::pair<void*, Stored>> gone;
  {
    std::lock_guard lock(g_storage_mu);
    for (auto it = Storage().begin(); it != Storage().end();) {
      if (it->first.first == ctx) {
        gone.emplace_back(it->first.second, it->second);
        it = Storage().erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& [key, s] : gone)
    if (s.dtor) s.dtor(ctx, key, s.value);
}

void NoteNvidiaRuntime(const void* caller) {
  const char* report = std::getenv("REMORA_CHECK_REPORT");
  Dl_info info{};
  if (report == nullptr || dladdr(caller, &info) == 0 || info.dli_fname == nullptr) return;
  if (!Once("NVIDIA's runtime", info.dli_fname)) return;
  if (FILE* f = std::fopen(report, "a")) {
    std::fprintf(f, "%s (NVIDIA's runtime inside)\tNVIDIA's, over Remora's libcuda.so.1\n",
                 info.dli_fname);
    std::fclose(f);
  }
}

CUresult ExportTable(const void** table, const CUuuid* id, const void* caller) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Tables& t = TheTables();
  const Known known[] = {
      {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
        0xf9},
       t.cudart.slot},
      {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
        0xdc},
       t.tools_tls.slot},
      {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
        0x66},
       t.hooks.slot},
      {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
        0x93},
       t.storage.slot},
      {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
        0x7e},
       t.checks.slot},
      {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
        0xf2},
       t.integrity.slot},
      {{0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72,
        0x86},
       t.ctx_create.slot},
      {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8,
        0xf2},
       t.blas_state.slot},
  };
  for (const Known& k : known) {
    if (std::memcmp(k.id, id->bytes, 16) == 0) {
      *table = k.table;
      return CUDA_SUCCESS;
    }
  }
  *table = nullptr;
  char uuid[33];
  for (int i = 0; i < 16; ++i) std::snprintf(uuid + 2 * i, 3, "%02x", uint8_t(id->bytes[i]));
  // The runtime asks for this one at start-up and does without it.
  const bool optional = std::string_view(uuid).starts_with("f8cff951");
  if (std::getenv("REMORA_TRACE_DRIVER")) {
    std::fprintf(stderr, "remora: no export table %s\n", uuid);
  } else if (!optional) {
    // A library that needs a private interface of NVIDIA's driver fails in its own words
    // (cuFFT: CUFFT_INTERNAL_ERROR): say which, and why, once.
    if (Once("export table", uuid)) {
      Dl_info info{};
      const char* who = dladdr(caller, &info) && info.dli_fname ? info.dli_fname : "a library";
      std::fprintf(stderr,
                   "remora: %s asked for a private interface of NVIDIA's driver (export table "
                   "%s) that Remora's libcuda.so.1 does not serve: what it needs that for is not "
                   "supported and fails (cuFFT: every plan)%s\n",
                   who, uuid, RemoteLibsHint(who));
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace remora::client_stub::driver
