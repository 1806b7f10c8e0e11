// tests/transport_shm/spsc_ring_test.cc - SpscRing: wrap-around, limits, full ring, batching,
// corrupt records and positions from a hostile peer, concurrent stress with checksums.
#include "transport/shm/spsc_ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <thread>

#include "transport/shm/wait.h"

namespace remora::transport::shm {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;

// A ring region whose trailer ends at a PROT_NONE page, so any read past the region faults.
class GuardedRegion {
 public:
  explicit GuardedRegion(size_t capacity) : capacity_(capacity) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t need = (SpscRing::RegionSize(capacity) + page - 1) / page * page;
    total_ = need + 2 * page;
    void* p = ::mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    base_ = static_cast<std::byte*>(p);
    ::mprotect(base_, page, PROT_NONE);
    ::mprotect(base_ + page + need, page, PROT_NONE);
    region_ = {base_ + page + need - SpscRing::RegionSize(capacity),
               SpscRing::RegionSize(capacity)};
    EXPECT_TRUE(SpscRing::Initialize(region_, capacity).ok());
  }
  ~GuardedRegion() { ::munmap(base_, total_); }
  std::span<std::byte> region() const { return region_; }
  std::byte* data() const { return region_.data(); }
  RingTrailer* trailer() const {
    return reinterpret_cast<RingTrailer*>(region_.data() + capacity_);
  }
  SpscRing::Producer producer() const {
    return std::move(SpscRing::Producer::Attach(region_, capacity_)).value();
  }
  SpscRing::Consumer consumer() const {
    return std::move(SpscRing::Consumer::Attach(region_, capacity_)).value();
  }

 private:
  size_t capacity_;
  size_t total_ = 0;
  std::byte* base_ = nullptr;
  std::span<std::byte> region_;
};

Bytes RandomBytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

// The value of an ok Result; a failed expectation (and T{}) otherwise.
template <typename T>
T Must(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : T{};
}

void PutHeader(std::byte* at, uint64_t length, uint32_t type) {
  const uint64_t h = length | (uint64_t{type} << 32);
  std::memcpy(at, &h, sizeof h);
}

TEST(SpscRing, RejectsBadCapacitiesAndRegions) {
  EXPECT_EQ(SpscRing::CheckCapacity(4096 + 8).code(), err::kInvalidValue);
  EXPECT_EQ(SpscRing::CheckCapacity(2048).code(), err::kInvalidValue);
  EXPECT_TRUE(SpscRing::CheckCapacity(1 << 20).ok());
  alignas(128) static std::byte small[4096];
  EXPECT_EQ(SpscRing::Initialize(small, 4096).code(), err::kInvalidValue) << "no trailer room";
  alignas(128) static std::byte big[8192];
  EXPECT_EQ(SpscRing::Initialize({big + 8, 4096 + 512}, 4096).code(), err::kInvalidValue)
      << "misaligned";
}

// Random record sizes over many laps, interleaving bursts of writes and reads; every record
// is checked byte-for-byte and by type against the reference sequence.
TEST(SpscRing, WrapAroundWithRandomSizesMatchesReference) {
  constexpr size_t kCap = 4096;
  GuardedRegion g(kCap);
  auto prod = g.producer();
  auto cons = g.consumer();
  std::mt19937_64 rng(12345);
  std::deque<std::pair<uint32_t, Bytes>> expected;
  uint64_t written = 0, read = 0, laps_seen = 0;
  std::array<std::byte, 4> prefix;
  Bytes rest;
  while (read < 20000) {
    const int burst = static_cast<int>(rng() % 12);
    for (int i = 0; i < burst; ++i) {
      const size_t n = 4 + rng() % (prod.max_payload() - 3);  // [4, max_payload]
      Bytes rec = RandomBytes(rng, n);
      const uint32_t type = 1 + static_cast<uint32_t>(rng() % 1000);
      Result<bool> ok = prod.TryWrite(type, rec);
      ASSERT_TRUE(ok.ok()) << ok.status().ToString();
      if (!*ok) break;  // full
      expected.emplace_back(type, std::move(rec));
      ++written;
    }
    const int reads = static_cast<int>(rng() % 12);
    for (int i = 0; i < reads; ++i) {
      Result<uint32_t> type = cons.TryRead(prefix, rest);
      ASSERT_TRUE(type.ok()) << type.status().ToString();
      if (*type == 0) {
        ASSERT_TRUE(expected.empty()) << "a written record was not readable";
        break;
      }
      ASSERT_FALSE(expected.empty());
      const auto& [etype, ebytes] = expected.front();
      ASSERT_EQ(*type, etype) << "record " << read;
      ASSERT_EQ(ebytes.size(), prefix.size() + rest.size()) << "record " << read;
      ASSERT_EQ(std::memcmp(ebytes.data(), prefix.data(), prefix.size()), 0);
      ASSERT_EQ(std::memcmp(ebytes.data() + 4, rest.data(), rest.size()), 0) << "record " << read;
      expected.pop_front();
      ++read;
    }
    laps_seen = prod.tail() / kCap;
  }
  EXPECT_GT(laps_seen, 100u) << "the test must wrap the ring many times";
  EXPECT_EQ(written - read, expected.size());
}

TEST(SpscRing, PayloadLimitIsCapacityOverEight) {
  GuardedRegion g(8192);
  auto prod = g.producer();
  auto cons = g.consumer();
  ASSERT_EQ(prod.max_payload(), 1024u);
  Result<std::byte*> over = prod.TryClaim(1025);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), err::kInvalidValue);
  std::mt19937_64 rng(7);
  const Bytes rec = RandomBytes(rng, 1024);
  for (int i = 0; i < 50; ++i) {  // many laps of maximal records, padding included
    Result<bool> ok = prod.TryWrite(9, rec);
    ASSERT_TRUE(ok.ok() && *ok);
    Bytes out;
    Result<uint32_t> type = cons.TryRead({}, out);
    ASSERT_TRUE(type.ok());
    ASSERT_EQ(*type, 9u);
    ASSERT_EQ(out, rec);
  }
  Bytes out;
  Result<uint32_t> none = cons.TryRead({}, out);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0u);
}

TEST(SpscRing, ZeroLengthRecords) {
  GuardedRegion g(4096);
  auto prod = g.producer();
  auto cons = g.consumer();
  for (int i = 0; i < 2000; ++i) {  // 8 bytes each: four laps
    ASSERT_TRUE(Must(prod.TryWrite(3, {})));
    Bytes out{std::byte{1}};
    Result<uint32_t> type = cons.TryRead({}, out);
    ASSERT_TRUE(type.ok());
    ASSERT_EQ(*type, 3u);
    ASSERT_TRUE(out.empty());
  }
}

// The producer sees space only when the consumer publishes, once per batch: at an empty
// ring or after a quarter of the capacity. The consumer never writes the data area.
TEST(SpscRing, FullRingFreesSpaceOnlyWhenTheConsumerPublishes) {
  constexpr size_t kCap = 4096;
  GuardedRegion g(kCap);
  auto prod = g.producer();
  auto cons = g.consumer();
  const Bytes rec(56, std::byte{0x5a});  // 64-byte records
  int n = 0;
  while (Must(prod.TryWrite(1, rec))) ++n;
  EXPECT_EQ(n, 63) << "64 would fill the ring, but 8 bytes past the tail stay free";
  EXPECT_EQ(g.trailer()->tail.load(), kCap - 64);
  EXPECT_FALSE(prod.HasSpace(56));
  const Bytes before(g.data(), g.data() + kCap);
  Bytes out;
  ASSERT_EQ(Must(cons.TryRead({}, out)), 1u);  // one record read, not yet published
  EXPECT_FALSE(prod.HasSpace(56));
  EXPECT_EQ(g.trailer()->head.load(), 0u);
  for (int i = 1; i < 16; ++i) ASSERT_EQ(Must(cons.TryRead({}, out)), 1u);
  EXPECT_EQ(g.trailer()->head.load(), kCap / 4) << "a quarter consumed publishes";
  EXPECT_TRUE(prod.HasSpace(56));
  while (Must(cons.TryRead({}, out)) != 0) {
  }
  EXPECT_EQ(g.trailer()->head.load(), kCap - 64);
  EXPECT_EQ(Bytes(g.data(), g.data() + kCap), before) << "the consumer only reads the data";
  // The next records wrap: each zeroes the slot after it, so stale headers are never read.
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(Must(prod.TryWrite(2, rec)));
    ASSERT_EQ(Must(cons.TryRead({}, out)), 2u);
    ASSERT_EQ(Must(cons.TryRead({}, out)), 0u);
  }
}

TEST(SpscRing, BlockedProducerResumesWhenConsumerDrains) {
  GuardedRegion g(4096);
  auto prod = g.producer();
  auto cons = g.consumer();
  const Bytes rec(120, std::byte{1});
  int written = 0;
  while (Must(prod.TryWrite(1, rec))) ++written;
  std::atomic<int> drained{0};
  std::thread consumer([&] {
    std::this_thread::sleep_for(20ms);
    Bytes out;
    Result<uint32_t> t = 0u;
    while ((t = cons.TryRead({}, out)).ok() && *t != 0) drained.fetch_add(1);
  });
  WaitStrategy w({.spin = 1us, .park = 10s});
  int timeouts = 0;
  const bool ok = w.Wait(
      prod.space_waiter(), [&] { return prod.HasSpace(rec.size()); }, Deadline::In(60s),
      [&] { ++timeouts; });
  consumer.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(timeouts, 0) << "the consumer's publish must wake the parked producer";
  EXPECT_EQ(drained.load(), written);
  EXPECT_TRUE(Must(prod.TryWrite(1, rec)));
}

TEST(SpscRing, ProducerWaitOnFullRingFailsAtDeadline) {
  GuardedRegion g(4096);
  auto prod = g.producer();
  const Bytes rec(500, std::byte{1});
  while (Must(prod.TryWrite(1, rec))) {
  }
  WaitStrategy w({.spin = 1us, .park = 5ms});
  EXPECT_FALSE(w.Wait(
      prod.space_waiter(), [&] { return prod.HasSpace(rec.size()); }, Deadline::In(30ms), [] {}));
}

// ---- A hostile peer ----

class CorruptRecord : public ::testing::Test {
 protected:
  static constexpr size_t kCap = 4096;
  GuardedRegion g{kCap};
  SpscRing::Consumer cons = g.consumer();

  void ExpectCorrupt(size_t prefix_len = 0) {
    Bytes prefix(prefix_len), rest;
    Result<uint32_t> r = cons.TryRead(prefix, rest);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), err::kDevicesUnavailable);
    EXPECT_LE(rest.size(), cons.max_payload());
    Result<uint32_t> again = cons.TryRead(prefix, rest);
    EXPECT_FALSE(again.ok()) << "a corrupt ring stays refused";
  }
};

TEST_F(CorruptRecord, LengthBeyondLimit) {
  PutHeader(g.data(), 0xFFFF'FFFFu, 1);
  ExpectCorrupt();
}
TEST_F(CorruptRecord, LengthJustOverLimit) {
  PutHeader(g.data(), 8 + kCap / 8 + 1, 1);
  ExpectCorrupt();
}
TEST_F(CorruptRecord, LengthShorterThanHeader) {
  PutHeader(g.data(), 3, 1);
  ExpectCorrupt();
}
TEST_F(CorruptRecord, TypeZero) {
  PutHeader(g.data(), 16, 0);
  ExpectCorrupt();
}
TEST_F(CorruptRecord, PaddingAtIndexZero) {
  PutHeader(g.data(), kCap, SpscRing::kPaddingType);
  ExpectCorrupt();
}
TEST_F(CorruptRecord, PaddingNotReachingTheEnd) {
  auto prod = g.producer();
  ASSERT_TRUE(Must(prod.TryWrite(1, Bytes(8))));
  Bytes out;
  ASSERT_EQ(Must(cons.TryRead({}, out)), 1u);
  PutHeader(g.data() + SpscRing::kAlignment, 64, SpscRing::kPaddingType);  // the next record
  ExpectCorrupt();
}
TEST_F(CorruptRecord, RecordRunningPastTheEnd) {
  auto prod = g.producer();
  const Bytes rec(kCap / 8 - 8);  // 512-byte records: the 8th ends exactly at the end
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(Must(prod.TryWrite(1, rec)));
    Bytes out;
    ASSERT_EQ(Must(cons.TryRead({}, out)), 1u);
  }
  PutHeader(g.data() + 7 * 512, 8 + kCap / 8, 1);  // 520 bytes from 3584: 8 past the end
  ExpectCorrupt();
}
TEST_F(CorruptRecord, TruncatedBelowTheFixedPrefix) {
  PutHeader(g.data(), 8 + 10, 1);
  ExpectCorrupt(/*prefix_len=*/16);
}

// A peer scribbling the shared head: the producer refuses instead of trusting it.
TEST(SpscRing, ProducerRefusesImpossibleHead) {
  for (uint64_t bad : {uint64_t{1} << 40, ~uint64_t{0}, uint64_t{4096 + 8}}) {
    GuardedRegion g(4096);
    auto prod = g.producer();
    const Bytes rec(100);
    while (Must(prod.TryWrite(1, rec))) {
    }
    g.trailer()->head.store(bad);  // a head past the tail
    Result<std::byte*> claim = prod.TryClaim(rec.size());
    ASSERT_FALSE(claim.ok()) << bad;
    EXPECT_EQ(claim.status().code(), err::kDevicesUnavailable);
    EXPECT_TRUE(prod.HasSpace(rec.size())) << "HasSpace lets the caller reach the error";
  }
}

// Scribbling the shared tail and head never changes where the consumer reads.
TEST(SpscRing, ConsumerIgnoresScribbledPositions) {
  GuardedRegion g(4096);
  auto prod = g.producer();
  auto cons = g.consumer();
  ASSERT_TRUE(Must(prod.TryWrite(5, Bytes(32, std::byte{7}))));
  g.trailer()->tail.store(~uint64_t{0});
  g.trailer()->head.store(12345);
  Bytes out;
  ASSERT_EQ(Must(cons.TryRead({}, out)), 5u);
  EXPECT_EQ(out, Bytes(32, std::byte{7}));
  EXPECT_EQ(Must(cons.TryRead({}, out)), 0u);
}

// Random garbage in the data area (headers included): every read either succeeds with a
// bounded record or reports corruption; none reads outside the region (guard page).
TEST(SpscRing, RandomScribblesNeverReadOutOfBounds) {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    GuardedRegion g(4096);
    auto cons = g.consumer();
    const int words = 1 + static_cast<int>(rng() % 64);
    for (int i = 0; i < words; ++i) {
      const size_t at = (rng() % 512) * 8;
      uint64_t v = rng();
      switch (rng() % 4) {  // bias toward plausible lengths and the padding type
        case 0:
          v = (v & 0xFFFF'FFFF'0000'0000ull) | (rng() % 5000);
          break;
        case 1:
          v = (rng() % 5000) | (uint64_t{SpscRing::kPaddingType} << 32);
          break;
        default:
          break;
      }
      std::memcpy(g.data() + at, &v, sizeof v);
    }
    std::array<std::byte, 16> prefix;
    Bytes rest;
    for (int i = 0; i < 1000; ++i) {
      Result<uint32_t> r = cons.TryRead(prefix, rest);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), err::kDevicesUnavailable);
        break;
      }
      ASSERT_LE(rest.size() + prefix.size(), cons.max_payload());
      if (*r == 0) break;
    }
  }
}

// ---- Two threads ----

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

// Record i has length Mix(i) % 97 and bytes Mix(i * 131 + j): the consumer regenerates the
// sequence and compares, and both sides keep a checksum.
TEST(SpscRing, ConcurrentMillionsOfRecordsWithChecksums) {
#if defined(__SANITIZE_THREAD__)
  constexpr uint64_t kRecords = 200'000;
#else
  constexpr uint64_t kRecords = 2'000'000;
#endif
  GuardedRegion g(1 << 16);
  auto prod = g.producer();
  auto cons = g.consumer();
  WaitStrategy w({.spin = 5us, .park = 10s});
  uint64_t sent_sum = 0;
  std::thread producer([&] {
    std::byte buf[128];
    for (uint64_t i = 0; i < kRecords; ++i) {
      const size_t n = Mix(i) % 97;
      for (size_t j = 0; j < n; ++j) buf[j] = static_cast<std::byte>(Mix(i * 131 + j));
      for (size_t j = 0; j < n; ++j) sent_sum += static_cast<uint64_t>(buf[j]) * (j + 1);
      for (;;) {
        Result<bool> ok = prod.TryWrite(1 + static_cast<uint32_t>(i % 7), {buf, n});
        ASSERT_TRUE(ok.ok());
        if (*ok) break;
        w.Wait(
            prod.space_waiter(), [&] { return prod.HasSpace(n); }, Deadline::Never(), [] {});
      }
    }
  });
  uint64_t got_sum = 0, mismatches = 0;
  Bytes rest;
  for (uint64_t i = 0; i < kRecords;) {
    Result<uint32_t> t = cons.TryRead({}, rest);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    if (*t == 0) {
      w.Wait(
          cons.data_waiter(), [&] { return cons.Pending(); }, Deadline::Never(), [] {});
      continue;
    }
    const size_t n = Mix(i) % 97;
    if (*t != 1 + i % 7 || rest.size() != n) ++mismatches;
    for (size_t j = 0; j < rest.size(); ++j) {
      got_sum += static_cast<uint64_t>(rest[j]) * (j + 1);
      if (j < n && rest[j] != static_cast<std::byte>(Mix(i * 131 + j))) ++mismatches;
    }
    ++i;
  }
  producer.join();
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(got_sum, sent_sum);
  Bytes out;
  EXPECT_EQ(Must(cons.TryRead({}, out)), 0u);
}

}  // namespace
}  // namespace remora::transport::shm
