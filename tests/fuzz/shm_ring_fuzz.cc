// tests/fuzz/shm_ring_fuzz.cc - the shm ring consumer against a hostile producer.
//
// A SpscRing of the smallest capacity lives in an exactly sized heap region (ASan's red
// zones on both sides). The input is a script of operations, one opcode byte each:
//   0 scribble: bytes at any offset of the data area          (hostile)
//   1 forge: one 64-bit header word at any 8-byte slot        (hostile)
//   2 scribble the trailer (head, tail, waiter words)         (hostile)
//   3 an honest producer writes a record of 16..271 bytes
//   4 TryRead, with the 16-byte prefix ShmChannel uses or none
//   5 Publish and Pending
//   6 ShmLayout::Make on chosen sizes (the handshake's validation)
// The consumer must refuse what it cannot trust and never touch memory outside the
// region; its refusals are sticky. While no hostile operation has run, every record the
// honest producer wrote must come back, in order and intact, and nothing may fail.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <new>
#include <span>
#include <vector>

#include "tests/fuzz/input.h"
#include "transport/shm/layout.h"
#include "transport/shm/spsc_ring.h"

namespace {

using remora::fuzz::Check;
using remora::fuzz::Input;
using remora::transport::shm::ShmLayout;
using remora::transport::shm::SpscRing;

constexpr size_t kCapacity = SpscRing::kMinCapacity;
constexpr size_t kRegionSize = SpscRing::RegionSize(kCapacity);
constexpr size_t kPrefix = 16;  // ShmChannel's FrameHeader
constexpr int kMaxOps = 1024;

struct Record {
  uint32_t type;
  std::vector<std::byte> payload;
};

// The region, 128-byte aligned as the ring requires, and exactly kRegionSize long.
struct Region {
  Region() : base(static_cast<std::byte*>(::operator new (kRegionSize, std::align_val_t{128}))) {}
  ~Region() { ::operator delete (base, std::align_val_t{128}); }
  std::span<std::byte> span() const { return {base, kRegionSize}; }
  std::byte* base;
};

void Scribble(Input& in, std::span<std::byte> area, uint16_t offset) {
  auto bytes = in.Bytes(in.Take<uint8_t>());
  const size_t at = offset % area.size();
  const size_t n = std::min(bytes.size(), area.size() - at);
  std::memcpy(area.data() + at, bytes.data(), n);
}

void CheckLayout(Input& in) {
  // Shifts reach the valid powers of two; raw values reach everything else.
  const uint8_t how = in.Take<uint8_t>();
  auto size = [&](int bit) -> uint64_t {
    const uint64_t raw = in.Take<uint64_t>();
    return (how >> bit) & 1 ? uint64_t{1} << (raw % 64) : raw;
  };
  const uint64_t req = size(0), rep = size(1), arena = size(2);
  auto l = ShmLayout::Make(req, rep, arena);
  if (!l.ok()) return;
  Check(l->request_capacity == req && l->reply_capacity == rep && l->arena_size == arena);
  Check(SpscRing::CheckCapacity(req).ok() && SpscRing::CheckCapacity(rep).ok());
  Check(l->request_offset >= sizeof(remora::transport::shm::ControlBlock));
  Check(l->reply_offset >= l->request_offset + SpscRing::RegionSize(req));
  Check(l->arena_offset >= l->reply_offset + SpscRing::RegionSize(rep));
  Check(l->total_size >= l->arena_offset && l->total_size - l->arena_offset == arena);
  for (uint64_t off : {l->request_offset, l->reply_offset, l->arena_offset})
    Check(off % remora::transport::shm::kPageSize == 0);
  const auto h = l->Header();
  Check(h.request_capacity == req && h.reply_capacity == rep && h.total_size == l->total_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Region region;
  Check(SpscRing::Initialize(region.span(), kCapacity).ok());
  auto consumer = SpscRing::Consumer::Attach(region.span(), kCapacity);
  auto producer = SpscRing::Producer::Attach(region.span(), kCapacity);
  Check(consumer.ok() && producer.ok());
  std::span<std::byte> ring_data(region.base, kCapacity);
  std::span<std::byte> trailer(region.base + kCapacity, SpscRing::kTrailerSize);

  bool hostile = false;  // a hostile operation ran: nothing read afterwards is predictable
  bool broken = false;   // the consumer refused a record: it must refuse from now on
  std::deque<Record> expected;
  std::byte prefix[kPrefix];
  std::vector<std::byte> rest;
  uint32_t sequence = 0;

  for (int ops = 0; ops < kMaxOps && !in.empty(); ++ops) {
    const uint8_t op = in.Take<uint8_t>();
    switch (op % 7) {
      case 0:
        Scribble(in, ring_data, in.Take<uint16_t>());
        hostile = true;
        break;
      case 1: {
        const size_t slot = (in.Take<uint16_t>() * size_t{8}) % kCapacity;
        const uint64_t header = in.Take<uint64_t>();
        std::memcpy(ring_data.data() + slot, &header, sizeof header);
        hostile = true;
        break;
      }
      case 2:
        Scribble(in, trailer, in.Take<uint16_t>());
        hostile = true;
        break;
      case 3: {
        Record r{1u + (op >> 3), std::vector<std::byte>(kPrefix + in.Take<uint8_t>())};
        for (std::byte& b : r.payload) b = std::byte(sequence++ * 131u >> 3);
        auto wrote = producer->TryWrite(r.type, r.payload);
        Check(wrote.ok() || hostile);
        if (wrote.ok() && *wrote && !hostile) expected.push_back(std::move(r));
        break;
      }
      case 4: {
        const std::span<std::byte> want_prefix(prefix, (op >> 3) & 1 ? kPrefix : 0);
        const uint64_t head_before = consumer->head();
        auto type = consumer->TryRead(want_prefix, rest);
        if (broken) Check(!type.ok());
        if (!type.ok()) {
          Check(hostile);
          broken = true;
          break;
        }
        Check(consumer->head() >= head_before);
        Check(consumer->head() % SpscRing::kAlignment == 0);
        if (*type == 0) {
          Check(hostile || expected.empty());
          break;
        }
        Check(*type != SpscRing::kPaddingType);
        Check(consumer->head() > head_before);
        Check(want_prefix.size() + rest.size() <= consumer->max_payload());
        if (hostile) break;
        Check(!expected.empty());
        const Record& r = expected.front();
        Check(*type == r.type && r.payload.size() == want_prefix.size() + rest.size());
        Check(std::equal(want_prefix.begin(), want_prefix.end(), r.payload.begin()));
        Check(std::equal(rest.begin(), rest.end(), r.payload.begin() + want_prefix.size()));
        expected.pop_front();
        break;
      }
      case 5:
        consumer->Publish();
        if (!hostile) Check(consumer->Pending() == !expected.empty());
        break;
      case 6:
        CheckLayout(in);
        break;
    }
  }
  return 0;
}
