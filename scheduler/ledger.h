// scheduler/ledger.h - the GPU memory ledger: who may hold how many bytes.
//
// Pure bookkeeping, no CUDA and no clocks. Each tenant has a request (bytes
// guaranteed) and a limit (bytes it may hold while memory is free). Admission
// keeps the sum of requests within the device's usable memory; a charge never
// takes a tenant past its limit nor the device past its usable memory.
//
//   MemoryLedger ledger(usable);
//   RETURN_IF_ERROR(ledger.Admit(id, {.request = 1 << 30, .limit = 2ull << 30}));
//   RETURN_IF_ERROR(ledger.Charge(id, n));   // before allocating
//   ledger.Release(id, n);                   // after freeing
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

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

class MemoryLedger {
 public:
  explicit MemoryLedger(uint64_t usable) : usable_(usable) {}

  // Adds a tenant. Errors: kMemoryAllocation if its request does not fit beside
  // the requests already admitted; kInvalidValue if limit < request or the id
  // is taken. Thread-safe.
  Status Admit(TenantId id, Quota quota);
  // Drops a tenant and whatever it still had charged. Thread-safe.
  void Remove(TenantId id);
  // Reserves `bytes` for the tenant. Errors: kMemoryAllocation past its limit
  // or past the device's usable memory (message says which). Thread-safe.
  Status Charge(TenantId id, uint64_t bytes);
  // Returns bytes previously charged. REQUIRES: bytes <= charged (clamped).
  void Release(TenantId id, uint64_t bytes);

  struct View {
    uint64_t free;   // what the tenant could still allocate now
    uint64_t total;  // its limit
    uint64_t used;
    Quota quota;
  };
  // The tenant's slice, as cudaMemGetInfo shows it. REQUIRES: admitted.
  View Slice(TenantId id) const;
  uint64_t usable() const { return usable_; }
  uint64_t requested() const;

 private:
  struct Entry {
    Quota quota;
    uint64_t used = 0;
  };
  const uint64_t usable_;
  mutable std::mutex mu_;
  std::map<TenantId, Entry> tenants_;
  uint64_t used_ = 0;
  uint64_t requested_ = 0;
};

}  // namespace remora::sched
