// bench/transport_grpc/grpc_bench.cc - Channel-over-gRPC cost against bare gRPC, same run.
//
// Baseline: the generated sync stub doing Write + Read against an echo
// reactor in this process (loopback). Measured: GrpcConnect/GrpcListener
// channels with a server thread echoing through Accept/Receive/Send. 64 B
// bodies; the round trips alternate within each iteration so a shared host's
// noise hits all alike.
//   ratio        channel p50 RTT / bare p50 RTT (mean_ratio: the same for means)
//   p50_ns, p99_ns; bare_p50_ns, bare_p99_ns
//   floor_ratio  bare gRPC whose reactor keeps a read outstanding and hands each
//                reply to another thread: the least any session thread costs
// spin_us is the listener's receive_spin; -1 pairs a GrpcConnect client with
// the bare echo server, isolating the client side. Bulk: 64 MiB in 4 MiB
// frames up (acknowledged by the peer) and down (one request); ratio is
// channel time / bare time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "remora/v1/transport.grpc.pb.h"
#include "transport/grpc/client.h"
#include "transport/grpc/listener.h"

namespace remora::transport {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kSmallBody = 64;
constexpr size_t kBulkBytes = size_t{64} << 20;
constexpr size_t kBulkFrame = size_t{4} << 20;
constexpr uint32_t kLastFlag = 1;
constexpr uint32_t kDownloadFlag = 2;  // reply with kBulkBytes in kBulkFrame frames
constexpr int kBulkFrames = static_cast<int>(kBulkBytes / kBulkFrame);

class EchoReactor;

// Writes each echo from its own thread, woken through a condition variable,
// one write outstanding: the least any design with a session thread behind
// the reactor pays.
class Handoff {
 public:
  Handoff() : worker_([this] { Run(); }) {}
  ~Handoff() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  // Takes `msg` (leaving it empty) for `r` to write.
  void Post(EchoReactor* r, v1::Frame& msg) {
    {
      std::lock_guard lock(mu_);
      next_.Swap(&msg);
      target_ = r;
    }
    cv_.notify_one();
  }
  void WriteDone() {
    {
      std::lock_guard lock(mu_);
      writing_ = false;
    }
    cv_.notify_one();
  }

 private:
  void Run();
  std::mutex mu_;
  std::condition_variable cv_;
  EchoReactor* target_ = nullptr;  // a frame waits in next_
  v1::Frame next_;
  v1::Frame out_;  // being written; untouched until WriteDone
  bool writing_ = false;
  bool stop_ = false;
  std::thread worker_;
};

// Echoes each frame (directly, or through `handoff`), except bulk frames
// (body > 1 KiB), which it swallows, answering the one flagged last with an
// empty frame.
class EchoReactor final : public grpc::ServerBidiReactor<v1::Frame, v1::Frame> {
 public:
  explicit EchoReactor(Handoff* handoff) : handoff_(handoff) {
    StartSendInitialMetadata();
    StartRead(&msg_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    if (msg_.flags() & kDownloadFlag) {
      download_left_ = kBulkFrames;
      bulk_.set_seq(msg_.seq());
      bulk_.set_body(std::string(kBulkFrame, 'z'));
      return StartWrite(&bulk_);
    }
    if (msg_.body().size() > 1024) {
      if (!(msg_.flags() & kLastFlag)) return StartRead(&msg_);
      msg_.clear_body();
    }
    if (handoff_ == nullptr) return StartWrite(&msg_);
    // Full duplex, as a session must be: a read stays outstanding while the
    // other thread writes.
    handoff_->Post(this, msg_);
    StartRead(&msg_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    if (download_left_ > 0 && --download_left_ > 0) return StartWrite(&bulk_);
    if (handoff_ == nullptr) return StartRead(&msg_);
    handoff_->WriteDone();
  }
  void OnDone() override { self_.reset(); }
  std::unique_ptr<EchoReactor> self_;  // owns this reactor until OnDone

 private:
  Handoff* handoff_;
  v1::Frame msg_;
  v1::Frame bulk_;  // download frames (no handoff)
  int download_left_ = 0;
};

void Handoff::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || (target_ != nullptr && !writing_); });
    if (stop_) return;
    EchoReactor* r = std::exchange(target_, nullptr);
    out_.Swap(&next_);
    writing_ = true;
    lock.unlock();
    r->StartWrite(&out_);
    lock.lock();
  }
}

class EchoService final : public v1::Remora::CallbackService {
 public:
  explicit EchoService(Handoff* handoff) : handoff_(handoff) {}

 private:
  grpc::ServerBidiReactor<v1::Frame, v1::Frame>* Session(
      grpc::CallbackServerContext* ctx) override {
    ctx->AddInitialMetadata(kSessionAcceptedKey, "1");  // lets GrpcConnect talk to it too
    auto r = std::make_unique<EchoReactor>(handoff_);
    EchoReactor* raw = r.get();
    raw->self_ = std::move(r);
    return raw;
  }
  Handoff* handoff_;
};

// Bare gRPC: echo server plus a sync bidi stream.
struct Bare {
  explicit Bare(bool with_handoff = false)
      : handoff(with_handoff ? std::make_unique<Handoff>() : nullptr), service(handoff.get()) {}
  std::unique_ptr<Handoff> handoff;  // outlives the server
  EchoService service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<v1::Remora::Stub> stub;
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::Frame, v1::Frame>> stream;
  v1::Frame out, in;
  int port = 0;

  bool Start() {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&service);
    b.SetMaxReceiveMessageSize(static_cast<int>(kGrpcDefaultMaxMessage));
    server = b.BuildAndStart();
    if (!server || port == 0) return false;
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(static_cast<int>(kGrpcDefaultMaxMessage));
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub = v1::Remora::NewStub(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                                         grpc::InsecureChannelCredentials(), args));
    stream = stub->Session(&ctx);
    return stream != nullptr;
  }
  bool RoundTrip(const std::string& body, uint64_t seq) {
    out.set_seq(seq);
    out.set_body(body);
    return stream->Write(out) && stream->Read(&in) && in.seq() == seq;
  }
  ~Bare() {
    if (stream) {
      stream->WritesDone();
      (void)stream->Finish();
    }
    if (server) server->Shutdown(std::chrono::system_clock::now());
  }
};

// Remora channels: listener, client channel, and a server thread that echoes
// like EchoReactor does.
struct Remote {
  std::unique_ptr<GrpcListener> listener;
  std::unique_ptr<Channel> client;
  std::thread echo;
  Frame in;

  // A GrpcConnect client alone, against the bare echo server at `port`.
  bool StartClientOnly(int port) {
    auto c =
        GrpcConnect("127.0.0.1:" + std::to_string(port), {}, Deadline::In(std::chrono::seconds(5)));
    if (!c.ok()) return false;
    client = std::move(c).value();
    return true;
  }

  bool Start(std::chrono::nanoseconds receive_spin) {
    GrpcOptions opts;
    opts.receive_spin = receive_spin;
    auto l = GrpcListener::Listen("127.0.0.1:0", opts);
    if (!l.ok()) return false;
    listener = std::move(l).value();
    auto c = GrpcConnect("127.0.0.1:" + std::to_string(listener->port()), {},
                         Deadline::In(std::chrono::seconds(5)));
    if (!c.ok()) return false;
    client = std::move(c).value();
    PeerInfo peer;
    auto s = listener->Accept(peer, Deadline::In(std::chrono::seconds(5)));
    if (!s.ok()) return false;
    echo = std::thread([ch = std::move(s).value()] {
      Frame f;
      const std::vector<std::byte> bulk(kBulkFrame, std::byte{'z'});
      while (ch->Receive(f, Deadline::Never()).ok()) {
        if (f.header.flags & kDownloadFlag) {
          for (int i = 0; i < kBulkFrames; ++i)
            if (!ch->Send(f.header, bulk).ok()) return;
          continue;
        }
        if (f.body.size() > 1024) {
          if (!(f.header.flags & kLastFlag)) continue;
          f.body.clear();
        }
        if (!ch->Send(f.header, f.body).ok()) return;
      }
    });
    return true;
  }
  bool RoundTrip(std::span<const std::byte> body, uint64_t seq) {
    return client->Send({.seq = seq}, body).ok() && client->Receive(in, Deadline::Never()).ok() &&
           in.header.seq == seq;
  }
  ~Remote() {
    client.reset();  // the echo thread's Receive then fails
    if (echo.joinable()) echo.join();
  }
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
  return v[i];
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double Nanos(Clock::duration d) {
  return std::chrono::duration<double, std::nano>(d).count();
}

// Arg 0: spin_us, the listener's receive_spin; -1 pairs a GrpcConnect client
// with the bare echo server (client-side cost alone).
void BM_RoundTrip64B(benchmark::State& state) {
  Bare bare, floor(/*with_handoff=*/true);
  Remote remote;
  const int64_t spin_us = state.range(0);
  if (!bare.Start() || !floor.Start() ||
      !(spin_us < 0 ? remote.StartClientOnly(bare.port)
                    : remote.Start(std::chrono::microseconds(spin_us))))
    return state.SkipWithError("loopback setup failed");
  const std::string body_s(kSmallBody, 'x');
  const std::vector<std::byte> body(kSmallBody, std::byte{'x'});
  for (uint64_t i = 0; i < 200; ++i) {  // warm both paths
    if (!bare.RoundTrip(body_s, i) || !floor.RoundTrip(body_s, i) || !remote.RoundTrip(body, i))
      return state.SkipWithError("warm-up round trip failed");
  }
  std::vector<double> bare_ns, floor_ns, chan_ns;
  bare_ns.reserve(state.max_iterations);
  floor_ns.reserve(state.max_iterations);
  chan_ns.reserve(state.max_iterations);
  uint64_t seq = 1000;
  for (auto _ : state) {
    auto t0 = Clock::now();
    bool ok = bare.RoundTrip(body_s, ++seq);
    auto t1 = Clock::now();
    ok = ok && remote.RoundTrip(body, seq);
    auto t2 = Clock::now();
    ok = ok && floor.RoundTrip(body_s, seq);
    auto t3 = Clock::now();
    if (!ok) return state.SkipWithError("round trip failed");
    bare_ns.push_back(Nanos(t1 - t0));
    chan_ns.push_back(Nanos(t2 - t1));
    floor_ns.push_back(Nanos(t3 - t2));
    state.SetIterationTime(std::chrono::duration<double>(t2 - t1).count());
  }
  const double p50 = Percentile(chan_ns, 0.50), bare_p50 = Percentile(bare_ns, 0.50);
  state.counters["ratio"] = p50 / bare_p50;  // median RTT: robust to a shared host's noise
  state.counters["mean_ratio"] = Mean(chan_ns) / Mean(bare_ns);
  state.counters["p50_ns"] = p50;
  state.counters["p99_ns"] = Percentile(chan_ns, 0.99);
  state.counters["bare_p50_ns"] = bare_p50;
  state.counters["bare_p99_ns"] = Percentile(bare_ns, 0.99);
  // Bare gRPC plus one thread hand-off per reply: what any session thread costs.
  state.counters["floor_ratio"] = Percentile(floor_ns, 0.50) / bare_p50;
}
BENCHMARK(BM_RoundTrip64B)
    ->ArgName("spin_us")
    ->Arg(0)
    ->Arg(100)
    ->Arg(-1)
    ->UseManualTime()
    ->Iterations(20000)
    ->Unit(benchmark::kMicrosecond);

// 64 MiB upload in 4 MiB frames, then a one-frame acknowledgement.
void BM_Bulk64MiB(benchmark::State& state) {
  Bare bare;
  Remote remote;
  if (!bare.Start() || !remote.Start(std::chrono::nanoseconds(0)))
    return state.SkipWithError("loopback setup failed");
  const std::string chunk_s(kBulkFrame, 'y');
  const std::vector<std::byte> chunk(kBulkFrame, std::byte{'y'});
  constexpr int kFrames = kBulkFrames;
  double bare_s = 0, chan_s = 0;
  uint64_t seq = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    for (int i = 0; i < kFrames; ++i) {
      bare.out.set_seq(++seq);
      bare.out.set_flags(i == kFrames - 1 ? kLastFlag : 0);
      bare.out.set_body(chunk_s);
      if (!bare.stream->Write(bare.out)) return state.SkipWithError("bare write failed");
    }
    if (!bare.stream->Read(&bare.in) || bare.in.seq() != seq)
      return state.SkipWithError("bare ack failed");
    auto t1 = Clock::now();
    for (int i = 0; i < kFrames; ++i) {
      if (!remote.client->Send({.flags = i == kFrames - 1 ? kLastFlag : 0, .seq = ++seq}, chunk)
               .ok())
        return state.SkipWithError("channel send failed");
    }
    if (!remote.client->Receive(remote.in, Deadline::Never()).ok() || remote.in.header.seq != seq)
      return state.SkipWithError("channel ack failed");
    auto t2 = Clock::now();
    bare_s += std::chrono::duration<double>(t1 - t0).count();
    chan_s += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(std::chrono::duration<double>(t2 - t1).count());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBulkBytes));
  state.counters["ratio"] = chan_s / bare_s;  // time: channel / bare
  state.counters["bare_bytes_per_second"] =
      static_cast<double>(state.iterations() * kBulkBytes) / bare_s;
}
BENCHMARK(BM_Bulk64MiB)->UseManualTime()->Iterations(10)->Unit(benchmark::kMillisecond);

// 64 MiB download: one request, answered with 4 MiB frames (server Send queues).
void BM_BulkDownload64MiB(benchmark::State& state) {
  Bare bare;
  Remote remote;
  if (!bare.Start() || !remote.Start(std::chrono::nanoseconds(0)))
    return state.SkipWithError("loopback setup failed");
  double bare_s = 0, chan_s = 0;
  uint64_t seq = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    bare.out.set_seq(++seq);
    bare.out.set_flags(kDownloadFlag);
    bare.out.clear_body();
    if (!bare.stream->Write(bare.out)) return state.SkipWithError("bare write failed");
    for (int i = 0; i < kBulkFrames; ++i) {
      if (!bare.stream->Read(&bare.in) || bare.in.body().size() != kBulkFrame)
        return state.SkipWithError("bare read failed");
    }
    auto t1 = Clock::now();
    if (!remote.client->Send({.flags = kDownloadFlag, .seq = ++seq}, {}).ok())
      return state.SkipWithError("channel send failed");
    for (int i = 0; i < kBulkFrames; ++i) {
      if (!remote.client->Receive(remote.in, Deadline::Never()).ok() ||
          remote.in.body.size() != kBulkFrame)
        return state.SkipWithError("channel receive failed");
    }
    auto t2 = Clock::now();
    bare_s += std::chrono::duration<double>(t1 - t0).count();
    chan_s += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(std::chrono::duration<double>(t2 - t1).count());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBulkBytes));
  state.counters["ratio"] = chan_s / bare_s;  // time: channel / bare
  state.counters["bare_bytes_per_second"] =
      static_cast<double>(state.iterations() * kBulkBytes) / bare_s;
}
BENCHMARK(BM_BulkDownload64MiB)->UseManualTime()->Iterations(10)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::transport

BENCHMARK_MAIN();
