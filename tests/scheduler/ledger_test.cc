// tests/scheduler/ledger_test.cc - the memory ledger: admission, limits, slices.
#include "scheduler/ledger.h"

#include <gtest/gtest.h>

#include <limits>

#include <random>

namespace remora::sched {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

TEST(ResolveQuota, Kinds) {
  EXPECT_EQ(ResolveQuota({}, 10 * kGiB).value().limit, 10 * kGiB);
  Quota q = ResolveQuota({.fraction = 0.25, .fraction_limit = 0.5}, 8 * kGiB).value();
  EXPECT_EQ(q.request, 2 * kGiB);
  EXPECT_EQ(q.limit, 4 * kGiB);
  q = ResolveQuota({.bytes = kGiB}, 8 * kGiB).value();
  EXPECT_EQ(q.limit, kGiB);
  EXPECT_FALSE(ResolveQuota({.fraction = 0.5, .bytes = kGiB}, 8 * kGiB).ok());
  EXPECT_FALSE(ResolveQuota({.bytes = 2 * kGiB, .bytes_limit = kGiB}, 8 * kGiB).ok());
  EXPECT_FALSE(ResolveQuota({.fraction = 1.5}, 8 * kGiB).ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(ResolveQuota({.fraction = nan}, 8 * kGiB).ok());
  EXPECT_FALSE(ResolveQuota({.fraction = 0.25, .fraction_limit = nan}, 8 * kGiB).ok());
  EXPECT_FALSE(ResolveQuota({.fraction = inf}, 8 * kGiB).ok());
  EXPECT_FALSE(ResolveQuota({.fraction = -0.5}, 8 * kGiB).ok());
}

TEST(Ledger, AdmissionKeepsRequestsWithinUsable) {
  MemoryLedger l(10 * kGiB);
  EXPECT_TRUE(l.Admit(1, {6 * kGiB, 8 * kGiB}).ok());
  Status s = l.Admit(2, {5 * kGiB, 5 * kGiB});
  EXPECT_EQ(s.code(), err::kMemoryAllocation);
  EXPECT_TRUE(l.Admit(3, {4 * kGiB, 10 * kGiB}).ok());
  EXPECT_EQ(l.requested(), 10 * kGiB);
  l.Remove(1);
  EXPECT_TRUE(l.Admit(2, {5 * kGiB, 5 * kGiB}).ok());
}

TEST(Ledger, LimitIsNeverPassedByAByte) {
  MemoryLedger l(10 * kGiB);
  ASSERT_TRUE(l.Admit(1, {0, kGiB}).ok());
  EXPECT_TRUE(l.Charge(1, kGiB - 1).ok());
  EXPECT_TRUE(l.Charge(1, 1).ok());
  EXPECT_EQ(l.Charge(1, 1).code(), err::kMemoryAllocation);
  EXPECT_EQ(l.Slice(1).free, 0u);
  l.Release(1, 100);
  EXPECT_EQ(l.Slice(1).free, 100u);
  EXPECT_EQ(l.Slice(1).total, kGiB);
}

TEST(Ledger, RandomChargesMatchAModel) {
  MemoryLedger l(1000);
  std::mt19937 rng(7);
  ASSERT_TRUE(l.Admit(1, {100, 600}).ok());
  ASSERT_TRUE(l.Admit(2, {100, 600}).ok());
  uint64_t used[3] = {0, 0, 0};
  for (int i = 0; i < 10000; ++i) {
    int t = 1 + static_cast<int>(rng() % 2);
    uint64_t n = rng() % 200;
    if (rng() % 2) {
      bool fits = used[t] + n <= 600 && used[1] + used[2] + n <= 1000;
      EXPECT_EQ(l.Charge(t, n).ok(), fits);
      if (fits) used[t] += n;
    } else {
      uint64_t r = std::min(n, used[t]);
      l.Release(t, r);
      used[t] -= r;
    }
    ASSERT_EQ(l.Slice(t).used, used[t]);
  }
}

}  // namespace
}  // namespace remora::sched
