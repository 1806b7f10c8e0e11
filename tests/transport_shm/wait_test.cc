// tests/transport_shm/wait_test.cc - WaitStrategy: spin, park, wake, deadlines, no lost wakeups;
// Arm/Disarm (event-driven waiters) against WakeIfParked.
#include "transport/shm/wait.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
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

// A yielding poll finds the publication without ever parking, as a pausing one does.
TEST(WaitStrategy, YieldingSpinFindsThePublicationWithoutParking) {
  std::atomic<uint32_t> word{0};
  std::atomic<bool> flag{false};
  std::atomic<uint32_t> parked_seen{0};
  WaitStrategy w({.spin = 30s, .park = 30s, .yield = true});
  std::thread publisher([&] {
    std::this_thread::sleep_for(5ms);
    parked_seen.store(word.load(std::memory_order_seq_cst));
    flag.store(true, std::memory_order_seq_cst);
    WaitStrategy::WakeIfParked(word);
  });
  int timeouts = 0;
  EXPECT_TRUE(w.Wait(
      word, [&] { return flag.load(std::memory_order_seq_cst); }, Deadline::Never(),
      [&] { ++timeouts; }));
  publisher.join();
  EXPECT_EQ(parked_seen.load(), 0u) << "it parked within a 30 s spin";
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

// Spins about `n` iterations: work done between the last look and Arm.
void Dawdle(uint64_t n) {
  for (uint64_t k = 0; k < n; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
}

TEST(WaitStrategy, ArmIsRefusedWhenReadyAndTakenByOnePublisherOnly) {
  std::atomic<uint32_t> word{0};
  EXPECT_FALSE(WaitStrategy::Arm(word, [] { return true; }));
  EXPECT_EQ(word.load(), kWaiterIdle) << "a refused Arm leaves the word idle";

  ASSERT_TRUE(WaitStrategy::Arm(word, [] { return false; }));
  EXPECT_EQ(word.load(), kWaiterArmed);
  EXPECT_TRUE(WaitStrategy::WakeIfParked(word)) << "the publisher takes the arming: ring";
  EXPECT_FALSE(WaitStrategy::WakeIfParked(word)) << "only once";
  EXPECT_TRUE(WaitStrategy::Disarm(word)) << "Disarm learns that a doorbell was rung";

  ASSERT_TRUE(WaitStrategy::Arm(word, [] { return false; }));
  EXPECT_FALSE(WaitStrategy::Disarm(word)) << "cancelled: nobody rang";
  EXPECT_FALSE(WaitStrategy::WakeIfParked(word)) << "and nobody will";
  EXPECT_EQ(word.load(), kWaiterIdle);
}

// A consumer sleeps in poll() on an eventfd doorbell after every item (Arm, no spin);
// the publisher publishes, then rings when WakeIfParked says so. A lost wake-up in the
// Arm/WakeIfParked handshake shows up as a poll timeout (10 s, so no false alarm).
TEST(WaitStrategy, ArmAgainstPublisherNeverLosesADoorbell) {
#if defined(__SANITIZE_THREAD__)
  constexpr uint64_t kItems = 5000;
#else
  constexpr uint64_t kItems = 50000;
#endif
  std::atomic<uint32_t> word{0};
  std::atomic<uint64_t> published{0};
  const int bell = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(bell, 0);
  std::atomic<uint64_t> caught_up{0};
  std::thread publisher([&] {
    for (uint64_t i = 1; i <= kItems; ++i) {
      published.store(i, std::memory_order_seq_cst);
      if (WaitStrategy::WakeIfParked(word)) {
        const uint64_t one = 1;
        ASSERT_EQ(::write(bell, &one, sizeof one), static_cast<ssize_t>(sizeof one));
      }
      if (i % 3 == 0) std::this_thread::yield();
      // Now and then a pause once the consumer has caught up, so that it does go to
      // sleep however the machine schedules the two (else the test may prove nothing).
      if (i % 500 == 0) {
        while (caught_up.load(std::memory_order_acquire) < i) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    }
  });
  uint64_t seen = 0, sleeps = 0, refused = 0;
  while (seen < kItems) {
    const uint64_t now = published.load(std::memory_order_seq_cst);
    if (now > seen) {
      seen = now;
      caught_up.store(seen, std::memory_order_release);
      continue;
    }
    // Sometimes dawdle before arming, so that items also land between the look above
    // and Arm's re-check (Arm refused; the publisher may ring late).
    Dawdle((seen * 7919) % 512);
    if (!WaitStrategy::Arm(word,
                           [&] { return published.load(std::memory_order_seq_cst) > seen; })) {
      ++refused;
      continue;
    }
    ++sleeps;
    pollfd p{bell, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10'000), 1) << "lost wake-up at item " << seen;
    WaitStrategy::Disarm(word);
    uint64_t count;
    ASSERT_EQ(::read(bell, &count, sizeof count), static_cast<ssize_t>(sizeof count));
    // Usually 1; more when a refused Arm raced a publisher that took it and rang late.
    EXPECT_GE(count, 1u);
  }
  publisher.join();
  ::close(bell);
  EXPECT_GT(sleeps, 0u);
  std::printf("%llu sleeps, %llu arms refused\n", static_cast<unsigned long long>(sleeps),
              static_cast<unsigned long long>(refused));
}

TEST(Futex, WaitTimesOutAndReturnsAtOnceOnValueMismatch) {
  std::atomic<uint32_t> word{0};
  EXPECT_FALSE(FutexWait(word, 0, 1ms));
  EXPECT_TRUE(FutexWait(word, 7, 10s)) << "value differs: EAGAIN counts as woken";
}

}  // namespace
}  // namespace remora::transport::shm
