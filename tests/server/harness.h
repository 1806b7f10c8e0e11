// tests/server/harness.h - what the server tests share: a raw protocol client, the fixture
// that starts a Server on the emulated device with a private socket, the transport-
// parameterized IsolationTest, and kernels and helpers several tests use.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

#include <google/protobuf/dynamic_message.h>
#include <httplib.h>
#include "fatbin/fatbin.h"

#include "proto/arena.h"
#include "proto/calls.h"
#include "proto/fixed.h"
#include "remora/v1/session.pb.h"
#include "server/server.h"
#include "transport/fragment.h"
#include "transport/grpc/client.h"
#include "transport/shm/shm_channel.h"

namespace remora::server_test {

using namespace std::chrono_literals;
using transport::Deadline;
namespace v1 = remora::v1;

inline std::string SocketPath() {
  static int n = 0;
  return "/tmp/remora-server-test-" + std::to_string(getpid()) + "-" + std::to_string(n++) +
         ".sock";
}

class Client {
 public:
  // `path` is a Unix socket path (shm) or "grpc:HOST:PORT".
  static std::unique_ptr<Client> Connect(const std::string& path, v1::Hello hello = {}) {
    auto ch = path.rfind("grpc:", 0) == 0
                  ? transport::GrpcConnect(path.substr(5), {}, Deadline::In(5s))
                  : transport::ShmConnect(path, Deadline::In(5s));
    if (!ch.ok()) return nullptr;
    auto c = std::make_unique<Client>();
    c->ch_ = std::make_unique<transport::FragmentingChannel>(std::move(ch).value());
    hello.set_protocol_version(kProtocolVersion);
    hello.set_client_pid(getpid());
    if (hello.program().empty()) hello.set_program("server_test");
    c->welcome_status_ = c->Call(CallId::kHello, hello, &c->welcome_);
    return c;
  }

  // A SYNC call: returns the reply's code (deferred code preferred, as the stub does).
  template <typename Rep = v1::Empty>
  int Call(CallId id, const google::protobuf::Message& req, Rep* rep = nullptr) {
    std::string body = req.SerializeAsString();
    return CallRaw(static_cast<uint32_t>(id), body, rep);
  }
  template <typename Rep = v1::Empty>
  int CallRaw(uint32_t call, const std::string& body, Rep* rep = nullptr) {
    uint64_t seq = ++seq_;
    if (!ch_->Send({.call = call, .flags = 0, .seq = seq}, std::as_bytes(std::span(body))).ok())
      return -1;
    transport::Frame f;
    for (;;) {
      if (!ch_->Receive(f, Deadline::In(20s)).ok()) return -2;
      if (f.header.seq == seq) break;
    }
    last_.ParseFromArray(f.body.data(), static_cast<int>(f.body.size()));
    if (rep) rep->ParseFromString(last_.result());
    return last_.deferred_code() ? last_.deferred_code() : last_.code();
  }
  void Post(CallId id, const google::protobuf::Message& req) {
    std::string body = req.SerializeAsString();
    (void)ch_->Send({.call = static_cast<uint32_t>(id), .flags = 0, .seq = ++seq_},
                    std::as_bytes(std::span(body)));
  }
  uint64_t Malloc(uint64_t n) {
    v1::MallocRequest r;
    r.set_size(n);
    v1::MallocReply rep;
    EXPECT_EQ(Call(CallId::kMalloc, r, &rep), 0);
    return rep.dptr();
  }
  // A SYNC call with a fixed-layout body (proto/fixed.h). Returns the reply's
  // code, or -3 if the reply did not come back in fixed layout; `why` gets its message.
  int CallFixed(CallId id, const std::string& body, std::string* why = nullptr) {
    uint64_t seq = ++seq_;
    if (!ch_->Send({.call = static_cast<uint32_t>(id), .flags = fixed::kFixedLayout, .seq = seq},
                   std::as_bytes(std::span(body)))
             .ok())
      return -1;
    transport::Frame f;
    do {
      if (!ch_->Receive(f, Deadline::In(20s)).ok()) return -2;
    } while (f.header.seq != seq);
    fixed::ReplyView v;
    if (!(f.header.flags & fixed::kFixedLayout) || !fixed::ParseReply(f.body, v)) return -3;
    if (why) *why = v.message;
    return v.deferred_code ? v.deferred_code : v.code;
  }
  // Reads frames until the server's Evicted arrives; its message, or "" if the
  // channel ended (or 20 s passed) without one.
  // The Evicted message, once it comes (empty if none within 20 s).
  v1::Evicted WaitEvictedMessage() {
    transport::Frame f;
    v1::Evicted e;
    while (ch_->Receive(f, Deadline::In(20s)).ok()) {
      if (f.header.call != static_cast<uint32_t>(CallId::kEvicted)) continue;
      EXPECT_TRUE(e.ParseFromArray(f.body.data(), static_cast<int>(f.body.size())));
      return e;
    }
    return e;
  }
  std::string WaitEvicted() {
    const v1::Evicted e = WaitEvictedMessage();
    EXPECT_EQ(e.code(), err::kDevicesUnavailable);
    return e.message();
  }
  transport::Arena* arena() { return ch_->arena(); }
  const v1::Welcome& welcome() const { return welcome_; }
  int welcome_status() const { return welcome_status_; }
  const v1::Reply& last() const { return last_; }

 private:
  std::unique_ptr<transport::Channel> ch_;
  uint64_t seq_ = 0;
  v1::Welcome welcome_;
  int welcome_status_ = -1;
  v1::Reply last_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = SocketPath();
    server::ServerOptions o;
    o.device = server::DeviceKind::kEmu;
    o.emu_dir = REMORA_EMU_DIR;
    o.unix_paths = {path_};
    if (WithGrpc()) o.grpc_addrs = {"127.0.0.1:0"};
    o.arena_bytes = 256ull << 20;
    // Most tests here exercise the ledger and the scheduler, not open mode's
    // caps on what a client may declare: those tests lift them.
    o.open_max_fraction = 1;
    o.open_max_priority = sched::Priority::kHigh;
    Configure(o);
    auto s = server::Server::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  void TearDown() override { server_.reset(); }
  virtual bool WithGrpc() const { return false; }
  virtual void Configure(server::ServerOptions&) {}

  bool WaitForSessions(size_t n, std::chrono::milliseconds within) {
    auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
      if (server_->sessions() == n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return server_->sessions() == n;
  }

  std::string path_;
  std::unique_ptr<server::Server> server_;
};

// The isolation tests, over both transports ("shm" / "grpc").
class IsolationTest : public ServerTest, public ::testing::WithParamInterface<std::string> {
 protected:
  bool WithGrpc() const override { return GetParam() == "grpc"; }
  std::unique_ptr<Client> Connect(v1::Hello hello = {}) {
    return Client::Connect(
        GetParam() == "grpc" ? "grpc:127.0.0.1:" + std::to_string(server_->grpc_port(0)) : path_,
        std::move(hello));
  }
};

inline std::string Digest(const v1::RegisterModuleRequest& req) {
  std::vector<fatbin::Bytes> views;
  for (const std::string& img : req.images())
    views.push_back(std::as_bytes(std::span(img.data(), img.size())));
  return fatbin::ImagesDigest(views);
}

// PTX text (as cuModuleLoadData accepts) with one kernel, `_Z3addPi`.
inline constexpr char kAddPtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z3addPi(.param .u64 p)\n{\n"
    ".reg .b64 %rd<3>;\n.reg .b32 %r<3>;\n"
    "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\n"
    "ld.global.u32 %r1, [%rd2];\nadd.s32 %r2, %r1, 1;\nst.global.u32 [%rd2], %r2;\nret;\n}\n";

// PTX with one kernel that stores to an address no allocation covers.
inline constexpr char kFaultPtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z3badv()\n{\n.reg .b64 %rd<2>;\n.reg .b32 %r<2>;\n"
    "mov.u64 %rd1, 16;\nmov.u32 %r1, 7;\nst.global.u32 [%rd1], %r1;\nret;\n}\n";

// Registers `ptx` and returns the handle of its kernel `name` (0 on failure).
inline uint64_t LoadKernel(Client& c, const char* ptx, size_t size, const char* name) {
  v1::RegisterModuleRequest req;
  req.add_images(std::string(ptx, size));
  req.set_hash(Digest(req));
  req.add_kernels(name);
  v1::RegisterModuleReply rep;
  if (c.Call(CallId::kRegisterModule, req, &rep) != 0 || rep.kernels_size() != 1) return 0;
  return rep.kernels(0).handle();
}

inline v1::LaunchRequest OneThread(uint64_t kernel, std::string params) {
  v1::LaunchRequest l;
  l.set_kernel(kernel);
  l.set_grid_x(1), l.set_grid_y(1), l.set_grid_z(1);
  l.set_block_x(1), l.set_block_y(1), l.set_block_z(1);
  l.set_params(std::move(params));
  return l;
}

// One thread stores `v` to p[i % 1024] for i < n: a kernel that keeps writing
// into the first 4 KiB of an allocation for as long as it runs.
inline constexpr char kScribblePtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z8scribblePjjj(.param .u64 p, .param .u32 n, .param .u32 v)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<5>;\n"
    "ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nld.param.u32 %r2, [v];\n"
    "mov.u32 %r3, 0;\n"
    "$L_loop:\nand.b32 %r4, %r3, 1023;\nmul.wide.u32 %rd2, %r4, 4;\n"
    "add.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r2;\nadd.u32 %r3, %r3, 1;\n"
    "setp.lt.u32 %p1, %r3, %r1;\n@%p1 bra $L_loop;\nret;\n}\n";

inline size_t CountThreads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoul(line.substr(8));
  return 0;
}

inline size_t CountFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// With GPU time measured by timing events (as on NVIDIA's driver, whose streams do
// not report their busy time), what the server charges a tenant is what the
// device's own clock says its work took, as the tenant's events measure it.
inline constexpr char kSpinPtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z4spini(.param .u32 n)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<4>;\n"
    "ld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\nmov.u32 %r3, 0;\n"
    "$L_loop:\nadd.u32 %r3, %r3, 7;\nadd.u32 %r2, %r2, 1;\n"
    "setp.lt.u32 %p1, %r2, %r1;\n@%p1 bra $L_loop;\nret;\n}\n";

}  // namespace remora::server_test
