// proto/arena.h - how stub and server share the shm arena.
//
// The server describes the arena in Welcome: a staging region (copy staging for
// pageable host memory, `staging_slots` slots of `staging_slot_bytes`) and a heap
// region (pinned host memory from cudaMallocHost/cudaHostAlloc, and managed
// memory from cudaMallocManaged, both allocated by the stub alone). The server
// only ever bounds-checks heap offsets.
//
// Same address: the client maps the memfd at the server's address when it can
// (transport/shm); the server registers the arena CU_MEMHOSTREGISTER_DEVICEMAP
// and sends its device address in Welcome.arena_device_address. When that equals
// the client's own arena base, a heap pointer means the same bytes to the host
// and to kernels: zero-copy (cudaHostGetDevicePointer) and managed memory work,
// coherent at synchronisation points (no concurrent host and device access).
//
// Staging slot protocol: slot i owns a 32-bit flag at StagingFlagOffset(i).
//   stub:   waits for flag == 0 (acquire), fills the slot, stores 1, sends a
//           frame naming the slot (MemcpyHtoDRequest.staging_slot = i + 1).
//   server: when the bytes have been consumed (the copy executed), stores 0
//           (release), pairing with the stub's acquire.
//   For device-to-host staging the stub claims the slot (1), the server fills it
//   before its SYNC reply, and the stub stores 0 after copying out.
#pragma once

#include <cstdint>

namespace remora::arena {

// The server's staging region: 16 slots of 4 MiB at the start of the arena; the heap follows.
// (Welcome carries them, so a stub takes whatever its server offers.)
inline constexpr uint32_t kStagingSlots = 16;
inline constexpr uint64_t kStagingSlotBytes = 4ull << 20;

// The heap is page-locked with the driver on demand, in chunks of this many bytes from its start
// (Welcome.heap_pin_chunk_bytes; server/arena_pins.h says why).
inline constexpr uint64_t kHeapPinChunkBytes = 64ull << 20;

inline constexpr uint64_t kFlagStride = 64;
inline constexpr uint64_t kPage = 4096;

constexpr uint64_t AlignUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

constexpr uint64_t StagingFlagOffset(uint64_t staging_offset, uint32_t slot) {
  return staging_offset + kFlagStride * slot;
}
constexpr uint64_t StagingSlotOffset(uint64_t staging_offset, uint32_t slots, uint64_t slot_bytes,
                                     uint32_t slot) {
  return staging_offset + AlignUp(kFlagStride * slots, kPage) + slot_bytes * slot;
}
// Bytes the staging region occupies.
constexpr uint64_t StagingBytes(uint32_t slots, uint64_t slot_bytes) {
  return AlignUp(kFlagStride * slots, kPage) + slot_bytes * slots;
}

}  // namespace remora::arena
