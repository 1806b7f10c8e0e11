// transport/grpc/session.h - the server end of one gRPC session stream.
//
// SessionReactor (gRPC's threads) and the session's Channel (Remora's
// threads) share one SessionCore. The reactor only moves frames: each frame it
// reads goes to the core's inbox, and the core starts one write at a time from
// its outbox. No callback ever blocks; the Channel's Receive waits on a
// condition variable, or, event-driven (Channel::Arm), the server sleeps in epoll
// on the core's eventfd: Arm, under mu_, sets armed_ unless the inbox holds a
// frame or the session is over, and every event that would wake a Receive
// (OnRead, OnReadClosed, a failed write, OnDone, Close) writes the eventfd, under
// mu_, if armed_ (and clears it). Both sides decide under the one mutex, so no
// wake-up is lost and none is stale: Disarm clears armed_ and reads the eventfd
// only if it was written. Internal to remora_transport_grpc.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "remora/v1/transport.grpc.pb.h"
#include "transport/channel.h"
#include "transport/grpc/options.h"

namespace remora::transport {

class SessionReactor;
class ReactorRegistry;

// State of one session, shared by its reactor and its Channel. Outlives the
// reactor: after OnDone the core only reports kDevicesUnavailable. Always
// owned by a shared_ptr (the drain timer holds a weak one).
class SessionCore : public std::enable_shared_from_this<SessionCore> {
 public:
  using Clock = std::chrono::steady_clock;
  // Takes max_body, max_queued_bytes, max_inbox_bytes, receive_spin and
  // close_drain from `opts`.
  explicit SessionCore(const GrpcOptions& opts);
  ~SessionCore();
  SessionCore(const SessionCore&) = delete;
  SessionCore& operator=(const SessionCore&) = delete;

  // Channel side. Thread-safe; one sender and one receiver at a time.
  Status Send(const FrameHeader& header, std::span<const std::byte> body);
  Status Receive(Frame& out, Deadline deadline);
  // Ends the session here and wakes waiters. The RPC finishes once queued
  // writes are flushed and either the client has stopped sending or
  // close_drain has passed; until then frames still arriving are dropped.
  void Close();
  bool PeerAlive() const;
  // Channel::SetSendTimeout: how long Send waits for the queue to drain (< 0: no bound).
  void SetSendTimeout(std::chrono::nanoseconds timeout) {
    send_timeout_ns_.store(timeout.count() < 0 ? -1 : timeout.count(), std::memory_order_relaxed);
  }
  size_t max_body() const { return max_body_; }
  // Channel::wake_fd/Arm/Disarm (see the file head). The eventfd lives as long
  // as the core; -1 if it could not be created.
  int wake_fd() const { return wake_fd_; }
  bool Arm();
  void Disarm();

  // Reactor side; called from gRPC callbacks, never block.
  void Attach(SessionReactor* reactor);
  // Stores a read frame without waking the receiver (drops it once closed).
  // Returns false if no further read should be started now: the session is
  // finishing, or the inbox is full (Receive resumes). On true the caller
  // starts the read and then calls ReadRestarted.
  bool OnRead(v1::Frame& msg);
  void ReadRestarted();
  // Wakes a Receive sleeping on the frames OnRead stored. Called unlocked.
  void WakeReceiver();
  void OnReadClosed();
  void OnWriteDone(bool ok);
  void OnDone();

 private:
  // REQUIRES: mu_ held. Returns the reactor the caller must Finish once
  // unlocked, or nullptr if the RPC must not finish yet.
  SessionReactor* TakeFinishLocked();
  // REQUIRES: mu_ held. Records an event for spinners and wakes sleepers.
  void Notify();
  // REQUIRES: mu_ held. Writes the eventfd if armed_ (non-blocking) and disarms.
  void RingIfArmedLocked();
  void SpinUntilChanged(uint64_t seen, Clock::time_point until) const;
  // REQUIRES: `lock` holds mu_ and read_paused_. May return with `lock`
  // released (when it had to Finish the RPC).
  void ResumeRead(std::unique_lock<std::mutex>& lock);
  // REQUIRES: `lock` holds mu_. Finishes the RPC if it may end now; returns
  // with `lock` released.
  void FinishIfDone(std::unique_lock<std::mutex>& lock);
  void OnDrainOver(bool ok);

  const size_t max_body_;
  const size_t max_queued_bytes_;
  const size_t max_inbox_bytes_;
  const std::chrono::nanoseconds receive_spin_;
  const std::chrono::milliseconds close_drain_;
  const int wake_fd_;  // eventfd (non-blocking), closed by the destructor
  // Bumped (under mu_) whenever readable_ would wake a Receive; read unlocked by spinners.
  std::atomic<uint64_t> events_{0};
  std::atomic<int64_t> send_timeout_ns_{-1};

  mutable std::mutex mu_;
  std::condition_variable readable_;   // inbox_ non-empty, or gone_/closed_
  std::condition_variable writable_;   // queued_bytes_ shrank, or gone_/closed_
  SessionReactor* reactor_ = nullptr;  // null before Attach and after OnDone
  std::deque<Frame> inbox_;
  size_t inbox_bytes_ = 0;
  bool read_paused_ = false;  // inbox full: no read outstanding until Receive drains it
  int restarting_ = 0;        // reads being started unlocked: defer Finish
  std::vector<std::vector<std::byte>> spare_bodies_;  // recycled by Receive/OnRead
  std::deque<v1::Frame> outbox_;                      // waiting behind writing_
  size_t queued_bytes_ = 0;
  v1::Frame writing_;  // the write in flight; stable until OnWriteDone
  bool write_in_flight_ = false;
  bool gone_ = false;            // the peer stopped sending, cancelled or the RPC ended
  bool closed_ = false;          // Close() was called here
  bool drained_ = false;         // close_drain passed since Close()
  grpc::Alarm drain_timer_;      // set by Close()
  bool finish_started_ = false;  // Finish was (or is being) called
  bool armed_ = false;           // Arm returned true; no wake-up or Disarm since
  bool rang_ = false;            // the eventfd was written and not read back yet
};

// One stream's reactor. Owned by the listener's ReactorRegistry, which drops it
// in OnDone.
class SessionReactor final : public grpc::ServerBidiReactor<v1::Frame, v1::Frame> {
 public:
  SessionReactor(std::shared_ptr<SessionCore> core, ReactorRegistry* registry);
  // Sends initial metadata carrying kSessionAcceptedKey (the client's "session
  // accepted") and starts reading. REQUIRES: called once, after the registry
  // owns this reactor.
  void Start(grpc::CallbackServerContext& ctx);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  // Restarts reading after the core paused it. REQUIRES: no read outstanding.
  void ResumeRead() { StartRead(&read_buf_); }

 private:
  std::shared_ptr<SessionCore> core_;
  ReactorRegistry* registry_;
  v1::Frame read_buf_;
};

// Finishes at once with `status`: a stream refused before its session starts.
class RefusedReactor final : public grpc::ServerBidiReactor<v1::Frame, v1::Frame> {
 public:
  explicit RefusedReactor(ReactorRegistry* registry) : registry_(registry) {}
  void Start(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override;

 private:
  ReactorRegistry* registry_;
};

// Owns every live reactor until its OnDone. Thread-safe.
class ReactorRegistry {
 public:
  using Reactor = grpc::ServerBidiReactor<v1::Frame, v1::Frame>;
  template <typename R>
  R* Add(std::unique_ptr<R> r) {
    R* raw = r.get();
    std::lock_guard lock(mu_);
    live_.emplace(raw, std::move(r));
    return raw;
  }
  // Destroys `r`. Called from r's own OnDone, as its last action.
  void Drop(Reactor* r);
  // Blocks until every reactor has been dropped.
  void WaitEmpty();
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable empty_;
  std::unordered_map<Reactor*, std::unique_ptr<Reactor>> live_;
};

// The Channel a listener's Accept returns. Closing it (or destroying it)
// finishes the RPC.
class GrpcServerChannel final : public Channel {
 public:
  GrpcServerChannel(std::shared_ptr<SessionCore> core, std::string peer)
      : core_(std::move(core)), peer_(std::move(peer)) {}
  ~GrpcServerChannel() override { core_->Close(); }

  Status Send(const FrameHeader& header, std::span<const std::byte> body) override {
    return core_->Send(header, body);
  }
  Status Receive(Frame& out, Deadline deadline) override { return core_->Receive(out, deadline); }
  void SetSendTimeout(std::chrono::nanoseconds timeout) override { core_->SetSendTimeout(timeout); }
  size_t max_body() const override { return core_->max_body(); }
  Arena* arena() override { return nullptr; }
  bool PeerAlive() const override { return core_->PeerAlive(); }
  void Close() override { core_->Close(); }
  std::string Describe() const override { return "grpc " + peer_; }
  int wake_fd() const override { return core_->wake_fd(); }
  bool Arm() override { return core_->Arm(); }
  void Disarm() override { core_->Disarm(); }

 private:
  std::shared_ptr<SessionCore> core_;
  std::string peer_;
};

}  // namespace remora::transport
