// bench/e2e/grpc_floor.cc - remora_e2e_grpc_floor: the bare gRPC bidi ping-pong on loopback.
//
// The baseline for the remote round trip, in its own processes because the
// benchmark binary loads the stub, which already registers remora/v1/*.proto
// with the shared libprotobuf (a second copy would abort at start-up).
//   --serve              echo server for remora.v1.Remora/Session on 127.0.0.1:0
//                        (a callback reactor: each frame is written back as read);
//                        prints "port=N", then serves until killed.
//   --serve-handoff      the same, but as remora-server does between its transport and its
//                        session: the reactor hands each frame it reads to the stream's own
//                        worker thread (mutex + condition variable, the worker sleeping
//                        while idle) and reads on; the worker writes the reply.
//   --client HOST:PORT N opens one Session stream with the generated sync stub and
//                        times N Write+Read round trips of a 16-byte Frame after a
//                        warm-up; prints mean_ns, p50_ns, p99_ns, n.
// Both sides are separate processes, as a remote tenant and remora-server are.
#include <unistd.h>
#include <x86intrin.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench/e2e/common.h"
#include "remora/v1/transport.grpc.pb.h"

namespace remora::bench::e2e {
namespace {

constexpr int kWarmup = 2000;
constexpr size_t kBody = 16;

// Echoes every frame it reads; one read or one write outstanding at a time.
class EchoReactor final : public grpc::ServerBidiReactor<v1::Frame, v1::Frame> {
 public:
  EchoReactor() {
    StartSendInitialMetadata();
    StartRead(&msg_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    StartWrite(&msg_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    StartRead(&msg_);
  }
  void OnDone() override { self_.reset(); }
  std::unique_ptr<EchoReactor> self_;  // owns this reactor until OnDone

 private:
  v1::Frame msg_;
};

// Echoes through a hand-off, as remora-server's transport hands frames to its session
// thread (transport/grpc/session.cc): OnReadDone queues the frame, re-arms the read and
// wakes the worker, which sleeps on a condition variable while the inbox is empty; the
// worker starts the reply's write itself, or queues it behind a write in flight for
// OnWriteDone to start. Once reading ended the stream finishes after the last write. The
// worker outlives every callback and deletes the reactor after OnDone.
class HandoffReactor final : public grpc::ServerBidiReactor<v1::Frame, v1::Frame> {
 public:
  HandoffReactor() {
    std::thread([this] { Work(); }).detach();
    StartSendInitialMetadata();
    StartRead(&msg_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      std::lock_guard lock(mu_);
      reading_ = false;
      cv_.notify_one();
      return;
    }
    {
      std::lock_guard lock(mu_);
      inbox_.push_back(std::move(msg_));
    }
    // Re-arm before waking the worker, so its StartWrite does not meet this StartRead.
    // (OnDone cannot run before this callback returns.)
    StartRead(&msg_);
    cv_.notify_one();
  }
  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mu_);
    if (ok && !outbox_.empty()) {
      reply_ = std::move(outbox_.front());
      outbox_.pop_front();
      lock.unlock();
      StartWrite(&reply_);
      return;
    }
    writing_ = false;
    if (!ok) broken_ = true;
    if (!ok || finish_wanted_) FinishLocked(lock);
  }
  void OnDone() override {
    // Notified under the lock: once it is released the worker may delete this.
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_one();
  }
  std::unique_ptr<HandoffReactor> self_;  // owns this reactor until the worker ends

 private:
  // Finishes the stream once, unless a write is still in flight (OnWriteDone then does).
  void FinishLocked(std::unique_lock<std::mutex>& lock) {
    if (finished_ || writing_) return;
    finished_ = true;
    lock.unlock();
    Finish(grpc::Status::OK);
    lock.lock();
  }

  void Work() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !inbox_.empty() || !reading_ || broken_; });
      if (done_) break;
      if (inbox_.empty() || broken_) {  // reading ended: finish after the last write
        finish_wanted_ = true;
        FinishLocked(lock);
        cv_.wait(lock, [&] { return done_; });
        break;
      }
      if (writing_) {
        outbox_.push_back(std::move(inbox_.front()));
        inbox_.pop_front();
        continue;
      }
      reply_ = std::move(inbox_.front());
      inbox_.pop_front();
      writing_ = true;
      lock.unlock();
      StartWrite(&reply_);
      lock.lock();
    }
    std::unique_ptr<HandoffReactor> me = std::move(self_);
    lock.unlock();
    // `me` deletes this reactor here; nothing below touches it.
  }

  v1::Frame msg_;    // the read in flight
  v1::Frame reply_;  // the write in flight
  std::mutex mu_;
  std::condition_variable cv_;  // wakes the worker: a frame, reading ended, or OnDone
  std::deque<v1::Frame> inbox_, outbox_;
  bool reading_ = true, writing_ = false, broken_ = false, finish_wanted_ = false,
       finished_ = false, done_ = false;
};

template <typename Reactor>
class EchoService final : public v1::Remora::CallbackService {
  grpc::ServerBidiReactor<v1::Frame, v1::Frame>* Session(grpc::CallbackServerContext*) override {
    auto r = std::make_unique<Reactor>();
    Reactor* raw = r.get();
    raw->self_ = std::move(r);
    return raw;
  }
};

template <typename Reactor>
int Serve() {
  EchoService<Reactor> service;
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "grpc_floor: cannot listen\n");
    return 1;
  }
  std::printf("port=%d\n", port);
  std::fflush(stdout);
  server->Wait();  // until killed
  return 0;
}

int Client(const std::string& target, int iters) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = v1::Remora::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ctx;
  auto stream = stub->Session(&ctx);
  v1::Frame out, in;
  out.set_call(1);
  out.set_body(std::string(kBody, 'x'));
  uint64_t seq = 0;
  auto round_trip = [&] {
    out.set_seq(++seq);
    return stream->Write(out) && stream->Read(&in) && in.seq() == seq;
  };
  for (int i = 0; i < kWarmup; ++i) {
    if (!round_trip()) {
      std::fprintf(stderr, "grpc_floor: warm-up round trip failed\n");
      return 1;
    }
  }
  std::vector<uint64_t> ticks(static_cast<size_t>(iters));
  TickClock clock;
  for (int i = 0; i < iters; ++i) {
    const uint64_t t0 = __rdtsc();
    if (!round_trip()) {
      std::fprintf(stderr, "grpc_floor: round trip failed\n");
      return 1;
    }
    ticks[static_cast<size_t>(i)] = __rdtsc() - t0;
  }
  const Stats s = Summarize(ticks, clock.NsPerTick());
  stream->WritesDone();
  (void)stream->Finish();
  std::printf("mean_ns=%.1f p50_ns=%.1f p99_ns=%.1f n=%llu\n", s.mean_ns, s.p50_ns, s.p99_ns,
              static_cast<unsigned long long>(s.n));
  return 0;
}

}  // namespace
}  // namespace remora::bench::e2e

int main(int argc, char** argv) {
  using namespace remora::bench::e2e;
  if (argc == 2 && std::strcmp(argv[1], "--serve") == 0) return Serve<EchoReactor>();
  if (argc == 2 && std::strcmp(argv[1], "--serve-handoff") == 0) return Serve<HandoffReactor>();
  if (argc == 4 && std::strcmp(argv[1], "--client") == 0)
    return Client(argv[2], std::atoi(argv[3]));
  std::fprintf(stderr, "usage: %s --serve | --serve-handoff | --client HOST:PORT ITERS\n", argv[0]);
  return 2;
}
