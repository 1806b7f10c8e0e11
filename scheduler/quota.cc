// scheduler/quota.cc - a declared quota checked and turned into a grant.
#include "scheduler/quota.h"

#include <algorithm>
#include <optional>

namespace remora::sched {

namespace {

// The priority `q` declares (normal if none); nullopt for an unknown name.
std::optional<Priority> PriorityOf(const TenantQuota& q) {
  return q.priority.empty() ? Priority::kNormal : ParsePriority(q.priority);
}

}  // namespace

Result<Share> ShareOf(const TenantQuota& q, const Quota& memory, uint64_t usable, double weight) {
  // Written so that NaN fails: it is no fraction at all.
  auto fraction = [](double f) { return f >= 0 && f <= 1; };
  if (!fraction(q.compute) || !fraction(q.compute_limit))
    return Error(err::kInvalidValue, "gpu-compute and gpu-compute-limit are fractions in (0, 1]");
  if (q.compute_limit > 0 && q.compute_limit < q.compute)
    return Error(err::kInvalidValue, "gpu-compute-limit is below gpu-compute");
  const std::optional<Priority> priority = PriorityOf(q);
  if (!priority)
    return Error(err::kInvalidValue, "priority '" + q.priority + "' is none of high, normal, low");
  double request = q.compute;
  if (request == 0 && usable != 0)
    request = static_cast<double>(memory.request) / static_cast<double>(usable);
  if (request == 0) request = kDefaultComputeShare * weight;
  return ComputeShare(request, q.compute_limit, *priority);
}

Status CapOpenQuota(const TenantQuota& q, const OpenCaps& caps, uint64_t usable, Quota& quota) {
  const double f = caps.max_fraction;
  const auto cap = static_cast<uint64_t>(f * static_cast<double>(usable));
  const std::string why = " (open mode: --open-max-fraction " + std::to_string(f).substr(0, 4) +
                          " of the GPU, " + std::to_string(cap) +
                          " bytes; a tenants file entry may ask for more)";
  if (quota.request > cap)
    return Error(err::kMemoryAllocation, "a guaranteed " + std::to_string(quota.request) +
                                             " bytes is more than a client may declare" + why);
  if (q.compute > f)
    return Error(err::kInvalidValue, "a guaranteed compute share of " +
                                         std::to_string(q.compute).substr(0, 4) +
                                         " is more than a client may declare" + why);
  const std::optional<Priority> p = PriorityOf(q);
  if (p && *p < caps.max_priority)
    return Error(err::kNotPermitted,
                 "priority " + q.priority + " is above what a client may declare here (" +
                     PriorityName(caps.max_priority) +
                     ", --open-max-priority; a tenants file entry may have it)");
  quota.limit = std::min(quota.limit, std::max(cap, quota.request));
  return OkStatus();
}

Result<Grant> GrantOf(const TenantQuota& q, uint64_t usable, double weight, ProjectId project,
                      const OpenCaps* open) {
  Grant g;
  ASSIGN_OR_RETURN(g.memory, ResolveQuota(q.memory, usable));
  if (open != nullptr) RETURN_IF_ERROR(CapOpenQuota(q, *open, usable, g.memory));
  ASSIGN_OR_RETURN(g.share, ShareOf(q, g.memory, usable, weight));
  g.share.project = project;
  return g;
}

}  // namespace remora::sched
