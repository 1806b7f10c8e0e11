// transport/shm/spsc_ring.h - SpscRing: one producer, one consumer, variable-length
// records in a shared memory region (inside a memfd the two processes both map).
//
// PROTOCOL. The two sides may live in different processes and must not trust each other:
// every value read from the region is read once into private memory, then validated.
//
// Region = [data: capacity bytes][RingTrailer: 512 B]; capacity is a power of two.
// Positions are free-running uint64 byte counts, never wrapped; index = pos & (capacity-1).
// Empty: head == tail. The producer keeps 8 bytes free beyond its tail (see P2), so at
// most capacity - 8 bytes are in flight.
// A record starts on a cache line (64 B): a 64-bit header word (low 32 bits length = 8 +
// payload bytes, high 32 bits type), then the payload; it occupies align64(length) bytes,
// so a small frame travels as one cache line and the consumer, polling the header, finds
// the whole record in the line it just fetched (8-byte alignment cost a second transfer
// for every record straddling a line: 1.6 ping-pong floors per round trip instead of
// 1.2). It never wraps: when it would not fit before the end of the data, the producer first writes
// a padding record (type kPaddingType) that fills the gap. A header word of 0 means "not written
// yet". Payloads above capacity/8 are refused. Unlike Aeron, the consumer never writes the data
// area (so the lines it reads never have to travel back to the producer): the producer zeroes the
// header slot that follows each record before publishing the record, so the next read finds 0 until
// it is written.
//
// Producer (TryClaim, Commit):
//   P1 When its private cached head leaves too little room (record + padding + the 8-byte
//      next slot), head.load(acquire), pairing with C3: the consumer is done with those
//      bytes. The head must lie in [previous head, tail], else the consumer is corrupt.
//   P2 Plain stores of the payload, then a relaxed store of 0 to the header slot after the
//      record (index 0 after a padding record).
//   P3 header.store(seq_cst): its release half publishes P2 to C1; it is also the publish
//      half of the data_waiter Dekker pair with C4. Padding headers are stored the same way.
//   P4 tail.store(release): for observers (size()); the consumer never depends on it.
//   P5 data_waiter.load(seq_cst); only if it reads non-zero: exchange(0), then FUTEX_WAKE
//      if it took 1 (consumer parked), or, if it took 2 (consumer armed, asleep in epoll),
//      Commit returns true and the caller rings the consumer's doorbell
//      (WaitStrategy::WakeIfParked). No fence: P3 and P5 are seq_cst.
//   P6 Parking when full: space_waiter.exchange(1, seq_cst), then HasSpace() re-reads
//      head with seq_cst (Dekker with C3/C5), then futex-waits.
// Consumer (TryRead, Publish):
//   C1 header.load(acquire) at its private head; 0 -> nothing yet. Validate length and
//      type against private constants, then C2 memcpy the payload out.
//   C3 head.store(seq_cst), once per batch: when TryRead finds the ring empty, or a
//      quarter of the ring has been consumed. Release half pairs with P1 (C2's reads are
//      done before the producer reuses the bytes).
//   C4 Parking when empty: data_waiter.exchange(1, seq_cst), then Pending() re-reads the
//      header with seq_cst (Dekker with P3/P5), then futex-waits. Arming (event-driven):
//      the same with exchange(2), then sleeping on the doorbell (WaitStrategy::Arm).
//   C5 After C3: space_waiter.load(seq_cst); if 1, exchange(0) and FUTEX_WAKE.
// Neither side ever reads tail or head to find where to read or write: each keeps its own
// position privately, so a peer scribbling the shared positions can only cause a refused
// claim (P1 check) or garbage records (C1 check), never an access outside the region.
//
//   SpscRing::Initialize(region, cap);
//   ASSIGN_OR_RETURN(auto producer, SpscRing::Producer::Attach(region, cap));
//   ASSIGN_OR_RETURN(std::byte* p, producer.TryClaim(n));   // nullptr: full, retry
//   std::memcpy(p, src, n);
//   producer.Commit(kMyType);
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "proto/status.h"

namespace remora::transport::shm {

// The shared trailer after the data. Fields sit 128 B apart (adjacent-line prefetch).
// Unlike Aeron, the producer's cached head is private memory: a consumer cannot poison it.
struct RingTrailer {
  // Writer: producer (P4, release). Read by observers only.
  alignas(128) std::atomic<uint64_t> tail;
  // Writer: consumer (C3, seq_cst). Read by the producer (P1 acquire, P6 seq_cst).
  alignas(128) std::atomic<uint64_t> head;
  // Writers: consumer sets 1 before parking (C4); producer resets to 0 when it wakes it (P5).
  alignas(128) std::atomic<uint32_t> data_waiter;
  // Writers: producer sets 1 before parking (P6); consumer resets to 0 when it wakes it (C5).
  alignas(128) std::atomic<uint32_t> space_waiter;
};
static_assert(sizeof(RingTrailer) == 512);
static_assert(offsetof(RingTrailer, tail) == 0);
static_assert(offsetof(RingTrailer, head) == 128);
static_assert(offsetof(RingTrailer, data_waiter) == 256);
static_assert(offsetof(RingTrailer, space_waiter) == 384);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

class SpscRing {
 public:
  static constexpr size_t kTrailerSize = sizeof(RingTrailer);
  static constexpr size_t kHeaderSize = 8;
  static constexpr size_t kAlignment = 64;  // one cache line
  static constexpr size_t kMinCapacity = 4096;
  static constexpr size_t kMaxCapacity = size_t{1} << 30;
  static constexpr uint32_t kPaddingType = 0xFFFF'FFFFu;

  // Bytes the ring occupies: data plus trailer.
  static constexpr size_t RegionSize(size_t capacity) { return capacity + kTrailerSize; }
  // Largest payload a ring of `capacity` accepts.
  static constexpr size_t MaxPayload(size_t capacity) { return capacity / 8; }
  // Ok if `capacity` is a power of two in [kMinCapacity, kMaxCapacity]; else kInvalidValue.
  static Status CheckCapacity(size_t capacity);
  // Zeroes the region (unless `zeroed`: fresh memory, such as a new memfd, whose
  // pages are better left untouched) and constructs the trailer. REQUIRES: nobody
  // attached yet. Errors: kInvalidValue for a bad capacity, a short or misaligned
  // (< 128 B) region.
  static Status Initialize(std::span<std::byte> region, size_t capacity, bool zeroed = false);

  class Producer;
  class Consumer;
};

class SpscRing::Producer {
 public:
  // Attaches to an initialized region. Errors: as Initialize. Not thread-safe; one
  // Producer per ring, used by one thread at a time.
  static Result<Producer> Attach(std::span<std::byte> region, size_t capacity);

  size_t capacity() const { return mask_ + 1; }
  size_t max_payload() const { return MaxPayload(capacity()); }

  // Reserves `length` payload bytes and returns where to write them, or nullptr if the
  // ring lacks room now (wait for HasSpace). Errors: kInvalidValue if length >
  // max_payload(); kDevicesUnavailable if the consumer published an impossible head
  // (sticky). REQUIRES: no claim outstanding (debug assert).
  Result<std::byte*> TryClaim(size_t length);
  // Publishes the claimed record as `type` and wakes a parked consumer. Returns true if
  // the consumer was armed (P5): the caller must ring its doorbell.
  // REQUIRES: a claim outstanding; type is neither 0 nor kPaddingType (debug assert).
  [[nodiscard]] bool Commit(uint32_t type);
  // TryClaim + copy of a then b + Commit. Returns false if the ring is full. Rings no
  // doorbell: for consumers that never arm.
  Result<bool> TryWrite(uint32_t type, std::span<const std::byte> a,
                        std::span<const std::byte> b = {});

  // True if TryClaim(length) would not return nullptr now (also true when it would fail).
  // Re-reads head with seq_cst: usable as WaitStrategy's ready() when parked on
  // space_waiter().
  bool HasSpace(size_t length);
  std::atomic<uint32_t>& space_waiter() { return trailer_->space_waiter; }
  // The word the consumer parks on (to wake it on shutdown).
  std::atomic<uint32_t>& data_waiter() { return trailer_->data_waiter; }
  // Position after the last committed record.
  uint64_t tail() const { return tail_; }

 private:
  Producer(std::byte* data, RingTrailer* trailer, size_t capacity)
      : data_(data), trailer_(trailer), mask_(capacity - 1) {}
  // Bytes needed from tail_ for a record of `length` payload: record plus padding.
  uint64_t Needed(size_t length) const;
  bool RefreshHead(std::memory_order order);

  std::byte* data_;
  RingTrailer* trailer_;
  uint64_t mask_;
  uint64_t tail_ = 0;
  uint64_t cached_head_ = 0;  // private: the consumer cannot poison it
  uint64_t claim_len_ = 0;    // unaligned record length of the outstanding claim, 0 = none
  bool broken_ = false;
};

class SpscRing::Consumer {
 public:
  // Attaches to an initialized region. Errors: as Initialize. One Consumer per ring,
  // used by one thread at a time.
  static Result<Consumer> Attach(std::span<std::byte> region, size_t capacity);

  size_t capacity() const { return mask_ + 1; }
  size_t max_payload() const { return MaxPayload(capacity()); }

  // Copies the next record out: its first prefix.size() payload bytes into `prefix`, the
  // rest into `rest` (resized; its capacity is kept). Returns the record's type, or 0 if
  // none is ready (the batch read so far is then published). Errors: kDevicesUnavailable
  // for a corrupt record (bad length or type, payload shorter than prefix); sticky.
  Result<uint32_t> TryRead(std::span<std::byte> prefix, std::vector<std::byte>& rest);
  // True if a header is written at the read position (seq_cst load): usable as
  // WaitStrategy's ready() when parked on data_waiter().
  bool Pending() const;
  // Hands the bytes of every record read so far back to the producer (C3, C5).
  void Publish();
  std::atomic<uint32_t>& data_waiter() { return trailer_->data_waiter; }
  // The word the producer parks on (to wake it on shutdown).
  std::atomic<uint32_t>& space_waiter() { return trailer_->space_waiter; }
  uint64_t head() const { return head_; }

 private:
  Consumer(std::byte* data, RingTrailer* trailer, size_t capacity)
      : data_(data), trailer_(trailer), mask_(capacity - 1) {}

  std::byte* data_;
  RingTrailer* trailer_;
  uint64_t mask_;
  uint64_t head_ = 0;       // private read position
  uint64_t published_ = 0;  // last value stored to trailer_->head
  bool broken_ = false;
};

}  // namespace remora::transport::shm
