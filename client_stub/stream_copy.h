// client_stub/stream_copy.h - copies into the staging slots that bypass the caches.
#pragma once

#include <cstddef>

namespace remora::client_stub {

// Copies below this size go through memcpy.
inline constexpr size_t kStreamCopyMin = 256 * 1024;

// Copies `n` bytes from `src` to `dst` (not overlapping), as memcpy does, and, from
// kStreamCopyMin bytes on, with non-temporal stores: for a staging slot, whose bytes the device
// reads next and the host never, the stores skip the read-for-ownership of every destination
// line that a cached store pays (`shm_bench`'s BM_StagingCopy: 1.17-1.30x memcpy's bytes/s into
// the arena in 4 MiB pieces; out of it into user memory, which the program reads next, 0.99-1.17x,
// so copies out stay memcpy's). The stores are fenced before it returns: whatever the caller
// publishes next (a frame, a slot's flag) is ordered after them.
void StreamCopy(void* dst, const void* src, size_t n);

}  // namespace remora::client_stub
