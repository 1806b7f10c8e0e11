// scheduler/ledger.cc - the GPU memory ledger.
#include "scheduler/ledger.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace remora::sched {

Result<Quota> ResolveQuota(const QuotaSpec& s, uint64_t usable) {
  // Written so that NaN fails every check: it is no fraction at all.
  for (double f : {s.fraction, s.fraction_limit})
    if (!(f >= 0 && f <= 1)) return Error(err::kInvalidValue, "GPU fractions lie in (0, 1]");
  bool fractions = s.fraction > 0 || s.fraction_limit > 0;
  bool bytes = s.bytes > 0 || s.bytes_limit > 0;
  if (fractions && bytes)
    return Error(err::kInvalidValue, "a quota is either fractions of the GPU or bytes, not both");
  Quota q;
  if (fractions) {
    q.request = static_cast<uint64_t>(s.fraction * static_cast<double>(usable));
    q.limit = s.fraction_limit > 0
                  ? static_cast<uint64_t>(s.fraction_limit * static_cast<double>(usable))
                  : q.request;
  } else if (bytes) {
    q.request = s.bytes;
    q.limit = s.bytes_limit > 0 ? s.bytes_limit : s.bytes;
  } else {
    q.request = 0;
    q.limit = usable;
  }
  if (q.limit < q.request)
    return Error(err::kInvalidValue, "the memory limit is below the request");
  return q;
}

Status MemoryLedger::Admit(TenantId id, Quota quota) {
  if (quota.limit < quota.request)
    return Error(err::kInvalidValue, "the memory limit is below the request");
  std::lock_guard lock(mu_);
  if (tenants_.count(id)) return Error(err::kInvalidValue, "tenant id already admitted");
  if (quota.request > usable_ - requested_)
    return Error(err::kMemoryAllocation,
                 "requested " + std::to_string(quota.request) + " bytes but only " +
                     std::to_string(usable_ - requested_) + " of " + std::to_string(usable_) +
                     " usable bytes are not yet guaranteed to other tenants");
  requested_ += quota.request;
  tenants_[id] = Entry{quota, 0};
  return OkStatus();
}

void MemoryLedger::Remove(TenantId id) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return;
  requested_ -= it->second.quota.request;
  used_ -= it->second.used;
  tenants_.erase(it);
}

Status MemoryLedger::Charge(TenantId id, uint64_t bytes) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return Error(err::kInvalidValue, "unknown tenant");
  Entry& e = it->second;
  if (bytes > e.quota.limit - e.used)
    return Error(err::kMemoryAllocation,
                 std::to_string(bytes) + " more bytes would pass the tenant's limit (" +
                     std::to_string(e.used) + " of " + std::to_string(e.quota.limit) + " used)");
  if (bytes > usable_ - used_)
    return Error(err::kMemoryAllocation, std::to_string(bytes) +
                                             " more bytes do not fit on the device (" +
                                             std::to_string(usable_ - used_) + " free)");
  e.used += bytes;
  used_ += bytes;
  return OkStatus();
}

void MemoryLedger::Release(TenantId id, uint64_t bytes) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return;
  bytes = std::min(bytes, it->second.used);
  it->second.used -= bytes;
  used_ -= bytes;
}

MemoryLedger::View MemoryLedger::Slice(TenantId id) const {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return {};
  const Entry& e = it->second;
  uint64_t free = std::min(e.quota.limit - e.used, usable_ - used_);
  return {free, e.quota.limit, e.used, e.quota};
}

uint64_t MemoryLedger::requested() const {
  std::lock_guard lock(mu_);
  return requested_;
}

}  // namespace remora::sched
