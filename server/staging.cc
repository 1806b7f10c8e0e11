// server/staging.cc - checked access to the tenant's arena and staging slots.
#include "server/staging.h"

#include <atomic>
#include <string>

#include "proto/arena.h"
#include "server/handlers/util.h"

namespace remora::server {

Result<std::byte*> HostStaging::Range(uint64_t offset, uint64_t size) const {
  transport::Arena* a = channel_.arena();
  if (!a) return Error(err::kInvalidValue, "arena offsets need a shared-memory session");
  if (!a->Contains(offset, size))
    return Error(err::kInvalidValue, "host range [arena+" + Hex(offset) + ", +" +
                                         std::to_string(size) + ") lies outside the arena");
  return a->base() + offset;
}

Result<const std::byte*> HostStaging::Source(const remora::v1::HostBytes& src,
                                             uint64_t size) const {
  if (src.has_arena_offset()) {
    ASSIGN_OR_RETURN(std::byte * p, Range(src.arena_offset(), size));
    return static_cast<const std::byte*>(p);
  }
  if (src.data().size() != size)
    return Error(err::kInvalidValue, "inline copy carries " + std::to_string(src.data().size()) +
                                         " bytes, not " + std::to_string(size));
  return reinterpret_cast<const std::byte*>(src.data().data());
}

Status HostStaging::CheckSlot(uint32_t slot_plus_one) const {
  if (slot_plus_one == 0) return OkStatus();
  if (!channel_.arena() || slot_plus_one > arena::kStagingSlots)
    return Error(err::kInvalidValue,
                 "staging slot " + std::to_string(slot_plus_one) +
                     " does not exist (this session has " +
                     std::to_string(channel_.arena() ? arena::kStagingSlots : 0) + ")");
  return OkStatus();
}

void HostStaging::ReleaseSlot(uint32_t slot_plus_one) const {
  transport::Arena* a = channel_.arena();
  if (!a || slot_plus_one == 0 || slot_plus_one > arena::kStagingSlots) return;
  const uint64_t off = arena::StagingFlagOffset(0, slot_plus_one - 1);
  auto* flag = reinterpret_cast<uint32_t*>(a->base() + off);
  // Pairs with the stub's acquire load before it refills the slot.
  std::atomic_ref<uint32_t>(*flag).store(0, std::memory_order_release);
}

}  // namespace remora::server
