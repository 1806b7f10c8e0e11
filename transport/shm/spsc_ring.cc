// transport/shm/spsc_ring.cc - SpscRing producer and consumer (protocol in spsc_ring.h).
#include "transport/shm/spsc_ring.h"

#include <cassert>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

#include "transport/shm/wait.h"

namespace remora::transport::shm {
namespace {

constexpr uint64_t Align(uint64_t n) {
  return (n + SpscRing::kAlignment - 1) & ~uint64_t{SpscRing::kAlignment - 1};
}
constexpr uint64_t Pack(uint64_t length, uint32_t type) {
  return length | (uint64_t{type} << 32);
}

std::atomic_ref<uint64_t> HeaderAt(std::byte* data, uint64_t index) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(data + index));
}

Status CheckRegion(std::span<std::byte> region, size_t capacity) {
  RETURN_IF_ERROR(SpscRing::CheckCapacity(capacity));
  if (region.size() < SpscRing::RegionSize(capacity))
    return Error(err::kInvalidValue, "shm ring: region smaller than capacity + trailer");
  if (reinterpret_cast<uintptr_t>(region.data()) % alignof(RingTrailer) != 0)
    return Error(err::kInvalidValue, "shm ring: region not 128-byte aligned");
  return OkStatus();
}

RingTrailer* TrailerOf(std::span<std::byte> region, size_t capacity) {
  return std::launder(reinterpret_cast<RingTrailer*>(region.data() + capacity));
}

[[gnu::cold, gnu::noinline]] Status CorruptRecord(const char* why, uint64_t pos, uint64_t header) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "shm ring: %s (header 0x%016" PRIx64 " at position %" PRIu64 ")",
                why, header, pos);
  return Error(err::kDevicesUnavailable, buf);
}

[[gnu::cold, gnu::noinline]] Status CorruptHead() {
  return Error(err::kDevicesUnavailable,
               "shm ring: the consumer published a head position outside the ring");
}

[[gnu::cold, gnu::noinline]] Status TooLong(size_t length, size_t max) {
  return Error(err::kInvalidValue, "shm ring: record of " + std::to_string(length) +
                                       " bytes exceeds the limit of " + std::to_string(max));
}

}  // namespace

Status SpscRing::CheckCapacity(size_t capacity) {
  if (capacity < kMinCapacity || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0)
    return Error(err::kInvalidValue, "shm ring: capacity " + std::to_string(capacity) +
                                         " is not a power of two in [4 KiB, 1 GiB]");
  return OkStatus();
}

Status SpscRing::Initialize(std::span<std::byte> region, size_t capacity, bool zeroed) {
  RETURN_IF_ERROR(CheckRegion(region, capacity));
  if (!zeroed) std::memset(region.data(), 0, RegionSize(capacity));
  new (region.data() + capacity) RingTrailer{};
  return OkStatus();
}

// ---- Producer ----

Result<SpscRing::Producer> SpscRing::Producer::Attach(std::span<std::byte> region,
                                                      size_t capacity) {
  RETURN_IF_ERROR(CheckRegion(region, capacity));
  return Producer(region.data(), TrailerOf(region, capacity), capacity);
}

uint64_t SpscRing::Producer::Needed(size_t length) const {
  const uint64_t aligned = Align(kHeaderSize + length);
  const uint64_t index = tail_ & mask_;
  const uint64_t to_end = capacity() - index;
  return (aligned <= to_end ? aligned : to_end + aligned) + kHeaderSize;  // + next slot
}

bool SpscRing::Producer::RefreshHead(std::memory_order order) {
  const uint64_t head = trailer_->head.load(order);  // P1: pairs with C3
  // 64-bit positions never wrap, so a head that moves backwards or passes tail is a lie.
  if (head < cached_head_ || head > tail_ || tail_ - head > capacity()) [[unlikely]] {
    broken_ = true;
    return false;
  }
  cached_head_ = head;
  return true;
}

Result<std::byte*> SpscRing::Producer::TryClaim(size_t length) {
  assert(claim_len_ == 0 && "TryClaim with a claim outstanding");
  if (broken_) [[unlikely]]
    return CorruptHead();
  if (length > max_payload()) [[unlikely]]
    return TooLong(length, max_payload());
  const uint64_t need = Needed(length);
  if (tail_ - cached_head_ + need > capacity()) {
    if (!RefreshHead(std::memory_order_acquire)) [[unlikely]]
      return CorruptHead();
    if (tail_ - cached_head_ + need > capacity()) return static_cast<std::byte*>(nullptr);
  }
  uint64_t index = tail_ & mask_;
  const uint64_t record = kHeaderSize + length;
  if (index + Align(record) > capacity()) {
    const uint64_t pad = capacity() - index;
    HeaderAt(data_, 0).store(0, std::memory_order_relaxed);                            // P2
    HeaderAt(data_, index).store(Pack(pad, kPaddingType), std::memory_order_seq_cst);  // P3
    tail_ += pad;
    index = 0;
  }
  claim_len_ = record;
  return data_ + index + kHeaderSize;
}

bool SpscRing::Producer::Commit(uint32_t type) {
  assert(claim_len_ != 0 && "Commit without a claim");
  assert(type != 0 && type != kPaddingType);
  const uint64_t index = tail_ & mask_;
  const uint64_t next = tail_ + Align(claim_len_);
  HeaderAt(data_, next & mask_).store(0, std::memory_order_relaxed);  // P2
  // P3: written last; seq_cst so that P5 below cannot be ordered before it.
  HeaderAt(data_, index).store(Pack(claim_len_, type), std::memory_order_seq_cst);
  tail_ = next;
  claim_len_ = 0;
  trailer_->tail.store(tail_, std::memory_order_release);    // P4
  return WaitStrategy::WakeIfParked(trailer_->data_waiter);  // P5
}

Result<bool> SpscRing::Producer::TryWrite(uint32_t type, std::span<const std::byte> a,
                                          std::span<const std::byte> b) {
  ASSIGN_OR_RETURN(std::byte * p, TryClaim(a.size() + b.size()));
  if (p == nullptr) return false;
  if (!a.empty()) std::memcpy(p, a.data(), a.size());
  if (!b.empty()) std::memcpy(p + a.size(), b.data(), b.size());
  [[maybe_unused]] const bool ring = Commit(type);
  return true;
}

bool SpscRing::Producer::HasSpace(size_t length) {
  if (broken_ || length > max_payload()) return true;  // TryClaim reports the error
  const uint64_t need = Needed(length);
  if (tail_ - cached_head_ + need <= capacity()) return true;
  if (!RefreshHead(std::memory_order_seq_cst)) return true;  // P6: Dekker with C3/C5
  return tail_ - cached_head_ + need <= capacity();
}

// ---- Consumer ----

Result<SpscRing::Consumer> SpscRing::Consumer::Attach(std::span<std::byte> region,
                                                      size_t capacity) {
  RETURN_IF_ERROR(CheckRegion(region, capacity));
  return Consumer(region.data(), TrailerOf(region, capacity), capacity);
}

Result<uint32_t> SpscRing::Consumer::TryRead(std::span<std::byte> prefix,
                                             std::vector<std::byte>& rest) {
  if (broken_) [[unlikely]]
    return Error(err::kDevicesUnavailable, "shm ring: unusable after a corrupt record");
  for (;;) {
    const uint64_t index = head_ & mask_;
    // C1: the only read of the header; everything below uses this private copy.
    const uint64_t header = HeaderAt(data_, index).load(std::memory_order_acquire);
    if (header == 0) {
      Publish();
      return 0u;
    }
    const uint64_t length = header & 0xFFFF'FFFFu;
    const uint32_t type = static_cast<uint32_t>(header >> 32);
    if (type == kPaddingType) {
      // The producer pads only from a non-zero index to the end, which also bounds this loop.
      if (index == 0 || length != capacity() - index) [[unlikely]] {
        broken_ = true;
        return CorruptRecord("bad padding record", head_, header);
      }
      head_ += length;
      continue;
    }
    if (type == 0 || length < kHeaderSize || length - kHeaderSize > max_payload() ||
        index + Align(length) > capacity()) [[unlikely]] {
      broken_ = true;
      return CorruptRecord("bad record length or type", head_, header);
    }
    const uint64_t payload = length - kHeaderSize;
    if (payload < prefix.size()) [[unlikely]] {
      broken_ = true;
      return CorruptRecord("record shorter than its fixed prefix", head_, header);
    }
    const std::byte* src = data_ + index + kHeaderSize;
    if (!prefix.empty()) std::memcpy(prefix.data(), src, prefix.size());  // C2
    rest.resize(payload - prefix.size());
    if (!rest.empty()) std::memcpy(rest.data(), src + prefix.size(), rest.size());
    head_ += Align(length);
    if (head_ - published_ >= capacity() / 4) Publish();
    return type;
  }
}

bool SpscRing::Consumer::Pending() const {
  // C4: seq_cst, the re-check half of the data_waiter Dekker pair.
  return HeaderAt(data_, head_ & mask_).load(std::memory_order_seq_cst) != 0;
}

void SpscRing::Consumer::Publish() {
  if (head_ == published_) return;
  trailer_->head.store(head_, std::memory_order_seq_cst);  // C3: pairs with P1 and P6
  published_ = head_;
  WaitStrategy::WakeIfParked(trailer_->space_waiter);  // C5
}

}  // namespace remora::transport::shm
