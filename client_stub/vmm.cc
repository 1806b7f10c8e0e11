// client_stub/vmm.cc - see vmm.h.
#include "client_stub/vmm.h"

#include "client_stub/connection.h"
#include "client_stub/state.h"
#include "remora/v1/session.pb.h"

namespace remora::client_stub::vmm {

namespace {

// Applies the server's report of what is accessible around a change: ranges starting in
// [lo, hi) go, `runs` come in.
void ApplyAccess(const v1::AccessRuns& a) {
  auto& ranges = St().device_ranges;
  ranges.RemoveWithin(a.lo(), a.hi());
  for (const v1::AccessRuns::Run& r : a.runs()) ranges.Add(r.base(), r.size());
}

v1::MemRangeRequest Range(uint64_t ptr, uint64_t size) {
  v1::MemRangeRequest req;
  req.set_ptr(ptr);
  req.set_size(size);
  return req;
}

}  // namespace

cudaError_t Granularity(uint64_t* out) {
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  *out = c.welcome().device().vmm_granularity();
  return cudaSuccess;
}

cudaError_t Reserve(uint64_t size, uint64_t alignment, uint64_t addr, uint64_t* base) {
  v1::MemReserveRequest req;
  req.set_size(size);
  req.set_alignment(alignment);
  req.set_addr(addr);
  v1::MallocReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kMemAddressReserve, req, &rep)) return e;
  *base = rep.dptr();
  return cudaSuccess;
}

cudaError_t FreeAddress(uint64_t base, uint64_t size) {
  return Connection::Get().Call(CallId::kMemAddressFree, Range(base, size));
}

cudaError_t Create(uint64_t size, uint64_t* handle) {
  v1::MemCreateRequest req;
  req.set_size(size);
  v1::HandleReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kMemCreate, req, &rep)) return e;
  *handle = rep.handle();
  return cudaSuccess;
}

cudaError_t Release(uint64_t handle) {
  v1::MemReleaseRequest req;
  req.set_handle(handle);
  return Connection::Get().Call(CallId::kMemRelease, req);
}

cudaError_t Map(uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle) {
  v1::MemMapRequest req;
  req.set_ptr(ptr);
  req.set_size(size);
  req.set_offset(offset);
  req.set_handle(handle);
  return Connection::Get().Call(CallId::kMemMap, req);
}

cudaError_t Unmap(uint64_t ptr, uint64_t size) {
  v1::AccessRuns rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kMemUnmap, Range(ptr, size), &rep)) return e;
  ApplyAccess(rep);
  return cudaSuccess;
}

cudaError_t SetAccess(uint64_t ptr, uint64_t size, bool read_write) {
  v1::MemSetAccessRequest req;
  req.set_ptr(ptr);
  req.set_size(size);
  req.set_read_write(read_write);
  v1::AccessRuns rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kMemSetAccess, req, &rep)) return e;
  ApplyAccess(rep);
  return cudaSuccess;
}

}  // namespace remora::client_stub::vmm
