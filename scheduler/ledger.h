// scheduler/ledger.h - the GPU memory ledger: who may hold how many bytes.
//
// Pure bookkeeping, no CUDA and no clocks. Each tenant has a request (bytes
// guaranteed), a limit (bytes it may hold while memory is free) and a
// priority. Admission keeps the sum of requests within the device's usable
// memory. Memory a tenant holds above its request is a loan: when another
// tenant asks for memory within its own request and too little is free, the
// ledger picks borrowers to reclaim (terminate). No tenant ever holds a byte
// past its limit, and the bytes booked to live tenants never pass usable.
//
//   MemoryLedger ledger(usable);
//   Decision d = ledger.AdmitOrEvict(id, {.request = 1 << 30, .limit = 2ull << 30},
//                                    Priority::kNormal);
//   if (!d.ok()) return d.status;
//   Decision c = ledger.Claim(id, n);        // before allocating
//   for (TenantId v : c.victims) terminate v, free all it held, ledger.Remove(v);
//   ... then allocate the n bytes
//   ledger.Release(id, n);                   // after freeing
//
// Reclaim is applied inside the ledger, atomically, by reservation: a Claim or
// an AdmitOrEvict that needs victims books the requester's bytes (or request)
// at once and marks the victims reclaimed. A reclaimed tenant's requests stop
// counting, it may charge nothing more, and what it holds stays booked until
// the caller calls Remove for it; so the memory it frees goes to the
// requester, never to whoever asks first. The caller must not make the
// requester's allocation until every victim listed has been removed.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "proto/status.h"
#include "scheduler/tenant.h"

namespace remora::sched {

struct Quota {
  uint64_t request = 0;  // guaranteed bytes
  uint64_t limit = 0;    // burstable bytes; >= request
};

// A quota as declared: fractions of usable memory or bytes, one kind only.
struct QuotaSpec {
  double fraction = 0, fraction_limit = 0;
  uint64_t bytes = 0, bytes_limit = 0;
};

// Turns a declared quota into bytes against `usable`. An empty spec means
// request 0, limit everything. A limit alone means request 0; a request alone
// means limit == request.
// Errors: kInvalidValue when kinds are mixed, fractions fall outside (0, 1],
// or limit < request.
Result<Quota> ResolveQuota(const QuotaSpec& spec, uint64_t usable);

// What an admission or a claim decided. When ok, the bytes (or the request)
// are booked, and `victims` lists the sessions to terminate and Remove before
// that memory is really free: new victims first, then any still being
// reclaimed for earlier decisions (terminating one twice must be harmless).
// When not ok nothing changed; `status` says why, naming what is free and
// who holds what.
struct [[nodiscard]] Decision {
  Status status;
  std::vector<TenantId> victims;
  bool ok() const { return status.ok(); }
};

class MemoryLedger {
 public:
  explicit MemoryLedger(uint64_t usable) : usable_(usable) {}

  // Adds a tenant. Errors: kMemoryAllocation if its request does not fit beside
  // the requests already admitted; kInvalidValue if limit < request or the id
  // is taken. Thread-safe.
  Status Admit(TenantId id, Quota quota);
  // Adds a tenant of `priority`. If its request does not fit beside those
  // admitted, evicts tenants of strictly lower priority, lowest class first,
  // then the most recently admitted, until it does (see Decision).
  // Errors: kInvalidValue as Admit; kMemoryAllocation if evicting every
  // lower-priority tenant would not make room. Thread-safe.
  Decision AdmitOrEvict(TenantId id, Quota quota, Priority priority);
  // Gives an admitted tenant a new quota and priority (a reloaded tenants file);
  // what it holds stays charged. A limit below what it holds takes nothing back:
  // its next Charge or Claim fails until it is under the limit again.
  // Errors: kInvalidValue if limit < request, the tenant is unknown or being
  // reclaimed; kMemoryAllocation if the new request does not fit beside the
  // other tenants' requests (nothing changes then). Thread-safe.
  Status Requota(TenantId id, Quota quota, Priority priority);
  // Drops a tenant (reclaimed or not) and whatever it still had charged.
  // Thread-safe.
  void Remove(TenantId id);
  // Reserves `bytes` for the tenant from free memory only, never reclaiming.
  // Errors: kMemoryAllocation past its limit, past the device's free memory
  // (message says which) or for a reclaimed tenant. Thread-safe.
  Status Charge(TenantId id, uint64_t bytes);
  // Reserves `bytes` for the tenant, reclaiming loans if it must. Within the
  // tenant's request it succeeds: if too little is free, borrowers (tenants
  // above their request) are reclaimed, lowest priority first, then largest
  // overage first, until their memory covers the shortfall (see Decision).
  // Between request and limit it succeeds only from free memory.
  // Errors: kMemoryAllocation past the limit, short of free memory above the
  // request, or for a reclaimed tenant; kInvalidValue for an unknown one.
  // Thread-safe.
  Decision Claim(TenantId id, uint64_t bytes);
  // Returns bytes previously charged. REQUIRES: bytes <= charged (clamped).
  void Release(TenantId id, uint64_t bytes);

  struct View {
    uint64_t free;   // what the tenant could still allocate now
    uint64_t total;  // its limit
    uint64_t used;
    Quota quota;
  };
  // The tenant's slice, as cudaMemGetInfo shows it: free is what Claim would
  // grant now, its guaranteed remainder included. REQUIRES: admitted.
  View Slice(TenantId id) const;
  uint64_t usable() const { return usable_; }
  // The sum of live (not reclaimed) tenants' requests.
  uint64_t requested() const;
  // True if `id` was chosen as a victim and not yet removed.
  bool Reclaimed(TenantId id) const;
  // Victims chosen and not yet removed, in the order they were chosen.
  std::vector<TenantId> Pending() const;

 private:
  struct Entry {
    Quota quota;
    uint64_t used = 0;
    Priority priority = Priority::kNormal;
    uint64_t admitted = 0;   // admission order
    uint64_t reclaimed = 0;  // order in which it was made a victim; 0: live
  };
  void ReclaimLocked(TenantId id, Entry& e);
  std::vector<TenantId> PendingLocked() const;
  std::string HoldersLocked() const;
  const uint64_t usable_;
  mutable std::mutex mu_;
  std::map<TenantId, Entry> tenants_;
  uint64_t used_ = 0;        // booked, reclaimed tenants' bytes included
  uint64_t reclaiming_ = 0;  // bytes still held by reclaimed tenants
  uint64_t requested_ = 0;   // live tenants only
  uint64_t seq_ = 0;
};

}  // namespace remora::sched
