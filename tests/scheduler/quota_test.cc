// tests/scheduler/quota_test.cc - a declared quota's checks, open-mode caps and the grant.
#include "scheduler/quota.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>

namespace remora::sched {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The messages callers (and tests of the server) see.
const std::string kComputeRange = "gpu-compute and gpu-compute-limit are fractions in (0, 1]";
const std::string kComputeBelow = "gpu-compute-limit is below gpu-compute";
// Open mode at half of 1001 bytes: the cap is 500 (truncated).
const std::string kHalfOf1001 =
    " (open mode: --open-max-fraction 0.50 of the GPU, 500 bytes; a tenants file entry may ask "
    "for more)";

TenantQuota Compute(double request, double limit = 0, std::string priority = "") {
  TenantQuota q;
  q.compute = request;
  q.compute_limit = limit;
  q.priority = std::move(priority);
  return q;
}

TenantQuota Memory(QuotaSpec spec, std::string priority = "") {
  TenantQuota q;
  q.memory = spec;
  q.priority = std::move(priority);
  return q;
}

OpenCaps Caps(double fraction, Priority priority) {
  OpenCaps c;
  c.max_fraction = fraction;
  c.max_priority = priority;
  return c;
}

void ExpectError(const Status& s, int32_t code, const std::string& message) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_EQ(s.message(), message);
}

TEST(ShareOf, ComputeFractionsOutsideZeroToOneOrNaNAreRefused) {
  for (double bad : {-0.1, 1.5, kNaN, kInf, -kInf}) {
    SCOPED_TRACE(bad);
    ExpectError(ShareOf(Compute(bad), {}, 1000, 1).status(), err::kInvalidValue, kComputeRange);
    ExpectError(ShareOf(Compute(0, bad), {}, 1000, 1).status(), err::kInvalidValue, kComputeRange);
  }
  // 0 means "not given"; 1 is the whole GPU.
  EXPECT_TRUE(ShareOf(Compute(0, 0), {}, 1000, 1).ok());
  Result<Share> whole = ShareOf(Compute(1, 1), {}, 1000, 1);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->request, 1);
  EXPECT_EQ(whole->limit, 1);
}

TEST(ShareOf, ALimitBelowTheRequestIsRefused) {
  ExpectError(ShareOf(Compute(0.5, 0.3), {}, 1000, 1).status(), err::kInvalidValue, kComputeBelow);
  Result<Share> equal = ShareOf(Compute(0.4, 0.4), {}, 1000, 1);
  ASSERT_TRUE(equal.ok());
  EXPECT_EQ(equal->request, 0.4);
  EXPECT_EQ(equal->limit, 0.4);
  // No limit: no cap, whatever the request.
  Result<Share> uncapped = ShareOf(Compute(0.5), {}, 1000, 1);
  ASSERT_TRUE(uncapped.ok());
  EXPECT_EQ(uncapped->limit, 0);
  // A limit alone is a cap over the share the memory request gives.
  Result<Share> capped = ShareOf(Compute(0, 0.3), {.request = 100, .limit = 100}, 1000, 1);
  ASSERT_TRUE(capped.ok());
  EXPECT_NEAR(capped->request, 0.1, 1e-12);
  EXPECT_EQ(capped->limit, 0.3);
}

TEST(ShareOf, PriorityIsOneOfThreeNamesNormalByDefault) {
  EXPECT_EQ(ShareOf(Compute(0.1), {}, 1000, 1)->priority, Priority::kNormal);
  EXPECT_EQ(ShareOf(Compute(0.1, 0, "high"), {}, 1000, 1)->priority, Priority::kHigh);
  EXPECT_EQ(ShareOf(Compute(0.1, 0, "normal"), {}, 1000, 1)->priority, Priority::kNormal);
  EXPECT_EQ(ShareOf(Compute(0.1, 0, "low"), {}, 1000, 1)->priority, Priority::kLow);
  for (const char* bad : {"urgent", "High", " low"})
    ExpectError(ShareOf(Compute(0.1, 0, bad), {}, 1000, 1).status(), err::kInvalidValue,
                "priority '" + std::string(bad) + "' is none of high, normal, low");
  // The fractions are checked first.
  ExpectError(ShareOf(Compute(2, 0, "urgent"), {}, 1000, 1).status(), err::kInvalidValue,
              kComputeRange);
}

TEST(ShareOf, TheRequestIsTheComputeShareElseTheMemoryFractionElseTheWeightedDefault) {
  const Quota half = {.request = 500, .limit = 800};
  // A declared compute share wins over the memory fraction; the weight plays no part.
  EXPECT_EQ(ShareOf(Compute(0.2), half, 1000, 7)->request, 0.2);
  EXPECT_EQ(ShareOf(Compute(0), half, 1000, 7)->request, 0.5);
  EXPECT_NEAR(ShareOf(Compute(0), {.request = 250, .limit = 250}, 1000, 7)->request, 0.25, 1e-12);
  // Neither: a small slice, scaled by the weight.
  EXPECT_NEAR(ShareOf(Compute(0), {.request = 0, .limit = 1000}, 1000, 1)->request,
              kDefaultComputeShare, 1e-12);
  EXPECT_NEAR(ShareOf(Compute(0), {.request = 0, .limit = 1000}, 1000, 3)->request, 0.15, 1e-12);
  // No usable memory: no memory fraction to take, even with bytes requested.
  EXPECT_NEAR(ShareOf(Compute(0), {.request = 100, .limit = 100}, 0, 2)->request, 0.1, 1e-12);
  EXPECT_EQ(ShareOf(Compute(0.3), {.request = 100, .limit = 100}, 0, 2)->request, 0.3);
  // ShareOf sets no project and no account.
  Result<Share> s = ShareOf(Compute(0.2), half, 1000, 1);
  EXPECT_EQ(s->project, kNoProject);
  EXPECT_EQ(s->account, kNoAccount);
}

TEST(CapOpenQuota, AGuaranteedRequestAboveTheCapIsRefusedAndNothingChanges) {
  Quota q = {.request = 501, .limit = 800};
  ExpectError(CapOpenQuota({}, Caps(0.5, Priority::kNormal), 1001, q), err::kMemoryAllocation,
              "a guaranteed 501 bytes is more than a client may declare" + kHalfOf1001);
  EXPECT_EQ(q.request, 501u);
  EXPECT_EQ(q.limit, 800u);
  // Exactly the cap is allowed; its limit is cut to the cap.
  q = {.request = 500, .limit = 800};
  EXPECT_TRUE(CapOpenQuota({}, Caps(0.5, Priority::kNormal), 1001, q).ok());
  EXPECT_EQ(q.request, 500u);
  EXPECT_EQ(q.limit, 500u);
}

TEST(CapOpenQuota, TheMemoryLimitIsCutToTheCapAndNeverRaised) {
  const OpenCaps half = Caps(0.5, Priority::kNormal);
  Quota q = {.request = 0, .limit = 1001};  // no limit declared: the whole device
  EXPECT_TRUE(CapOpenQuota({}, half, 1001, q).ok());
  EXPECT_EQ(q.request, 0u);
  EXPECT_EQ(q.limit, 500u);
  q = {.request = 100, .limit = 200};
  EXPECT_TRUE(CapOpenQuota({}, half, 1001, q).ok());
  EXPECT_EQ(q.request, 100u);
  EXPECT_EQ(q.limit, 200u);
  // The default caps cut only what the device cannot hold.
  q = {.request = 0, .limit = 5000};
  EXPECT_TRUE(CapOpenQuota(Compute(1, 0, "high"), OpenCaps{}, 1000, q).ok());
  EXPECT_EQ(q.limit, 1000u);
}

TEST(CapOpenQuota, AComputeShareAboveTheCapIsRefused) {
  Quota q = {.request = 0, .limit = 1001};
  ExpectError(CapOpenQuota(Compute(0.6), Caps(0.5, Priority::kNormal), 1001, q), err::kInvalidValue,
              "a guaranteed compute share of 0.60 is more than a client may declare" + kHalfOf1001);
  EXPECT_EQ(q.limit, 1001u);
  EXPECT_TRUE(CapOpenQuota(Compute(0.5), Caps(0.5, Priority::kNormal), 1001, q).ok());
  // Only the guaranteed share is capped, not the limit; NaN is left to ShareOf.
  EXPECT_TRUE(CapOpenQuota(Compute(0.1, 0.9), Caps(0.5, Priority::kNormal), 1001, q).ok());
  EXPECT_TRUE(CapOpenQuota(Compute(kNaN), Caps(0.5, Priority::kNormal), 1001, q).ok());
}

TEST(CapOpenQuota, APriorityAboveTheCapIsNotPermitted) {
  Quota q = {.request = 0, .limit = 1000};
  ExpectError(CapOpenQuota(Compute(0, 0, "high"), Caps(1, Priority::kNormal), 1000, q),
              err::kNotPermitted,
              "priority high is above what a client may declare here (normal, "
              "--open-max-priority; a tenants file entry may have it)");
  ExpectError(CapOpenQuota(Compute(0, 0, "normal"), Caps(1, Priority::kLow), 1000, q),
              err::kNotPermitted,
              "priority normal is above what a client may declare here (low, "
              "--open-max-priority; a tenants file entry may have it)");
  // Empty is normal; the cap itself and below pass; an unknown name is ShareOf's to refuse.
  EXPECT_EQ(CapOpenQuota(Compute(0, 0, ""), Caps(1, Priority::kLow), 1000, q).code(),
            err::kNotPermitted);
  for (const char* ok : {"", "normal", "low", "urgent"})
    EXPECT_TRUE(CapOpenQuota(Compute(0, 0, ok), Caps(1, Priority::kNormal), 1000, q).ok()) << ok;
}

TEST(CapOpenQuota, MemoryIsCheckedBeforeComputeBeforePriority) {
  const OpenCaps half = Caps(0.5, Priority::kNormal);
  Quota q = {.request = 600, .limit = 600};
  EXPECT_EQ(CapOpenQuota(Compute(0.9, 0, "high"), half, 1001, q).code(), err::kMemoryAllocation);
  q = {.request = 0, .limit = 600};
  EXPECT_EQ(CapOpenQuota(Compute(0.9, 0, "high"), half, 1001, q).code(), err::kInvalidValue);
  EXPECT_EQ(q.limit, 600u);
}

TEST(CapOpenQuota, NoUsableMemoryCapsEverythingAtZero) {
  Quota q = {.request = 0, .limit = 0};
  EXPECT_TRUE(CapOpenQuota({}, Caps(0.5, Priority::kNormal), 0, q).ok());
  EXPECT_EQ(q.limit, 0u);
  q = {.request = 1, .limit = 1};
  ExpectError(CapOpenQuota({}, Caps(0.5, Priority::kNormal), 0, q), err::kMemoryAllocation,
              "a guaranteed 1 bytes is more than a client may declare (open mode: "
              "--open-max-fraction 0.50 of the GPU, 0 bytes; a tenants file entry may ask for "
              "more)");
}

TEST(GrantOf, FractionsAreOfUsableMemoryBytesAreBytes) {
  Result<Grant> f = GrantOf(Memory({.fraction = 0.25, .fraction_limit = 0.5}), 1000, 1, 7, nullptr);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->memory.request, 250u);
  EXPECT_EQ(f->memory.limit, 500u);
  EXPECT_NEAR(f->share.request, 0.25, 1e-12);
  EXPECT_EQ(f->share.limit, 0);
  EXPECT_EQ(f->share.priority, Priority::kNormal);
  EXPECT_EQ(f->share.project, 7u);

  Result<Grant> b = GrantOf(Memory({.bytes = 4 * kGiB, .bytes_limit = 8 * kGiB}, "low"), 16 * kGiB,
                            1, kNoProject, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->memory.request, 4 * kGiB);
  EXPECT_EQ(b->memory.limit, 8 * kGiB);
  EXPECT_NEAR(b->share.request, 0.25, 1e-12);
  EXPECT_EQ(b->share.priority, Priority::kLow);
  EXPECT_EQ(b->share.project, kNoProject);
}

TEST(GrantOf, AnAbsentLimitIsTheRequestAndAnAbsentQuotaTheWholeDevice) {
  Result<Grant> request_only = GrantOf(Memory({.fraction = 0.25}), 1000, 1, kNoProject, nullptr);
  ASSERT_TRUE(request_only.ok());
  EXPECT_EQ(request_only->memory.request, 250u);
  EXPECT_EQ(request_only->memory.limit, 250u);

  Result<Grant> limit_only = GrantOf(Memory({.fraction_limit = 0.8}), 1000, 2, kNoProject, nullptr);
  ASSERT_TRUE(limit_only.ok());
  EXPECT_EQ(limit_only->memory.request, 0u);
  EXPECT_EQ(limit_only->memory.limit, 800u);
  EXPECT_NEAR(limit_only->share.request, 2 * kDefaultComputeShare, 1e-12);

  Result<Grant> none = GrantOf({}, 1000, 1, kNoProject, nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->memory.request, 0u);
  EXPECT_EQ(none->memory.limit, 1000u);
  EXPECT_NEAR(none->share.request, kDefaultComputeShare, 1e-12);

  Result<Grant> equal =
      GrantOf(Memory({.bytes = kGiB, .bytes_limit = kGiB}), 8 * kGiB, 1, kNoProject, nullptr);
  ASSERT_TRUE(equal.ok());
  EXPECT_EQ(equal->memory.request, kGiB);
  EXPECT_EQ(equal->memory.limit, kGiB);
}

TEST(GrantOf, MemoryRefusalsAreResolveQuotas) {
  ExpectError(GrantOf(Memory({.fraction = 0.5, .bytes = kGiB}), 8 * kGiB, 1, 0, nullptr).status(),
              err::kInvalidValue, "a quota is either fractions of the GPU or bytes, not both");
  for (double bad : {1.5, -0.25, kNaN})
    ExpectError(GrantOf(Memory({.fraction = bad}), 1000, 1, 0, nullptr).status(),
                err::kInvalidValue, "GPU fractions lie in (0, 1]");
  ExpectError(
      GrantOf(Memory({.fraction = 0.5, .fraction_limit = 0.25}), 1000, 1, 0, nullptr).status(),
      err::kInvalidValue, "the memory limit is below the request");
  ExpectError(
      GrantOf(Memory({.bytes = 2 * kGiB, .bytes_limit = kGiB}), 8 * kGiB, 1, 0, nullptr).status(),
      err::kInvalidValue, "the memory limit is below the request");
}

TEST(GrantOf, OpenModeCapsTheLimitAndTheShareFollowsTheRequest) {
  // The README's burstable tenant on a half-capped server: request 0.25, limit 0.8 cut to 0.5.
  const OpenCaps half = Caps(0.5, Priority::kNormal);
  TenantQuota q = Memory({.fraction = 0.25, .fraction_limit = 0.8});
  Result<Grant> g = GrantOf(q, 1000, 1, kNoProject, &half);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->memory.request, 250u);
  EXPECT_EQ(g->memory.limit, 500u);
  EXPECT_NEAR(g->share.request, 0.25, 1e-12);
  // The same quota from a tenants file keeps its limit.
  EXPECT_EQ(GrantOf(q, 1000, 1, kNoProject, nullptr)->memory.limit, 800u);
  // Above the cap: refused in open mode only.
  EXPECT_EQ(GrantOf(Memory({.fraction = 0.75}), 1000, 1, 0, &half).status().code(),
            err::kMemoryAllocation);
  EXPECT_TRUE(GrantOf(Memory({.fraction = 0.75}), 1000, 1, 0, nullptr).ok());
}

TEST(GrantOf, RefusalsComeInOrderMemoryThenOpenCapsThenShare) {
  const OpenCaps half = Caps(0.5, Priority::kNormal);
  // A mixed memory quota is refused before the priority cap looks.
  TenantQuota mixed = Memory({.fraction = 0.5, .bytes = 1}, "high");
  EXPECT_EQ(GrantOf(mixed, 1000, 1, 0, &half).status().code(), err::kInvalidValue);
  // The priority cap before the compute limit's check...
  TenantQuota q = Compute(0.1, kNaN, "high");
  EXPECT_EQ(GrantOf(q, 1000, 1, 0, &half).status().code(), err::kNotPermitted);
  // ...which refuses it without caps, as it refuses a NaN request the caps let by.
  ExpectError(GrantOf(q, 1000, 1, 0, nullptr).status(), err::kInvalidValue, kComputeRange);
  ExpectError(GrantOf(Compute(kNaN), 1000, 1, 0, &half).status(), err::kInvalidValue,
              kComputeRange);
  // An unknown priority passes the caps and is ShareOf's refusal.
  ExpectError(GrantOf(Compute(0, 0, "urgent"), 1000, 1, 0, &half).status(), err::kInvalidValue,
              "priority 'urgent' is none of high, normal, low");
}

TEST(GrantOf, NoUsableMemory) {
  // Fractions of nothing are nothing; bytes stay bytes (admission refuses them later).
  Result<Grant> f = GrantOf(Memory({.fraction = 0.5}), 0, 2, kNoProject, nullptr);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->memory.request, 0u);
  EXPECT_EQ(f->memory.limit, 0u);
  EXPECT_NEAR(f->share.request, 2 * kDefaultComputeShare, 1e-12);
  Result<Grant> b = GrantOf(Memory({.bytes = 100}), 0, 1, kNoProject, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->memory.request, 100u);
  EXPECT_NEAR(b->share.request, kDefaultComputeShare, 1e-12);
  const OpenCaps half = Caps(0.5, Priority::kNormal);
  EXPECT_EQ(GrantOf(Memory({.bytes = 100}), 0, 1, 0, &half).status().code(),
            err::kMemoryAllocation);
}

}  // namespace
}  // namespace remora::sched
