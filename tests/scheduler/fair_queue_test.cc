// tests/scheduler/fair_queue_test.cc - FairQueue call by call: bounds, caps, classes.
#include "scheduler/fair_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace remora::sched {
namespace {

constexpr uint64_t kMs = 1'000'000;

FairOptions Options(uint64_t tenant_bound, uint64_t device_bound) {
  FairOptions o;
  o.tenant_in_flight_ns = tenant_bound;
  o.device_in_flight_ns = device_bound;
  return o;
}

// Teaches the queue that `t`'s items cost `ns`, leaving nothing in flight.
void Train(FairQueue& q, TenantId t, uint64_t ns, uint64_t now = 0) {
  q.Ready(t, now);
  ASSERT_EQ(q.Next(now), t);
  q.Done(t, ns, now);
}

// Hands `n` items of `t` out at `now`.
void HandOut(FairQueue& q, TenantId t, int n, uint64_t now = 0) {
  for (int i = 0; i < n; ++i) {
    q.Ready(t, now);
    ASSERT_EQ(q.Next(now), t);
  }
}

TEST(FairQueue, InFlightTimePerTenantIsBounded) {
  FairQueue q(Options(2 * kMs, 0));
  Train(q, 1, kMs);
  q.Ready(1, 0);
  EXPECT_EQ(q.Next(0), 1u);
  q.Ready(1, 0);
  EXPECT_EQ(q.Next(0), 1u);  // 2 ms in flight: at the bound
  q.Ready(1, 0);
  EXPECT_FALSE(q.Next(0).has_value());  // a third would pass it
  EXPECT_EQ(q.View(1)->in_flight, 2u);
  EXPECT_EQ(q.View(1)->in_flight_ns, 2 * kMs);
  q.Done(1, kMs, 1 * kMs);
  EXPECT_EQ(q.Next(kMs), 1u);

  // An item longer than the bound may go, but only alone.
  Train(q, 2, 5 * kMs);
  q.Ready(2, kMs);
  EXPECT_EQ(q.Next(kMs), 2u);
  q.Ready(2, kMs);
  EXPECT_FALSE(q.Next(kMs).has_value());
  q.Done(2, 5 * kMs, 6 * kMs);
  EXPECT_EQ(q.Next(6 * kMs), 2u);
}

// Nothing is known of a new tenant's items: before its first Done only
// min_in_flight go, however small the initial guess. A first item shorter than
// that guess does not lower it (one short item must not open the gate to a
// burst of long ones); later ones move it as an average.
TEST(FairQueue, ANewTenantIsHeldToMinInFlightUntilItsFirstDone) {
  FairQueue q(Options(2 * kMs, 0));  // the guess, 50 us, would allow 40 items
  q.Ready(1, 0);
  EXPECT_EQ(q.Next(0), 1u);
  q.Ready(1, 0);
  EXPECT_FALSE(q.Next(0).has_value());
  EXPECT_TRUE(q.WaitsForDone());
  q.Done(1, 1'000, 10'000);  // 1 us: shorter than the guess
  EXPECT_EQ(q.View(1)->predicted_ns, FairOptions().initial_cost_ns);
  EXPECT_EQ(q.Next(10'000), 1u);
  q.Ready(1, 10'000);
  EXPECT_EQ(q.Next(10'000), 1u);  // trained: the ns bound applies now
  q.Done(1, 2, 2'000, 20'000);
  EXPECT_LT(q.View(1)->predicted_ns, FairOptions().initial_cost_ns);
  // A first item longer than the guess replaces it at once.
  Train(q, 2, 5 * kMs);
  EXPECT_EQ(q.View(2)->predicted_ns, 5 * kMs);
}

// WaitsForDone says a Done would let ready work go: a tenant at its own bound,
// not one waiting behind a higher class or idle.
TEST(FairQueue, WaitsForDoneOnlyWhileATenantIsAtItsOwnBound) {
  FairQueue q(Options(2 * kMs, 0));
  q.Configure(3, ComputeShare(1, 0, Priority::kLow));
  Train(q, 1, kMs);
  Train(q, 3, kMs);
  EXPECT_FALSE(q.WaitsForDone());
  for (int i = 0; i < 2; ++i) {
    q.Ready(1, 0);
    EXPECT_EQ(q.Next(0), 1u);
  }
  EXPECT_FALSE(q.WaitsForDone());  // nothing more is ready
  q.Ready(3, 0);                   // low, waiting behind normal: not counted
  q.Ready(1, 0);
  EXPECT_TRUE(q.WaitsForDone());  // 1 is at its 2 ms bound
  q.Done(1, kMs, kMs);
  EXPECT_FALSE(q.WaitsForDone());
  EXPECT_EQ(q.Next(kMs), 1u);
  q.Remove(1);
  EXPECT_FALSE(q.WaitsForDone());
}

// IsReady says a tenant waits for a Next since its Ready (the executor then need not ask for
// another Next when it is refused again): true from Ready until Next hands it out, at its bound
// too; an item it issues at once meanwhile leaves it waiting; false for an unknown or removed
// tenant.
TEST(FairQueue, IsReadyFromReadyUntilHandedOut) {
  FairQueue q(Options(2 * kMs, 0));
  EXPECT_FALSE(q.IsReady(1));
  Train(q, 1, kMs);
  EXPECT_FALSE(q.IsReady(1));
  HandOut(q, 1, 2);  // at its 2 ms bound
  q.Ready(1, 0);
  EXPECT_TRUE(q.IsReady(1));
  EXPECT_FALSE(q.Next(0).has_value());
  EXPECT_TRUE(q.IsReady(1));  // still waiting
  q.Done(1, kMs, kMs);
  EXPECT_EQ(q.Next(kMs), 1u);
  EXPECT_FALSE(q.IsReady(1));
  q.Done(1, kMs, 2 * kMs);
  EXPECT_TRUE(q.IssueNow(1, 2 * kMs));  // alone and within its bound
  EXPECT_FALSE(q.IsReady(1));
  q.Ready(1, 2 * kMs);
  q.Done(1, kMs, 3 * kMs);
  EXPECT_TRUE(q.IssueNow(1, 3 * kMs));
  EXPECT_TRUE(q.IsReady(1));
  q.Remove(1);
  EXPECT_FALSE(q.IsReady(1));
}

TEST(FairQueue, InFlightTimeOnTheDeviceIsBounded) {
  FairQueue q(Options(10 * kMs, 2 * kMs));
  Train(q, 1, kMs);
  Train(q, 2, kMs);
  q.Ready(1, 0);
  q.Ready(2, 0);
  EXPECT_TRUE(q.Next(0).has_value());
  EXPECT_TRUE(q.Next(0).has_value());
  q.Ready(1, 0);
  q.Ready(2, 0);
  EXPECT_FALSE(q.Next(0).has_value());
  EXPECT_EQ(q.in_flight_ns(), 2 * kMs);
  // A removed tenant's work no longer counts.
  q.Remove(1);
  EXPECT_EQ(q.Next(0), 2u);
  q.Done(1, kMs, 0);  // unknown by now: ignored
  EXPECT_EQ(q.in_flight_ns(), 2 * kMs);
}

// Rule 3's stall: a tenant whose in-flight work never finishes (a stream waiting for a value
// another of its streams writes) is not held at its bound forever. With no Done for
// stall_ns plus twice the work's predicted cost, one more item goes; then again after twice
// the stall; a Done starts the clock again.
TEST(FairQueue, WorkThatMakesNoProgressHoldsItsTenantOnlyForAWhile) {
  FairQueue q(Options(2 * kMs, 0));  // stall_ns: 5 ms by default
  Train(q, 1, kMs);
  HandOut(q, 1, 2);
  q.Ready(1, 0);
  EXPECT_FALSE(q.Next(0).has_value());
  EXPECT_EQ(q.NextEligibleAt(0), 9 * kMs);  // 5 ms + 2 x 2 ms in flight
  EXPECT_FALSE(q.Next(9 * kMs - 1).has_value());
  EXPECT_EQ(q.Next(9 * kMs), 1u);
  q.Ready(1, 9 * kMs);
  EXPECT_FALSE(q.Next(9 * kMs).has_value());
  EXPECT_EQ(q.NextEligibleAt(9 * kMs), 25 * kMs);  // 9 + 10 + 2 x 3 ms
  EXPECT_FALSE(q.Next(25 * kMs - 1).has_value());
  EXPECT_EQ(q.Next(25 * kMs), 1u);
  EXPECT_EQ(q.stall_releases(), 2u);
  // Progress: one Done, and the bound holds again with the first clock.
  q.Done(1, kMs, 26 * kMs);
  q.Done(1, kMs, 26 * kMs);
  EXPECT_EQ(q.View(1)->in_flight, 2u);
  q.Ready(1, 26 * kMs);
  EXPECT_FALSE(q.Next(26 * kMs).has_value());
  EXPECT_EQ(q.NextEligibleAt(26 * kMs), 26 * kMs + 5 * kMs + 2 * q.View(1)->in_flight_ns);
}

// The same for the device's bound: another tenant is not held behind work that never ends.
TEST(FairQueue, AStalledDeviceBoundLetsTheNextItemGo) {
  FairQueue q(Options(10 * kMs, 2 * kMs));
  Train(q, 1, kMs);
  Train(q, 2, kMs);
  HandOut(q, 1, 2);
  q.Ready(2, 0);
  EXPECT_FALSE(q.Next(0).has_value());
  EXPECT_EQ(q.NextEligibleAt(0), 9 * kMs);
  EXPECT_EQ(q.Next(9 * kMs), 2u);
  EXPECT_EQ(q.in_flight_ns(), 3 * kMs);
  EXPECT_EQ(q.stall_releases(), 1u);
}

// stall_ns = 0: the bounds hold however long the work takes.
TEST(FairQueue, WithoutAStallTheBoundHoldsForever) {
  FairOptions o = Options(2 * kMs, 0);
  o.stall_ns = 0;
  FairQueue q(o);
  Train(q, 1, kMs);
  HandOut(q, 1, 2);
  q.Ready(1, 0);
  EXPECT_FALSE(q.NextEligibleAt(0).has_value());
  EXPECT_FALSE(q.Next(1'000'000 * kMs).has_value());
  EXPECT_EQ(q.stall_releases(), 0u);
}

// The device bound counts a tenant's class and those above it: the one lower-class
// item the priority rules let run never keeps a higher class's next item waiting.
TEST(FairQueue, LowerClassWorkDoesNotCountAgainstAHigherClassOnTheDevice) {
  FairOptions o = Options(10 * kMs, 2 * kMs);
  o.min_in_flight = 2;
  FairQueue q(o);
  q.Configure(1, ComputeShare(1, 0, Priority::kHigh));
  q.Configure(2, ComputeShare(1, 0, Priority::kLow));
  Train(q, 1, 3 * kMs);
  Train(q, 2, kMs);
  q.Ready(2, 0);
  EXPECT_EQ(q.Next(0), 2u);  // the one low item
  q.Ready(1, 0);
  EXPECT_EQ(q.Next(0), 1u);  // 1 + 3 ms: past the device bound, but two items may go
  q.Ready(1, 0);
  EXPECT_EQ(q.Next(0), 1u);  // high's second: the low item does not count against it
  q.Ready(1, 0);
  EXPECT_FALSE(q.Next(0).has_value());  // a third would pass high's own device bound
  // The low class sees the whole device (and the priority rules).
  q.Done(1, 3 * kMs, 3 * kMs);
  q.Done(1, 3 * kMs, 3 * kMs);
  q.Done(2, kMs, 3 * kMs);
  q.Ready(2, 3 * kMs);
  EXPECT_EQ(q.Next(3 * kMs), 1u);  // high first
  EXPECT_EQ(q.Next(3 * kMs), 2u);  // one low item beside it
}

// Runs `n` dispatches with every item finishing at once, each costing `ns`;
// returns how many went to tenant `t`. Every tenant handed out is ready again.
int Dispatches(FairQueue& q, int n, TenantId t, uint64_t ns, uint64_t* now) {
  int got = 0;
  for (int i = 0; i < n; ++i) {
    std::optional<TenantId> next = q.Next(*now);
    if (!next) return got;
    got += *next == t;
    *now += ns;
    q.Done(*next, ns, *now);
    q.Ready(*next, *now);
  }
  return got;
}

TEST(FairQueue, SharesDispatchesByRequest) {
  FairQueue q(Options(kMs, 0));
  q.Configure(1, ComputeShare(1));
  q.Configure(2, ComputeShare(3));
  uint64_t now = 0;
  q.Ready(1, now);
  q.Ready(2, now);
  EXPECT_NEAR(Dispatches(q, 400, 2, 100'000, &now), 300, 2);
}

// Keeps `tenants` ready, running each item handed out alone for 1 ms, until
// `until`; whenever none may go, checks that all are held back by their limits
// until NextEligibleAt, then jumps there. Returns the device time each got.
std::map<TenantId, uint64_t> RunAloneCapped(FairQueue& q, const std::vector<TenantId>& tenants,
                                            uint64_t until) {
  std::map<TenantId, uint64_t> busy;
  uint64_t now = 0;
  while (now < until) {
    for (TenantId t : tenants) q.Ready(t, now);
    if (std::optional<TenantId> t = q.Next(now)) {
      now += kMs;
      busy[*t] += kMs;
      q.Done(*t, kMs, now);
      continue;
    }
    std::optional<uint64_t> at = q.NextEligibleAt(now);
    EXPECT_TRUE(at.has_value());
    if (!at || *at <= now) return busy;
    for (TenantId t : tenants) {
      EXPECT_TRUE(q.View(t)->held);
      EXPECT_LT(q.View(t)->budget_ns, 0);
      EXPECT_FALSE(q.IssueNow(t, *at - 1));
    }
    EXPECT_FALSE(q.Next(*at - 1).has_value());
    now = *at;
  }
  return busy;
}

Share Session(AccountId account, double request, double limit = 0) {
  return ComputeShare(request, limit, Priority::kNormal, kNoProject, account);
}

TEST(FairQueue, AnAccountsSessionsCompeteAsOneTenant) {
  FairQueue q(Options(kMs, 0));
  q.Configure(1, Session(9, 1));
  q.Configure(2, Session(9, 1));
  q.Configure(3, ComputeShare(1));
  uint64_t now = 0;
  for (TenantId t : {1, 2, 3}) q.Ready(t, now);
  // Tenant 3 gets half, not a third; the account's sessions split the other half.
  EXPECT_NEAR(Dispatches(q, 600, 3, 100'000, &now), 300, 2);
  // Apart, each session would be a tenant of its own again.
  q.Configure(1, ComputeShare(1));
  q.Configure(2, ComputeShare(1));
  EXPECT_NEAR(Dispatches(q, 600, 3, 100'000, &now), 200, 2);
}

TEST(FairQueue, AnIdleSessionLeavesItsPartToItsAccount) {
  FairQueue q(Options(kMs, 0));
  q.Configure(1, Session(9, 1));
  q.Configure(2, Session(9, 1));  // never ready
  q.Configure(3, ComputeShare(1));
  uint64_t now = 0;
  q.Ready(1, now);
  q.Ready(3, now);
  EXPECT_NEAR(Dispatches(q, 600, 1, 100'000, &now), 300, 2);
}

TEST(FairQueue, AnAccountsLimitCapsItsSessionsTogether) {
  FairOptions o = Options(kMs, 0);
  o.limit_burst_ns = 4 * kMs;
  FairQueue q(o);
  q.Configure(1, Session(9, 1, 0.25));
  q.Configure(2, Session(9, 1, 0.25));
  std::map<TenantId, uint64_t> busy = RunAloneCapped(q, {1, 2}, 1000 * kMs);
  EXPECT_LE(busy[1] + busy[2], 250 * kMs + 2 * kMs);
  EXPECT_GE(busy[1] + busy[2], 245 * kMs);
  EXPECT_NEAR(static_cast<double>(busy[1]) / static_cast<double>(busy[2]), 1.0, 0.05);
  // The last session gone, the account goes with it; a new one starts afresh.
  q.Remove(1);
  q.Remove(2);
  q.Configure(4, Session(9, 1, 0.5));
  EXPECT_DOUBLE_EQ(q.View(4)->budget_ns, 0.5 * 4 * kMs);
}

// A tenant running several processes is one account: its sessions share one
// in-flight bound, so it queues no more ahead of the others than one process.
TEST(FairQueue, AnAccountsSessionsShareOneInFlightBound) {
  FairQueue q(Options(2 * kMs, 0));
  for (TenantId t : {1, 2, 3}) q.Configure(t, Session(9, 1));
  q.Configure(4, ComputeShare(1));
  for (TenantId t : {1, 2, 3, 4}) Train(q, t, kMs);
  for (TenantId t : {1, 2, 3, 4}) q.Ready(t, 0);
  std::map<TenantId, int> issued;
  while (auto t = q.Next(0)) {
    ++issued[*t];
    q.Ready(*t, 0);
  }
  // 2 ms each: the account's two items, from two of its sessions, and 4's two.
  EXPECT_EQ(issued[1] + issued[2] + issued[3], 2);
  EXPECT_EQ(issued[4], 2);
  EXPECT_TRUE(q.WaitsForDone());
  // A Done of one session lets a sibling go, whichever it is.
  const TenantId done = issued[1] > 0 ? 1 : 2;
  q.Done(done, kMs, kMs);
  const auto next = q.Next(kMs);
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(*next, 4u);
  EXPECT_FALSE(q.Next(kMs).has_value());
  // A session leaving takes its work in flight off the account's count.
  uint64_t account_ns = 0;
  for (TenantId t : {1, 2, 3}) account_ns += q.View(t)->in_flight_ns;
  EXPECT_EQ(account_ns, 2 * kMs);
  TenantId leaving = 0;
  for (TenantId t : {1, 2, 3})
    if (q.View(t)->in_flight > 0 && t != *next) leaving = t;
  if (leaving == 0) leaving = *next;
  q.Remove(leaving);
  EXPECT_TRUE(q.Next(kMs).has_value());
}

TEST(FairQueue, NoCreditIsBankedWhileIdle) {
  FairQueue q(Options(kMs, 0));
  uint64_t now = 0;
  q.Ready(1, now);
  EXPECT_EQ(Dispatches(q, 100, 1, kMs, &now), 100);  // tenant 2 idle all along
  q.Ready(2, now);
  // Tenant 2 starts level with tenant 1, not 100 ms behind it.
  const int got = Dispatches(q, 20, 2, kMs, &now);
  EXPECT_GE(got, 9);
  EXPECT_LE(got, 11);
}

TEST(FairQueue, ChargesMeasuredTimeNotLaunches) {
  FairQueue q(Options(kMs, 0));
  uint64_t now = 0;
  q.Ready(1, now);
  q.Ready(2, now);
  uint64_t used[3] = {0, 0, 0};
  for (int i = 0; i < 2000; ++i) {
    TenantId t = *q.Next(now);
    const uint64_t ns = t == 1 ? 10'000 : 90'000;  // tenant 2's kernels are 9x longer
    used[t] += ns;
    now += ns;
    q.Done(t, ns, now);
    q.Ready(t, now);
  }
  EXPECT_NEAR(static_cast<double>(used[1]) / static_cast<double>(used[2]), 1.0, 0.02);
}

TEST(FairQueue, LimitHoldsATenantBackEvenOnAnIdleGpu) {
  FairOptions o = Options(kMs, 0);
  o.limit_burst_ns = 4 * kMs;  // a quarter may save 1 ms
  FairQueue q(o);
  q.Configure(1, ComputeShare(1, 0.25));
  const uint64_t busy = RunAloneCapped(q, {1}, 1000 * kMs)[1];
  EXPECT_LE(busy, 250 * kMs + 2 * kMs);
  EXPECT_GE(busy, 245 * kMs);
}

TEST(FairQueue, LowerClassesKeepOneItemInFlightBesideAHigherOne) {
  FairQueue q(Options(10 * kMs, 0));
  q.Configure(1, ComputeShare(1, 0, Priority::kHigh));  // present, idle
  q.Configure(2, ComputeShare(1, 0, Priority::kLow));
  q.Configure(3, ComputeShare(1, 0, Priority::kNormal));
  Train(q, 2, kMs);
  q.Ready(2, 0);
  EXPECT_EQ(q.Next(0), 2u);
  q.Ready(2, 0);
  EXPECT_FALSE(q.Next(0).has_value());  // one low item already in flight
  q.Ready(1, 0);
  EXPECT_EQ(q.Next(0), 1u);  // high goes at once, behind that one item only
  q.Done(2, kMs, kMs);
  q.Ready(3, kMs);
  EXPECT_EQ(q.Next(kMs), 3u);  // normal before low
  EXPECT_FALSE(q.Next(kMs).has_value());
  q.Done(3, kMs, 2 * kMs);
  EXPECT_EQ(q.Next(2 * kMs), 2u);

  // Without a higher class present, a class keeps work in flight as usual.
  FairQueue alone(Options(10 * kMs, 0));
  alone.Configure(2, ComputeShare(1, 0, Priority::kLow));
  Train(alone, 2, kMs);
  for (int i = 0; i < 5; ++i) {
    alone.Ready(2, 0);
    EXPECT_EQ(alone.Next(0), 2u);
  }
}

TEST(FairQueue, HigherClassReadyStopsLowerIssue) {
  FairOptions o = Options(kMs, 0);
  o.lower_in_flight_ns = 5 * kMs;  // lower work may keep 5 ms in flight...
  FairQueue q(o);
  q.Configure(1, ComputeShare(1, 0, Priority::kHigh));
  q.Configure(2, ComputeShare(1, 0, Priority::kNormal));
  Train(q, 1, 2 * kMs);
  Train(q, 2, 100'000);
  q.Ready(2, 0);
  EXPECT_EQ(q.Next(0), 2u);
  q.Ready(2, 0);
  EXPECT_EQ(q.Next(0), 2u);
  q.Ready(1, 0);
  EXPECT_EQ(q.Next(0), 1u);
  q.Ready(1, 0);  // ...but not while high work is ready (held by its own bound)
  q.Ready(2, 0);
  EXPECT_FALSE(q.Next(0).has_value());
  q.Done(2, 100'000, 0);
  q.Done(2, 100'000, 0);
  EXPECT_EQ(q.Next(0), 2u);  // nothing lower in flight: one may go
}

TEST(FairQueue, IssueNowOnlyWhenNobodyElseWaits) {
  FairQueue q(Options(2 * kMs, 0));
  Train(q, 1, kMs);
  EXPECT_TRUE(q.IssueNow(1, 0));
  EXPECT_EQ(q.View(1)->in_flight, 1u);
  EXPECT_TRUE(q.IssueNow(1, 0));
  EXPECT_FALSE(q.IssueNow(1, 0));  // past its in-flight bound
  q.Ready(2, 0);
  q.Done(1, kMs, kMs);
  EXPECT_FALSE(q.IssueNow(1, kMs));  // tenant 2 waits
  EXPECT_EQ(q.Next(kMs), 2u);
  EXPECT_TRUE(q.IssueNow(1, kMs));

  FairQueue capped(Options(2 * kMs, 0));
  capped.Configure(3, ComputeShare(1, 0.1));
  uint64_t now = 0;
  int issued = 0;
  for (; issued < 100 && capped.IssueNow(3, now); ++issued) capped.Done(3, kMs, now += kMs);
  EXPECT_LT(issued, 100);  // stops when its budget runs out
}

TEST(FairQueue, AGrantIsIssueNowManyTimesAndReturnUndoesIt) {
  FairQueue q(Options(4 * kMs, 0));
  Train(q, 1, kMs);
  EXPECT_EQ(q.Grant(1, 0, 16), 4u);  // its bound: 4 ms of 1 ms items
  EXPECT_EQ(q.View(1)->in_flight_ns, 4 * kMs);
  EXPECT_EQ(q.Grant(1, 0, 16), 0u);
  q.Return(1, 3);  // issued one of four
  EXPECT_EQ(q.View(1)->in_flight, 1u);
  EXPECT_EQ(q.View(1)->in_flight_ns, kMs);
  EXPECT_EQ(q.View(1)->predicted_ns, kMs);  // a return trains nothing
  q.Return(1, 5);                           // more than it holds: the rest only
  EXPECT_EQ(q.View(1)->in_flight, 0u);
  q.Return(9, 1);  // unknown: ignored
  EXPECT_FALSE(q.View(9).has_value());

  // Nobody else may be waiting, as for IssueNow.
  q.Ready(2, 0);
  EXPECT_EQ(q.Grant(1, 0, 16), 0u);
}

// What was granted and returned leaves the fair order as if it never went: the tenant that
// returned its grant is not behind another that issued the same work.
TEST(FairQueue, AReturnedGrantCostsNoShare) {
  FairQueue q(Options(100 * kMs, 0));
  Train(q, 1, kMs);
  Train(q, 2, kMs);
  ASSERT_EQ(q.Grant(1, 0, 10), 10u);
  q.Return(1, 10);
  ASSERT_EQ(q.Grant(2, 0, 1), 1u);
  q.Done(2, kMs, kMs);
  q.Ready(1, kMs);
  q.Ready(2, kMs);
  EXPECT_EQ(q.Next(kMs), 1u);  // tenant 2 has had more
  FairQueue capped(Options(100 * kMs, 0));
  capped.Configure(3, ComputeShare(1, 0.1));
  Train(capped, 3, kMs);
  const double before = capped.View(3)->budget_ns;
  ASSERT_GT(capped.Grant(3, 0, 1), 0u);
  EXPECT_LT(capped.View(3)->budget_ns, before);
  capped.Return(3, 1);
  EXPECT_DOUBLE_EQ(capped.View(3)->budget_ns, before);  // its limit's tokens come back
}

// A device that runs what it is handed in order, one item at a time, with saturating tenants
// (always ready): returns each tenant's device time after `items` completions, and checks
// on the way that no two tenants of a class ever have work on the device together when
// `exclusive` (rule 5).
std::map<TenantId, uint64_t> RunSaturated(FairQueue& q, const std::map<TenantId, uint64_t>& cost,
                                          int items, bool exclusive) {
  std::map<TenantId, uint64_t> got;
  std::vector<TenantId> device;  // in flight, oldest first
  uint64_t now = 0;
  for (auto& [t, c] : cost) q.Ready(t, now);
  for (int done = 0; done < items;) {
    while (std::optional<TenantId> t = q.Next(now)) {
      device.push_back(*t);
      q.Ready(*t, now);
    }
    if (exclusive) {
      for (TenantId t : device) EXPECT_EQ(t, device.front()) << "two tenants on the device";
    }
    if (device.empty()) {
      ADD_FAILURE() << "nothing dispatched";
      break;
    }
    const TenantId t = device.front();
    device.erase(device.begin());
    now += cost.at(t);
    got[t] += cost.at(t);
    q.Done(t, cost.at(t), now);
    q.Ready(t, now);
    ++done;
  }
  return got;
}

TEST(FairQueue, TimeSlicesKeepTenantsApartAndFollowTheShares) {
  for (double weight : {3.0, 9.0}) {
    FairOptions o = Options(2 * kMs, 2 * kMs);
    o.min_in_flight = 2;
    o.slice_ns = 4 * kMs;
    FairQueue q(o);
    q.Configure(1, ComputeShare(1));
    q.Configure(2, ComputeShare(weight));
    // Different item lengths: the share is of device time, not of items.
    std::map<TenantId, uint64_t> got = RunSaturated(q, {{1, 150'000}, {2, 400'000}}, 20000, true);
    const double ratio = static_cast<double>(got[2]) / static_cast<double>(got[1]);
    EXPECT_NEAR(ratio / weight, 1.0, 0.05) << "weight " << weight << ": ratio " << ratio;
  }
  // Without slices the two interleave item by item.
  FairOptions o = Options(2 * kMs, 2 * kMs);
  o.min_in_flight = 2;
  FairQueue mixed(o);
  (void)RunSaturated(mixed, {{1, kMs}, {2, kMs}}, 100, false);
}

TEST(FairQueue, ALoneTenantKeepsTheDeviceSliceAfterSlice) {
  FairOptions o = Options(2 * kMs, 2 * kMs);
  o.min_in_flight = 2;
  o.slice_ns = kMs;
  FairQueue q(o);
  Train(q, 1, 100'000);
  for (int round = 0; round < 50; ++round) {
    EXPECT_EQ(q.Grant(1, 0, 100), 20u);  // its whole bound, every time: never held for a switch
    q.Return(1, 20);
  }
  // A second tenant waits until the first's work has left the device.
  Train(q, 2, 100'000);
  ASSERT_TRUE(q.IssueNow(1, 0));
  q.Ready(2, 0);
  EXPECT_FALSE(q.Next(0).has_value());
  EXPECT_TRUE(q.WaitsForDone());
  q.Done(1, 100'000, 100'000);
  EXPECT_EQ(q.Next(100'000), 2u);

  // A kernel cannot be stopped: after two slices of waiting for a long one, the next item
  // goes beside it, and the executor is told when to ask again.
  q.Done(2, 100'000, 200'000);
  ASSERT_TRUE(q.IssueNow(1, 200'000));  // tenant 1 again: a long kernel, say
  q.Ready(2, 200'000);
  EXPECT_FALSE(q.Next(200'000).has_value());
  EXPECT_EQ(q.NextEligibleAt(200'000), 200'000 + 2 * kMs);
  EXPECT_FALSE(q.Next(200'000 + 2 * kMs - 1).has_value());
  EXPECT_EQ(q.Next(200'000 + 2 * kMs), 2u);
  EXPECT_FALSE(q.NextEligibleAt(200'000 + 2 * kMs).has_value());
}

// Turns of `slice_ns`, kept through an owner's pauses of up to 1 ms, two items in flight.
FairOptions Turns(uint64_t slice_ns) {
  FairOptions o = Options(2 * kMs, 2 * kMs);
  o.min_in_flight = 2;
  o.slice_ns = slice_ns;
  o.slice_idle_ns = kMs;
  return o;
}

// The tenant whose turn it is pauses (it synchronized): another's item waits for it, the
// executor is told when to ask again (also once that time has passed, so that an executor
// that comes back late still asks), the owner's next item goes first, and after a pause
// longer than slice_idle_ns the other's goes.
TEST(FairQueue, TheTurnWaitsOutItsOwnersPause) {
  FairQueue q(Turns(8 * kMs));
  Train(q, 1, 100'000);
  Train(q, 2, 3 * kMs, 2 * kMs);  // after tenant 1's pause; items longer than a pause
  const uint64_t t0 = 4 * kMs;
  ASSERT_TRUE(q.IssueNow(1, t0));  // tenant 1's turn
  q.Ready(2, t0);
  EXPECT_FALSE(q.Next(t0).has_value());  // on the device: tenant 1's
  q.Done(1, 100'000, t0 + 100'000);      // tenant 1 synchronizes: a pause
  EXPECT_FALSE(q.Next(t0 + 100'000).has_value()) << "too long to fill the pause";
  EXPECT_EQ(q.NextEligibleAt(t0 + 100'000), t0 + 100'000 + kMs);
  EXPECT_EQ(q.NextEligibleAt(t0 + 3 * kMs), t0 + 3 * kMs);  // asked late: at once
  q.Ready(1, t0 + 130'000);                                 // back after 30 us: its turn goes on
  EXPECT_EQ(q.Next(t0 + 130'000), 1u);
  q.Done(1, 100'000, t0 + 230'000);
  EXPECT_FALSE(q.Next(t0 + 230'000).has_value());
  EXPECT_EQ(q.Next(t0 + 230'000 + kMs), 2u);  // a pause past slice_idle_ns ends the wait
}

// Another tenant's items shorter than a pause fill it one at a time, while rule 2 puts that
// tenant no later than the owner; the owner, back, waits for the one on the device and keeps
// its turn. (Without fills the device idled through every synchronization of the turn's owner:
// two tenants together ran 0.75-0.81 of one alone on an H200.)
TEST(FairQueue, ShortItemsOfAnotherFillTheOwnersPause) {
  FairQueue q(Turns(8 * kMs));
  q.Configure(1, ComputeShare(3));  // three times tenant 2's share
  q.Configure(2, ComputeShare(1));
  Train(q, 1, 100'000);
  Train(q, 2, 100'000, 2 * kMs);  // after tenant 1's pause
  uint64_t now = 4 * kMs;
  ASSERT_TRUE(q.IssueNow(1, now));  // tenant 1's turn
  q.Ready(2, now);
  EXPECT_FALSE(q.Next(now).has_value());  // on the device: tenant 1's
  int fills = 0;
  for (int round = 0; round < 30; ++round) {
    q.Done(1, 100'000, now += 100'000);  // tenant 1 synchronizes: a pause
    if (std::optional<TenantId> t = q.Next(now)) {
      EXPECT_EQ(*t, 2u);
      ++fills;
      q.Ready(2, now);
      EXPECT_FALSE(q.Next(now).has_value()) << "one filling item at a time";
      q.Ready(1, now + 30'000);  // back: waits for the filling item
      EXPECT_FALSE(q.Next(now + 30'000).has_value());
      q.Done(2, 100'000, now += 100'000);
    } else {
      q.Ready(1, now += 30'000);
    }
    ASSERT_EQ(q.Next(now), 1u) << "its turn goes on";
  }
  // Fills follow the shares: about one of tenant 2's items for three of tenant 1's.
  EXPECT_GE(fills, 8);
  EXPECT_LE(fills, 12);
  EXPECT_EQ(q.View(1)->in_flight, 1u);
}

// The tenant whose turn it is issues at once while another waits for its turn (IssueNow, the
// tenant's own thread), as Next would hand it out: on an H200 each of its items went through
// the executor's thread instead, and the device idled a fifth of the time between batches.
TEST(FairQueue, TheTurnsOwnerIssuesAtOnceWhileAnotherWaits) {
  FairQueue q(Turns(kMs));
  Train(q, 1, 100'000);
  Train(q, 2, 100'000, 2 * kMs);
  uint64_t now = 4 * kMs;
  ASSERT_TRUE(q.IssueNow(1, now));  // tenant 1's turn
  q.Ready(2, now);
  EXPECT_FALSE(q.IssueNow(2, now));  // not its turn
  int issued = 1;
  while (q.IssueNow(1, now)) {
    q.Done(1, 100'000, now += 100'000);
    ASSERT_LT(++issued, 100);
  }
  // The turn lasted its slice of predicted time, then it passes.
  EXPECT_EQ(issued, 10);
  q.Done(1, 100'000, now += 100'000);
  EXPECT_EQ(q.Next(now + 2 * kMs), 2u);
  // A higher class ready goes first, turn or not.
  q.Configure(3, ComputeShare(1, 0, Priority::kHigh));
  Train(q, 3, 100'000, now + 3 * kMs);
  q.Ready(3, now + 3 * kMs);
  EXPECT_FALSE(q.IssueNow(2, now + 3 * kMs));
}

// A high-priority tenant issues at once while lower ones wait (as Next would hand it out
// first); a lower one does not while the higher one is ready.
TEST(FairQueue, AHigherClassIssuesAtOnceWhileLowerOnesWait) {
  FairOptions o = Options(2 * kMs, 2 * kMs);
  o.min_in_flight = 2;
  FairQueue q(o);
  q.Configure(1, ComputeShare(1, 0, Priority::kHigh));
  q.Configure(2, ComputeShare(1, 0, Priority::kLow));
  Train(q, 1, 100'000);
  Train(q, 2, 100'000);
  q.Ready(2, kMs);
  EXPECT_TRUE(q.IssueNow(1, kMs));
  EXPECT_EQ(q.View(1)->in_flight, 1u);
  EXPECT_TRUE(q.View(2)->ready);  // still waiting
  q.Ready(1, kMs);
  EXPECT_FALSE(q.IssueNow(2, kMs));
  EXPECT_EQ(q.Next(kMs), 1u);
}

// The executor reports a group of items with one Done: it must leave the queue
// as that many one-item Dones of the group's average cost would.
TEST(FairQueue, ADoneForManyItemsCountsAsThatManyDones) {
  FairQueue many(Options(10 * kMs, 0)), one(Options(10 * kMs, 0));
  for (FairQueue* q : {&many, &one}) {
    q->Configure(1, ComputeShare(1, 0.5));
    q->Configure(2, ComputeShare(1));
    Train(*q, 1, kMs);
    Train(*q, 2, kMs);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q->IssueNow(1, 0));
  }
  many.Done(1, 3, 3 * 1'200'000, kMs);
  for (int i = 0; i < 3; ++i) one.Done(1, 1'200'000, kMs);
  auto a = many.View(1), b = one.View(1);
  EXPECT_EQ(a->in_flight, 2u);
  EXPECT_EQ(a->in_flight, b->in_flight);
  EXPECT_EQ(a->in_flight_ns, b->in_flight_ns);
  EXPECT_NEAR(static_cast<double>(a->predicted_ns), static_cast<double>(b->predicted_ns), 2);
  EXPECT_NEAR(a->budget_ns, b->budget_ns, 2);
  // Both then order the two tenants alike.
  uint64_t now = kMs;
  for (int step = 0; step < 20; ++step) {
    for (FairQueue* q : {&many, &one}) {
      q->Ready(1, now);
      q->Ready(2, now);
    }
    auto x = many.Next(now), y = one.Next(now);
    ASSERT_EQ(x, y) << "step " << step;
    if (!x) break;
    many.Done(*x, kMs, now);
    one.Done(*y, kMs, now);
    now += kMs;
  }
  // More items than are in flight: the rest only train the prediction.
  many.Done(1, 10, 10 * 500'000, now);
  EXPECT_EQ(many.View(1)->in_flight, 0u);
  EXPECT_EQ(many.View(1)->in_flight_ns, 0u);
  EXPECT_LT(many.View(1)->predicted_ns, kMs);
  many.Done(1, 0, kMs, now);  // no items: nothing changes
  EXPECT_EQ(many.View(1)->in_flight, 0u);
}

TEST(FairQueue, ConfigureMovesAReadyTenant) {
  FairQueue q(Options(kMs, 0));
  q.Ready(1, 0);
  q.Ready(2, 0);
  q.Configure(2, ComputeShare(1, 0, Priority::kHigh));
  EXPECT_EQ(q.Next(0), 2u);
  EXPECT_EQ(q.Next(0), 1u);
  EXPECT_FALSE(q.Next(0).has_value());
  EXPECT_EQ(q.tenants(), 2u);
  q.Remove(1);
  q.Remove(2);
  EXPECT_EQ(q.tenants(), 0u);
  EXPECT_EQ(q.in_flight_ns(), 0u);
}

}  // namespace
}  // namespace remora::sched
