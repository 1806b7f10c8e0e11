// transport/channel.h - Channel: one session's ordered, reliable frame pipe.
//
// A Channel moves frames between one client and the server; it knows nothing of
// CUDA or of what the frames mean. Two kinds implement it: shm (local: a memfd
// holding two SPSC rings and a bulk arena) and grpc (remote: one bidirectional
// stream). Each end of a channel is used by one sending thread and one
// receiving thread at a time (they may be the same thread).
//
//   std::unique_ptr<Channel> ch = ...;
//   RETURN_IF_ERROR(ch->Send({.call = 7, .seq = 1}, body));
//   Frame reply;
//   RETURN_IF_ERROR(ch->Receive(reply, Deadline::Never()));
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proto/status.h"

namespace remora::transport {

// Fixed part of every frame. `call` is a calls.def id (0 = session set-up),
// `seq` pairs a reply with its request; `flags` is free for the protocol.
struct FrameHeader {
  uint32_t call = 0;
  uint32_t flags = 0;
  uint64_t seq = 0;
};

// A received frame. `body` keeps its capacity across Receive calls.
struct Frame {
  FrameHeader header;
  std::vector<std::byte> body;
};

// When a blocking call gives up. Never() waits until the peer is gone; Passed()
// does not wait at all (Receive takes what is already there).
struct Deadline {
  std::chrono::steady_clock::time_point at;
  static Deadline Never() { return {std::chrono::steady_clock::time_point::max()}; }
  static Deadline Passed() { return {std::chrono::steady_clock::time_point()}; }
  static Deadline In(std::chrono::nanoseconds d) { return {std::chrono::steady_clock::now() + d}; }
  bool passed() const { return std::chrono::steady_clock::now() >= at; }
};

// Memory both ends map: pinned host buffers and copy staging live here, so a
// copy through it is one pass. Offsets are what travels in frames.
class Arena {
 public:
  virtual ~Arena() = default;
  virtual std::byte* base() const = 0;
  virtual size_t size() const = 0;
  // True if [offset, offset+len) lies inside the arena (overflow-safe).
  bool Contains(uint64_t offset, uint64_t len) const {
    return offset <= size() && len <= size() - offset;
  }
};

class Channel {
 public:
  virtual ~Channel() = default;

  // Queues one frame for the peer; blocks while the transport is full.
  // Errors: kInvalidValue if body exceeds max_body(); kDevicesUnavailable once
  // the peer is gone or Close() was called.
  virtual Status Send(const FrameHeader& header, std::span<const std::byte> body) = 0;

  // Waits for the next frame and moves it into `out`.
  // Errors: kNotReady when `deadline` passes first; kDevicesUnavailable when the
  // peer is gone (closed, crashed) and every frame it sent has been read.
  virtual Status Receive(Frame& out, Deadline deadline) = 0;

  // Largest body Send accepts. Bigger payloads go through arena() or chunks.
  virtual size_t max_body() const = 0;

  // The shared arena, or nullptr for a remote channel (bulk data goes inline).
  virtual Arena* arena() = 0;

  // True while the peer is believed alive (no syscall on shm).
  virtual bool PeerAlive() const = 0;

  // Stops the channel: pending and later Send/Receive on either end fail with
  // kDevicesUnavailable. Safe to call from any thread, more than once.
  virtual void Close() = 0;

  // "shm uid=1000 pid=4242" / "grpc ipv4:10.0.0.2:5123", for logs.
  virtual std::string Describe() const = 0;

  // How long Receive polls for a frame before it sleeps, and whether it yields the CPU while it
  // polls: a receiver's latency against its CPU (a tenant's cudaDeviceSchedule* flags). A hint
  // that a transport which does not poll ignores; a negative spin restores the transport's
  // own. Thread-safe; applies from the next wait.
  virtual void SetReceiveSpin(std::chrono::nanoseconds /*spin*/, bool /*yield*/) {}

  // Bounds how long one Send may wait for room while the peer reads nothing (negative, the
  // default: as long as the peer lives); a peer that reads, however slowly, starts it again.
  // Past it the channel is closed and that Send, like every later one, fails with
  // kDevicesUnavailable: a server thread sending a reply must not hang on a peer that stopped
  // reading. Thread-safe; applies from the next Send.
  virtual void SetSendTimeout(std::chrono::nanoseconds /*timeout*/) {}

  // ---- Event-driven serving (the server end) ----
  // Lets a fixed pool of threads serve many mostly idle channels: instead of a thread
  // parked in Receive per channel, each idle channel is armed and its wake_fd() sits in
  // one epoll set. Serving one channel, by whichever thread picked it up:
  //
  //   for (;;) {
  //     Status s;
  //     while ((s = ch.Receive(frame, Deadline::Passed())).ok()) Handle(frame);
  //     if (s.code() != err::kNotReady) break;  // closed or the peer is gone: drop it
  //     if (!ch.Arm()) continue;                // a frame slipped in: receive again
  //     ... sleep until epoll reports ch.wake_fd() (level-triggered, EPOLLIN) ...
  //     ch.Disarm();
  //   }
  //
  // Busy channels cost no syscall: Receive finds frames, and Arm is a few atomic
  // operations. A wake-up is never lost. Rarely, wake_fd() polls readable with nothing
  // to receive, even while not armed (a doorbell that raced a Receive): harmless, as
  // Receive then reports kNotReady and the next Arm/Disarm round consumes it.

  // A descriptor that polls readable (EPOLLIN, or EPOLLHUP/EPOLLERR) once a frame may
  // be waiting or the peer is gone, while armed (see Arm). Stable for the channel's
  // life: remove it from any epoll set before destroying the channel. -1 if this kind
  // of channel (or this end of it) cannot be served this way: then Arm() returns false
  // and Disarm() does nothing; serve it with a blocking Receive.
  virtual int wake_fd() const = 0;
  // Announces that the caller is about to sleep on wake_fd(). Returns false, arming
  // nothing, if a frame is already waiting or the peer is gone (call Receive instead).
  // After true, the peer's next Send, its Close or its death, or a local Close(), makes
  // wake_fd() readable. REQUIRES: the receiving thread; no Receive until Disarm().
  virtual bool Arm() = 0;
  // Consumes a wake-up (after wake_fd() fired, or to cancel an Arm), so that wake_fd()
  // stops polling readable until the next Arm and wake-up (but see above); then
  // Receive(out, Deadline::Passed()) finds the frames, or the peer's loss, without
  // blocking. A no-op when not armed (after Arm returned false). REQUIRES: the
  // receiving thread.
  virtual void Disarm() = 0;
};

// The identity the kernel vouches for (SO_PEERCRED) or, remotely, the address.
struct PeerInfo {
  int64_t pid = -1;  // -1 when unknown (remote)
  int64_t uid = -1;
  std::string address;
};

// Server side: yields one Channel per connecting client.
class Listener {
 public:
  virtual ~Listener() = default;
  // Waits for the next client. Errors: kNotReady on deadline, kDevicesUnavailable
  // after Shutdown().
  virtual Result<std::unique_ptr<Channel>> Accept(PeerInfo& peer, Deadline deadline) = 0;
  // Wakes Accept and refuses new clients; existing channels are unaffected.
  virtual void Shutdown() = 0;
};

}  // namespace remora::transport
