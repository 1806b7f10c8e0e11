// tests/scheduler/ledger_test.cc - the memory ledger: admission, limits, slices.
#include "scheduler/ledger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <vector>

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

// Usable 1000; tenant 1 (high) requests 400; three borrowers request 100 each
// and hold 350 (low), 400 (normal) and 250 (low): nothing is free.
void Lend(MemoryLedger& l) {
  EXPECT_TRUE(l.AdmitOrEvict(1, {400, 400}, Priority::kHigh).ok());
  EXPECT_TRUE(l.AdmitOrEvict(2, {100, 600}, Priority::kLow).ok());
  EXPECT_TRUE(l.AdmitOrEvict(3, {100, 700}, Priority::kNormal).ok());
  EXPECT_TRUE(l.AdmitOrEvict(4, {100, 600}, Priority::kLow).ok());
  EXPECT_TRUE(l.Charge(2, 350).ok());
  EXPECT_TRUE(l.Charge(3, 400).ok());
  EXPECT_TRUE(l.Charge(4, 250).ok());
}

TEST(Ledger, ClaimWithinRequestReclaimsLowestPriorityThenLargestOverage) {
  MemoryLedger l(1000);
  Lend(l);
  EXPECT_EQ(l.Charge(1, 1).code(), err::kMemoryAllocation);  // Charge never reclaims
  EXPECT_EQ(l.Slice(1).free, 400u);                          // but the request is there
  Decision d = l.Claim(1, 300);
  ASSERT_TRUE(d.ok()) << d.status.ToString();
  EXPECT_EQ(d.victims, std::vector<TenantId>({2}));  // low, overage 250 > 150
  EXPECT_TRUE(l.Reclaimed(2));
  EXPECT_EQ(l.Claim(2, 1).status.code(), err::kMemoryAllocation);
  EXPECT_EQ(l.Charge(2, 1).code(), err::kMemoryAllocation);
  EXPECT_EQ(l.Slice(2).free, 0u);
  // 50 more are unbooked; the next 50 take the other low borrower, and the
  // caller must also wait for tenant 2, still being reclaimed.
  d = l.Claim(1, 100);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.victims, std::vector<TenantId>({4, 2}));
  EXPECT_EQ(l.Pending(), std::vector<TenantId>({2, 4}));
  EXPECT_EQ(l.Claim(1, 1).status.code(), err::kMemoryAllocation);  // at its limit
  l.Remove(2);
  l.Remove(4);
  EXPECT_TRUE(l.Pending().empty());
  EXPECT_EQ(l.Slice(1).used, 400u);
  EXPECT_EQ(l.Slice(3).free, 200u);  // what is left is free for loans again
  EXPECT_TRUE(l.Claim(3, 200).ok());
  EXPECT_FALSE(l.Claim(3, 1).ok());
}

TEST(Ledger, AmongEqualPriorityTheLargestOverageGoesFirst) {
  MemoryLedger l(1000);
  ASSERT_TRUE(l.AdmitOrEvict(1, {500, 500}, Priority::kNormal).ok());
  ASSERT_TRUE(l.AdmitOrEvict(2, {100, 1000}, Priority::kNormal).ok());
  ASSERT_TRUE(l.AdmitOrEvict(3, {100, 1000}, Priority::kNormal).ok());
  ASSERT_TRUE(l.Charge(2, 200).ok());  // overage 100
  ASSERT_TRUE(l.Charge(3, 500).ok());  // overage 400
  Decision d = l.Claim(1, 400);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.victims, std::vector<TenantId>({3}));
}

TEST(Ledger, AboveTheRequestOnlyFreeMemoryIsLent) {
  MemoryLedger l(1000);
  Lend(l);
  Decision d = l.Claim(3, 1);  // normal, above its request, nothing free
  EXPECT_EQ(d.status.code(), err::kMemoryAllocation);
  EXPECT_TRUE(d.victims.empty());
  EXPECT_NE(d.status.message().find("0 of 1000 usable bytes free"), std::string::npos)
      << d.status.message();
  EXPECT_NE(d.status.message().find("tenant 3 (normal) uses 400 of request 100 limit 700"),
            std::string::npos)
      << d.status.message();
  EXPECT_TRUE(l.Pending().empty());
  l.Release(3, 100);
  EXPECT_TRUE(l.Claim(3, 100).ok());
  EXPECT_EQ(l.Claim(3, 1000).status.code(), err::kMemoryAllocation);  // past its limit
}

TEST(Ledger, AdmissionEvictsLowestPriorityThenMostRecent) {
  MemoryLedger l(1000);
  ASSERT_TRUE(l.AdmitOrEvict(1, {300, 300}, Priority::kLow).ok());
  ASSERT_TRUE(l.AdmitOrEvict(2, {300, 300}, Priority::kLow).ok());
  ASSERT_TRUE(l.AdmitOrEvict(3, {300, 300}, Priority::kNormal).ok());
  ASSERT_TRUE(l.Charge(1, 300).ok());
  ASSERT_TRUE(l.Charge(2, 300).ok());

  // Equal priority never evicts: tenant 4 (low) is refused, and told why.
  Decision d = l.AdmitOrEvict(4, {200, 200}, Priority::kLow);
  EXPECT_EQ(d.status.code(), err::kMemoryAllocation);
  EXPECT_NE(d.status.message().find("100 not guaranteed"), std::string::npos) << d.status.message();
  EXPECT_NE(d.status.message().find("tenant 1 (low) uses 300"), std::string::npos);
  EXPECT_NE(d.status.message().find("tenant 3 (normal)"), std::string::npos);

  d = l.AdmitOrEvict(5, {500, 500}, Priority::kHigh);
  ASSERT_TRUE(d.ok()) << d.status.ToString();
  EXPECT_EQ(d.victims, std::vector<TenantId>({2, 1}));  // low ones, newest first
  EXPECT_EQ(l.requested(), 800u);
  // Applied at once: the room the victims leave is the high tenant's, not a
  // newcomer's...
  EXPECT_EQ(l.AdmitOrEvict(6, {300, 300}, Priority::kNormal).status.code(), err::kMemoryAllocation);
  // ...and their memory stays booked until they are removed, so a claim on
  // it names them to wait for.
  Decision c = l.Claim(5, 500);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.victims, std::vector<TenantId>({2, 1}));
  c = l.Claim(3, 300);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.victims, std::vector<TenantId>({2, 1}));
  l.Remove(2);
  l.Remove(1);
  EXPECT_TRUE(l.Pending().empty());
  EXPECT_EQ(l.Slice(5).used, 500u);
  ASSERT_TRUE(l.AdmitOrEvict(6, {0, 1000}, Priority::kLow).ok());
  EXPECT_EQ(l.Slice(6).free, 200u);

  // Nobody below normal is left: a normal tenant's oversize request is refused.
  EXPECT_EQ(l.AdmitOrEvict(7, {300, 300}, Priority::kNormal).status.code(), err::kMemoryAllocation);
}

// A reloaded tenants file changes a live tenant's quota: the sum of requests
// still fits, a raised request is guaranteed (loans are reclaimed for it), a
// lowered limit takes nothing back but lets nothing more through.
TEST(Ledger, RequotaKeepsRequestsWithinUsableAndNeverGrowsPastALimit) {
  MemoryLedger l(10 * kGiB);
  ASSERT_TRUE(l.Admit(1, {2 * kGiB, 4 * kGiB}).ok());
  ASSERT_TRUE(l.Admit(2, {2 * kGiB, 8 * kGiB}).ok());
  ASSERT_TRUE(l.Charge(2, 7 * kGiB).ok());  // 5 GiB of it a loan
  EXPECT_EQ(l.Requota(1, {9 * kGiB, 9 * kGiB}, Priority::kNormal).code(), err::kMemoryAllocation);
  EXPECT_EQ(l.Slice(1).quota.request, 2 * kGiB) << "a refused requota changes nothing";
  EXPECT_EQ(l.Requota(1, {2 * kGiB, kGiB}, Priority::kNormal).code(), err::kInvalidValue);
  EXPECT_EQ(l.Requota(9, {0, kGiB}, Priority::kNormal).code(), err::kInvalidValue);
  ASSERT_TRUE(l.Requota(1, {6 * kGiB, 6 * kGiB}, Priority::kHigh).ok());
  EXPECT_EQ(l.requested(), 8 * kGiB);
  // Within its new request tenant 1 gets its 6 GiB, by reclaiming tenant 2's loan.
  Decision d = l.Claim(1, 6 * kGiB);
  ASSERT_TRUE(d.ok()) << d.status.ToString();
  EXPECT_EQ(d.victims, std::vector<TenantId>{2});
  l.Remove(2);
  // A limit lowered below what it holds: it keeps it, and gets nothing more.
  ASSERT_TRUE(l.Requota(1, {kGiB, 2 * kGiB}, Priority::kNormal).ok());
  EXPECT_EQ(l.Slice(1).used, 6 * kGiB);
  EXPECT_EQ(l.Slice(1).free, 0u);
  EXPECT_EQ(l.Charge(1, 1).code(), err::kMemoryAllocation);
  EXPECT_FALSE(l.Claim(1, 1).ok());
  l.Release(1, 5 * kGiB);
  EXPECT_EQ(l.Slice(1).free, kGiB);
  EXPECT_TRUE(l.Charge(1, kGiB).ok());
  EXPECT_EQ(l.Charge(1, 1).code(), err::kMemoryAllocation);
}

// Random operations with requotas among them, against an independent model of
// what each tenant really holds: the sum of requests never passes usable, what
// is allocated never passes usable, a claim within a live tenant's request
// succeeds, and a tenant over its (lowered) limit never grows.
TEST(Ledger, RequotaUnderRandomOperationsKeepsEveryGuarantee) {
  constexpr uint64_t kUsable = 10'000;
  MemoryLedger l(kUsable);
  std::mt19937 rng(20261123);
  std::map<TenantId, uint64_t> real;
  std::map<TenantId, Quota> quota;  // the model's own record of each quota
  TenantId next_id = 1;
  int requotas = 0, refused = 0, over = 0;
  for (int step = 0; step < 50000; ++step) {
    const int op = static_cast<int>(rng() % 20);
    if (op < 2 || real.empty()) {
      Quota q{rng() % 2500, 0};
      q.limit = q.request + rng() % 4000;
      if (l.Admit(next_id, q).ok()) {
        real[next_id] = 0;
        quota[next_id] = q;
      }
      ++next_id;
      continue;
    }
    auto it = real.begin();
    std::advance(it, static_cast<ptrdiff_t>(rng() % real.size()));
    const TenantId t = it->first;
    if (op < 5) {
      Quota q{rng() % 2500, 0};
      q.limit = q.request + rng() % 4000;
      uint64_t others = 0;
      for (const auto& [o, oq] : quota)
        if (o != t) others += oq.request;
      Status s = l.Requota(t, q, Priority::kNormal);
      EXPECT_EQ(s.ok(), others + q.request <= kUsable) << s.ToString();
      if (s.ok()) {
        quota[t] = q;
        ++requotas;
      } else {
        ++refused;
      }
    } else if (op < 14) {
      const uint64_t n = rng() % 1500;
      const bool in_request = real[t] + n <= quota[t].request;
      const bool was_over = real[t] > quota[t].limit;
      Decision d = l.Claim(t, n);
      if (in_request) {
        EXPECT_TRUE(d.ok()) << d.status.ToString();
      }
      if (was_over && n > 0) {
        EXPECT_FALSE(d.ok()) << "a tenant over its limit grew";
      }
      over += was_over;
      if (d.ok()) {
        for (TenantId v : d.victims) {  // terminated at once by this caller
          l.Remove(v);
          real.erase(v);
          quota.erase(v);
        }
        real[t] += n;
      }
    } else if (op < 18) {
      const uint64_t r = real[t] ? rng() % (real[t] + 1) : 0;
      l.Release(t, r);
      real[t] -= r;
    } else {
      l.Remove(t);
      real.erase(t);
      quota.erase(t);
    }
    uint64_t total = 0, requested = 0;
    for (const auto& [id, bytes] : real) {
      total += bytes;
      requested += quota[id].request;
      ASSERT_EQ(l.Slice(id).used, bytes);
    }
    ASSERT_LE(total, kUsable) << "step " << step;
    ASSERT_EQ(requested, l.requested());
    ASSERT_LE(requested, kUsable);
  }
  EXPECT_GT(requotas, 1000);
  EXPECT_GT(refused, 100);
  EXPECT_GT(over, 100);
}

// Random admissions, claims, releases and removals, with a caller that makes
// a booked allocation only once its victims are gone. No tenant passes its
// limit, memory really allocated never passes usable, and a claim within a
// live tenant's request always succeeds.
TEST(Ledger, NeverOverAnyLimitUnderRandomOperations) {
  constexpr uint64_t kUsable = 10'000;
  MemoryLedger l(kUsable);
  std::mt19937 rng(20240611);
  struct Pend {
    TenantId tenant;
    uint64_t bytes;
    std::vector<TenantId> victims;
  };
  std::map<TenantId, uint64_t> real;  // bytes really allocated, per tenant
  std::vector<Pend> waiting;
  TenantId next_id = 1;
  auto settle = [&] {
    for (size_t i = 0; i < waiting.size();) {
      Pend& p = waiting[i];
      bool gone = real.count(p.tenant) == 0;
      bool clear = std::all_of(p.victims.begin(), p.victims.end(),
                               [&](TenantId v) { return real.count(v) == 0; });
      if (gone || clear) {
        if (!gone) real[p.tenant] += p.bytes;
        waiting.erase(waiting.begin() + static_cast<ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  };
  int reclaims = 0, evictions = 0, within = 0;
  for (int step = 0; step < 100000; ++step) {
    const int op = static_cast<int>(rng() % 20);
    if (op < 2 || real.empty()) {
      uint64_t req = rng() % 3000, lim = req + rng() % 4000;
      Priority pr = static_cast<Priority>(rng() % kPriorities);
      Decision d = l.AdmitOrEvict(next_id, {req, lim}, pr);
      if (d.ok()) {
        real[next_id] = 0;
        evictions += !d.victims.empty();
      }
      ++next_id;
    } else if (op <= 12) {
      auto it = real.begin();
      std::advance(it, static_cast<ptrdiff_t>(rng() % real.size()));
      const TenantId t = it->first;
      const MemoryLedger::View v = l.Slice(t);
      const uint64_t n = rng() % 1500;
      const bool in_request = !l.Reclaimed(t) && v.used + n <= v.quota.request;
      Decision d = l.Claim(t, n);
      if (in_request) {
        EXPECT_TRUE(d.ok()) << d.status.ToString();
        ++within;
      }
      if (d.ok()) {
        reclaims += !d.victims.empty();
        if (d.victims.empty())
          real[t] += n;
        else
          waiting.push_back({t, n, d.victims});
      }
    } else if (op <= 16) {
      auto it = real.begin();
      std::advance(it, static_cast<ptrdiff_t>(rng() % real.size()));
      const uint64_t r = it->second ? rng() % (it->second + 1) : 0;
      l.Release(it->first, r);
      it->second -= r;
    } else {
      // The server terminates a victim, or a session simply ends.
      std::vector<TenantId> pending = l.Pending();
      TenantId t;
      if (!pending.empty() && op <= 18) {
        t = pending[rng() % pending.size()];
      } else {
        auto it = real.begin();
        std::advance(it, static_cast<ptrdiff_t>(rng() % real.size()));
        t = it->first;
      }
      l.Remove(t);
      real.erase(t);
    }
    settle();
    uint64_t total = 0, booked_live = 0, requested = 0;
    for (const auto& [t, bytes] : real) {
      total += bytes;
      const MemoryLedger::View v = l.Slice(t);
      ASSERT_LE(v.used, v.quota.limit);
      ASSERT_LE(bytes, v.used);
      if (!l.Reclaimed(t)) {
        booked_live += v.used;
        requested += v.quota.request;
      }
    }
    ASSERT_LE(total, kUsable) << "step " << step;
    ASSERT_LE(booked_live, kUsable);
    ASSERT_EQ(requested, l.requested());
    ASSERT_LE(requested, kUsable);
  }
  // The sequence exercised what it claims to.
  EXPECT_GT(reclaims, 50);
  EXPECT_GT(evictions, 100);
  EXPECT_GT(within, 10000);
}

}  // namespace
}  // namespace remora::sched
