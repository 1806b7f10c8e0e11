// scheduler/quota.h - what a tenant's declared quota grants: memory and GPU time.
//
// The admission rules, before the ledger: a quota as a tenant declares it (in
// the tenants file, or in open mode through REMORA_* variables) is checked and
// turned into the bytes the ledger books and the share the fair queue gives.
// In open mode a client declares its own quota, so what it may declare is
// capped (OpenCaps). Pure: no CUDA, no I/O, no clock.
//
//   TenantQuota q;
//   q.memory = {.fraction = 0.25, .fraction_limit = 0.5};
//   ASSIGN_OR_RETURN(Grant g, GrantOf(q, usable, /*weight=*/1, kNoProject, nullptr));
//   ledger.AdmitOrEvict(id, g.memory, g.share.priority);  // g.share: FairQueue::Configure
#pragma once

#include <cstdint>
#include <string>

#include "proto/status.h"
#include "scheduler/dispatch.h"
#include "scheduler/ledger.h"
#include "scheduler/tenant.h"

namespace remora::sched {

// The GPU-time weight of a tenant that declared neither a compute share nor a
// memory request: a small best-effort slice beside those that did.
inline constexpr double kDefaultComputeShare = 0.05;

// A quota as declared; 0 or empty means not given.
struct TenantQuota {
  QuotaSpec memory;          // fractions of usable memory, or bytes (ResolveQuota)
  double compute = 0;        // guaranteed share of GPU time; 0: the memory fraction
  double compute_limit = 0;  // cap on the share of GPU time; 0: none
  std::string priority;      // "high", "normal" or "low"; empty: normal
};

// Open mode's caps on what a client may declare: its guaranteed memory and
// compute share as a fraction of the GPU (its memory limit is cut to it), and
// its priority class.
struct OpenCaps {
  double max_fraction = 1;
  Priority max_priority = Priority::kHigh;
};

// What a tenant is granted: memory and GPU time.
struct Grant {
  Quota memory;
  Share share;
};

// The tenant's share of GPU time: q.compute and q.compute_limit and its
// priority; without q.compute, its memory request as a fraction of `usable`;
// without either (or with `usable` 0), kDefaultComputeShare * weight.
// Errors: kInvalidValue for a compute fraction below 0, above 1 or NaN, a
// compute limit below the compute request, or an unknown priority.
Result<Share> ShareOf(const TenantQuota& q, const Quota& memory, uint64_t usable, double weight);

// Open mode: refuses what a client may not declare under `caps` and cuts its
// memory limit (`quota`, as ResolveQuota gave it) to the cap. The cap is
// caps.max_fraction of `usable`. An unknown priority passes (ShareOf refuses it).
// Errors, in this order: kMemoryAllocation for a memory request above the cap;
// kInvalidValue for a compute request above caps.max_fraction; kNotPermitted
// for a priority above caps.max_priority. On error `quota` is unchanged.
Status CapOpenQuota(const TenantQuota& q, const OpenCaps& caps, uint64_t usable, Quota& quota);

// The grant `q` resolves to on `usable` bytes: a tenants file entry's quota
// (`open` null), or in open mode what the client declared, capped by *open.
// The share's project is `project`; `weight` as ShareOf.
// Errors: ResolveQuota's, then CapOpenQuota's, then ShareOf's.
Result<Grant> GrantOf(const TenantQuota& q, uint64_t usable, double weight, ProjectId project,
                      const OpenCaps* open);

}  // namespace remora::sched
