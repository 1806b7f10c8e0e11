// transport/grpc/client.cc - GrpcClientChannel: a session stream driven by its callers.
//
// The stream uses the async API on a private completion queue. Whichever
// thread waits for an operation polls the queue (leader); a second thread
// waiting at the same time sleeps on a condition variable (follower) until the
// leader sees its completion or stops polling. With one sender and one
// receiver, at most one thread polls and nobody ever hops threads in the
// request/reply case. While no caller has polled for a while (the program
// computing, or idle), a thread of the channel's own polls instead: gRPC does
// its I/O only while someone polls, and a connection nobody reads answers no
// keepalive ping, so both ends would close a healthy idle session.
#include "transport/grpc/client.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include <grpc/support/time.h>
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "remora/v1/transport.grpc.pb.h"

namespace remora::transport {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(err::kInvalidValue, "cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

gpr_timespec ToGpr(Deadline d) {
  if (d.at == Deadline::Never().at) return gpr_inf_future(GPR_CLOCK_MONOTONIC);
  auto left = std::max(d.at - std::chrono::steady_clock::now(), std::chrono::nanoseconds(0));
  return gpr_time_add(
      gpr_now(GPR_CLOCK_MONOTONIC),
      gpr_time_from_nanos(std::chrono::duration_cast<std::chrono::nanoseconds>(left).count(),
                          GPR_TIMESPAN));
}

Status Gone() {
  return Error(err::kDevicesUnavailable, "grpc session closed");
}

class GrpcClientChannel final : public Channel {
  struct Key {};

 public:
  GrpcClientChannel(Key, std::shared_ptr<grpc::Channel> channel, size_t max_body,
                    std::chrono::milliseconds idle_after)
      : channel_(std::move(channel)),
        stub_(v1::Remora::NewStub(channel_)),
        max_body_(max_body),
        idle_after_(std::max(idle_after, std::chrono::milliseconds(1))) {}

  static Result<std::unique_ptr<Channel>> Open(std::shared_ptr<grpc::Channel> channel,
                                               const GrpcClientOptions& opts, Deadline deadline);
  ~GrpcClientChannel() override;

  Status Send(const FrameHeader& header, std::span<const std::byte> body) override;
  Status Receive(Frame& out, Deadline deadline) override;
  size_t max_body() const override { return max_body_; }
  Arena* arena() override { return nullptr; }
  bool PeerAlive() const override;
  void Close() override;
  std::string Describe() const override { return "grpc " + peer_; }
  // The client end is not served event-driven: its receiver polls the completion queue.
  int wake_fd() const override { return -1; }
  bool Arm() override { return false; }
  void Disarm() override {}

 private:
  enum Op { kStart, kMeta, kRead, kWrite, kFinish, kNumOps };
  enum class Outcome { kOk, kFailed, kTimedOut };
  struct OpState {
    bool pending = false;  // issued, completion not yet seen
    bool done = false;     // completion seen, not yet consumed by Await
    bool ok = false;
  };

  Status Start(const std::string& token, Deadline deadline);
  void Issued(Op op);
  // Waits for `op` (issued before) to complete, polling cq_ if no other thread
  // does. Leaves the op pending on kTimedOut.
  Outcome Await(Op op, Deadline deadline);
  void* Tag(Op op) { return &ops_[op]; }
  // Polls cq_ once until `deadline` as the poller (REQUIRES: `lock` holds mu_, polling_ false),
  // records the op that completed, if any (not the wake-up alarm), and wakes the waiters: their
  // op may be done, or one of them polls next.
  grpc::CompletionQueue::NextStatus PollOnce(std::unique_lock<std::mutex>& lock,
                                             gpr_timespec deadline);
  // The idle poller's loop: polls cq_ while no caller has for idle_after_.
  void PollWhileIdle();
  void StopIdlePoller();

  grpc::CompletionQueue cq_;
  grpc::ClientContext ctx_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Remora::Stub> stub_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<v1::Frame, v1::Frame>> stream_;
  const size_t max_body_;
  std::string peer_;
  v1::Frame read_buf_;   // receiver only
  v1::Frame write_buf_;  // sender only
  grpc::Status final_status_;
  bool finished_ = false;

  std::mutex mu_;
  std::condition_variable cv_;  // an op completed, or the poller stepped down
  bool polling_ = false;
  OpState ops_[kNumOps];

  const std::chrono::milliseconds idle_after_;
  std::chrono::steady_clock::time_point last_poll_{};  // a caller's; guarded by mu_
  bool stop_idle_ = false;                             // guarded by mu_
  std::condition_variable idle_cv_;                    // stop_idle_ set
  grpc::Alarm wake_;                                   // fired to end the idle poller's wait on cq_
  std::thread idle_poller_;

  std::atomic<bool> broken_{false};     // an op failed: the stream is over
  std::atomic<bool> read_over_{false};  // a read failed: nothing more will arrive
  std::atomic<bool> closed_{false};
};

Result<std::unique_ptr<Channel>> GrpcClientChannel::Open(std::shared_ptr<grpc::Channel> channel,
                                                         const GrpcClientOptions& opts,
                                                         Deadline deadline) {
  // A quarter of the keepalive period: pings are answered well within their timeout.
  auto ch = std::make_unique<GrpcClientChannel>(Key{}, std::move(channel), opts.max_body,
                                                opts.keepalive / 4);
  RETURN_IF_ERROR(ch->Start(opts.token, deadline));
  ch->idle_poller_ = std::thread([c = ch.get()] { c->PollWhileIdle(); });
  return std::unique_ptr<Channel>(std::move(ch));
}

grpc::CompletionQueue::NextStatus GrpcClientChannel::PollOnce(std::unique_lock<std::mutex>& lock,
                                                              gpr_timespec deadline) {
  polling_ = true;
  lock.unlock();
  void* tag;
  bool ok;
  const auto got = cq_.AsyncNext(&tag, &ok, deadline);
  lock.lock();
  polling_ = false;
  if (got == grpc::CompletionQueue::GOT_EVENT && tag != &wake_) {
    auto* s = static_cast<OpState*>(tag);
    s->pending = false;
    s->done = true;
    s->ok = ok;
  }
  cv_.notify_all();
  return got;
}

void GrpcClientChannel::PollWhileIdle() {
  std::unique_lock lock(mu_);
  while (!stop_idle_) {
    const auto now = std::chrono::steady_clock::now();
    if (polling_ || now - last_poll_ < idle_after_) {
      idle_cv_.wait_until(lock, (polling_ ? now : last_poll_) + idle_after_);
      continue;
    }
    if (PollOnce(lock, ToGpr(Deadline::In(idle_after_))) == grpc::CompletionQueue::SHUTDOWN) break;
  }
}

void GrpcClientChannel::StopIdlePoller() {
  if (!idle_poller_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_idle_ = true;
  }
  idle_cv_.notify_all();
  wake_.Set(&cq_, gpr_now(GPR_CLOCK_MONOTONIC), &wake_);  // ends a wait on cq_ at once
  idle_poller_.join();
}

// The server sends initial metadata only once the session is accepted, so a
// refused token or a shut-down listener shows up here, not on the first frame.
Status GrpcClientChannel::Start(const std::string& token, Deadline deadline) {
  if (!token.empty()) ctx_.AddMetadata("authorization", "Bearer " + token);
  stream_ = stub_->PrepareAsyncSession(&ctx_, &cq_);
  Issued(kStart);
  stream_->StartCall(Tag(kStart));
  Outcome o = Await(kStart, deadline);
  if (o == Outcome::kOk) {
    Issued(kMeta);
    stream_->ReadInitialMetadata(Tag(kMeta));
    o = Await(kMeta, deadline);
    if (o == Outcome::kOk && ctx_.GetServerInitialMetadata().count(kSessionAcceptedKey) == 0)
      o = Outcome::kFailed;
  }
  if (o == Outcome::kTimedOut)
    return Error(err::kInitializationError, "grpc session not accepted before the deadline");
  if (o == Outcome::kFailed) {
    Issued(kFinish);
    stream_->Finish(&final_status_, Tag(kFinish));
    finished_ = true;
    const bool finished = Await(kFinish, deadline) == Outcome::kOk;
    if (finished && final_status_.error_code() == grpc::StatusCode::UNAUTHENTICATED)
      return Error(err::kNotPermitted, "grpc server refused the token");
    if (finished && final_status_.error_code() == grpc::StatusCode::UNAVAILABLE)
      return Error(err::kDevicesUnavailable,
                   "grpc server takes no sessions now: " + final_status_.error_message());
    return Error(err::kInitializationError,
                 "grpc session refused: " + final_status_.error_message());
  }
  peer_ = ctx_.peer();
  return OkStatus();
}

GrpcClientChannel::~GrpcClientChannel() {
  closed_.store(true, std::memory_order_relaxed);
  ctx_.TryCancel();
  StopIdlePoller();
  for (Op op : {kStart, kMeta, kRead, kWrite, kFinish}) {
    bool pending;
    {
      std::lock_guard lock(mu_);
      pending = ops_[op].pending;
    }
    if (pending) (void)Await(op, Deadline::Never());
  }
  if (stream_ != nullptr && !finished_) {
    Issued(kFinish);
    stream_->Finish(&final_status_, Tag(kFinish));
    (void)Await(kFinish, Deadline::Never());
  }
  cq_.Shutdown();
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) {
  }
}

void GrpcClientChannel::Issued(Op op) {
  std::lock_guard lock(mu_);
  ops_[op].pending = true;
}

GrpcClientChannel::Outcome GrpcClientChannel::Await(Op op, Deadline deadline) {
  std::unique_lock lock(mu_);
  OpState& want = ops_[op];
  while (!want.done) {
    last_poll_ = std::chrono::steady_clock::now();
    if (!polling_) {
      const auto got = PollOnce(lock, ToGpr(deadline));
      last_poll_ = std::chrono::steady_clock::now();
      if (got != grpc::CompletionQueue::GOT_EVENT && !want.done) return Outcome::kTimedOut;
    } else if (deadline.at == Deadline::Never().at) {
      cv_.wait(lock);
    } else if (cv_.wait_until(lock, deadline.at) == std::cv_status::timeout && !want.done &&
               polling_) {
      return Outcome::kTimedOut;
    }
  }
  want.done = false;
  return want.ok ? Outcome::kOk : Outcome::kFailed;
}

// Returns once the frame is serialized and handed to gRPC; it waits only for
// the previous write (one write outstanding), so a failure may surface on the
// next Send or Receive.
Status GrpcClientChannel::Send(const FrameHeader& header, std::span<const std::byte> body) {
  if (body.size() > max_body_) [[unlikely]]
    return Error(err::kInvalidValue, "frame body of " + std::to_string(body.size()) +
                                         " bytes exceeds max_body " + std::to_string(max_body_));
  if (closed_.load(std::memory_order_relaxed) || broken_.load(std::memory_order_relaxed))
      [[unlikely]]
    return Gone();
  bool previous;
  {
    std::lock_guard lock(mu_);
    previous = ops_[kWrite].pending || ops_[kWrite].done;
  }
  if (previous && Await(kWrite, Deadline::Never()) != Outcome::kOk) [[unlikely]] {
    broken_.store(true, std::memory_order_relaxed);
    return Gone();
  }
  write_buf_.set_call(header.call);
  write_buf_.set_flags(header.flags);
  write_buf_.set_seq(header.seq);
  write_buf_.mutable_body()->assign(reinterpret_cast<const char*>(body.data()), body.size());
  Issued(kWrite);
  stream_->Write(write_buf_, Tag(kWrite));  // serializes now: write_buf_ is free on return
  return OkStatus();
}

// A read left pending by an earlier timeout is reused, so no frame is lost.
// A failed send does not end receiving: what the server sent before it ended
// the stream (why it did, say) is still read.
Status GrpcClientChannel::Receive(Frame& out, Deadline deadline) {
  if (closed_.load(std::memory_order_relaxed) || read_over_.load(std::memory_order_relaxed))
      [[unlikely]]
    return Gone();
  bool start;
  {
    std::lock_guard lock(mu_);
    start = !ops_[kRead].pending && !ops_[kRead].done;
    if (start) ops_[kRead].pending = true;
  }
  if (start) stream_->Read(&read_buf_, Tag(kRead));
  switch (Await(kRead, deadline)) {
    case Outcome::kOk:
      break;
    case Outcome::kTimedOut:
      return Error(err::kNotReady, "grpc receive deadline passed");
    case Outcome::kFailed:
      broken_.store(true, std::memory_order_relaxed);
      read_over_.store(true, std::memory_order_relaxed);
      return closed_.load(std::memory_order_relaxed)
                 ? Gone()
                 : Error(err::kDevicesUnavailable, "grpc server ended the session");
  }
  out.header = {read_buf_.call(), read_buf_.flags(), read_buf_.seq()};
  const std::string& b = read_buf_.body();
  const auto* p = reinterpret_cast<const std::byte*>(b.data());
  out.body.assign(p, p + b.size());
  return OkStatus();
}

bool GrpcClientChannel::PeerAlive() const {
  if (broken_.load(std::memory_order_relaxed) || closed_.load(std::memory_order_relaxed))
    return false;
  auto state = channel_->GetState(false);
  return state != GRPC_CHANNEL_TRANSIENT_FAILURE && state != GRPC_CHANNEL_SHUTDOWN;
}

void GrpcClientChannel::Close() {
  closed_.store(true, std::memory_order_relaxed);
  ctx_.TryCancel();
}

}  // namespace

Result<std::unique_ptr<Channel>> GrpcConnect(const std::string& target, GrpcClientOptions opts,
                                             Deadline deadline) {
  if (!BodyFits(opts.max_body, opts.max_message_bytes))
    return Error(err::kInvalidValue, "max_body does not fit in max_message_bytes");
  std::shared_ptr<grpc::ChannelCredentials> creds;
  grpc::ChannelArguments args;
  if (!opts.tls_root_cert_path.empty()) {
    ASSIGN_OR_RETURN(std::string roots, ReadFile(opts.tls_root_cert_path));
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = std::move(roots);
    creds = grpc::SslCredentials(ssl);
    if (!opts.tls_target_name.empty()) args.SetSslTargetNameOverride(opts.tls_target_name);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  args.SetMaxReceiveMessageSize(static_cast<int>(opts.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(opts.max_message_bytes));
  // One TCP connection per session: a tenant's bulk copy never queues behind another's.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // A silently vanished server breaks the stream within two keepalive periods.
  const int keepalive_ms = static_cast<int>(opts.keepalive.count());
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive_ms);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A server restarting is back within a second: try again soon, not at gRPC's
  // default pace (1 s, then growing).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  auto channel = grpc::CreateCustomChannel(target, creds, args);
  if (!channel->WaitForConnected(ToGpr(deadline))) {
    // The usual causes, named: gRPC itself reports a failed handshake only on stderr.
    const std::string how =
        opts.tls_root_cert_path.empty()
            ? " (plaintext: a server with TLS refuses it)"
            : " over TLS, trusting the certificates in " + opts.tls_root_cert_path +
                  " (a server whose certificate they do not sign fails the handshake; one "
                  "without TLS refuses it)";
    return Error(err::kInitializationError, "cannot reach grpc server " + target + how);
  }
  return GrpcClientChannel::Open(std::move(channel), opts, deadline);
}

}  // namespace remora::transport
