// client_stub/greet.cc - DialServer, HelloFor and Greet.
#include "client_stub/greet.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <span>

#include <cuda_runtime_api.h>

#include "client_stub/errors.h"
#include "proto/calls.h"
#include "transport/fragment.h"

#ifdef REMORA_STUB_HAVE_GRPC
#include "transport/grpc/client.h"
#endif
#ifdef REMORA_STUB_HAVE_SHM
#include "transport/shm/shm_channel.h"
#endif

namespace remora::client_stub {
namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(10);

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

Result<std::unique_ptr<transport::Channel>> Dial(const Settings& s) {
  transport::Deadline deadline = transport::Deadline::In(kConnectTimeout);
  switch (s.server.kind) {
    case TransportKind::kShm:
#ifdef REMORA_STUB_HAVE_SHM
      return transport::ShmConnect(s.server.target, deadline);
#else
      return Error(err::kInitializationError, "this stub was built without the shm transport");
#endif
    case TransportKind::kGrpc:
    case TransportKind::kGrpcTls: {
#ifdef REMORA_STUB_HAVE_GRPC
      transport::GrpcClientOptions opts;
      opts.token = s.token;
      if (s.server.kind == TransportKind::kGrpcTls)
        opts.tls_root_cert_path =
            s.tls_root_cert.empty() ? "/etc/ssl/certs/ca-certificates.crt" : s.tls_root_cert;
      return transport::GrpcConnect(s.server.target, std::move(opts), deadline);
#else
      return Error(err::kInitializationError, "this stub was built without the grpc transport");
#endif
    }
  }
  return Error(err::kInitializationError, "unknown transport");
}

}  // namespace

Result<std::unique_ptr<transport::Channel>> DialServer(const Settings& s) {
  ASSIGN_OR_RETURN(std::unique_ptr<transport::Channel> ch, Dial(s));
  return std::unique_ptr<transport::Channel>(
      std::make_unique<transport::FragmentingChannel>(std::move(ch)));
}

v1::Hello HelloFor(const Settings& s) {
  v1::Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_pins_arena_heap(true);
  hello.set_token(s.token);
  const QuotaRequest& q = s.quota;
  v1::Quota* quota = hello.mutable_quota();
  quota->set_gpu_fraction(q.fraction);
  quota->set_gpu_fraction_limit(q.fraction_limit);
  quota->set_gpu_memory(q.memory);
  quota->set_gpu_memory_limit(q.memory_limit);
  quota->set_gpu_compute(q.compute);
  quota->set_gpu_compute_limit(q.compute_limit);
  quota->set_priority(q.priority);
  hello.set_client_pid(getpid());
  hello.set_client_uid(getuid());
  hello.set_client_host(Hostname());
  hello.set_program(program_invocation_short_name);
  return hello;
}

Status Greet(transport::Channel& ch, const v1::Hello& hello, v1::Welcome& welcome, bool& again) {
  const std::string body = hello.SerializeAsString();
  transport::Frame f;
  Status s = ch.Send({.call = static_cast<uint32_t>(CallId::kHello), .flags = 0, .seq = 0},
                     std::as_bytes(std::span(body.data(), body.size())));
  if (s.ok()) s = ch.Receive(f, transport::Deadline::In(kConnectTimeout));
  // Dropped before a Welcome (not timed out): the server went away unanswering.
  again = !s.ok() && s.code() == err::kDevicesUnavailable;
  v1::Reply reply;
  if (s.ok() &&
      (f.header.call != 0 || !reply.ParseFromArray(f.body.data(), static_cast<int>(f.body.size()))))
    s = Error(err::kInitializationError, "malformed Welcome");
  if (!s.ok()) return Error(cudaErrorInitializationError, "handshake failed: " + s.message());
  if (reply.code() != 0)
    return Error(reply.code(), "remora-server refused the session: " + reply.message());
  if (!welcome.ParseFromString(reply.result()) || welcome.protocol_version() != kProtocolVersion)
    return Error(cudaErrorInitializationError,
                 "remora-server speaks protocol " + std::to_string(welcome.protocol_version()) +
                     ", this stub " + std::to_string(kProtocolVersion));
  return OkStatus();
}

}  // namespace remora::client_stub
