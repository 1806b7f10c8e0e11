// server/vmm_table.cc - the bookkeeping of a tenant's reservations, allocations and mappings.
#include "server/vmm_table.h"

#include <string>

#include "server/handlers/util.h"

namespace remora::server {

namespace {
std::string RangeText(uint64_t ptr, uint64_t size) {
  return "[" + Hex(ptr) + ", +" + std::to_string(size) + ")";
}
bool Overflows(uint64_t ptr, uint64_t size) {
  return size == 0 || ptr + size < ptr;
}
}  // namespace

Status VmmTable::CheckReserve(uint64_t size) const {
  if (size > max_reserved_ || reserved_bytes_ > max_reserved_ - size)
    return Error(err::kMemoryAllocation,
                 "reserving " + std::to_string(size) + " more bytes of address space would pass " +
                     std::to_string(max_reserved_) + ", the most a tenant may hold reserved (" +
                     std::to_string(reserved_bytes_) + " held)");
  return OkStatus();
}

void VmmTable::AddReservation(uint64_t base, uint64_t size) {
  reservations_[base] = size;
  reserved_bytes_ += size;
}

Status VmmTable::FreeReservation(uint64_t base, uint64_t size) {
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second != size)
    return Error(err::kInvalidValue,
                 RangeText(base, size) + " is not one of this tenant's address reservations");
  auto m = mappings_.lower_bound(base);
  if (m != mappings_.end() && m->first < base + size)
    return Error(err::kInvalidValue, "the reservation " + RangeText(base, size) +
                                         " still has mappings (unmap them first, at " +
                                         Hex(m->first) + ")");
  reserved_bytes_ -= size;
  reservations_.erase(it);
  return OkStatus();
}

void VmmTable::AddPhysical(uint64_t handle, Physical p) {
  physicals_[handle] = p;
}

Result<VmmTable::Physical*> VmmTable::Find(uint64_t handle) {
  auto it = physicals_.find(handle);
  if (it == physicals_.end() || it->second.handle_refs == 0)
    return Error(err::kInvalidValue,
                 "allocation handle " + Hex(handle) + " is not one this tenant holds");
  return &it->second;
}

void VmmTable::FreeIfUnused(uint64_t handle, Freed& freed) {
  auto it = physicals_.find(handle);
  if (it == physicals_.end() || it->second.handle_refs > 0 || it->second.mappings > 0) return;
  freed.driver_release.push_back(it->second.driver_handle);
  freed.charged += it->second.charged;
  physicals_.erase(it);
}

Result<VmmTable::Freed> VmmTable::Release(uint64_t handle) {
  ASSIGN_OR_RETURN(Physical * p, Find(handle));
  Freed freed;
  --p->handle_refs;
  FreeIfUnused(handle, freed);
  return freed;
}

Status VmmTable::Map(uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle) {
  if (Overflows(ptr, size))
    return Error(err::kInvalidValue, "the mapping " + RangeText(ptr, size) + " is empty or wraps");
  ASSIGN_OR_RETURN(Physical * p, Find(handle));
  if (offset > p->size || size > p->size - offset)
    return Error(err::kInvalidValue, "mapping " + std::to_string(size) + " bytes at offset " +
                                         std::to_string(offset) + " reaches past the end of " +
                                         "allocation " + Hex(handle) + " (" +
                                         std::to_string(p->size) + " bytes)");
  auto r = reservations_.upper_bound(ptr);
  if (r == reservations_.begin() || ptr - std::prev(r)->first >= std::prev(r)->second ||
      size > std::prev(r)->second - (ptr - std::prev(r)->first))
    return Error(err::kInvalidValue,
                 RangeText(ptr, size) + " is not inside one of this tenant's address reservations");
  auto m = mappings_.lower_bound(ptr);
  const bool overlaps_next = m != mappings_.end() && m->first < ptr + size;
  const bool overlaps_prev =
      m != mappings_.begin() && std::prev(m)->first + std::prev(m)->second.size > ptr;
  if (overlaps_next || overlaps_prev)
    return Error(err::kInvalidValue, RangeText(ptr, size) + " overlaps a mapping already there");
  mappings_.emplace(ptr, Mapping{.size = size, .handle = handle, .read_write = false});
  ++p->mappings;
  return OkStatus();
}

std::vector<std::map<uint64_t, VmmTable::Mapping>::iterator> VmmTable::Whole(uint64_t ptr,
                                                                             uint64_t size) {
  std::vector<std::map<uint64_t, Mapping>::iterator> run;
  if (Overflows(ptr, size)) return run;
  uint64_t at = ptr;  // where the next mapping must start
  for (auto m = mappings_.find(ptr); m != mappings_.end() && m->first == at; ++m) {
    run.push_back(m);
    at = m->first + m->second.size;
    if (at >= ptr + size) {
      if (at != ptr + size) run.clear();
      return run;
    }
  }
  run.clear();
  return run;
}

Status VmmTable::CheckWhole(uint64_t ptr, uint64_t size) {
  if (Whole(ptr, size).empty())
    return Error(err::kInvalidValue,
                 RangeText(ptr, size) + " is not a whole number of this tenant's mappings");
  return OkStatus();
}

Result<VmmTable::Freed> VmmTable::TakeMappings(uint64_t ptr, uint64_t size) {
  RETURN_IF_ERROR(CheckWhole(ptr, size));
  auto run = Whole(ptr, size);
  Freed freed;
  for (auto m : run) {
    const uint64_t handle = m->second.handle;
    freed.unmap.emplace_back(m->first, m->second.size);
    mappings_.erase(m);
    --physicals_.at(handle).mappings;
    FreeIfUnused(handle, freed);
  }
  freed.access = Reaccess(ptr, size);
  return freed;
}

Result<VmmTable::AccessChange> VmmTable::SetAccess(uint64_t ptr, uint64_t size, bool read_write) {
  RETURN_IF_ERROR(CheckWhole(ptr, size));
  for (auto m : Whole(ptr, size)) m->second.read_write = read_write;
  return Reaccess(ptr, size);
}

Result<VmmTable::Retained> VmmTable::Retain(uint64_t ptr) {
  auto m = mappings_.upper_bound(ptr);
  if (m == mappings_.begin() || ptr - std::prev(m)->first >= std::prev(m)->second.size)
    return Error(err::kInvalidValue, Hex(ptr) + " is not in one of this tenant's mappings");
  const uint64_t handle = std::prev(m)->second.handle;
  Physical& p = physicals_.at(handle);
  ++p.handle_refs;
  return Retained{.handle = handle, .size = p.size};
}

VmmTable::AccessChange VmmTable::Reaccess(uint64_t ptr, uint64_t size) {
  uint64_t lo = ptr, hi = ptr + size;
  if (lo > 0)
    if (auto r = accessible_.Find(lo - 1)) lo = r->base;
  if (auto r = accessible_.Find(hi)) hi = r->base + r->size;
  accessible_.RemoveWithin(lo, hi);
  AccessChange change{.lo = lo, .hi = hi, .runs = {}};
  uint64_t run_base = 0, run_end = 0;
  bool in_run = false;
  auto close = [&] {
    accessible_.Add(run_base, run_end - run_base);
    change.runs.push_back({run_base, run_end - run_base});
    in_run = false;
  };
  for (auto m = mappings_.lower_bound(lo); m != mappings_.end() && m->first < hi; ++m) {
    const bool joins = in_run && m->first == run_end && m->second.read_write;
    if (!joins && in_run) close();
    if (!m->second.read_write) continue;
    if (!in_run) {
      run_base = m->first;
      in_run = true;
    }
    run_end = m->first + m->second.size;
  }
  if (in_run) close();
  return change;
}

void VmmTable::Forget() {
  reservations_.clear();
  physicals_.clear();
  mappings_.clear();
  accessible_.Clear();
  reserved_bytes_ = 0;
}

void VmmTable::Surrender(Held& held) {
  Everything e;
  for (const auto& [base, m] : mappings_) e.unmap.emplace_back(base, m.size);
  for (const auto& [handle, p] : physicals_) e.driver_release.push_back(p.driver_handle);
  for (const auto& [base, size] : reservations_) e.reservations.emplace_back(base, size);
  if (undo && (!e.unmap.empty() || !e.driver_release.empty() || !e.reservations.empty()))
    held.destroy.push_back([undo = undo, e = std::move(e)] { undo(e); });
  Forget();
}

}  // namespace remora::server
