// server/vmm_table.h - a tenant's virtual memory management: its address reservations,
// physical allocations, mappings and what of them is accessible.
//
// The bookkeeping behind libcuda.so.1's cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess and their inverses (server/handlers/vmm.cc makes the driver calls). Every
// address a tenant names is checked here first, so a call can only ever touch the tenant's
// own reservations and allocations:
// - a mapping lies inside one reservation of the tenant's, overlaps no other mapping, and
//   reads a part of one physical allocation of the tenant's;
// - access is set, and mappings are unmapped, a whole number of adjacent mappings at a time;
// - a reservation is freed only with nothing mapped in it.
// Accessible mappings are device memory as allocations are: `accessible()` holds them merged
// where adjacent, so a copy that spans two adjacent mappings is one covered range.
//
// A physical allocation's memory (charged to the tenant's quota) goes back once the tenant has
// released every handle to it and nothing maps it any more: Release and TakeMappings say how
// many charged bytes that frees. The server holds one driver reference per allocation, given
// up then (`driver_release`), so the tenant's handles are counted here alone.
//
// Not thread-safe: used by the thread serving the session.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "proto/range_table.h"
#include "proto/status.h"
#include "server/tables.h"

namespace remora::server {

class VmmTable : public TenantTable {
 public:
  // The driver's side of one physical allocation.
  struct Physical {
    uint64_t driver_handle = 0;  // CUmemGenericAllocationHandle
    uint64_t size = 0;
    uint64_t charged = 0;  // bytes booked in the ledger for it
    uint32_t handle_refs = 1;
    uint32_t mappings = 0;
  };
  struct Mapping {
    uint64_t size = 0;
    uint64_t handle = 0;  // the tenant's
    bool read_write = false;
  };
  // What is accessible around a change: the ranges of accessible() starting in [lo, hi) were
  // replaced by `runs`.
  struct AccessChange {
    uint64_t lo = 0, hi = 0;
    std::vector<RangeTable::Range> runs;
  };
  // What a release or an unmap leaves for the driver and the ledger.
  struct Freed {
    std::vector<uint64_t> driver_release;              // handles to cuMemRelease
    std::vector<std::pair<uint64_t, uint64_t>> unmap;  // [ptr, size) to cuMemUnmap
    uint64_t charged = 0;                              // bytes the ledger gets back
    AccessChange access;                               // an unmap's
  };

  // `max_reserved`: the most address space the tenant may hold reserved at once.
  VmmTable(TableSet& set, uint64_t max_reserved) : max_reserved_(max_reserved) { set.Add(this); }
  VmmTable(const VmmTable&) = delete;
  VmmTable& operator=(const VmmTable&) = delete;

  // May `size` more bytes be reserved? Errors: kMemoryAllocation past max_reserved, naming it.
  Status CheckReserve(uint64_t size) const;
  void AddReservation(uint64_t base, uint64_t size);
  // Takes the reservation [base, base + size) out. Errors: kInvalidValue unless it is exactly
  // one reservation of the tenant's with nothing mapped in it.
  Status FreeReservation(uint64_t base, uint64_t size);

  // Enters a new physical allocation under the tenant's handle `handle`.
  void AddPhysical(uint64_t handle, Physical p);
  // The tenant gives handle `handle` up. Errors: kInvalidValue for a handle it does not hold.
  Result<Freed> Release(uint64_t handle);
  // Checks and enters a mapping of [offset, offset + size) of `handle` at [ptr, ptr + size).
  // Errors: kInvalidValue (outside the tenant's reservations, overlapping a mapping, past the
  // allocation's end); the handle's miss is kInvalidValue too, as the driver's.
  Status Map(uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle);
  // Takes the mappings covering exactly [ptr, ptr + size) out; they stop being accessible at
  // once. Errors: kInvalidValue unless the range is a whole number of adjacent mappings.
  Result<Freed> TakeMappings(uint64_t ptr, uint64_t size);
  // kInvalidValue unless [ptr, ptr + size) is a whole number of adjacent mappings.
  Status CheckWhole(uint64_t ptr, uint64_t size);
  // Marks the mappings covering exactly [ptr, ptr + size) read-write or inaccessible.
  // Errors: as CheckWhole.
  Result<AccessChange> SetAccess(uint64_t ptr, uint64_t size, bool read_write);
  // The tenant's handle of the allocation mapped at `ptr` (and its size), with one more
  // reference. Errors: kInvalidValue where nothing of the tenant's is mapped.
  struct Retained {
    uint64_t handle = 0, size = 0;
  };
  Result<Retained> Retain(uint64_t ptr);
  // The allocation behind the tenant's `handle`. Errors: kInvalidValue unless it holds one.
  Result<Physical*> Find(uint64_t handle);

  // Accessible mappings, adjacent ones merged: device memory a call may name.
  const RangeTable& accessible() const { return accessible_; }
  uint64_t reserved_bytes() const { return reserved_bytes_; }
  size_t mappings() const { return mappings_.size(); }
  size_t physicals() const { return physicals_.size(); }

  // TenantTable: the context is gone (drop everything), or the tenant goes: every mapping is
  // unmapped, every allocation released and every reservation freed, in that order, by a
  // function added to `held.destroy` that calls `undo` with what to give back; the charged
  // bytes are the session's to count (they are in its allocated total).
  void Forget() override;
  void Surrender(Held& held) override;
  // What Surrender gives the driver, set by the session: called with everything to undo.
  struct Everything {
    std::vector<std::pair<uint64_t, uint64_t>> unmap, reservations;
    std::vector<uint64_t> driver_release;
  };
  std::function<void(const Everything&)> undo;

 private:
  // The mappings that cover exactly [ptr, ptr + size), adjacent and in order; empty if none do.
  std::vector<std::map<uint64_t, Mapping>::iterator> Whole(uint64_t ptr, uint64_t size);
  // Rebuilds accessible_ around [ptr, ptr + size) after its mappings changed.
  AccessChange Reaccess(uint64_t ptr, uint64_t size);
  // The physical's memory goes back if nothing holds it: adds to `freed`.
  void FreeIfUnused(uint64_t handle, Freed& freed);

  const uint64_t max_reserved_;
  uint64_t reserved_bytes_ = 0;
  std::map<uint64_t, uint64_t> reservations_;  // base -> size
  std::map<uint64_t, Physical> physicals_;     // the tenant's handle -> allocation
  std::map<uint64_t, Mapping> mappings_;       // base -> mapping
  RangeTable accessible_;
};

}  // namespace remora::server
