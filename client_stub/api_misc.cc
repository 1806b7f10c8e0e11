// client_stub/api_misc.cc - the runtime's smaller entry points that need nothing of the server
// beyond what other calls ask: one device's identity and peers, hints about managed memory
// that change no result (recorded, to be read back), batched copies, the logs API (Remora's log is
// the server's), pools by location, and kernel lookups.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "client_stub/api.h"
#include "client_stub/array.h"
#include "client_stub/errors.h"
#include "client_stub/kernels.h"
#include "client_stub/memcpy.h"
#include "client_stub/state.h"

namespace cs = remora::client_stub;
using cs::Ret;

namespace {

cudaError_t CheckRanges(void** dptrs, size_t* sizes, size_t count) {
  if (count > 0 && (dptrs == nullptr || sizes == nullptr)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

bool OnDevice(const cudaMemLocation* at) {
  return at != nullptr && at->type == cudaMemLocationTypeDevice && at->id == 0;
}

}  // namespace

// cudaDeviceRegisterAsyncNotification's handle: nothing is ever notified (no budget changes).
struct cudaAsyncCallbackEntry {
  cudaAsyncCallback fn;
  void* data;
};

extern "C" {

// ---- The one device ---------------------------------------------------------------------

cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* id) {
  if (device == nullptr || id == nullptr) return Ret(cudaErrorInvalidValue);
  char mine[32] = {};
  if (cudaError_t e = cudaDeviceGetPCIBusId(mine, sizeof mine, 0)) return e;
  if (strcasecmp(mine, id) != 0 &&  // "0000:65:00.0" may come without its domain
      (std::strlen(id) >= std::strlen(mine) || strcasecmp(mine + 5, id) != 0))
    return Ret(cudaErrorInvalidDevice);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetValidDevices(int* devices, int n) {
  if (n < 0 || (n > 0 && devices == nullptr)) return Ret(cudaErrorInvalidValue);
  for (int i = 0; i < n; ++i)
    if (devices[i] != 0) return Ret(cudaErrorInvalidDevice);
  return cudaSuccess;
}

// The device's limit for 1-D textures over linear memory, whatever the format (texture objects
// themselves are not served: the emulated GPU runs no texture fetches).
cudaError_t cudaDeviceGetTexture1DLinearMaxWidth(size_t* width, const cudaChannelFormatDesc* desc,
                                                 int device) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  if (width == nullptr || desc == nullptr || cs::ElementBytes(*desc) == 0)
    return Ret(cudaErrorInvalidValue);
  int most = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&most, cudaDevAttrMaxTexture1DLinearWidth, 0))
    return e;
  *width = size_t(most);
  return cudaSuccess;
}

// A peer is another device; there is none.
cudaError_t cudaDeviceGetP2PAttribute(int* value, enum cudaDeviceP2PAttr, int src, int dst) {
  if (value == nullptr) return Ret(cudaErrorInvalidValue);
  (void)src;
  (void)dst;
  return Ret(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceFlushGPUDirectRDMAWrites(enum cudaFlushGPUDirectRDMAWritesTarget target,
                                               enum cudaFlushGPUDirectRDMAWritesScope) {
  return target == cudaFlushGPUDirectRDMAWritesTargetCurrentDevice ? cudaSuccess
                                                                   : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceRegisterAsyncNotification(int device, cudaAsyncCallback fn, void* data,
                                                cudaAsyncCallbackHandle_t* out) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  if (fn == nullptr || out == nullptr) return Ret(cudaErrorInvalidValue);
  *out = std::make_unique<cudaAsyncCallbackEntry>(cudaAsyncCallbackEntry{fn, data}).release();
  return cudaSuccess;
}

cudaError_t cudaDeviceUnregisterAsyncNotification(int device, cudaAsyncCallbackHandle_t h) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  if (h == nullptr) return Ret(cudaErrorInvalidValue);
  std::unique_ptr<cudaAsyncCallbackEntry> gone(h);
  return cudaSuccess;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // served while CUDA ships it
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPoint(symbol, fn, flags, status);
}
#pragma GCC diagnostic pop

cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** fn, unsigned int v,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, fn, v, flags, status);
}

// ---- Kernels ------------------------------------------------------------------------------

// A kernel's driver handle is the same object as its cudaKernel_t.
cudaError_t cudaGetFuncBySymbol(cudaFunction_t* fn, const void* symbol) {
  if (fn == nullptr) return Ret(cudaErrorInvalidValue);
  cs::Kernel* k = cs::FindKernel(symbol);
  if (k == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  *fn = reinterpret_cast<cudaFunction_t>(k);
  return cudaSuccess;
}

cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, enum cudaFuncAttribute attr,
                                            int value, int device) {
  if (device != 0) return Ret(cudaErrorInvalidDevice);
  return cudaFuncSetAttribute(kernel, attr, value);
}

// The shared-memory bank configuration is deprecated; it changes nothing here either.
cudaError_t cudaFuncSetSharedMemConfig(const void* func, enum cudaSharedMemConfig config) {
  if (cs::FindKernel(func) == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  return config <= cudaSharedMemBankSizeEightByte ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, const void* func, int blocks,
                                                      int block_size) {
  if (bytes == nullptr || blocks <= 0 || block_size <= 0) return Ret(cudaErrorInvalidValue);
  cs::Kernel* k = cs::FindKernel(func);
  if (k == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  if (cudaError_t e = cs::EnsureRegistered(*k)) return Ret(e);
  *bytes = cs::AvailableDynamicShared(*k, cs::St().prop, blocks);
  return cudaSuccess;
}

// ---- Managed memory hints and batched copies ----------------------------------------------

using Attrs = cs::ManagedAdvice::Attrs;
using Location = cs::ManagedAdvice::Location;

// Managed memory here lives where host and device both reach it: a prefetch or a discard
// changes no result, so each is a hint that is taken and done (a prefetch's location is
// recorded as the last one, for cudaMemRangeGetAttribute).
cudaError_t cudaMemPrefetchBatchAsync(void** dptrs, size_t* sizes, size_t count,
                                      cudaMemLocation* locs, size_t* idxs, size_t nlocs,
                                      unsigned long long, cudaStream_t stream) {
  if (cudaError_t e = CheckRanges(dptrs, sizes, count)) return Ret(e);
  if (nlocs > 0 && (locs == nullptr || idxs == nullptr)) return Ret(cudaErrorInvalidValue);
  for (size_t j = 0; j < nlocs; ++j)
    if (cudaError_t e = cs::ManagedAdvice::Check(locs[j])) return Ret(e);
  if (cudaError_t e = cs::CheckStream(stream)) return Ret(e);
  // Location j applies to operations idxs[j] up to the next location's first.
  for (size_t j = 0; j < nlocs; ++j) {
    const size_t end = j + 1 < nlocs ? std::min(idxs[j + 1], count) : count;
    const Location at = cs::ManagedAdvice::Of(locs[j]);
    for (size_t i = idxs[j]; i < end; ++i)
      if (cs::St().host.IsManaged(dptrs[i]))
        cs::St().host.Advise(dptrs[i], sizes[i], [at](Attrs& a) { a.last_prefetch = at; });
  }
  return cudaSuccess;
}

cudaError_t cudaMemPrefetchBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                           cudaMemLocation* locs, size_t* idxs, size_t nlocs,
                                           unsigned long long flags, cudaStream_t stream) {
  return cudaMemPrefetchBatchAsync(dptrs, sizes, count, locs, idxs, nlocs, flags,
                                   cs::PerThread(stream));
}

cudaError_t cudaMemDiscardBatchAsync(void** dptrs, size_t* sizes, size_t count, unsigned long long,
                                     cudaStream_t stream) {
  if (cudaError_t e = CheckRanges(dptrs, sizes, count)) return Ret(e);
  return Ret(cs::CheckStream(stream));
}

cudaError_t cudaMemDiscardBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                          unsigned long long flags, cudaStream_t stream) {
  return cudaMemDiscardBatchAsync(dptrs, sizes, count, flags, cs::PerThread(stream));
}

cudaError_t cudaMemDiscardAndPrefetchBatchAsync(void** dptrs, size_t* sizes, size_t count,
                                                cudaMemLocation* locs, size_t* idxs, size_t nlocs,
                                                unsigned long long flags, cudaStream_t stream) {
  return cudaMemPrefetchBatchAsync(dptrs, sizes, count, locs, idxs, nlocs, flags, stream);
}

cudaError_t cudaMemDiscardAndPrefetchBatchAsync_ptsz(void** dptrs, size_t* sizes, size_t count,
                                                     cudaMemLocation* locs, size_t* idxs,
                                                     size_t nlocs, unsigned long long flags,
                                                     cudaStream_t stream) {
  return cudaMemPrefetchBatchAsync(dptrs, sizes, count, locs, idxs, nlocs, flags,
                                   cs::PerThread(stream));
}

namespace {

// The location every run has, or none ({0, 0}) if they differ.
Location Common(const std::vector<Attrs>& runs, Location Attrs::*field) {
  for (const Attrs& a : runs)
    if (a.*field != runs.front().*field) return {};
  return runs.front().*field;
}

// A location as the legacy attributes give it: a device ordinal, cudaCpuDeviceId for the host,
// cudaInvalidDeviceId for none.
int LegacyId(Location at) {
  if (at.first == cudaMemLocationTypeDevice) return at.second;
  return at.first == 0 ? cudaInvalidDeviceId : cudaCpuDeviceId;
}

// The id a location-id attribute gives: a device ordinal or host NUMA node, else invalid.
int LocationId(Location at) {
  const bool has_id =
      at.first == cudaMemLocationTypeDevice || at.first == cudaMemLocationTypeHostNuma;
  return has_id ? at.second : cudaInvalidDeviceId;
}

}  // namespace

// What the managed range was told, as a GPU reports it: an attribute holds for the range only
// if it holds on every page of it (cudaMemAdvise and cudaMemPrefetchAsync record them).
cudaError_t cudaMemRangeGetAttribute(void* data, size_t size, enum cudaMemRangeAttribute attr,
                                     const void* ptr, size_t count) {
  if (data == nullptr || ptr == nullptr || count == 0) return Ret(cudaErrorInvalidValue);
  if (attr < cudaMemRangeAttributeReadMostly || attr > cudaMemRangeAttributeLastPrefetchLocationId)
    return Ret(cudaErrorInvalidValue);
  if (attr == cudaMemRangeAttributeAccessedBy ? size == 0 || size % 4 != 0 : size != 4)
    return Ret(cudaErrorInvalidValue);
  if (!cs::St().host.IsManagedRange(ptr, count)) return Ret(cudaErrorInvalidValue);
  const std::vector<Attrs> runs = cs::St().host.AdviceOver(ptr, count);
  auto* out = static_cast<int*>(data);
  switch (attr) {
    case cudaMemRangeAttributeReadMostly:
      *out = std::all_of(runs.begin(), runs.end(), [](const Attrs& a) { return a.read_mostly; });
      break;
    case cudaMemRangeAttributePreferredLocation:
      *out = LegacyId(Common(runs, &Attrs::preferred));
      break;
    case cudaMemRangeAttributeLastPrefetchLocation:
      *out = LegacyId(Common(runs, &Attrs::last_prefetch));
      break;
    case cudaMemRangeAttributePreferredLocationType:
      *out = Common(runs, &Attrs::preferred).first;
      break;
    case cudaMemRangeAttributePreferredLocationId:
      *out = LocationId(Common(runs, &Attrs::preferred));
      break;
    case cudaMemRangeAttributeLastPrefetchLocationType:
      *out = Common(runs, &Attrs::last_prefetch).first;
      break;
    case cudaMemRangeAttributeLastPrefetchLocationId:
      *out = LocationId(Common(runs, &Attrs::last_prefetch));
      break;
    case cudaMemRangeAttributeAccessedBy: {
      // The locations every run is accessed by, in the order the first run got them.
      size_t n = 0;
      for (const Location& at : runs.front().accessed_by) {
        const bool everywhere = std::all_of(runs.begin(), runs.end(), [&](const Attrs& a) {
          return std::find(a.accessed_by.begin(), a.accessed_by.end(), at) != a.accessed_by.end();
        });
        if (everywhere && n < size / 4) out[n++] = LegacyId(at);
      }
      for (; n < size / 4; ++n) out[n] = cudaInvalidDeviceId;
      break;
    }
  }
  return cudaSuccess;
}

cudaError_t cudaMemRangeGetAttributes(void** data, size_t* sizes, enum cudaMemRangeAttribute* attrs,
                                      size_t n, const void* ptr, size_t count) {
  if (n > 0 && (data == nullptr || sizes == nullptr || attrs == nullptr))
    return Ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < n; ++i)
    if (cudaError_t e = cudaMemRangeGetAttribute(data[i], sizes[i], attrs[i], ptr, count)) return e;
  return cudaSuccess;
}

// Each copy in turn on `stream`; the attributes only hint at the sides' locations. As NVIDIA's
// runtime does (seen on an H200, CUDA 13.0), the legacy default stream is refused.
cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                 size_t count, cudaMemcpyAttributes*, size_t*, size_t,
                                 cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy) return Ret(cudaErrorInvalidValue);
  if (count > 0 && (dsts == nullptr || srcs == nullptr || sizes == nullptr))
    return Ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i)
    if (cudaError_t e = cs::Copy(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, stream, true))
      return Ret(e);
  return cudaSuccess;
}

cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs,
                                      const size_t* sizes, size_t count,
                                      cudaMemcpyAttributes* attrs, size_t* idxs, size_t nattrs,
                                      cudaStream_t stream) {
  // Built for the per-thread default stream, 0 names that stream, not the legacy one.
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, idxs, nattrs, cs::PerThread(stream));
}

namespace {

// One operand of a 3-D batched copy as cudaMemcpy3D takes it: a pitched pointer, or an array at
// an offset in its elements. Errors: cudaErrorInvalidValue for an unknown type or a row or layer
// shorter than the copy's.
cudaError_t Operand(const cudaMemcpy3DOperand& o, const cudaExtent& e, size_t elem,
                    cudaPitchedPtr* ptr, cudaArray_t* array, cudaPos* pos) {
  if (o.type == cudaMemcpyOperandTypeArray) {
    if (o.op.array.array == nullptr) return cudaErrorInvalidValue;
    *array = o.op.array.array;
    *pos = cudaPos{o.op.array.offset.x, o.op.array.offset.y, o.op.array.offset.z};
    return cudaSuccess;
  }
  if (o.type != cudaMemcpyOperandTypePointer || o.op.ptr.ptr == nullptr ||
      (o.op.ptr.rowLength != 0 && o.op.ptr.rowLength < e.width) ||
      (o.op.ptr.layerHeight != 0 && o.op.ptr.layerHeight < e.height))
    return cudaErrorInvalidValue;
  const size_t row = o.op.ptr.rowLength ? o.op.ptr.rowLength : e.width;
  const size_t rows = o.op.ptr.layerHeight ? o.op.ptr.layerHeight : e.height;
  *ptr = cudaPitchedPtr{o.op.ptr.ptr, row * elem, e.width, rows};
  return cudaSuccess;
}

// The element of a batched copy: 1 byte between pointers, else the array's (both arrays' alike).
size_t BatchElement(const cudaMemcpy3DBatchOp& op) {
  size_t elem = 0;
  for (const cudaMemcpy3DOperand* o : {&op.src, &op.dst}) {
    if (o->type != cudaMemcpyOperandTypeArray || o->op.array.array == nullptr) continue;
    const size_t e = cs::ElementBytes(o->op.array.array->desc);
    if (elem != 0 && e != elem) return 0;
    elem = e;
  }
  return elem ? elem : 1;
}

}  // namespace

// Each copy in turn on `stream` as cudaMemcpy3DAsync makes it, all checked before any is made.
// A source read "during the call" (cudaMemcpySrcAccessOrderDuringApiCall) is read before the
// call returns: it then waits for the stream.
cudaError_t cudaMemcpy3DBatchAsync(size_t n, cudaMemcpy3DBatchOp* ops, unsigned long long flags,
                                   cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || flags != 0 || (n > 0 && ops == nullptr))
    return Ret(cudaErrorInvalidValue);
  std::vector<cudaMemcpy3DParms> copies(n);
  bool during_call = false;
  for (size_t i = 0; i < n; ++i) {
    const cudaMemcpy3DBatchOp& op = ops[i];
    const size_t elem = BatchElement(op);
    if (elem == 0 || op.extent.width == 0 || op.extent.height == 0 || op.extent.depth == 0 ||
        op.srcAccessOrder < cudaMemcpySrcAccessOrderStream ||
        op.srcAccessOrder > cudaMemcpySrcAccessOrderAny)
      return Ret(cudaErrorInvalidValue);
    cudaMemcpy3DParms& c = copies[i];
    c = {};
    if (cudaError_t e = Operand(op.src, op.extent, elem, &c.srcPtr, &c.srcArray, &c.srcPos))
      return Ret(e);
    if (cudaError_t e = Operand(op.dst, op.extent, elem, &c.dstPtr, &c.dstArray, &c.dstPos))
      return Ret(e);
    // Extents count bytes between pointers and elements where an array is a side.
    c.extent = op.extent;
    c.kind = cudaMemcpyDefault;
    during_call |= op.srcAccessOrder == cudaMemcpySrcAccessOrderDuringApiCall;
  }
  for (const cudaMemcpy3DParms& c : copies)
    if (cudaError_t e = cudaMemcpy3DAsync(&c, stream)) return e;
  return during_call ? cudaStreamSynchronize(stream) : cudaSuccess;
}

cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t n, cudaMemcpy3DBatchOp* ops,
                                        unsigned long long flags, cudaStream_t stream) {
  return cudaMemcpy3DBatchAsync(n, ops, flags, cs::PerThread(stream));
}

// ---- Pools by location: the device's default pool ---------------------------------------

cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t* pool, cudaMemLocation* at,
                                     enum cudaMemAllocationType type) {
  if (pool == nullptr || type != cudaMemAllocationTypePinned) return Ret(cudaErrorInvalidValue);
  if (!OnDevice(at)) return Ret(cudaErrorNotSupported);  // host pools are not served
  return cudaDeviceGetDefaultMemPool(pool, 0);
}

cudaError_t cudaMemGetMemPool(cudaMemPool_t* pool, cudaMemLocation* at,
                              enum cudaMemAllocationType type) {
  if (pool == nullptr || type != cudaMemAllocationTypePinned) return Ret(cudaErrorInvalidValue);
  if (!OnDevice(at)) return Ret(cudaErrorNotSupported);
  return cudaDeviceGetMemPool(pool, 0);
}

cudaError_t cudaMemSetMemPool(cudaMemLocation* at, enum cudaMemAllocationType type,
                              cudaMemPool_t pool) {
  if (type != cudaMemAllocationTypePinned) return Ret(cudaErrorInvalidValue);
  if (!OnDevice(at)) return Ret(cudaErrorNotSupported);
  return cudaDeviceSetMemPool(0, pool);
}

// ---- Logs: the driver's log is the server's (remora-server's log names every refusal) ----

cudaError_t cudaLogsRegisterCallback(cudaLogsCallback_t fn, void*, cudaLogsCallbackHandle* out) {
  if (fn == nullptr || out == nullptr) return Ret(cudaErrorInvalidValue);
  static char token;
  *out = reinterpret_cast<cudaLogsCallbackHandle>(&token);
  return cudaSuccess;
}

cudaError_t cudaLogsUnregisterCallback(cudaLogsCallbackHandle h) {
  return h ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaLogsCurrent(cudaLogIterator* it, unsigned int flags) {
  if (it == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  *it = 0;
  return cudaSuccess;
}

cudaError_t cudaLogsDumpToFile(cudaLogIterator* it, const char* path, unsigned int flags) {
  if (path == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path, "w"), &std::fclose);
  if (!f) return Ret(cudaErrorOperatingSystem);
  if (it) *it = 0;
  return cudaSuccess;
}

cudaError_t cudaLogsDumpToMemory(cudaLogIterator* it, char* buffer, size_t* size,
                                 unsigned int flags) {
  if (buffer == nullptr || size == nullptr || *size == 0 || flags != 0)
    return Ret(cudaErrorInvalidValue);
  buffer[0] = '\0';
  *size = 0;
  if (it) *it = 0;
  return cudaSuccess;
}

}  // extern "C"
