// tests/scheduler/ring_queue_test.cc - RingQueue against std::deque on random pushes and pops.
#include "scheduler/ring_queue.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace remora::sched {
namespace {

TEST(RingQueue, BehavesAsADequeThroughWrapsAndGrowth) {
  RingQueue<int> q;
  std::deque<int> model;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    if (model.empty() || rng() % 3 != 0) {
      const int v = static_cast<int>(rng());
      q.push_back(v);
      model.push_back(v);
    } else {
      ASSERT_EQ(q.front(), model.front());
      q.pop_front();
      model.pop_front();
    }
    ASSERT_EQ(q.size(), model.size());
    if (step % 97 == 0) {
      std::vector<int> seen;
      for (int v : q) seen.push_back(v);
      ASSERT_EQ(seen, std::vector<int>(model.begin(), model.end()));
      for (size_t i = 0; i < model.size(); ++i) ASSERT_EQ(q[i], model[i]);
    }
  }
}

TEST(RingQueue, APoppedSlotLetsGoOfItsItem) {
  RingQueue<std::shared_ptr<int>> q;
  auto held = std::make_shared<int>(1);
  q.push_back(held);
  q.push_back(std::make_shared<int>(2));
  EXPECT_EQ(held.use_count(), 2);
  q.pop_front();
  EXPECT_EQ(held.use_count(), 1);
  q.clear();
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace remora::sched
