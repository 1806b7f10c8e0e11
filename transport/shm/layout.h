// transport/shm/layout.h - the memfd of one shm session and the header sent with its fd.
//
// memfd = [ControlBlock page][request ring][reply ring][arena], each part page-aligned.
// The server creates it, seals its size and sends it with a HandshakeHeader over the Unix
// socket; the client recomputes the layout from the header's three sizes and refuses any
// mismatch before mapping. Both sides use only their own computed ShmLayout afterwards.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "proto/status.h"

namespace remora::transport::shm {

inline constexpr uint64_t kShmMagic = 0x4853'4152'4F4D'4552ull;  // "REMORASH" little-endian
// 3: a ring's data_waiter may hold kWaiterArmed (wait.h), and the producer that takes it
// must ring the doorbell; a version-2 peer would take it silently (a lost wake-up).
// 4: ring records start on cache lines (spsc_ring.h); a version-3 peer reads them at 8.
inline constexpr uint32_t kLayoutVersion = 4;
inline constexpr uint64_t kPageSize = 4096;

// Sent once by the server, as the data of the SCM_RIGHTS message carrying the memfd.
struct HandshakeHeader {
  uint64_t magic = kShmMagic;
  uint32_t version = kLayoutVersion;
  uint32_t header_size = sizeof(HandshakeHeader);
  uint64_t request_capacity = 0;  // client -> server ring data bytes
  uint64_t reply_capacity = 0;    // server -> client ring data bytes
  uint64_t arena_size = 0;
  uint64_t total_size = 0;  // bytes of the memfd
  // Where the server mapped the memfd. The client maps it at the same address
  // when that range is free there (MAP_FIXED_NOREPLACE), else anywhere: arena
  // pointers then mean the same memory in both processes (zero-copy).
  uint64_t server_address = 0;
};
static_assert(sizeof(HandshakeHeader) == 56);
static_assert(offsetof(HandshakeHeader, request_capacity) == 16);
static_assert(offsetof(HandshakeHeader, total_size) == 40);
static_assert(offsetof(HandshakeHeader, server_address) == 48);

// Offsets of each part; a pure function of the three sizes.
struct ShmLayout {
  uint64_t request_capacity = 0;
  uint64_t reply_capacity = 0;
  uint64_t arena_size = 0;
  uint64_t request_offset = 0;
  uint64_t reply_offset = 0;
  uint64_t arena_offset = 0;
  uint64_t total_size = 0;

  // Validates the sizes (ring capacities per SpscRing::CheckCapacity; arena a multiple
  // of 4 KiB, at most 1 TiB) and computes the offsets. Errors: kInvalidValue.
  static Result<ShmLayout> Make(uint64_t request_capacity, uint64_t reply_capacity,
                                uint64_t arena_size);
  HandshakeHeader Header() const;
};

enum : uint32_t { kSideOpen = 0, kSideClosed = 1 };

// Page 0 of the memfd. Fields 128 B apart; each names its writer.
struct ControlBlock {
  // Writer: server, before the fd is sent; never changed. Informational for the client,
  // which validates the copy it received on the socket instead.
  alignas(128) HandshakeHeader header;
  // Writer: server. kSideOpen, then kSideClosed on Close(). Read by the client (seq_cst).
  alignas(128) std::atomic<uint32_t> server_state;
  // Writer: client. kSideOpen, then kSideClosed on Close(). Read by the server (seq_cst).
  alignas(128) std::atomic<uint32_t> client_state;
};
static_assert(offsetof(ControlBlock, header) == 0);
static_assert(offsetof(ControlBlock, server_state) == 128);
static_assert(offsetof(ControlBlock, client_state) == 256);
static_assert(sizeof(ControlBlock) <= kPageSize);

}  // namespace remora::transport::shm
