// tests/scheduler/shares_test.cc - TargetShares and ListedTargets against hand-worked splits.
#include "scheduler/shares.h"

#include <gtest/gtest.h>

namespace remora::sched {
namespace {

Contender Busy(const Share& share) {
  return {share, 1.0};
}

TEST(TargetShares, AHigherClassLeavesTheRestUnderItsLimitAndDemand) {
  // High capped at 0.4; normal tenants 1:3 share the 0.6 left; low gets nothing.
  std::vector<Contender> c = {Busy(ComputeShare(1, 0.4, Priority::kHigh)), Busy(ComputeShare(1)),
                              Busy(ComputeShare(3)), Busy(ComputeShare(5, 0, Priority::kLow))};
  std::vector<double> t = TargetShares(c, {});
  EXPECT_NEAR(t[0], 0.4, 1e-12);
  EXPECT_NEAR(t[1], 0.15, 1e-12);
  EXPECT_NEAR(t[2], 0.45, 1e-12);
  EXPECT_NEAR(t[3], 0.0, 1e-12);
  // High wanting only 0.1 and normal 1 capped at 0.05: low gets what is left.
  c[0].demand = 0.1;
  c[1].share.limit = 0.05;
  c[2].demand = 0.5;
  t = TargetShares(c, {});
  EXPECT_NEAR(t[0], 0.1, 1e-12);
  EXPECT_NEAR(t[1], 0.05, 1e-12);
  EXPECT_NEAR(t[2], 0.5, 1e-12);
  EXPECT_NEAR(t[3], 0.35, 1e-12);
  EXPECT_TRUE(TargetShares({}, {}).empty());
}

TEST(TargetShares, ProjectsSplitFirstThenTheirTenants) {
  // Project 1 (share 3) with three tenants, a lone tenant of request 1: 3/4 and
  // 1/4; within the project by request 1:1:2. Limits scale by limit_scale.
  std::vector<Contender> c = {Busy(ComputeShare(1, 0, Priority::kNormal, 1)),
                              Busy(ComputeShare(1, 0, Priority::kNormal, 1)),
                              Busy(ComputeShare(2, 0, Priority::kNormal, 1)),
                              Busy(ComputeShare(1))};
  std::vector<double> t = TargetShares(c, {{1, 3.0}});
  EXPECT_NEAR(t[0], 0.1875, 1e-12);
  EXPECT_NEAR(t[1], 0.1875, 1e-12);
  EXPECT_NEAR(t[2], 0.375, 1e-12);
  EXPECT_NEAR(t[3], 0.25, 1e-12);
  c[3].share.limit = 0.4;  // 0.1 of the device at scale 1/4: the project takes the rest
  t = TargetShares(c, {{1, 3.0}}, 0.25);
  EXPECT_NEAR(t[3], 0.1, 1e-12);
  EXPECT_NEAR(t[2], 0.45, 1e-12);
}

TEST(ListedTargets, AnIdleHigherClassTakesNothingFromTheRest) {
  // A high tenant (request 1) and two normal ones (1 and 3) in one account.
  const std::vector<Share> shares = {ComputeShare(1, 0, Priority::kHigh), ComputeShare(1),
                                     ComputeShare(3, 0.5, Priority::kNormal, kNoProject, 9),
                                     ComputeShare(3, 0.5, Priority::kNormal, kNoProject, 9)};
  // Idle high: its own target is the whole device; the normal class splits it
  // by request within the account's limit (0.5, two sessions).
  std::vector<double> t = ListedTargets(shares, std::vector<double>{0, 0.3, 0.2, 0.2}, {});
  EXPECT_NEAR(t[0], 1.0, 1e-12);
  EXPECT_NEAR(t[1], 0.5, 1e-12);
  EXPECT_NEAR(t[2], 0.25, 1e-12);
  EXPECT_NEAR(t[3], 0.25, 1e-12);
  // The high tenant using 0.6 leaves 0.4, split 1:3 (under the account's limit).
  t = ListedTargets(shares, std::vector<double>{0.6, 0.1, 0.15, 0.15}, {});
  EXPECT_NEAR(t[0], 1.0, 1e-12);
  EXPECT_NEAR(t[1], 0.1, 1e-12);
  EXPECT_NEAR(t[2], 0.15, 1e-12);
  EXPECT_NEAR(t[3], 0.15, 1e-12);
}

}  // namespace
}  // namespace remora::sched
