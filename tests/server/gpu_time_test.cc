// tests/server/gpu_time_test.cc - the GPU-time meter's arithmetic: when charge groups close,
// busy clocks, and the decaying usage share.
#include "server/gpu_time.h"

#include <gtest/gtest.h>

#include <cmath>

namespace remora::server {
namespace {

TEST(ChargeGroups, TheFirstItemOnAnIdleStreamIsAGroup) {
  ChargeGroups g;
  EXPECT_TRUE(g.Issued());
  EXPECT_EQ(g.Close(), 1u);
  EXPECT_EQ(g.groups_in_flight(), 1u);
}

TEST(ChargeGroups, WhileAGroupIsInFlightTheNextHoldsAQuarterOfTheItemsOrEight) {
  ChargeGroups g;
  // One group of 100 items in flight: the next closes at 25 items.
  for (int i = 0; i < 100; ++i) g.Issued();
  EXPECT_EQ(g.Close(), 100u);
  int n = 0;
  while (!g.Issued()) ++n;
  EXPECT_EQ(n + 1, 25);
  EXPECT_EQ(g.Close(), 25u);
  // With few items in flight, eight at least.
  ChargeGroups h;
  h.Issued();
  h.Close();
  n = 0;
  while (!h.Issued()) ++n;
  EXPECT_EQ(n + 1, int(ChargeGroups::kMinItems));
}

TEST(ChargeGroups, ItemsLeftOpenCloseWhenTheLastGroupIsCharged) {
  ChargeGroups g;
  g.Issued();
  EXPECT_EQ(g.Close(), 1u);
  EXPECT_FALSE(g.Issued());  // waits for more while a group is in flight
  EXPECT_EQ(g.open_items(), 1u);
  EXPECT_TRUE(g.Charged(1));  // nothing in flight would close it: close now
  EXPECT_EQ(g.Close(), 1u);
  EXPECT_FALSE(g.Charged(1));  // nothing open
  EXPECT_EQ(g.groups_in_flight(), 0u);
}

TEST(BusyClock, ChargesWhatEachReadingAdds) {
  BusyClock c(1000);  // a pooled stream's earlier time is not charged
  EXPECT_EQ(c.Take(1500), 500u);
  EXPECT_EQ(c.Take(1500), 0u);
  EXPECT_EQ(c.Take(4000), 2500u);
  EXPECT_EQ(c.Take(3000), 0u);  // a clock that went back charges nothing
  EXPECT_EQ(c.Take(3500), 500u);
}

TEST(UsageRate, ABusyTenantShowsItsShareAtOnceAndItDecays) {
  const uint64_t t0 = 1'000'000'000;
  UsageRate u(t0);
  EXPECT_EQ(u.Share(t0), 0.0);
  // Half the device for one second: share 0.5.
  for (int ms = 1; ms <= 1000; ++ms) u.Add(500'000, t0 + uint64_t(ms) * 1'000'000);
  EXPECT_NEAR(u.Share(t0 + 1'000'000'000), 0.5, 0.01);
  // Idle for one window: the rate falls by e, the weight seen grows.
  const double later = u.Share(t0 + 1'000'000'000 + uint64_t(UsageRate::kWindowNs));
  const double rate = 0.5 * (1 - std::exp(-0.1)) * std::exp(-1.0);
  EXPECT_NEAR(later, rate / (1 - std::exp(-1.1)), 0.01);
  EXPECT_LT(later, 0.1);
}

TEST(UsageRate, NeverAboveOne) {
  UsageRate u(0);
  u.Add(5'000'000'000, 1'000'000'000);  // more device time than wall time (overlap)
  EXPECT_EQ(u.Share(1'000'000'000), 1.0);
}

}  // namespace
}  // namespace remora::server
