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
  tenants_[id] = Entry{quota, 0, Priority::kNormal, ++seq_, 0};
  return OkStatus();
}

namespace {

uint64_t SatSub(uint64_t a, uint64_t b) {
  return a > b ? a - b : 0;
}

}  // namespace

// Makes `e` a victim: its request stops counting, its bytes stay booked.
void MemoryLedger::ReclaimLocked(TenantId, Entry& e) {
  e.reclaimed = ++seq_;
  requested_ -= e.quota.request;
  reclaiming_ += e.used;
}

std::vector<TenantId> MemoryLedger::PendingLocked() const {
  std::vector<std::pair<uint64_t, TenantId>> p;
  for (const auto& [id, e] : tenants_)
    if (e.reclaimed) p.emplace_back(e.reclaimed, id);
  std::sort(p.begin(), p.end());
  std::vector<TenantId> out;
  for (const auto& [order, id] : p) out.push_back(id);
  return out;
}

// "free F of U usable; held: tenant 3 (low) uses 600 of request 100 limit 800, ..."
// naming the eight largest holders.
std::string MemoryLedger::HoldersLocked() const {
  std::vector<std::pair<uint64_t, TenantId>> by_use;
  for (const auto& [id, e] : tenants_) by_use.emplace_back(e.used, id);
  std::sort(by_use.begin(), by_use.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  std::string s = std::to_string(SatSub(usable_, used_)) + " of " + std::to_string(usable_) +
                  " usable bytes free, " + std::to_string(SatSub(usable_, requested_)) +
                  " not guaranteed; held:";
  constexpr size_t kNamed = 8;
  for (size_t i = 0; i < by_use.size() && i < kNamed; ++i) {
    const Entry& e = tenants_.at(by_use[i].second);
    s += (i ? ", tenant " : " tenant ") + std::to_string(by_use[i].second) + " (" +
         PriorityName(e.priority) + (e.reclaimed ? ", being reclaimed" : "") + ") uses " +
         std::to_string(e.used) + " of request " + std::to_string(e.quota.request) + " limit " +
         std::to_string(e.quota.limit);
  }
  if (by_use.size() > kNamed) s += ", and " + std::to_string(by_use.size() - kNamed) + " more";
  if (by_use.empty()) s += " nothing";
  return s;
}

Decision MemoryLedger::AdmitOrEvict(TenantId id, Quota quota, Priority priority) {
  Decision d;
  if (quota.limit < quota.request) {
    d.status = Error(err::kInvalidValue, "the memory limit is below the request");
    return d;
  }
  std::lock_guard lock(mu_);
  if (tenants_.count(id)) {
    d.status = Error(err::kInvalidValue, "tenant id already admitted");
    return d;
  }
  uint64_t room = SatSub(usable_, requested_);
  if (quota.request > room) {
    // Lowest class first, then the most recently admitted.
    std::vector<std::pair<std::pair<int, uint64_t>, TenantId>> lower;
    for (const auto& [tid, e] : tenants_)
      if (!e.reclaimed && e.priority > priority)
        lower.push_back({{static_cast<int>(e.priority), e.admitted}, tid});
    std::sort(lower.begin(), lower.end(), std::greater<>());
    size_t take = 0;
    for (; take < lower.size() && room < quota.request; ++take)
      room += tenants_.at(lower[take].second).quota.request;
    if (room < quota.request) {
      d.status = Error(err::kMemoryAllocation,
                       "a " + std::string(PriorityName(priority)) + "-priority tenant requested " +
                           std::to_string(quota.request) +
                           " bytes, more than evicting every lower-priority tenant would free: " +
                           HoldersLocked());
      return d;
    }
    for (size_t i = 0; i < take; ++i) {
      ReclaimLocked(lower[i].second, tenants_.at(lower[i].second));
      d.victims.push_back(lower[i].second);
    }
  }
  requested_ += quota.request;
  tenants_[id] = Entry{quota, 0, priority, ++seq_, 0};
  return d;
}

Status MemoryLedger::Requota(TenantId id, Quota quota, Priority priority) {
  if (quota.limit < quota.request)
    return Error(err::kInvalidValue, "the memory limit is below the request");
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return Error(err::kInvalidValue, "no such tenant");
  Entry& e = it->second;
  if (e.reclaimed) return Error(err::kInvalidValue, "the tenant is being reclaimed");
  const uint64_t others = requested_ - e.quota.request;
  if (quota.request > SatSub(usable_, others))
    return Error(err::kMemoryAllocation,
                 "a request of " + std::to_string(quota.request) + " bytes does not fit: only " +
                     std::to_string(SatSub(usable_, others)) + " of " + std::to_string(usable_) +
                     " usable bytes are not guaranteed to other tenants");
  requested_ = others + quota.request;
  e.quota = quota;
  e.priority = priority;
  return OkStatus();
}

void MemoryLedger::Remove(TenantId id) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return;
  if (it->second.reclaimed)
    reclaiming_ -= it->second.used;
  else
    requested_ -= it->second.quota.request;
  used_ -= it->second.used;
  tenants_.erase(it);
}

Decision MemoryLedger::Claim(TenantId id, uint64_t bytes) {
  Decision d;
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) {
    d.status = Error(err::kInvalidValue, "unknown tenant");
    return d;
  }
  Entry& e = it->second;
  if (e.reclaimed) {
    d.status = Error(err::kMemoryAllocation, "the session's memory is being reclaimed");
    return d;
  }
  if (bytes > SatSub(e.quota.limit, e.used)) {
    d.status =
        Error(err::kMemoryAllocation,
              std::to_string(bytes) + " more bytes would pass the tenant's limit (" +
                  std::to_string(e.used) + " of " + std::to_string(e.quota.limit) + " used)");
    return d;
  }
  if (bytes > SatSub(usable_, used_)) {
    if (e.used + bytes > e.quota.request) {
      d.status = Error(err::kMemoryAllocation,
                       std::to_string(bytes) + " more bytes pass the tenant's request (" +
                           std::to_string(e.used) + " of " + std::to_string(e.quota.request) +
                           " used) and only free memory is lent: " + HoldersLocked());
      return d;
    }
    // Within the request: what live tenants have not booked will be there once
    // the pending victims are gone; reclaim borrowers for the rest.
    uint64_t avail = usable_ - (used_ - reclaiming_);
    if (bytes > avail) {
      std::vector<std::pair<std::pair<int, uint64_t>, TenantId>> borrowers;
      for (const auto& [tid, b] : tenants_)
        if (!b.reclaimed && tid != id && b.used > b.quota.request)
          borrowers.push_back({{static_cast<int>(b.priority), b.used - b.quota.request}, tid});
      // Lowest priority first, then largest overage, then lowest id.
      std::sort(borrowers.begin(), borrowers.end(), [](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first > b.first;
        return a.second < b.second;
      });
      size_t take = 0;
      uint64_t freed = 0;
      while (take < borrowers.size() && avail + freed < bytes)
        freed += tenants_.at(borrowers[take++].second).used;
      if (avail + freed < bytes) {  // only if requests were over-admitted
        d.status =
            Error(err::kMemoryAllocation, "reclaiming every loan would not free " +
                                              std::to_string(bytes) + " bytes: " + HoldersLocked());
        return d;
      }
      for (size_t i = 0; i < take; ++i) {
        ReclaimLocked(borrowers[i].second, tenants_.at(borrowers[i].second));
        d.victims.push_back(borrowers[i].second);
      }
    }
  }
  e.used += bytes;
  used_ += bytes;
  if (used_ > usable_) {  // booked ahead of reclaim: wait for every pending victim
    for (TenantId v : PendingLocked())
      if (std::find(d.victims.begin(), d.victims.end(), v) == d.victims.end())
        d.victims.push_back(v);
  }
  return d;
}

Status MemoryLedger::Charge(TenantId id, uint64_t bytes) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return Error(err::kInvalidValue, "unknown tenant");
  Entry& e = it->second;
  if (e.reclaimed) return Error(err::kMemoryAllocation, "the session's memory is being reclaimed");
  if (bytes > SatSub(e.quota.limit, e.used))
    return Error(err::kMemoryAllocation,
                 std::to_string(bytes) + " more bytes would pass the tenant's limit (" +
                     std::to_string(e.used) + " of " + std::to_string(e.quota.limit) + " used)");
  if (bytes > SatSub(usable_, used_))
    return Error(err::kMemoryAllocation, std::to_string(bytes) +
                                             " more bytes do not fit on the device (" +
                                             std::to_string(SatSub(usable_, used_)) + " free)");
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
  if (it->second.reclaimed) reclaiming_ -= bytes;
}

MemoryLedger::View MemoryLedger::Slice(TenantId id) const {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end()) return {};
  const Entry& e = it->second;
  uint64_t free = 0;
  if (!e.reclaimed)
    free = std::max(std::min(SatSub(e.quota.limit, e.used), SatSub(usable_, used_)),
                    SatSub(e.quota.request, e.used));
  return {free, e.quota.limit, e.used, e.quota};
}

uint64_t MemoryLedger::requested() const {
  std::lock_guard lock(mu_);
  return requested_;
}

bool MemoryLedger::Reclaimed(TenantId id) const {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  return it != tenants_.end() && it->second.reclaimed != 0;
}

std::vector<TenantId> MemoryLedger::Pending() const {
  std::lock_guard lock(mu_);
  return PendingLocked();
}

}  // namespace remora::sched
