// proto/inline.h - bytes that travel inside a frame (remote copies, small shm copies).
//
// A request carrying a payload inline must fit one frame of the channel's max_body with its
// other fields: the stub cuts copies into pieces of InlineChunkBytes, and the server refuses a
// request whose payload leaves less than kInlineOverhead.
#pragma once

#include <algorithm>
#include <cstdint>

namespace remora {

// Bytes a frame body keeps free for a request's fields other than its inline payload.
inline constexpr uint64_t kInlineOverhead = 4096;

// The inline payload per frame for a channel accepting `max_body` bytes (at least 1).
inline uint64_t InlineChunkBytes(uint64_t max_body) {
  return max_body > 2 * kInlineOverhead ? max_body - kInlineOverhead
                                        : std::max<uint64_t>(max_body / 2, 1);
}

}  // namespace remora
