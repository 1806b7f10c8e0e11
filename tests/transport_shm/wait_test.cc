// tests/transport_shm/wait_test.cc - WaitStrategy: spin, park, wake, deadlines, no lost wakeups.
#include "transport/shm/wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace remora::transport::shm {
namespace {

using namespace std::chrono_literals;

TEST(WaitStrategy, ReadyAtOnceDoesNotPark) {
  std::atomic<uint32_t> word{0};
  WaitStrategy w;
  int timeouts = 0;
  EXPECT_TRUE(w.Wait(
      word, [] { return true; }, Deadline::Never(), [&] { ++timeouts; }));
  EXPECT_EQ(word.load(), 0u);
  EXPECT_EQ(timeouts, 0);
}

TEST(WaitStrategy, PassedDeadlineStillTestsReadyOnce) {
  std::atomic<uint32_t> word{0};
  WaitStrategy w;
  int calls = 0;
  EXPECT_FALSE(w.Wait(
      word, [&] { return ++calls > 1; }, Deadline::In(-1s), [] {}));
  EXPECT_EQ(calls, 1);
}

TEST(WaitStrategy, DeadlineEndsTheWaitAndParkTimeoutsAreReported) {
  std::atomic<uint32_t> word{0};
  WaitStrategy w({.spin = 0ns, .park = 5ms});
  int timeouts = 0;
  const auto start = std::chrono::steady_clock::now();
  // 500 ms, not less: two 5 ms parks must fit even when a loaded CI machine (sanitizers,
  // ctest -j) delays the thread's wake-up after the first park by hundreds of ms.
  EXPECT_FALSE(w.Wait(
      word, [] { return false; }, Deadline::In(500ms), [&] { ++timeouts; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 500ms);
  EXPECT_GE(timeouts, 2);  // at least a few 5 ms parks fit in 500 ms
  EXPECT_EQ(word.load(), 0u) << "the sleeping flag must be cleared on return";
}

TEST(WaitStrategy, PublisherWakesParkedWaiter) {
  std::atomic<uint32_t> word{0};
  std::atomic<bool> flag{false};
  // A lost wakeup would sleep the whole 30 s park and report a park timeout.
  WaitStrategy w({.spin = 0ns, .park = 30s});
  int timeouts = 0;
  std::thread publisher([&] {
    while (word.load() == 0) std::this_thread::yield();  // wait until parked
    flag.store(true, std::memory_order_seq_cst);
    WaitStrategy::WakeIfParked(word);
  });
  EXPECT_TRUE(w.Wait(
      word, [&] { return flag.load(std::memory_order_seq_cst); }, Deadline::Never(),
      [&] { ++timeouts; }));
  publisher.join();
  EXPECT_EQ(timeouts, 0);
}

TEST(WaitStrategy, WakeIfParkedLeavesIdleWordAlone) {
  std::atomic<uint32_t> word{0};
  WaitStrategy::WakeIfParked(word);
  EXPECT_EQ(word.load(), 0u);
  word.store(1);
  WaitStrategy::WakeIfParked(word);
  EXPECT_EQ(word.load(), 0u) << "the publisher resets the flag it acted on";
}

// Two threads hand a token back and forth, always parking (no spin): any lost wakeup in
// the Dekker handshake shows up as a park timeout (park = 30 s, so no false alarm).
TEST(WaitStrategy, PingPongNeverLosesAWakeup) {
#if defined(__SANITIZE_THREAD__)
  constexpr int kRounds = 2000;
#else
  constexpr int kRounds = 20000;
#endif
  std::atomic<uint32_t> word_a{0}, word_b{0};
  std::atomic<int> token{0};  // even: A's turn, odd: B's turn
  WaitStrategy w({.spin = 0ns, .park = 30s});
  std::atomic<int> timeouts{0};
  auto player = [&](int parity, std::atomic<uint32_t>& mine, std::atomic<uint32_t>& theirs) {
    for (int i = 0; i < kRounds; ++i) {
      w.Wait(
          mine, [&] { return token.load(std::memory_order_seq_cst) % 2 == parity; },
          Deadline::Never(), [&] { timeouts.fetch_add(1); });
      token.fetch_add(1, std::memory_order_seq_cst);
      WaitStrategy::WakeIfParked(theirs);
    }
  };
  std::thread b([&] { player(1, word_b, word_a); });
  player(0, word_a, word_b);
  b.join();
  EXPECT_EQ(token.load(), 2 * kRounds);
  EXPECT_EQ(timeouts.load(), 0);
}

TEST(Futex, WaitTimesOutAndReturnsAtOnceOnValueMismatch) {
  std::atomic<uint32_t> word{0};
  EXPECT_FALSE(FutexWait(word, 0, 1ms));
  EXPECT_TRUE(FutexWait(word, 7, 10s)) << "value differs: EAGAIN counts as woken";
}

}  // namespace
}  // namespace remora::transport::shm
