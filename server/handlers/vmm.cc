// server/handlers/vmm.cc - virtual memory management: reservations, physical allocations,
// mappings and access, checked against the tenant's VmmTable (server/vmm_table.h), then done
// by the driver.
//
// cuMemCreate is charged to the tenant's quota as cudaMalloc is (Session::ClaimCharge). An
// unmap, and access taken away, wait for the tenant's work to be done first, as cudaFree does:
// a kernel of its own still reading the range would fault, and a fault on a GPU ends every
// tenant's context. The memory of an allocation goes back to the ledger only after that.
#include "server/session.h"

#include "server/handlers/util.h"

namespace remora::server {

namespace {
void ToReply(const VmmTable::AccessChange& a, v1::AccessRuns& rep) {
  rep.set_lo(a.lo);
  rep.set_hi(a.hi);
  for (const RangeTable::Range& r : a.runs) {
    v1::AccessRuns::Run* run = rep.add_runs();
    run->set_base(r.base);
    run->set_size(r.size);
  }
}
}  // namespace

uint64_t Session::MaxReserved() const {
  return env_.device ? kVmmReserveFactor * env_.device->info().total_mem() : 0;
}

void Session::UndoVmm(const VmmTable::Everything& e) {
  for (const auto& [ptr, size] : e.unmap) (void)dev().drv().cuMemUnmap(ptr, size);
  for (uint64_t h : e.driver_release) (void)dev().drv().cuMemRelease(h);
  for (const auto& [ptr, size] : e.reservations) (void)dev().drv().cuMemAddressFree(ptr, size);
}

Status Session::NeedVmmSize(uint64_t size, const char* what) const {
  const uint64_t granularity = dev().info().vmm_granularity();
  if (granularity == 0)
    return Error(err::kNotSupported, "the device has no virtual memory management");
  if (size == 0 || size % granularity != 0)
    return Error(err::kInvalidValue, std::string(what) + "'s size must be a positive multiple of " +
                                         std::to_string(granularity) + " bytes");
  return OkStatus();
}

Status Session::GiveBackVmm(VmmTable::Freed freed, bool wait) {
  Held held;
  held.epoch = epoch_;
  held.charged = freed.charged;
  allocated_bytes_ -= freed.charged;
  if (!freed.unmap.empty() || !freed.driver_release.empty())
    held.destroy.push_back(
        [this, e = VmmTable::Everything{.unmap = std::move(freed.unmap),
                                        .reservations = {},
                                        .driver_release = std::move(freed.driver_release)}] {
          UndoVmm(e);
        });
  if (!wait) {
    GiveBack(held);
    return OkStatus();
  }
  auto result = std::make_shared<v1::AccessRuns>();
  ToReply(freed.access, *result);
  return GiveBackWhenDone(std::move(held), /*reply=*/true, std::move(result));
}

Status Session::OnMemAddressReserve(const v1::MemReserveRequest& req, v1::MallocReply& rep) {
  RETURN_IF_ERROR(NeedVmmSize(req.size(), "a reservation"));
  constexpr uint64_t kMaxAlignment = 1ull << 40;
  if ((req.alignment() & (req.alignment() - 1)) != 0 || req.alignment() > kMaxAlignment)
    return Error(err::kInvalidValue,
                 "a reservation's alignment must be 0 or a power of two up to " +
                     std::to_string(kMaxAlignment) + " bytes");
  RETURN_IF_ERROR(vmm_.CheckReserve(req.size()));
  CUdeviceptr p = 0;
  // The hint is the tenant's wish, never a promise: another tenant may hold that place.
  RETURN_IF_ERROR(
      dev().Check(dev().drv().cuMemAddressReserve(&p, req.size(), req.alignment(), 0, 0),
                  "cuMemAddressReserve"));
  vmm_.AddReservation(p, req.size());
  rep.set_dptr(p);
  return OkStatus();
}

Status Session::OnMemAddressFree(const v1::MemRangeRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(vmm_.FreeReservation(req.ptr(), req.size()));
  return dev().Check(dev().drv().cuMemAddressFree(req.ptr(), req.size()), "cuMemAddressFree");
}

Status Session::OnMemCreate(const v1::MemCreateRequest& req, v1::HandleReply& rep) {
  RETURN_IF_ERROR(NeedVmmSize(req.size(), "an allocation"));
  RETURN_IF_ERROR(ClaimCharge(req.size(), "created"));
  const CUmemAllocationProp prop = dev().DeviceMemory();
  CUmemGenericAllocationHandle h = 0;
  if (Status st = dev().Check(dev().drv().cuMemCreate(&h, req.size(), &prop, 0), "cuMemCreate");
      !st.ok()) {
    env_.ledger->Release(who_.ledger_id, req.size());
    return st;
  }
  allocated_bytes_ += req.size();
  const uint64_t id = next_handle_++;
  vmm_.AddPhysical(id, {.driver_handle = h, .size = req.size(), .charged = req.size()});
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnMemRelease(const v1::MemReleaseRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(VmmTable::Freed freed, vmm_.Release(req.handle()));
  // Nothing maps what this frees (its last unmap waited for the tenant's work): it goes back
  // now, as NVIDIA's cuMemRelease gives it back.
  return GiveBackVmm(std::move(freed), /*wait=*/false);
}

Status Session::OnMemMap(const v1::MemMapRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(VmmTable::Physical * p, vmm_.Find(req.handle()));
  const uint64_t driver_handle = p->driver_handle;
  RETURN_IF_ERROR(vmm_.Map(req.ptr(), req.size(), req.offset(), req.handle()));
  Status st = dev().Check(
      dev().drv().cuMemMap(req.ptr(), req.size(), req.offset(), driver_handle, 0), "cuMemMap");
  if (!st.ok()) (void)vmm_.TakeMappings(req.ptr(), req.size());  // it never was
  return st;
}

Status Session::OnMemUnmap(const v1::MemRangeRequest& req, v1::AccessRuns&) {
  ASSIGN_OR_RETURN(VmmTable::Freed freed, vmm_.TakeMappings(req.ptr(), req.size()));
  return GiveBackVmm(std::move(freed), /*wait=*/true);
}

Status Session::OnMemSetAccess(const v1::MemSetAccessRequest& req, v1::AccessRuns& rep) {
  RETURN_IF_ERROR(vmm_.CheckWhole(req.ptr(), req.size()));
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = dev().ordinal();
  desc.flags =
      req.read_write() ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  if (req.read_write()) {
    RETURN_IF_ERROR(
        dev().Check(dev().drv().cuMemSetAccess(req.ptr(), req.size(), &desc, 1), "cuMemSetAccess"));
    ASSIGN_OR_RETURN(VmmTable::AccessChange change, vmm_.SetAccess(req.ptr(), req.size(), true));
    ToReply(change, rep);
    return OkStatus();
  }
  // Taking access away: no new call may name the range from now on, and the device's access
  // goes once the tenant's work that may still use it is done, as an unmap's.
  ASSIGN_OR_RETURN(VmmTable::AccessChange change, vmm_.SetAccess(req.ptr(), req.size(), false));
  auto result = std::make_shared<v1::AccessRuns>();
  ToReply(change, *result);
  Held held;
  held.epoch = epoch_;
  held.destroy.push_back([this, ptr = req.ptr(), size = req.size(), desc] {
    (void)dev().drv().cuMemSetAccess(ptr, size, &desc, 1);
  });
  return GiveBackWhenDone(std::move(held), /*reply=*/true, std::move(result));
}

Status Session::OnMemRetainHandle(const v1::MemRetainRequest& req, v1::MemRetainReply& rep) {
  ASSIGN_OR_RETURN(VmmTable::Retained r, vmm_.Retain(req.ptr()));
  rep.set_handle(r.handle);
  rep.set_size(r.size);
  return OkStatus();
}

}  // namespace remora::server
