// tests/scheduler/stream_order_test.cc - CUDA's stream ordering as StreamOrder keeps it: FIFO
// streams, the legacy default stream, event waits, host-function holds, the device side of
// the legacy rule, and a random workload checked against a brute-force happens-before model.
#include "scheduler/stream_order.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

namespace remora::sched {
namespace {

struct Status {  // what OrderOnDevice's callback returns (the server passes a real Status)
  bool good = true;
  bool ok() const { return good; }
};

using Order = StreamOrder<int, int>;

TEST(LegacyTied, TheLegacyStreamAndBlockingStreamsOnly) {
  EXPECT_TRUE(LegacyTied(0, true, 5, true));
  EXPECT_TRUE(LegacyTied(5, true, 0, true));
  EXPECT_FALSE(LegacyTied(0, true, 5, false));  // non-blocking
  EXPECT_FALSE(LegacyTied(5, false, 0, true));
  EXPECT_FALSE(LegacyTied(4, true, 5, true));  // two blocking streams
  EXPECT_FALSE(LegacyTied(0, true, 0, true));
}

TEST(StreamOrder, AStreamIssuesInOrder) {
  Order o;
  o.Add(1, false);
  EXPECT_EQ(o.Push(1, 10), 1u);
  EXPECT_EQ(o.Push(1, 11), 2u);
  EXPECT_TRUE(o.HeadReady(1));
  EXPECT_EQ(o.Head(1).payload, 10);
  o.Issued(1);
  EXPECT_EQ(o.Head(1).payload, 11);
  EXPECT_EQ(o.issued(1), 1u);
  o.Issued(1);
  EXPECT_FALSE(o.HeadReady(1));
  EXPECT_EQ(o.queued(), 0u);
  EXPECT_FALSE(o.Push(7, 1).has_value());  // unknown stream
  o.Remove(1);
  EXPECT_FALSE(o.Has(1));
  EXPECT_EQ(o.Push(1, 12), 3u);  // the owner's own wait for a going stream still queues
}

TEST(StreamOrder, TheLegacyStreamWaitsForBlockingStreamsAndTheyForIt) {
  Order o;
  o.Add(0, true);
  o.Add(1, true);   // blocking
  o.Add(2, false);  // non-blocking
  o.Push(1, 1);
  o.Push(2, 2);
  o.Push(0, 3);  // after stream 1's item, not stream 2's
  EXPECT_FALSE(o.HeadReady(0));
  o.Issued(2);
  EXPECT_FALSE(o.HeadReady(0));
  o.Issued(1);
  EXPECT_TRUE(o.HeadReady(0));
  o.Push(1, 4);  // after the legacy item
  o.Push(2, 5);  // not tied
  EXPECT_FALSE(o.HeadReady(1));
  EXPECT_TRUE(o.HeadReady(2));
  o.Issued(0);
  EXPECT_TRUE(o.HeadReady(1));
}

TEST(StreamOrder, OnlyWorkSubmittedBeforeIsWaitedFor) {
  Order o;
  o.Add(0, true);
  o.Add(1, true);
  o.Push(0, 1);
  o.Push(1, 2);  // waits for legacy item 1
  o.Push(0, 3);  // waits for stream 1's item 1
  o.Issued(0);
  EXPECT_TRUE(o.HeadReady(1));
  EXPECT_FALSE(o.HeadReady(0));
  o.Issued(1);
  EXPECT_TRUE(o.HeadReady(0));
}

TEST(StreamOrder, FindsAQueuedItemByItsIndexOnly) {
  Order o;
  o.Add(1, false);
  for (int v = 10; v < 15; ++v) o.Push(1, v);  // indices 1..5
  o.Issued(1);
  o.Issued(1);
  EXPECT_EQ(o.Find(1, 2), nullptr);  // issued
  ASSERT_NE(o.Find(1, 3), nullptr);
  EXPECT_EQ(o.Find(1, 3)->payload, 12);
  EXPECT_EQ(o.Find(1, 5)->payload, 14);
  EXPECT_EQ(o.Find(1, 6), nullptr);  // not submitted
  EXPECT_EQ(o.Find(7, 3), nullptr);  // no such stream
  o.Drain(1, [](auto&) {});
  EXPECT_EQ(o.Find(1, 5), nullptr);
  o.Push(1, 20);
  EXPECT_EQ(o.Find(1, 6)->payload, 20);
}

TEST(StreamOrder, AnEventWaitFollowsTheLatestRecordSubmittedBeforeIt) {
  Order o;
  o.Add(1, false);
  o.Add(2, false);
  uint64_t r = *o.Push(1, 1);
  o.Recorded(/*event=*/9, 1, r);
  EXPECT_TRUE(o.PendingRecord(9).has_value());
  o.Push(2, 2, /*waits=*/9);
  EXPECT_FALSE(o.HeadReady(2));
  EXPECT_NE(o.Find(1, r), nullptr);
  o.Issued(1);
  EXPECT_FALSE(o.PendingRecord(9).has_value());
  EXPECT_TRUE(o.HeadReady(2));
  o.Issued(2);
  // A wait on an event whose record was issued, or never recorded, waits for nothing.
  o.Push(2, 3, 9);
  o.Push(2, 4, 77);
  EXPECT_TRUE(o.HeadReady(2));
  o.ForgetEvent(9);
  EXPECT_FALSE(o.PendingRecord(9).has_value());
}

TEST(StreamOrder, AHeldHostFunctionHoldsItsStreamUntilReleased) {
  Order o;
  o.Add(1, false);
  o.Push(1, 1);
  o.Push(1, 2);
  o.Hold(1, /*hold=*/42);
  EXPECT_FALSE(o.HeadReady(1));
  EXPECT_EQ(o.queued(), 2u);
  EXPECT_FALSE(o.Release(41).has_value());
  EXPECT_EQ(o.Release(42), 1u);
  EXPECT_EQ(o.issued(1), 1u);
  EXPECT_TRUE(o.HeadReady(1));
  EXPECT_EQ(o.Head(1).payload, 2);
}

TEST(StreamOrder, TheDeviceOrdersATiedStreamOnceForEachAdvance) {
  Order o;
  o.Add(0, true);
  o.Add(1, true);
  o.Add(2, false);
  o.Push(1, 1);
  o.Push(2, 2);
  o.Issued(1);
  o.Issued(2);
  o.Push(0, 3);
  std::vector<uint64_t> waited;
  auto wait = [&](uint64_t s) {
    waited.push_back(s);
    return Status{};
  };
  EXPECT_TRUE(o.OrderOnDevice(0, wait).ok());
  EXPECT_EQ(waited, std::vector<uint64_t>{1});  // not the non-blocking stream
  waited.clear();
  EXPECT_TRUE(o.OrderOnDevice(0, wait).ok());
  EXPECT_TRUE(waited.empty());  // nothing new issued on stream 1
  o.Push(1, 4);
  o.Issued(0);
  o.Issued(1);
  EXPECT_TRUE(o.OrderOnDevice(0, wait).ok());
  EXPECT_EQ(waited, std::vector<uint64_t>{1});
  // A failure is returned and not remembered: the next head tries again.
  o.Push(1, 5);
  o.Issued(1);
  EXPECT_FALSE(o.OrderOnDevice(0, [](uint64_t) { return Status{false}; }).ok());
  waited.clear();
  EXPECT_TRUE(o.OrderOnDevice(0, wait).ok());
  EXPECT_EQ(waited, std::vector<uint64_t>{1});
}

TEST(StreamOrder, AnErasedStreamHoldsNobodyAndDrainDropsInOrder) {
  Order o;
  o.Add(0, true);
  o.Add(1, true);
  o.Push(1, 1);
  o.Push(0, 2);
  EXPECT_FALSE(o.HeadReady(0));
  std::vector<int> dropped;
  o.Drain(1, [&](Order::Item& i) { dropped.push_back(i.payload); });
  EXPECT_EQ(dropped, std::vector<int>{1});
  EXPECT_TRUE(o.HeadReady(0));  // drained counts as issued
  o.Push(1, 3);
  o.Push(0, 4);
  o.Issued(0);  // item 2; item 4 follows stream 1's item 3
  EXPECT_EQ(o.queued(), 2u);
  EXPECT_FALSE(o.HeadReady(0));
  o.Erase(1);
  EXPECT_TRUE(o.HeadReady(0));
  EXPECT_EQ(o.queued(), 1u);
}

TEST(StreamOrder, NextReadyTakesStreamsInTurn) {
  Order o;
  for (uint64_t s = 1; s <= 3; ++s) {
    o.Add(s, false);
    for (int i = 0; i < 4; ++i) o.Push(s, int(s));
  }
  std::string seq;
  while (std::optional<uint64_t> s = o.NextReady()) {
    seq += char('0' + *s);
    o.Issued(*s);
  }
  EXPECT_EQ(seq, "123123123123");
}

// Random workloads: every issued item's predecessors (by CUDA's rules, computed by brute
// force from the submission log) were issued before it, and issuing whatever is ready
// always finishes the workload.
TEST(StreamOrder, RandomWorkloadsIssueNothingBeforeWhatCudaOrdersFirst) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    Order o;
    const int nstreams = 2 + int(rng() % 5);
    std::vector<bool> blocking(static_cast<size_t>(nstreams));
    for (int s = 0; s < nstreams; ++s) {
      blocking[size_t(s)] = s == 0 || rng() % 2;
      o.Add(uint64_t(s), blocking[size_t(s)]);
    }
    struct Logged {
      int stream;
      bool waits;
      int record_item;  // the item of the latest record of its event, or -1
    };
    std::vector<Logged> log;  // payload = position in the log
    std::vector<int> latest_record(3, -1);
    std::vector<bool> issued;
    auto precede = [&](int a, int b) {  // CUDA orders log item a before b (a < b)
      const Logged &x = log[size_t(a)], &y = log[size_t(b)];
      if (x.stream == y.stream) return true;
      if (LegacyTied(uint64_t(x.stream), blocking[size_t(x.stream)], uint64_t(y.stream),
                     blocking[size_t(y.stream)]))
        return true;
      return y.waits && y.record_item == a;
    };
    auto issue_one = [&]() {
      std::optional<uint64_t> s = o.NextReady();
      if (!s) return false;
      const int item = o.Head(*s).payload;
      for (int a = 0; a < item; ++a) {
        if (precede(a, item)) {
          EXPECT_TRUE(issued[size_t(a)]) << a << " before " << item;
        }
      }
      issued[size_t(item)] = true;
      o.Issued(*s);
      return true;
    };
    for (int step = 0; step < 60; ++step) {
      if (rng() % 3 == 0) {
        issue_one();
        continue;
      }
      const int s = int(rng() % uint32_t(nstreams));
      const int ev = int(rng() % 3);
      const int pos = int(log.size());
      switch (rng() % 3) {
        case 0:  // a plain item
          log.push_back({s, false, -1});
          o.Push(uint64_t(s), pos);
          break;
        case 1: {  // a record of event ev
          log.push_back({s, false, -1});
          uint64_t idx = *o.Push(uint64_t(s), pos);
          o.Recorded(ev, uint64_t(s), idx);
          latest_record[size_t(ev)] = pos;
          break;
        }
        default:  // a wait for event ev
          log.push_back({s, true, latest_record[size_t(ev)]});
          o.Push(uint64_t(s), pos, ev);
          break;
      }
      issued.push_back(false);
    }
    while (issue_one()) {
    }
    EXPECT_EQ(o.queued(), 0u) << "round " << round << ": work left that never became ready";
  }
}

}  // namespace
}  // namespace remora::sched
