// bench/e2e/grpc_floor.cc - remora_e2e_grpc_floor: the bare gRPC bidi ping-pong on loopback.
//
// The baseline for the remote round trip, in its own processes because the
// benchmark binary loads the stub, which already registers remora/v1/*.proto
// with the shared libprotobuf (a second copy would abort at start-up).
//   --serve              echo server for remora.v1.Remora/Session on 127.0.0.1:0
//                        (a callback reactor: each frame is written back as read);
//                        prints "port=N", then serves until killed.
//   --client HOST:PORT N opens one Session stream with the generated sync stub and
//                        times N Write+Read round trips of a 16-byte Frame after a
//                        warm-up; prints mean_ns, p50_ns, p99_ns, n.
// Both sides are separate processes, as a remote tenant and remora-server are.
#include <unistd.h>
#include <x86intrin.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
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

class EchoService final : public v1::Remora::CallbackService {
  grpc::ServerBidiReactor<v1::Frame, v1::Frame>* Session(grpc::CallbackServerContext*) override {
    auto r = std::make_unique<EchoReactor>();
    EchoReactor* raw = r.get();
    raw->self_ = std::move(r);
    return raw;
  }
};

int Serve() {
  EchoService service;
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
  if (argc == 2 && std::strcmp(argv[1], "--serve") == 0) return Serve();
  if (argc == 4 && std::strcmp(argv[1], "--client") == 0)
    return Client(argv[2], std::atoi(argv[3]));
  std::fprintf(stderr, "usage: %s --serve | --client HOST:PORT ITERS\n", argv[0]);
  return 2;
}
