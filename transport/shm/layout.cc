// transport/shm/layout.cc - computing and validating the memfd layout.
#include "transport/shm/layout.h"

#include "transport/shm/spsc_ring.h"

namespace remora::transport::shm {
namespace {

constexpr uint64_t PageAlign(uint64_t n) {
  return (n + kPageSize - 1) & ~(kPageSize - 1);
}
constexpr uint64_t kMaxArena = uint64_t{1} << 40;

}  // namespace

Result<ShmLayout> ShmLayout::Make(uint64_t request_capacity, uint64_t reply_capacity,
                                  uint64_t arena_size) {
  RETURN_IF_ERROR(SpscRing::CheckCapacity(request_capacity));
  RETURN_IF_ERROR(SpscRing::CheckCapacity(reply_capacity));
  if (arena_size % kPageSize != 0 || arena_size > kMaxArena)
    return Error(err::kInvalidValue, "shm: arena size " + std::to_string(arena_size) +
                                         " is not a multiple of 4 KiB up to 1 TiB");
  ShmLayout l;
  l.request_capacity = request_capacity;
  l.reply_capacity = reply_capacity;
  l.arena_size = arena_size;
  l.request_offset = kPageSize;
  l.reply_offset = l.request_offset + PageAlign(SpscRing::RegionSize(request_capacity));
  l.arena_offset = l.reply_offset + PageAlign(SpscRing::RegionSize(reply_capacity));
  l.total_size = l.arena_offset + arena_size;
  return l;
}

HandshakeHeader ShmLayout::Header() const {
  HandshakeHeader h;
  h.request_capacity = request_capacity;
  h.reply_capacity = reply_capacity;
  h.arena_size = arena_size;
  h.total_size = total_size;
  return h;
}

}  // namespace remora::transport::shm
