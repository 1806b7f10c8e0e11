// bench/e2e/tenants.cc - remora_e2e_tenants: many idle sessions from one process.
//
// The helper of BM_IdleSessions (bench_sessions.cc). It links the transport clients and
// the generated protobuf code, so it cannot be the benchmark binary itself (that holds
// the stub's copy). It opens N sessions one after another against one remora-server,
// each as a tenant's stub does (client_stub/connection.cc): connect, send Hello (call 0,
// seq 0, protocol_version = kProtocolVersion, a 1 MiB gpu-memory request) and wait for
// the Welcome. It stops at the first failure.
//   remora_e2e_tenants shm PATH N | grpc HOST:PORT N
// stdout: "opened=K failed=0|1 open_s=S", then "error: MESSAGE" (or "error: none"),
// then "ready"; on the line "close" from stdin it closes every session and prints
// "closed=K close_s=S"; it exits at EOF.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "proto/calls.h"
#include "remora/v1/session.pb.h"
#include "transport/fragment.h"
#include "transport/grpc/client.h"
#include "transport/shm/shm_channel.h"

namespace {

using namespace remora;
using transport::Channel;
using transport::Deadline;

constexpr auto kTimeout = std::chrono::seconds(10);
constexpr uint64_t kRequestBytes = uint64_t{1} << 20;

// Connects and completes the handshake; the open channel, or the reason it failed.
Result<std::unique_ptr<Channel>> Open(bool shm, const std::string& target, int i) {
  Result<std::unique_ptr<Channel>> raw =
      shm ? transport::ShmConnect(target, Deadline::In(kTimeout))
          : transport::GrpcConnect(target, {}, Deadline::In(kTimeout));
  if (!raw.ok()) return raw.status();
  auto ch = std::make_unique<transport::FragmentingChannel>(std::move(*raw));
  v1::Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.mutable_quota()->set_gpu_memory(kRequestBytes);
  hello.set_client_pid(getpid());
  hello.set_client_host("localhost");
  hello.set_program("idle" + std::to_string(i));
  const std::string body = hello.SerializeAsString();
  RETURN_IF_ERROR(ch->Send({.call = static_cast<uint32_t>(CallId::kHello), .seq = 0},
                           std::as_bytes(std::span(body.data(), body.size()))));
  transport::Frame f;
  RETURN_IF_ERROR(ch->Receive(f, Deadline::In(kTimeout)));
  v1::Reply reply;
  v1::Welcome welcome;
  if (f.header.call != 0 || !reply.ParseFromArray(f.body.data(), static_cast<int>(f.body.size())))
    return Error(err::kInitializationError, "malformed Welcome");
  if (reply.code() != 0)
    return Error(err::kInitializationError,
                 "refused (code " + std::to_string(reply.code()) + "): " + reply.message());
  if (!welcome.ParseFromString(reply.result()) || welcome.protocol_version() != kProtocolVersion)
    return Error(err::kInitializationError, "Welcome of another protocol");
  return std::unique_ptr<Channel>(std::move(ch));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[1], "shm") != 0 && std::strcmp(argv[1], "grpc") != 0)) {
    std::fprintf(stderr, "usage: %s shm PATH N | grpc HOST:PORT N\n", argv[0]);
    return 2;
  }
  const bool shm = std::strcmp(argv[1], "shm") == 0;
  const std::string target = argv[2];
  const int n = std::atoi(argv[3]);
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &lim);
  }

  std::vector<std::unique_ptr<Channel>> open;
  open.reserve(static_cast<size_t>(n));
  std::string first_error = "none";
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    Result<std::unique_ptr<Channel>> ch = Open(shm, target, i);
    if (!ch.ok()) {
      first_error = "session " + std::to_string(i) + ": " + ch.status().ToString();
      break;
    }
    open.push_back(std::move(*ch));
  }
  const double open_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("opened=%zu failed=%d open_s=%.3f\nerror: %s\nready\n", open.size(),
              first_error == "none" ? 0 : 1, open_s, first_error.c_str());
  std::fflush(stdout);

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line != "close") continue;
    const auto t1 = std::chrono::steady_clock::now();
    const size_t k = open.size();
    for (auto& ch : open) ch->Close();
    open.clear();
    std::printf("closed=%zu close_s=%.3f\n", k,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
    std::fflush(stdout);
  }
  return 0;
}
