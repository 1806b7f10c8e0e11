// client_stub/driver_vmm.cc - libcuda.so.1's virtual memory management: address reservations,
// physical allocations, mappings and access (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess and their inverses), each one call of the session's (proto/calls.def); the
// server checks every address against the tenant's own and charges cuMemCreate to its quota.
//
// What the server serves: device memory of the tenant's one device, read-write or no access.
// Shareable handle types may be asked for (PyTorch's expandable segments and NCCL ask for POSIX
// file descriptors) but are not honoured: the allocation lives in the server, and
// cuMemExportToShareableHandle is refused by name. Memory on the host, read-only access and
// compression are refused with CUDA_ERROR_NOT_SUPPORTED and one line on stderr.
//
// Accessible mappings enter the process's device ranges as the server reports them, adjacent
// ones merged (a tensor may span two mappings), so copies and library calls over them are
// checked here as over cudaMalloc'ed memory.
#include <map>
#include <mutex>

#include "client_stub/connection.h"
#include "client_stub/driver_internal.h"
#include "client_stub/errors.h"
#include "client_stub/kernels.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"
#include "client_stub/vmm.h"
#include "remora/v1/session.pb.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::Connection;
using remora::client_stub::DriverCallScope;
using remora::client_stub::St;
namespace vmm = remora::client_stub::vmm;
namespace v1 = remora::v1;
using remora::CallId;

namespace {

// What the process knows of its allocations and mappings, for the queries answered here.
struct Mirror {
  std::mutex mu;
  uint64_t epoch = 0;  // DeviceEpoch() it belongs to: a reset forgets it
  struct Allocation {
    CUmemAllocationProp prop{};
    uint64_t refs = 0;
  };
  std::map<uint64_t, Allocation> allocations;  // by handle
  std::map<uint64_t, uint64_t> mappings;       // base -> size

  // REQUIRES: mu held. Forgets what an older context had.
  void Refresh() {
    const uint64_t now = remora::client_stub::DeviceEpoch();
    if (epoch == now) return;
    allocations.clear();
    mappings.clear();
    epoch = now;
  }
};

Mirror& M() {
  static remora::client_stub::NoDestructor<Mirror> m;
  return *m;
}

CUresult Refuse(const char* call, const char* why) {
  return static_cast<CUresult>(remora::client_stub::Unsupported(call, why));
}

// The server's minimum granularity once connected; CUDA_ERROR_NOT_SUPPORTED if the device has
// none.
CUresult Granularity(uint64_t* out) {
  if (cudaError_t e = vmm::Granularity(out)) return ToCu(e);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

// The properties the server can honour: pinned memory of device 0, no compression.
CUresult CheckProperties(const char* call, const CUmemAllocationProp* prop) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return prop->location.type == CU_MEM_LOCATION_TYPE_INVALID
               ? CUDA_ERROR_INVALID_VALUE
               : Refuse(call, "memory on the host through cuMemCreate is not served by Remora");
  if (prop->location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
  const unsigned handles = prop->requestedHandleTypes;
  if (handles & ~unsigned{CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR})
    return Refuse(call, "only POSIX file descriptor handle types may be asked for under Remora");
  if (prop->allocFlags.compressionType != 0)
    return Refuse(call, "compressible memory is not served by Remora");
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckProperties("cuMemGetAllocationGranularity", prop)) return r;
  uint64_t g = 0;
  if (CUresult r = Granularity(&g)) return r;
  *granularity = g;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (ptr == nullptr || flags != 0 || (alignment & (alignment - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t base = 0;
  if (cudaError_t e = vmm::Reserve(size, alignment, addr, &base)) return ToCu(e);
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return ToCu(vmm::FreeAddress(ptr, size));
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (handle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckProperties("cuMemCreate", prop)) return r;
  uint64_t h = 0;
  if (cudaError_t e = vmm::Create(size, &h)) return ToCu(e);
  Mirror& m = M();
  std::lock_guard lock(m.mu);
  m.Refresh();
  m.allocations[h] = {.prop = *prop, .refs = 1};
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (cudaError_t e = vmm::Release(handle)) return ToCu(e);
  Mirror& m = M();
  std::lock_guard lock(m.mu);
  m.Refresh();
  if (auto it = m.allocations.find(handle); it != m.allocations.end() && --it->second.refs == 0)
    m.allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (cudaError_t e = vmm::Map(ptr, size, offset, handle)) return ToCu(e);
  Mirror& m = M();
  std::lock_guard lock(m.mu);
  m.Refresh();
  m.mappings[ptr] = size;
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (cudaError_t e = vmm::Unmap(ptr, size)) return ToCu(e);
  Mirror& m = M();
  std::lock_guard lock(m.mu);
  m.Refresh();
  m.mappings.erase(m.mappings.lower_bound(ptr), m.mappings.lower_bound(ptr + size));
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  bool read_write = false;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
      return Refuse("cuMemSetAccess", "read-only mappings are not served by Remora");
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
      return CUDA_ERROR_INVALID_VALUE;
    read_write = desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  if (cudaError_t e = vmm::SetAccess(ptr, size, read_write)) return ToCu(e);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (location->id != 0) return CUDA_ERROR_INVALID_DEVICE;
  Mirror& m = M();
  std::lock_guard lock(m.mu);
  m.Refresh();
  auto it = m.mappings.upper_bound(ptr);
  if (it == m.mappings.begin() || ptr - std::prev(it)->first >= std::prev(it)->second)
    return CUDA_ERROR_INVALID_VALUE;
  *flags = St().device_ranges.Find(ptr) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                        : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::MemRetainRequest req;
  req.set_ptr(reinterpret_cast<uint64_t>(addr));
  v1::MemRetainReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kMemRetainHandle, req, &rep)) return ToCu(e);
  Mirror& m = M();
  std::lock_guard lock(m.mu);
  m.Refresh();
  Mirror::Allocation& a = m.allocations[rep.handle()];
  if (a.refs++ == 0) {  // every earlier handle was released: what the server says of it
    a.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    a.prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  }
  *handle = rep.handle();
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Mirror& m = M();
  std::lock_guard lock(m.mu);
  m.Refresh();
  auto it = m.allocations.find(handle);
  if (it == m.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  *prop = it->second.prop;
  return CUDA_SUCCESS;
}

}  // extern "C"
