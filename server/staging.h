// server/staging.h - a session's view of its tenant's host memory: the shared arena and its
// staging slots (proto/arena.h says how the stub lays them out).
//
// Every offset and slot comes from the tenant: each is checked before the server touches the
// memory. A session without shared memory (gRPC) has no arena: offsets are refused and host
// bytes travel inline in the request.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proto/status.h"
#include "remora/v1/session.pb.h"
#include "transport/channel.h"

namespace remora::server {

class HostStaging {
 public:
  explicit HostStaging(transport::Channel& channel) : channel_(channel) {}

  // The arena's bytes [offset, offset + size). Errors: kInvalidValue without an arena, or
  // for a range not wholly inside it.
  Result<std::byte*> Range(uint64_t offset, uint64_t size) const;
  // A host-to-device copy's `size` source bytes: in the arena, or inline in the request
  // (`src` must carry exactly `size`). Errors: kInvalidValue.
  Result<const std::byte*> Source(const remora::v1::HostBytes& src, uint64_t size) const;
  // kInvalidValue unless `slot_plus_one` is 0 (none) or one of this session's slots.
  Status CheckSlot(uint32_t slot_plus_one) const;
  // Hands a staging slot back to the stub, which may refill it; 0 or a slot that does not
  // exist is ignored.
  void ReleaseSlot(uint32_t slot_plus_one) const;

 private:
  transport::Channel& channel_;
};

}  // namespace remora::server
