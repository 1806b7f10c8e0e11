// transport/grpc/session.cc - SessionCore, SessionReactor and the reactor registry.
#include "transport/grpc/session.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <utility>

namespace remora::transport {
namespace {

constexpr size_t kMaxSpareBodies = 8;
// What a buffered frame costs beyond its body, so empty frames count too.
constexpr size_t kFrameOverhead = 64;

void FillMessage(v1::Frame& msg, const FrameHeader& header, std::span<const std::byte> body) {
  msg.set_call(header.call);
  msg.set_flags(header.flags);
  msg.set_seq(header.seq);
  msg.mutable_body()->assign(reinterpret_cast<const char*>(body.data()), body.size());
}

Status Gone() {
  return Error(err::kDevicesUnavailable, "grpc session closed");
}

}  // namespace

SessionCore::SessionCore(const GrpcOptions& opts)
    : max_body_(opts.max_body),
      max_queued_bytes_(opts.max_queued_bytes),
      max_inbox_bytes_(opts.max_inbox_bytes),
      receive_spin_(opts.receive_spin),
      close_drain_(opts.close_drain),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

SessionCore::~SessionCore() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void SessionCore::Attach(SessionReactor* reactor) {
  std::lock_guard lock(mu_);
  reactor_ = reactor;
}

// Starts the write at once when none is in flight (reusing writing_'s buffer);
// otherwise queues it behind, blocking while too many bytes are queued.
Status SessionCore::Send(const FrameHeader& header, std::span<const std::byte> body) {
  if (body.size() > max_body_) [[unlikely]]
    return Error(err::kInvalidValue, "frame body of " + std::to_string(body.size()) +
                                         " bytes exceeds max_body " + std::to_string(max_body_));
  std::unique_lock lock(mu_);
  if (write_in_flight_ && queued_bytes_ > max_queued_bytes_) {
    const auto drained = [&] {
      return gone_ || closed_ || !write_in_flight_ || queued_bytes_ <= max_queued_bytes_;
    };
    if (const int64_t timeout = send_timeout_ns_.load(std::memory_order_relaxed); timeout < 0) {
      writable_.wait(lock, drained);
    } else {
      // The timeout runs while nothing moves: each write that completes (a slow link's
      // progress) starts it again.
      while (!drained()) {
        const size_t at = queued_bytes_;
        if (!writable_.wait_for(lock, std::chrono::nanoseconds(timeout),
                                [&] { return drained() || queued_bytes_ < at; })) {
          lock.unlock();
          Close();
          return Error(err::kDevicesUnavailable,
                       "grpc: the peer read nothing for " + std::to_string(timeout / 1'000'000) +
                           " ms while its queue was full; session closed");
        }
      }
    }
  }
  if (gone_ || closed_ || finish_started_) [[unlikely]]
    return Gone();
  if (write_in_flight_) {
    outbox_.emplace_back();
    FillMessage(outbox_.back(), header, body);
    queued_bytes_ += body.size();
    return OkStatus();
  }
  FillMessage(writing_, header, body);
  write_in_flight_ = true;
  SessionReactor* reactor = reactor_;
  lock.unlock();
  // Safe unlocked: OnDone cannot run while our write is in flight.
  reactor->StartWrite(&writing_);
  return OkStatus();
}

Status SessionCore::Receive(Frame& out, Deadline deadline) {
  std::unique_lock lock(mu_);
  auto ready = [&] { return !inbox_.empty() || gone_ || closed_; };
  // No spin for a deadline already passed (event-driven serving polls that way).
  if (!ready() && receive_spin_.count() > 0 && Clock::now() < deadline.at) {
    uint64_t seen = events_.load(std::memory_order_relaxed);
    lock.unlock();
    SpinUntilChanged(seen, std::min(deadline.at, Clock::now() + receive_spin_));
    lock.lock();
  }
  if (!ready()) {
    if (deadline.at == Deadline::Never().at) {
      readable_.wait(lock, ready);
    } else if (deadline.passed() || !readable_.wait_until(lock, deadline.at, ready)) {
      return Error(err::kNotReady, "grpc receive deadline passed");
    }
  }
  if (closed_) [[unlikely]]
    return Gone();
  if (inbox_.empty()) [[unlikely]]
    return Error(err::kDevicesUnavailable, "grpc peer disconnected");
  Frame& f = inbox_.front();
  out.header = f.header;
  std::swap(out.body, f.body);
  inbox_bytes_ -= out.body.size() + kFrameOverhead;
  if (spare_bodies_.size() < kMaxSpareBodies) spare_bodies_.push_back(std::move(f.body));
  inbox_.pop_front();
  if (read_paused_ && inbox_bytes_ <= max_inbox_bytes_ / 2) [[unlikely]]
    ResumeRead(lock);
  return OkStatus();
}

// Restarts the read OnRead paused. restarting_ keeps Finish (and so OnDone)
// from running while the reactor is used unlocked.
void SessionCore::ResumeRead(std::unique_lock<std::mutex>& lock) {
  read_paused_ = false;
  if (finish_started_ || reactor_ == nullptr) return;
  ++restarting_;
  SessionReactor* reactor = reactor_;
  lock.unlock();
  reactor->ResumeRead();
  lock.lock();
  --restarting_;
  FinishIfDone(lock);
}

void SessionCore::FinishIfDone(std::unique_lock<std::mutex>& lock) {
  SessionReactor* r = TakeFinishLocked();
  lock.unlock();
  if (r != nullptr) r->Finish(grpc::Status::OK);
}

// Waits for events_ to move past `seen`, yielding the CPU between looks, so a
// frame arriving soon is taken without a futex wake-up and a reschedule.
void SessionCore::SpinUntilChanged(uint64_t seen, Clock::time_point until) const {
  for (uint32_t i = 0;; ++i) {
    // Pairs with the release increments in OnRead() and Notify().
    if (events_.load(std::memory_order_acquire) != seen) return;
    if ((i & 7) == 7 && Clock::now() >= until) return;
    std::this_thread::yield();
  }
}

bool SessionCore::Arm() {
  if (wake_fd_ < 0) return false;
  std::lock_guard lock(mu_);
  if (!inbox_.empty() || gone_ || closed_) return false;
  armed_ = true;
  return true;
}

void SessionCore::Disarm() {
  bool rang;
  {
    std::lock_guard lock(mu_);
    armed_ = false;
    rang = std::exchange(rang_, false);
  }
  // Only this thread reads the eventfd, and nobody writes it while disarmed: the read
  // empties it for good.
  if (rang) {
    uint64_t count;
    while (::read(wake_fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
  }
}

// REQUIRES: mu_ held. Called from gRPC callbacks too: eventfd writes never block
// (EFD_NONBLOCK; the counter cannot approach its limit with one write per Arm).
void SessionCore::RingIfArmedLocked() {
  if (!armed_) return;
  armed_ = false;
  rang_ = true;
  const uint64_t one = 1;
  while (::write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void SessionCore::Close() {
  std::unique_lock lock(mu_);
  if (closed_) return;
  closed_ = true;
  inbox_.clear();
  inbox_bytes_ = 0;
  Notify();
  writable_.notify_all();
  if (!gone_ && !finish_started_) {
    drain_timer_.Set(std::chrono::system_clock::now() + close_drain_,
                     [weak = weak_from_this()](bool ok) {
                       if (auto core = weak.lock()) core->OnDrainOver(ok);
                     });
  }
  if (read_paused_) {
    ResumeRead(lock);  // the client may be stalled on flow control: let it finish sending
    return;
  }
  FinishIfDone(lock);
}

void SessionCore::OnDrainOver(bool ok) {
  if (!ok) return;  // cancelled: the core is going away
  std::unique_lock lock(mu_);
  drained_ = true;
  FinishIfDone(lock);
}

// REQUIRES: mu_ held.
void SessionCore::Notify() {
  events_.fetch_add(1, std::memory_order_release);  // pairs with SpinUntilChanged
  readable_.notify_all();
  RingIfArmedLocked();
}

bool SessionCore::PeerAlive() const {
  std::lock_guard lock(mu_);
  return !gone_ && !closed_;
}

bool SessionCore::OnRead(v1::Frame& msg) {
  std::unique_lock lock(mu_);
  if (finish_started_) return false;
  if (closed_) {
    ++restarting_;
    return true;
  }
  Frame& f = inbox_.emplace_back();
  if (!spare_bodies_.empty()) {
    f.body = std::move(spare_bodies_.back());
    spare_bodies_.pop_back();
  }
  f.header = {msg.call(), msg.flags(), msg.seq()};
  const std::string& b = msg.body();
  const auto* p = reinterpret_cast<const std::byte*>(b.data());
  f.body.assign(p, p + b.size());
  inbox_bytes_ += b.size() + kFrameOverhead;
  const bool more = inbox_bytes_ < max_inbox_bytes_;
  read_paused_ = !more;
  if (more) ++restarting_;
  events_.fetch_add(1, std::memory_order_release);  // pairs with SpinUntilChanged
  RingIfArmedLocked();
  return more;
}

void SessionCore::ReadRestarted() {
  std::unique_lock lock(mu_);
  --restarting_;
  FinishIfDone(lock);
}

void SessionCore::WakeReceiver() {
  readable_.notify_one();
}

void SessionCore::OnReadClosed() {
  std::unique_lock lock(mu_);
  gone_ = true;
  Notify();
  writable_.notify_all();
  FinishIfDone(lock);
}

// Starts the next queued write; finishes once nothing is in flight and the
// session is over. A failed write means the peer is gone: drop the queue.
void SessionCore::OnWriteDone(bool ok) {
  std::unique_lock lock(mu_);
  if (!ok) {
    gone_ = true;
    outbox_.clear();
    queued_bytes_ = 0;
    Notify();
  }
  if (!outbox_.empty() && !finish_started_) {
    writing_.Swap(&outbox_.front());
    outbox_.pop_front();
    queued_bytes_ -= writing_.body().size();
    writable_.notify_one();
    SessionReactor* reactor = reactor_;
    lock.unlock();
    reactor->StartWrite(&writing_);
    return;
  }
  write_in_flight_ = false;
  writable_.notify_all();
  FinishIfDone(lock);
}

void SessionCore::OnDone() {
  std::lock_guard lock(mu_);
  reactor_ = nullptr;
  gone_ = true;
  finish_started_ = true;
  outbox_.clear();
  queued_bytes_ = 0;
  Notify();
  writable_.notify_all();
}

// Finish runs exactly once, and OnDone cannot precede it, so the returned
// reactor stays valid after mu_ is released. A session closed here waits for
// the client to stop sending, or for the drain to pass.
SessionReactor* SessionCore::TakeFinishLocked() {
  if (finish_started_ || write_in_flight_ || restarting_ > 0 || reactor_ == nullptr ||
      !(gone_ || (closed_ && drained_)))
    return nullptr;
  finish_started_ = true;
  return reactor_;
}

SessionReactor::SessionReactor(std::shared_ptr<SessionCore> core, ReactorRegistry* registry)
    : core_(std::move(core)), registry_(registry) {}

void SessionReactor::Start(grpc::CallbackServerContext& ctx) {
  core_->Attach(this);
  ctx.AddInitialMetadata(kSessionAcceptedKey, "1");
  StartSendInitialMetadata();
  StartRead(&read_buf_);
}

void SessionReactor::OnReadDone(bool ok) {
  if (!ok) {
    core_->OnReadClosed();
    return;
  }
  // Re-arm before waking the receiver, so its Send does not meet our StartRead.
  const bool more = core_->OnRead(read_buf_);
  if (more) StartRead(&read_buf_);
  core_->WakeReceiver();
  if (more) core_->ReadRestarted();
}

void SessionReactor::OnWriteDone(bool ok) {
  core_->OnWriteDone(ok);
}

void SessionReactor::OnCancel() {
  core_->OnReadClosed();
}

void SessionReactor::OnDone() {
  core_->OnDone();
  registry_->Drop(this);
}

void RefusedReactor::OnDone() {
  registry_->Drop(this);
}

void ReactorRegistry::Drop(Reactor* r) {
  std::unique_ptr<Reactor> dead;  // destroyed after mu_ is released
  std::lock_guard lock(mu_);
  auto it = live_.find(r);
  if (it == live_.end()) return;
  dead = std::move(it->second);
  live_.erase(it);
  if (live_.empty()) empty_.notify_all();
}

size_t ReactorRegistry::size() const {
  std::lock_guard lock(mu_);
  return live_.size();
}

void ReactorRegistry::WaitEmpty() {
  std::unique_lock lock(mu_);
  empty_.wait(lock, [&] { return live_.empty(); });
}

}  // namespace remora::transport
