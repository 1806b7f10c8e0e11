// tests/scheduler/dispatch_test.cc - the FIFO dispatch order.
#include "scheduler/dispatch.h"

#include <gtest/gtest.h>

namespace remora::sched {
namespace {

TEST(FifoQueue, ServesTenantsInTheOrderTheyBecameReady) {
  FifoQueue q;
  EXPECT_FALSE(q.Next(0).has_value());
  q.Ready(3, 0);
  q.Ready(1, 1);
  q.Ready(3, 2);  // already queued: no second turn
  q.Ready(2, 3);
  EXPECT_EQ(q.Next(4), 3u);
  EXPECT_EQ(q.Next(4), 1u);
  q.Ready(3, 5);  // ready again after its turn: back of the line
  EXPECT_EQ(q.Next(6), 2u);
  EXPECT_EQ(q.Next(6), 3u);
  EXPECT_FALSE(q.Next(6).has_value());
}

TEST(FifoQueue, RemovedTenantsAreNeverServed) {
  FifoQueue q;
  q.Ready(1, 0);
  q.Ready(2, 0);
  q.Remove(1);
  q.Remove(9);  // unknown: nothing happens
  EXPECT_EQ(q.Next(1), 2u);
  EXPECT_FALSE(q.Next(1).has_value());
}

}  // namespace
}  // namespace remora::sched
