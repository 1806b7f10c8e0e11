// transport/shm/shm_channel.h - the local transport: ShmListener, ShmConnect, ShmChannel.
//
// The server listens on a Unix stream socket. For each client it creates a sealed memfd
// (layout.h: control block, request ring client->server, reply ring server->client, bulk
// arena) and sends it with SCM_RIGHTS; both sides map it MAP_SHARED. Frames then travel
// through the rings only (spsc_ring.h), waiting with WaitStrategy (wait.h). The socket
// stays open as the liveness signal: a waiter whose futex sleep times out polls it, so a
// crashed or closed peer is noticed within one park period (100 ms by default).
//
// Event-driven serving (Channel::Arm): the socket is also the doorbell, and wake_fd().
// Arm marks the receiving ring's data_waiter kWaiterArmed (wait.h has the handshake);
// the peer's Send that takes the arming writes one byte to its end of the socket
// (non-blocking: if the buffer is full, the socket is readable anyway). The peer's Close
// (shutdown) or death (the kernel closes its end) makes the socket readable too. So the
// only bytes that ever travel after the handshake are doorbells: whoever reads the socket
// treats recv() == 0 as "peer gone" and bytes as doorbells. Disarm drains them; CheckPeer
// only peeks, so it never swallows a doorbell meant for an epoll sleeper. Both ends work
// the same way (a client end may arm too).
//
//   ASSIGN_OR_RETURN(auto listener, ShmListener::Listen("/run/remora/gpu0.sock"));
//   PeerInfo who;
//   ASSIGN_OR_RETURN(std::unique_ptr<Channel> ch, listener->Accept(who, Deadline::Never()));
//   // client:
//   ASSIGN_OR_RETURN(auto ch, ShmConnect("/run/remora/gpu0.sock", Deadline::In(1s)));
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/channel.h"
#include "transport/shm/layout.h"
#include "transport/shm/posix.h"
#include "transport/shm/spsc_ring.h"
#include "transport/shm/wait.h"

namespace remora::transport {

struct ShmOptions {
  size_t request_ring_bytes = size_t{1} << 20;  // power of two; max_body() is about 1/8
  size_t reply_ring_bytes = size_t{1} << 20;
  size_t arena_bytes = size_t{1} << 30;  // sparse: costs memory only where touched
  shm::WaitOptions wait;                 // the server side's waiting
};

// One end of a shm session. Send/Receive follow Channel; see the file head for liveness.
class ShmChannel final : public Channel {
 public:
  enum class Side { kServer, kClient };

  ~ShmChannel() override;

  // Errors: kInvalidValue if body.size() > max_body(); kDevicesUnavailable once closed,
  // the peer is gone, or the ring is corrupt. Blocks (spin, then futex) while the ring is full.
  Status Send(const FrameHeader& header, std::span<const std::byte> body) override;
  // Errors: kNotReady on deadline; kDevicesUnavailable after Close(), or when the peer is
  // gone and its frames are drained, or for a corrupt frame.
  Status Receive(Frame& out, Deadline deadline) override;
  // The sending ring's capacity / 8, less the 16-byte FrameHeader that shares the record.
  size_t max_body() const override { return max_body_; }
  Arena* arena() override { return &arena_; }
  bool PeerAlive() const override;
  void Close() override;
  std::string Describe() const override;
  void SetReceiveSpin(std::chrono::nanoseconds spin, bool yield) override;
  void SetSendTimeout(std::chrono::nanoseconds timeout) override;
  // The Unix socket (see the file head).
  int wake_fd() const override { return sock_.get(); }
  bool Arm() override;
  // One non-blocking recv() when armed (it also notices a closed socket); none otherwise.
  void Disarm() override;

  // Checks the socket now (one poll syscall) and records a lost peer. Thread-safe.
  void CheckPeer();
  const PeerInfo& peer() const { return peer_; }

 private:
  friend struct ShmChannelFactory;
  class ShmArena final : public Arena {
   public:
    ShmArena(std::byte* base, size_t size) : base_(base), size_(size) {}
    std::byte* base() const override { return base_; }
    size_t size() const override { return size_; }

   private:
    std::byte* base_;
    size_t size_;
  };

  ShmChannel(Side side, shm::UniqueFd sock, shm::Mapping map, const shm::ShmLayout& layout,
             shm::SpscRing::Producer out, shm::SpscRing::Consumer in, PeerInfo peer,
             shm::WaitOptions wait);
  // True once this end is closed, the peer closed, or the peer was found dead.
  bool Stopped() const;
  void WakeAll();
  // Records the peer as gone and wakes every waiter. Thread-safe.
  void PeerLost();
  // Writes one doorbell byte to the peer; never blocks, ignores errors.
  void RingDoorbell();
  // Reads pending doorbell bytes without blocking; recv() == 0 means the peer is gone.
  void DrainDoorbell();

  shm::UniqueFd sock_;
  shm::Mapping map_;
  shm::ControlBlock* control_;
  std::atomic<uint32_t>* own_state_;
  std::atomic<uint32_t>* peer_state_;
  shm::SpscRing::Producer out_;
  shm::SpscRing::Consumer in_;
  shm::WaitStrategy wait_;
  // SetReceiveSpin's: the spin in ns (-1: wait_'s), and whether to yield.
  std::atomic<int64_t> receive_spin_ns_{-1};
  std::atomic<bool> receive_yield_{false};
  std::atomic<int64_t> send_timeout_ns_{-1};  // SetSendTimeout's; -1: none
  ShmArena arena_;
  PeerInfo peer_;
  size_t max_body_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> peer_lost_{false};  // set by whichever local thread noticed; private
  bool armed_ = false;                  // Arm returned true, no Disarm yet; receiving thread
};

// Server side: accepts clients on a Unix socket and gives each its own ShmChannel.
class ShmListener final : public Listener {
 public:
  // Binds and listens on `path`, replacing a stale socket file (one nobody accepts on).
  // Errors: kInvalidValue for bad options, a path too long or naming a non-socket;
  // kInitializationError if a live server owns the path or a syscall fails.
  static Result<std::unique_ptr<ShmListener>> Listen(const std::string& path, ShmOptions opts = {});
  // Binds and listens on `path` as Listen does and returns the listening descriptor,
  // the caller's to close and to hand to processes it starts (Adopt). Errors: Listen's.
  static Result<int> Bind(const std::string& path);
  // A listener on `fd`, a descriptor Bind made for `path` (in this process or a
  // parent). It closes fd but leaves the socket file, whose owner is Bind's caller:
  // clients that connect while no process accepts wait in the socket's backlog.
  // Errors: kInvalidValue for bad options; kInitializationError if `fd` is not a
  // listening socket.
  static Result<std::unique_ptr<ShmListener>> Adopt(const std::string& path, int fd,
                                                    ShmOptions opts = {});
  // Closes the socket and removes the socket file (unless adopted). Existing
  // channels are unaffected.
  ~ShmListener() override;

  // Waits for a client, hands it its memfd, fills `peer` from SO_PEERCRED. A client that
  // vanishes during the handshake is skipped. Errors: kNotReady on deadline;
  // kDevicesUnavailable after Shutdown(); kMemoryAllocation/kUnknown if the session
  // cannot be created. One thread at a time.
  Result<std::unique_ptr<Channel>> Accept(PeerInfo& peer, Deadline deadline) override;
  // Wakes Accept and makes it fail from now on. Thread-safe, idempotent.
  void Shutdown() override;
  const std::string& path() const { return path_; }

 private:
  ShmListener(std::string path, ShmOptions opts, shm::ShmLayout layout, shm::UniqueFd sock,
              shm::UniqueFd wake, bool owns_path);
  static Result<std::unique_ptr<ShmListener>> Make(const std::string& path, ShmOptions opts,
                                                   shm::UniqueFd sock, bool owns_path);
  // Creates the memfd for a connected client and sends it. nullptr: the client is gone.
  Result<std::unique_ptr<Channel>> Handshake(shm::UniqueFd conn, const PeerInfo& peer);

  std::string path_;
  ShmOptions opts_;
  shm::ShmLayout layout_;
  shm::UniqueFd sock_;
  shm::UniqueFd wake_;  // eventfd written by Shutdown()
  bool owns_path_;      // removes the socket file when destroyed
  std::atomic<bool> shutdown_{false};
};

// Connects to the server at `path` and maps the session it hands over. Errors:
// kInitializationError (message says which) when the socket is absent or refuses, the
// handshake does not arrive before `deadline`, or its header or memfd is malformed.
// Thread-safe.
Result<std::unique_ptr<Channel>> ShmConnect(const std::string& path, Deadline deadline,
                                            shm::WaitOptions wait = {});

}  // namespace remora::transport
