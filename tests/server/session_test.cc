// tests/server/session_test.cc - the server against raw protocol clients.
//
// Each test starts a Server on the emulated device with a private socket, and
// talks to it with bare channels: the checks every tenant call gets (handles,
// ranges, other tenants' memory, malformed frames) and the reaping of dead
// clients.
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

namespace remora {
namespace {

using namespace std::chrono_literals;
using transport::Deadline;
namespace v1 = remora::v1;

std::string SocketPath() {
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
  std::string WaitEvicted() {
    transport::Frame f;
    while (ch_->Receive(f, Deadline::In(20s)).ok()) {
      if (f.header.call != static_cast<uint32_t>(CallId::kEvicted)) continue;
      v1::Evicted e;
      if (!e.ParseFromArray(f.body.data(), static_cast<int>(f.body.size()))) return "";
      EXPECT_EQ(e.code(), err::kDevicesUnavailable);
      return e.message();
    }
    return "";
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
INSTANTIATE_TEST_SUITE_P(Transports, IsolationTest, ::testing::Values("shm", "grpc"),
                         [](const auto& info) { return info.param; });

TEST_F(ServerTest, WelcomeDescribesTheDeviceAndArena) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  EXPECT_EQ(c->welcome().device().name(), "Remora Emulated GPU");
  EXPECT_GT(c->welcome().device().total_mem(), 0u);
  EXPECT_EQ(c->welcome().device().attributes(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 8);
  EXPECT_EQ(c->welcome().staging_slots(), 16u);
  EXPECT_GT(c->welcome().heap_bytes(), 0u);
}

TEST_F(ServerTest, ArenaIsDeviceMappedForZeroCopy) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  // The server's address of arena byte 0: kernels may dereference it there.
  EXPECT_NE(c->welcome().arena_device_address(), 0u);
  EXPECT_EQ(c->welcome().arena_device_address() % 4096, 0u);
}

std::string Digest(const v1::RegisterModuleRequest& req) {
  std::vector<fatbin::Bytes> views;
  for (const std::string& img : req.images())
    views.push_back(std::as_bytes(std::span(img.data(), img.size())));
  return fatbin::ImagesDigest(views);
}

// PTX text (as cuModuleLoadData accepts) with one kernel, `_Z3addPi`.
constexpr char kAddPtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z3addPi(.param .u64 p)\n{\n"
    ".reg .b64 %rd<3>;\n.reg .b32 %r<3>;\n"
    "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\n"
    "ld.global.u32 %r1, [%rd2];\nadd.s32 %r2, %r1, 1;\nst.global.u32 [%rd2], %r2;\nret;\n}\n";

// Dedup: a hash alone that the server has not seen gets images_needed (not an
// error); once the images came, any session may send the hash alone.
TEST_F(ServerTest, FatBinariesAreKeptByHash) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  v1::RegisterModuleRequest req;
  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  req.set_hash(Digest(req));
  req.clear_images();
  req.add_kernels("_Z3addPi");
  v1::RegisterModuleReply rep;
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_TRUE(rep.images_needed());
  EXPECT_EQ(rep.module(), 0u);
  EXPECT_EQ(rep.kernels_size(), 0);

  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  rep.Clear();
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_FALSE(rep.images_needed());
  EXPECT_NE(rep.module(), 0u);
  ASSERT_EQ(rep.kernels_size(), 1);
  EXPECT_EQ(rep.kernels(0).ptx_version(), 75);

  auto b = Client::Connect(path_);
  ASSERT_TRUE(b);
  req.clear_images();
  rep.Clear();
  ASSERT_EQ(b->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_FALSE(rep.images_needed()) << "the images were found by hash";
  EXPECT_NE(rep.module(), 0u);

  // Once no session uses the program, the server keeps nothing of it.
  a.reset();
  b.reset();
  ASSERT_TRUE(WaitForSessions(0, 5s));
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  rep.Clear();
  ASSERT_EQ(c->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_TRUE(rep.images_needed()) << "the images outlived every session using them";
}

// The cache is keyed by the server's own digest: images sent under another
// program's hash are not found by that hash.
TEST_F(ServerTest, ATenantCannotPlantImagesUnderAnotherHash) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  v1::RegisterModuleRequest req;
  req.set_hash(std::string(32, '\x42'));
  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  v1::RegisterModuleReply rep;
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_NE(rep.module(), 0u);

  req.clear_images();
  rep.Clear();
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_TRUE(rep.images_needed());
}

// An image the device cannot run is refused with the GPU's error and the
// module named; a registration larger than a frame arrives whole; a kernel the
// module lacks gets no handle, so no launch of it can succeed.
TEST_F(ServerTest, ModulesAreRefusedByNameAndKernelsNeverSilentlyMissing) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  v1::RegisterModuleRequest elf;
  const char kElfHeader[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1};  // a cubin's first bytes
  elf.add_images(std::string(kElfHeader, sizeof kElfHeader));
  elf.set_hash(Digest(elf));
  elf.add_kernels("_Z6sm80_kv");
  EXPECT_EQ(c->Call(CallId::kRegisterModule, elf), 209);  // cudaErrorNoKernelImageForDevice
  EXPECT_NE(c->last().message().find("_Z6sm80_kv"), std::string::npos) << c->last().message();
  // An image that failed to load is not kept: its hash alone is not enough.
  elf.clear_images();
  v1::RegisterModuleReply again;
  ASSERT_EQ(c->Call(CallId::kRegisterModule, elf, &again), 0);
  EXPECT_TRUE(again.images_needed());

  v1::RegisterModuleRequest req;
  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  req.set_hash(Digest(req));
  for (int i = 0; i < 2000; ++i)
    req.add_kernels("_Z7missing" + std::string(200, 'x') + std::to_string(i));
  req.add_kernels("_Z3addPi");
  ASSERT_GT(req.ByteSizeLong(), 256u << 10) << "must not fit one shm frame";
  v1::RegisterModuleReply rep;
  ASSERT_EQ(c->Call(CallId::kRegisterModule, req, &rep), 0);
  ASSERT_EQ(rep.kernels_size(), 1);
  EXPECT_EQ(rep.kernels(0).name(), "_Z3addPi");
  EXPECT_NE(rep.kernels(0).handle(), 0u);
  ASSERT_EQ(rep.kernels(0).sizes_size(), 1);
  EXPECT_EQ(rep.kernels(0).sizes(0), 8u);

  v1::LaunchRequest launch;
  launch.set_kernel(rep.kernels(0).handle() + 0x777);
  launch.set_grid_x(1), launch.set_grid_y(1), launch.set_grid_z(1);
  launch.set_block_x(1), launch.set_block_y(1), launch.set_block_z(1);
  launch.set_params(std::string(8, '\0'));
  c->Post(CallId::kLaunchKernel, launch);
  EXPECT_EQ(c->Call(CallId::kDeviceSynchronize, v1::Empty()), 98);  // InvalidDeviceFunction
}

TEST_F(ServerTest, CopiesRoundTripThroughArenaAndInline) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  const uint64_t n = 1 << 20;
  uint64_t d = c->Malloc(n);
  ASSERT_NE(d, 0u);
  std::mt19937 rng(1);
  std::byte* heap = c->arena()->base() + c->welcome().heap_offset();
  for (uint64_t i = 0; i < n; ++i) heap[i] = static_cast<std::byte>(rng());
  v1::MemcpyHtoDRequest h;
  h.set_dst(d);
  h.set_size(n);
  h.mutable_src()->set_arena_offset(c->welcome().heap_offset());
  ASSERT_EQ(c->Call(CallId::kMemcpyHtoD, h), 0);
  v1::MemcpyDtoHRequest back;
  back.set_src(d + 100);
  back.set_size(1000);
  v1::MemcpyDtoHReply data;
  ASSERT_EQ(c->Call(CallId::kMemcpyDtoH, back, &data), 0);
  ASSERT_EQ(data.data().size(), 1000u);
  EXPECT_EQ(std::memcmp(data.data().data(), heap + 100, 1000), 0);
}

TEST_F(ServerTest, RefusesRangesOutsideTheTenantsAllocations) {
  auto a = Client::Connect(path_);
  auto b = Client::Connect(path_);
  ASSERT_TRUE(a && b);
  uint64_t pa = a->Malloc(4096);
  uint64_t pb = b->Malloc(4096);
  v1::MemcpyDtoHRequest r;
  r.set_size(16);
  r.set_src(pb);  // b's memory, read by a
  EXPECT_EQ(a->Call(CallId::kMemcpyDtoH, r), err::kInvalidValue);
  EXPECT_NE(a->last().message().find("outside this tenant's allocations"), std::string::npos);
  r.set_src(pa + 4090);  // runs past the end
  EXPECT_EQ(a->Call(CallId::kMemcpyDtoH, r), err::kInvalidValue);
  r.set_src(pa);
  r.set_size(~0ull);  // overflowing size
  EXPECT_EQ(a->Call(CallId::kMemcpyDtoH, r), err::kInvalidValue);
  v1::MemsetRequest m;
  m.set_dst(pb);
  m.set_size(1);
  EXPECT_EQ(a->Call(CallId::kMemset, m), err::kInvalidValue);
  v1::FreeRequest f;
  f.set_dptr(pb);
  EXPECT_EQ(a->Call(CallId::kFree, f), err::kInvalidValue);  // not a's to free
  f.set_dptr(pa);
  EXPECT_EQ(a->Call(CallId::kFree, f), 0);
  EXPECT_EQ(a->Call(CallId::kFree, f), err::kInvalidValue);  // double free
  v1::MemcpyHtoDRequest h;
  h.set_dst(pa);  // use after free
  h.set_size(4);
  h.mutable_src()->set_data("abcd");
  EXPECT_EQ(a->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  h.set_dst(pb);
  h.mutable_src()->set_arena_offset(a->arena()->size() - 2);  // arena overrun, b's memory anyway
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  // A staging slot the session does not have is refused, not ignored.
  h.mutable_src()->set_data("abcd");
  h.set_staging_slot(0xFFFFFFFF);
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  EXPECT_NE(b->last().message().find("staging slot"), std::string::npos) << b->last().message();
  b->Post(CallId::kMemcpyHtoDAsync, h);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  h.set_staging_slot(0);
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), 0);
}

TEST_P(IsolationTest, RefusesOtherTenantsHandles) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::HandleReply s, e;
  ASSERT_EQ(a->Call(CallId::kStreamCreate, v1::StreamCreateRequest(), &s), 0);
  ASSERT_EQ(a->Call(CallId::kEventCreate, v1::EventCreateRequest(), &e), 0);
  v1::StreamRequest sr;
  sr.set_stream(s.handle());
  EXPECT_EQ(b->Call(CallId::kStreamSynchronize, sr), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kStreamSynchronize, sr), 0);
  v1::EventRequest er;
  er.set_event(e.handle());
  EXPECT_EQ(b->Call(CallId::kEventQuery, er), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kEventDestroy, er), 0);
  EXPECT_EQ(a->Call(CallId::kEventDestroy, er), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kStreamDestroy, sr), 0);
  EXPECT_EQ(a->Call(CallId::kStreamDestroy, sr), err::kInvalidResourceHandle);
}

// cuBLAS: every pointer a routine reaches, directly or through a pointer
// array, is checked against the tenant's allocations; handles are per tenant;
// a handle's workspace is charged to the tenant and given back with it.
TEST_P(IsolationTest, CublasChecksEveryPointerAndHandle) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::MemGetInfoReply before, during, after;
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &before), 0);
  v1::HandleReply h;
  ASSERT_EQ(a->Call(CallId::kBlasCreate, v1::Empty(), &h), 0) << a->last().message();
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &during), 0);
  EXPECT_GE(before.free() - during.free(), 4u << 20);
  const uint64_t pa = a->Malloc(4096), pb = b->Malloc(4096);
  // x = 1..8 as floats, then x.x through BlasSync (host-mode result).
  std::string x;
  for (int i = 1; i <= 8; ++i) {
    float f = static_cast<float>(i);
    x.append(reinterpret_cast<const char*>(&f), 4);
  }
  v1::MemcpyHtoDRequest up;
  up.set_dst(pa);
  up.set_size(x.size());
  up.mutable_src()->set_data(x);
  ASSERT_EQ(a->Call(CallId::kMemcpyHtoD, up), 0);
  auto dot = [&](uint64_t handle, uint64_t px, uint64_t py) {
    v1::BlasRequest r;
    r.set_op(3);  // Sdot: n incx incy | x y -> result
    r.set_handle(handle);
    for (int64_t v : {8, 1, 1}) r.add_ints(v);
    r.add_ptrs(px);
    r.add_ptrs(py);
    return r;
  };
  v1::BlasReply rep;
  ASSERT_EQ(a->Call(CallId::kBlasSync, dot(h.handle(), pa, pa), &rep), 0) << a->last().message();
  ASSERT_EQ(rep.result().size(), 4u);
  float got = 0;
  std::memcpy(&got, rep.result().data(), 4);
  EXPECT_EQ(got, 204.0f);
  // b's memory, a range running past the end, b using a's handle.
  EXPECT_EQ(a->Call(CallId::kBlasSync, dot(h.handle(), pa, pb)), err::kInvalidValue);
  EXPECT_NE(a->last().message().find("outside this tenant's allocations"), std::string::npos)
      << a->last().message();
  EXPECT_EQ(a->Call(CallId::kBlasSync, dot(h.handle(), pa + 4080, pa)), err::kInvalidValue);
  EXPECT_EQ(b->Call(CallId::kBlasSync, dot(h.handle(), pb, pb)), err::kInvalidResourceHandle);
  // A result routine without a host result must not be ORDERED (and vice versa).
  a->Post(CallId::kBlas, dot(h.handle(), pa, pa));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // Wrong arity, an unknown routine, bad dimensions.
  v1::BlasRequest bad = dot(h.handle(), pa, pa);
  bad.add_ints(3);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kInvalidValue);
  bad = dot(h.handle(), pa, pa);
  bad.add_ptrs(pa);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kInvalidValue);
  bad.set_op(9999);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kNotSupported);
  bad = dot(h.handle(), pa, pa);
  bad.set_ints(0, -5);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kInvalidValue);
  // SgemmBatched whose pointer array names b's matrix: refused at the next sync.
  v1::BlasRequest g;
  g.set_op(97);  // transa transb m n k lda ldb ldc batch | A[] B[] C[] | alpha beta
  g.set_handle(h.handle());
  for (int64_t v : {0, 0, 4, 4, 4, 4, 4, 4, 2}) g.add_ints(v);
  for (int i = 0; i < 3; ++i) g.add_ptrs(pa);
  const float one = 1, zero = 0;
  g.mutable_scalars()->append(reinterpret_cast<const char*>(&one), 4);
  g.mutable_scalars()->append(reinterpret_cast<const char*>(&zero), 4);
  for (uint64_t p : {pa, pa + 64, pa, pa + 64, pa + 128, pb}) g.add_arrays(p);
  a->Post(CallId::kBlas, g);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  g.set_arrays(5, pa + 192);
  a->Post(CallId::kBlas, g);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0) << a->last().message();
  g.mutable_arrays()->RemoveLast();  // one pointer short
  a->Post(CallId::kBlas, g);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // The handle goes, with its workspace; then it is unknown.
  v1::BlasHandleRequest d;
  d.set_handle(h.handle());
  EXPECT_EQ(b->Call(CallId::kBlasDestroy, d), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kBlasDestroy, d), 0);
  EXPECT_EQ(a->Call(CallId::kBlasDestroy, d), err::kInvalidResourceHandle);
  // Only pa and b's pb are still held once the server's copies of the pointer
  // arrays went back, which happens when the work that read them is done.
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &after), 0);
    if (after.free() + 2 * 4096 == before.free()) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(after.free() + 2 * 4096, before.free());
}

TEST_P(IsolationTest, CublasLtChecksEveryPointerAndHandle) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::HandleReply h;
  ASSERT_EQ(a->Call(CallId::kBlasLtCreate, v1::Empty(), &h), 0) << a->last().message();
  const uint64_t pa = a->Malloc(4096), pb = b->Malloc(4096);
  // D = A * B + bias for 4x4 FP32 matrices at pa, A = B = I (C = D, beta 0).
  std::string m(4096, '\0');
  for (int i = 0; i < 4; ++i) {
    const float one = 1;
    std::memcpy(&m[(i * 4 + i) * 4], &one, 4);
    std::memcpy(&m[64 + (i * 4 + i) * 4], &one, 4);
    const float bias = static_cast<float>(i + 1);
    std::memcpy(&m[192 + i * 4], &bias, 4);
  }
  v1::MemcpyHtoDRequest up;
  up.set_dst(pa);
  up.set_size(m.size());
  up.mutable_src()->set_data(m);
  ASSERT_EQ(a->Call(CallId::kMemcpyHtoD, up), 0);
  auto matmul = [&](uint64_t handle, uint64_t A, uint64_t D) {
    v1::BlasLtMatmulRequest r;
    r.set_handle(handle);
    r.set_compute_type(68);  // CUBLAS_COMPUTE_32F
    r.set_scale_type(0);
    r.set_epilogue(4);  // BIAS
    r.set_bias(pa + 192);
    r.set_bias_type(-1);
    for (int i = 0; i < 4; ++i) {
      v1::BlasLtMatmulRequest::Layout* l = r.add_layouts();
      l->set_rows(4);
      l->set_cols(4);
      l->set_ld(4);
      l->set_batch(1);
    }
    for (uint64_t p : {A, pa + 64, D, D}) r.add_ptrs(p);
    const float one = 1, zero = 0;
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&one), 4);
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&zero), 4);
    return r;
  };
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pa, pa + 128));
  v1::MemcpyDtoHRequest down;
  down.set_src(pa + 128);
  down.set_size(64);
  v1::MemcpyDtoHReply got;
  ASSERT_EQ(a->Call(CallId::kMemcpyDtoH, down, &got), 0) << a->last().message();
  ASSERT_EQ(got.data().size(), 64u);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) {
      float v = 0;
      std::memcpy(&v, got.data().data() + (j * 4 + i) * 4, 4);
      EXPECT_EQ(v, (i == j ? 1.0f : 0.0f) + static_cast<float>(i + 1)) << i << "," << j;
    }
  // b's memory, a matrix running past the end, a bias outside, b using a's handle.
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pb, pa + 128));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pa, pa + 4096 - 32));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  v1::BlasLtMatmulRequest bad = matmul(h.handle(), pa, pa + 128);
  bad.set_bias(pb);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  b->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pb, pb));
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  // Device scalars and the workspace are checked too; layouts must be four.
  bad = matmul(h.handle(), pa, pa + 128);
  bad.set_pointer_mode(1);
  bad.add_scalar_ptrs(pa);
  bad.add_scalar_ptrs(pb);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = matmul(h.handle(), pa, pa + 128);
  bad.set_workspace(pa);
  bad.set_workspace_size(8192);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = matmul(h.handle(), pa, pa + 128);
  bad.mutable_layouts()->RemoveLast();
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // A bad layout and a type not forwarded, as the stub would have refused them.
  bad = matmul(h.handle(), pa, pa + 128);
  bad.mutable_layouts(0)->set_ld(2);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = matmul(h.handle(), pa, pa + 128);
  bad.set_compute_type(70);  // CUBLAS_COMPUTE_64F
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kNotSupported);
  // The handle goes; then it is unknown.
  v1::BlasHandleRequest d;
  d.set_handle(h.handle());
  EXPECT_EQ(b->Call(CallId::kBlasLtDestroy, d), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kBlasLtDestroy, d), 0);
  EXPECT_EQ(a->Call(CallId::kBlasLtDestroy, d), err::kInvalidResourceHandle);
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pa, pa + 128));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
}

// cuDNN: descriptors come by value and every pointer's reach (from them) and
// the workspace are checked against the tenant's allocations; handles are per tenant.
TEST_P(IsolationTest, CudnnChecksDescriptorsPointersAndHandles) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::HandleReply h;
  ASSERT_EQ(a->Call(CallId::kDnnCreate, v1::Empty(), &h), 0) << a->last().message();
  const uint64_t pa = a->Malloc(4096), pb = b->Malloc(4096);
  // ActivationForward (op 32): act | x y | alpha beta, on 1x2x4x4 float tensors (128 bytes).
  auto relu = [&](uint64_t handle, uint64_t x, uint64_t y) {
    v1::DnnRequest r;
    r.set_op(32);
    r.set_handle(handle);
    for (int t = 0; t < 2; ++t) {
      v1::DnnRequest::Tensor* d = r.add_tensors();
      d->set_dtype(0);
      for (int v : {1, 2, 4, 4}) d->add_dims(v);
      for (int v : {32, 16, 4, 1}) d->add_strides(v);
    }
    r.mutable_activation()->set_mode(1);  // RELU
    r.add_ptrs(x);
    r.add_ptrs(y);
    const float one = 1, zero = 0;
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&one), 4);
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&zero), 4);
    return r;
  };
  a->Post(CallId::kDnn, relu(h.handle(), pa, pa + 128));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0) << a->last().message();
  a->Post(CallId::kDnn, relu(h.handle(), pa, pb));  // b's memory
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  EXPECT_NE(a->last().deferred_message().find("outside this tenant's allocations"),
            std::string::npos)
      << a->last().deferred_message();
  a->Post(CallId::kDnn, relu(h.handle(), pa + 4000, pa));  // runs past the end
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  b->Post(CallId::kDnn, relu(h.handle(), pb, pb));  // a's handle
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  // A stride that makes the tensor reach past the allocation, a negative dimension,
  // a missing descriptor, scaling parameters of the wrong size.
  v1::DnnRequest bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_tensors(0)->set_strides(1, 1 << 20);
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_tensors(1)->set_dims(1, -2);
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_tensors()->RemoveLast();
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_scalars()->resize(12);
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // A query goes through DnnSync only; an operation through Dnn only.
  EXPECT_EQ(a->Call(CallId::kDnnSync, relu(h.handle(), pa, pa + 128)), err::kInvalidValue);
  v1::DnnHandleRequest d;
  d.set_handle(h.handle());
  EXPECT_EQ(b->Call(CallId::kDnnDestroy, d), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kDnnDestroy, d), 0);
  EXPECT_EQ(a->Call(CallId::kDnnDestroy, d), err::kInvalidResourceHandle);
}

// SIGTERM's drain (server/main.cc times it): newcomers are refused saying why,
// open sessions keep being served, and when ended they are told why.
TEST_P(IsolationTest, DrainRefusesNewcomersServesTheOpenAndEndsThemSayingWhy) {
  auto open = Connect();
  ASSERT_TRUE(open);
  ASSERT_EQ(open->welcome_status(), 0);
  ASSERT_NE(open->Malloc(1 << 20), 0u);
  EXPECT_FALSE(server_->draining());
  server_->Drain();
  EXPECT_TRUE(server_->draining());
  auto late = Connect();
  ASSERT_TRUE(late);
  EXPECT_EQ(late->welcome_status(), err::kDevicesUnavailable);
  EXPECT_NE(late->last().message().find("shutting down"), std::string::npos)
      << late->last().message();
  EXPECT_NE(open->Malloc(1 << 20), 0u);  // still served
  v1::Hello admin;
  admin.set_admin(true);
  auto root = Connect(admin);  // remora list still works, and the drain does not wait for it
  ASSERT_TRUE(root);
  EXPECT_EQ(root->welcome_status(), 0);
  v1::TenantList list;
  EXPECT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  EXPECT_EQ(list.tenants_size(), 1);
  EXPECT_EQ(server_->tenant_sessions(), 1u);
  server_->EndSessions("remora-server is shutting down (drain test)", 5s);
  EXPECT_TRUE(WaitForSessions(0, 5s));
  EXPECT_NE(open->WaitEvicted().find("shutting down (drain test)"), std::string::npos);
  EXPECT_LT(open->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // the session is over
}

TEST_F(ServerTest, StreamOrderedErrorsSurfaceAtTheNextSyncCall) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  v1::MemsetRequest m;
  m.set_dst(0xdead0000);
  m.set_size(8);
  m.set_async(true);
  a->Post(CallId::kMemsetAsync, m);  // no reply
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // reported once
}

TEST_F(ServerTest, MalformedFramesGetErrorsNotCrashes) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->CallRaw(static_cast<uint32_t>(CallId::kMalloc), std::string("\xff\xff\xff", 3)),
            err::kInvalidValue);
  EXPECT_EQ(a->CallRaw(9999, ""), err::kNotSupported);
  EXPECT_EQ(a->CallRaw(static_cast<uint32_t>(CallId::kHello), ""), err::kNotPermitted);
  EXPECT_EQ(a->CallRaw(static_cast<uint32_t>(CallId::kGetDevice), ""), err::kNotSupported);
  // Random bytes for every synchronous call: bytes that are no valid request
  // get cudaErrorInvalidValue, never success; the session keeps serving.
  std::mt19937 rng(3);
  const google::protobuf::DescriptorPool* pool = v1::Empty::descriptor()->file()->pool();
  google::protobuf::DynamicMessageFactory factory(pool);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::string junk(rng() % 64, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    uint32_t call = 32 + rng() % 70;
    const CallInfo* info = FindCall(call);
    if (!info || info->cls != CallClass::kSync) continue;
    const auto* type = pool->FindMessageTypeByName("remora.v1." + std::string(info->request));
    ASSERT_NE(type, nullptr) << info->request;
    std::unique_ptr<google::protobuf::Message> parsed(factory.GetPrototype(type)->New());
    const bool valid = parsed->ParseFromString(junk);
    int code = a->CallRaw(call, junk);
    EXPECT_GE(code, 0) << "call " << call << ": no reply";
    if (!valid) {
      EXPECT_EQ(code, err::kInvalidValue) << info->name << " took bytes that are no request";
      ++refused;
    }
  }
  EXPECT_GT(refused, 50) << "the junk should mostly not parse";
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()) >= 0, true);
  EXPECT_NE(a->Malloc(64), 0u);  // still serving
}

// The fast path is checked like protobuf: a body of the wrong shape, or a fixed
// layout for a call that has none, is refused and answered in kind.
TEST_F(ServerTest, FixedLayoutFramesAreCheckedAndAnsweredInKind) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  std::string why;
  v1::StreamRequest q;
  std::string body;
  fixed::Encode(q, body);
  EXPECT_EQ(a->CallFixed(CallId::kStreamQuery, body, &why), 0) << why;
  EXPECT_EQ(a->CallFixed(CallId::kStreamQuery, body.substr(0, 7), &why), err::kInvalidValue);
  EXPECT_NE(why.find("malformed"), std::string::npos) << why;
  q.set_stream(0x999);
  fixed::Encode(q, body);
  EXPECT_EQ(a->CallFixed(CallId::kStreamQuery, body, &why), err::kInvalidResourceHandle);
  EXPECT_NE(why.find("StreamQuery"), std::string::npos) << why;
  // MallocRequest has no fixed layout: its protobuf bytes flagged fixed are refused.
  v1::MallocRequest m;
  m.set_size(64);
  EXPECT_EQ(a->CallFixed(CallId::kMalloc, m.SerializeAsString()), err::kInvalidValue);
  // A small copy both ways through the fast path, inline bytes out, arena bytes back.
  const uint64_t p = a->Malloc(64);
  ASSERT_NE(p, 0u);
  v1::MemcpyHtoDRequest h;
  h.set_dst(p);
  h.set_size(4);
  h.mutable_src()->set_data("abcd");
  fixed::Encode(h, body);
  EXPECT_EQ(a->CallFixed(CallId::kMemcpyHtoD, body, &why), 0) << why;
  v1::MemcpyDtoHRequest d;
  d.set_src(p);
  d.set_size(4);
  d.set_to_arena(true);
  d.set_dst_arena_offset(0);
  fixed::Encode(d, body);
  ASSERT_TRUE(a->arena());
  EXPECT_EQ(a->CallFixed(CallId::kMemcpyDtoH, body, &why), 0) << why;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a->arena()->base()), 4), "abcd");
  d.set_src(p + 62);  // 2 bytes past the allocation
  fixed::Encode(d, body);
  EXPECT_EQ(a->CallFixed(CallId::kMemcpyDtoH, body, &why), err::kInvalidValue);
  EXPECT_NE(a->Malloc(64), 0u);  // still serving
}

// Memory above a tenant's request is a loan: a guaranteed tenant's allocation
// takes it back, ending the borrower's session with a message saying why.
TEST_F(ServerTest, GuaranteedAllocationReclaimsALoan) {
  auto borrower = Client::Connect(path_);  // no quota: request 0, limit everything
  ASSERT_TRUE(borrower);
  ASSERT_EQ(borrower->welcome_status(), 0);
  const uint64_t usable = borrower->welcome().memory_limit();
  ASSERT_GT(usable, 1u << 30);
  EXPECT_NE(borrower->Malloc(usable / 4 * 3), 0u);
  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.5);
  auto owner = Client::Connect(path_, h);
  ASSERT_TRUE(owner);
  ASSERT_EQ(owner->welcome_status(), 0);
  // Within its request but beyond what is free: the loan goes, the allocation succeeds.
  EXPECT_NE(owner->Malloc(usable / 5 * 2), 0u);
  const std::string why = borrower->WaitEvicted();
  EXPECT_NE(why.find(owner->welcome().tenant()), std::string::npos) << why;
  EXPECT_NE(why.find("reclaimed"), std::string::npos) << why;
  EXPECT_LT(borrower->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // the session is over
  // Past its request, and past its limit (= request): refused, nobody else pays.
  v1::MallocRequest more;
  more.set_size(usable / 5);
  EXPECT_EQ(owner->Call(CallId::kMalloc, more), err::kMemoryAllocation);
  auto bystander = Client::Connect(path_);
  ASSERT_TRUE(bystander);
  EXPECT_NE(bystander->Malloc(1 << 20), 0u);  // served, from free memory
}

// A request that does not fit is admitted by preempting lower-priority tenants
// only; without them it is refused, saying what is free and who holds it.
TEST_F(ServerTest, AdmissionPreemptsLowerPriorityOnly) {
  v1::Hello low;
  low.mutable_quota()->set_gpu_fraction(0.6);
  low.mutable_quota()->set_priority("low");
  auto a = Client::Connect(path_, low);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  v1::Hello normal;
  normal.mutable_quota()->set_gpu_fraction(0.6);
  auto n1 = Client::Connect(path_, normal);  // 0.6 + 0.6 > 1: no room beside the low one
  ASSERT_TRUE(n1);
  // Normal outranks low: the low tenant is preempted, the normal one admitted.
  EXPECT_EQ(n1->welcome_status(), 0);
  EXPECT_NE(a->WaitEvicted().find("priority normal"), std::string::npos);
  auto b = Client::Connect(path_, normal);  // nobody lower left to preempt
  ASSERT_TRUE(b);
  EXPECT_EQ(b->welcome_status(), err::kMemoryAllocation);
  EXPECT_NE(b->last().message().find("free"), std::string::npos) << b->last().message();
  v1::Hello bad;
  bad.mutable_quota()->set_priority("urgent");
  auto c = Client::Connect(path_, bad);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->welcome_status(), err::kInvalidValue);
}

// A tenant class's streams carry its GPU priority (high the device's greatest, low its
// least, normal between: -5, 0 and -2 on the emulator), through the pool too: a stream
// given back goes again only to a tenant of the class it was made for.
TEST_F(ServerTest, StreamsCarryTheirTenantClassesGpuPriority) {
  server::Device& dev = server_->device();
  server::Device::Use use = dev.Enter();
  ASSERT_TRUE(dev.MakeCurrent().ok());
  auto priority = [&](CUstream s) {
    int p = 99;
    EXPECT_EQ(dev.drv().cuStreamGetPriority(s, &p), CUDA_SUCCESS);
    return p;
  };
  auto high = dev.AcquireStream(sched::Priority::kHigh);
  auto normal = dev.AcquireStream(sched::Priority::kNormal);
  auto low = dev.AcquireStream(sched::Priority::kLow);
  ASSERT_TRUE(high.ok() && normal.ok() && low.ok());
  EXPECT_EQ(priority(*high), -5);
  EXPECT_EQ(priority(*normal), -2);
  EXPECT_EQ(priority(*low), 0);
  dev.ReleaseStream(*high);  // idle: pooled at once
  auto low2 = dev.AcquireStream(sched::Priority::kLow);
  ASSERT_TRUE(low2.ok());
  EXPECT_NE(*low2, *high);
  EXPECT_EQ(priority(*low2), 0);
  auto high2 = dev.AcquireStream(sched::Priority::kHigh);
  ASSERT_TRUE(high2.ok());
  EXPECT_EQ(*high2, *high);  // the pooled one
  EXPECT_EQ(priority(*high2), -5);
  for (CUstream s : {*high2, *normal, *low, *low2}) dev.ReleaseStream(s);
}

// `remora list` speaks as an administration session: it sees every tenant with
// what it was granted and holds, and may do nothing else; tenants may not list.
TEST_F(ServerTest, AdminSessionListsTenantsAndNothingElse) {
  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.25);
  h.mutable_quota()->set_gpu_compute(0.5);
  h.set_program("alpha");
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  ASSERT_NE(a->Malloc(3 << 20), 0u);
  v1::Hello l;
  l.mutable_quota()->set_priority("low");
  l.mutable_quota()->set_gpu_compute_limit(0.2);
  l.set_program("beta");
  auto b = Client::Connect(path_, l);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->welcome_status(), 0);
  v1::Hello admin;
  admin.set_admin(true);
  auto c = Client::Connect(path_, admin);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  v1::TenantList list;
  ASSERT_EQ(c->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  ASSERT_EQ(list.tenants_size(), 2) << list.ShortDebugString();
  EXPECT_NEAR(static_cast<double>(list.usable_memory()),
              4.0 * static_cast<double>(a->welcome().memory_limit()), 8)
      << "a's limit is 0.25 of usable";
  std::map<std::string, v1::TenantRow> rows;
  for (const auto& r : list.tenants()) rows[r.tenant().substr(0, 5)] = r;
  ASSERT_EQ(rows.count("alpha"), 1u);
  ASSERT_EQ(rows.count("beta-"), 1u);
  const v1::TenantRow& ra = rows["alpha"];
  EXPECT_EQ(ra.priority(), "normal");
  EXPECT_EQ(ra.status(), "running");
  EXPECT_EQ(ra.memory_request(), a->welcome().memory_request());
  EXPECT_EQ(ra.memory_used(), 3u << 20);
  EXPECT_EQ(ra.memory_borrowed(), 0u);
  EXPECT_DOUBLE_EQ(ra.compute_request(), 0.5);
  const v1::TenantRow& rb = rows["beta-"];
  EXPECT_EQ(rb.priority(), "low");
  EXPECT_DOUBLE_EQ(rb.compute_limit(), 0.2);
  EXPECT_EQ(rb.memory_request(), 0u);
  // Targets: alpha alone in its class; beta, a class below, gets what alpha
  // leaves (all: it ran nothing yet) within its cap.
  EXPECT_NEAR(ra.target_share(), 1.0, 1e-9);
  EXPECT_NEAR(rb.target_share(), 0.2, 1e-9);
  // The administration session holds nothing and may do nothing else; tenants may not list.
  v1::MallocRequest m;
  m.set_size(64);
  EXPECT_EQ(c->Call(CallId::kMalloc, m), err::kNotPermitted);
  EXPECT_EQ(a->Call(CallId::kListTenants, v1::Empty(), &list), err::kNotPermitted);
  // remora evict: by name when one session has it, else refused; the tenant is told.
  v1::EvictRequest e;
  e.set_tenant("nobody");
  EXPECT_EQ(c->Call(CallId::kEvictTenant, e), err::kInvalidValue);
  EXPECT_EQ(a->Call(CallId::kEvictTenant, e), err::kNotPermitted);
  e.set_tenant(rb.tenant());
  EXPECT_EQ(c->Call(CallId::kEvictTenant, e), 0) << c->last().message();
  EXPECT_NE(b->WaitEvicted().find("administrator"), std::string::npos);
  ASSERT_EQ(c->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  std::vector<std::string> running;  // the evicted one is gone, or shown as ending
  for (const auto& r : list.tenants())
    if (r.status() == "running") running.push_back(r.tenant());
  EXPECT_EQ(running, std::vector<std::string>{ra.tenant()});
  EXPECT_NE(a->Malloc(1 << 20), 0u);  // the other tenant is untouched
}

TEST_F(ServerTest, QuotaLimitIsEnforcedAndShownByMemGetInfo) {
  v1::Hello h;
  h.mutable_quota()->set_gpu_memory(1 << 20);
  h.mutable_quota()->set_gpu_memory_limit(2 << 20);
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  EXPECT_EQ(a->welcome().memory_limit(), 2u << 20);
  v1::MemGetInfoReply info;
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.total(), 2u << 20);
  EXPECT_EQ(info.free(), 2u << 20);
  EXPECT_NE(a->Malloc(1536 << 10), 0u);
  v1::MallocRequest r;
  r.set_size(1 << 20);
  EXPECT_EQ(a->Call(CallId::kMalloc, r), err::kMemoryAllocation);
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.free(), (2u << 20) - (1536u << 10));
}

TEST_F(ServerTest, AdmissionRefusesRequestsBeyondTheDevice) {
  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.7);
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->welcome_status(), 0);
  auto b = Client::Connect(path_, h);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->welcome_status(), err::kMemoryAllocation);
  // A NaN fraction is no quota at all, not an unlimited one.
  v1::Hello nan;
  nan.mutable_quota()->set_gpu_fraction(std::numeric_limits<double>::quiet_NaN());
  auto c = Client::Connect(path_, nan);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->welcome_status(), err::kInvalidValue);
}

// PTX with one kernel that stores to an address no allocation covers.
constexpr char kFaultPtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z3badv()\n{\n.reg .b64 %rd<2>;\n.reg .b32 %r<2>;\n"
    "mov.u64 %rd1, 16;\nmov.u32 %r1, 7;\nst.global.u32 [%rd1], %r1;\nret;\n}\n";

// Registers `ptx` and returns the handle of its kernel `name` (0 on failure).
uint64_t LoadKernel(Client& c, const char* ptx, size_t size, const char* name) {
  v1::RegisterModuleRequest req;
  req.add_images(std::string(ptx, size));
  req.set_hash(Digest(req));
  req.add_kernels(name);
  v1::RegisterModuleReply rep;
  if (c.Call(CallId::kRegisterModule, req, &rep) != 0 || rep.kernels_size() != 1) return 0;
  return rep.kernels(0).handle();
}

v1::LaunchRequest OneThread(uint64_t kernel, std::string params) {
  v1::LaunchRequest l;
  l.set_kernel(kernel);
  l.set_grid_x(1), l.set_grid_y(1), l.set_grid_z(1);
  l.set_block_x(1), l.set_block_y(1), l.set_block_z(1);
  l.set_params(std::move(params));
  return l;
}

// One thread stores `v` to p[i % 1024] for i < n: a kernel that keeps writing
// into the first 4 KiB of an allocation for as long as it runs.
constexpr char kScribblePtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z8scribblePjjj(.param .u64 p, .param .u32 n, .param .u32 v)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<5>;\n"
    "ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nld.param.u32 %r2, [v];\n"
    "mov.u32 %r3, 0;\n"
    "$L_loop:\nand.b32 %r4, %r3, 1023;\nmul.wide.u32 %rd2, %r4, 4;\n"
    "add.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r2;\nadd.u32 %r3, %r3, 1;\n"
    "setp.lt.u32 %p1, %r3, %r1;\n@%p1 bra $L_loop;\nret;\n}\n";

// A loan taken back while the borrower's kernels are queued and running, writing
// into the borrowed memory: the owner's allocation succeeds, the borrower hears
// why, others are served meanwhile, the loan comes back once the borrower's
// work has left the device, and memory handed on afterwards keeps what its new
// owner writes (no kernel of the borrower's runs on into it).
TEST_F(ServerTest, ReclaimWhileTheBorrowerIsMidLaunchLosesNoData) {
  auto borrower = Client::Connect(path_);  // no quota: request 0, limit everything
  ASSERT_TRUE(borrower);
  ASSERT_EQ(borrower->welcome_status(), 0);
  const uint64_t usable = borrower->welcome().memory_limit();
  const uint64_t loan = borrower->Malloc(usable / 4 * 3);
  ASSERT_NE(loan, 0u);
  const uint64_t scribble =
      LoadKernel(*borrower, kScribblePtx, sizeof kScribblePtx, "_Z8scribblePjjj");
  ASSERT_NE(scribble, 0u);
  std::string params(16, '\0');
  const uint32_t iters = 300'000, mark = 0xB0B0B0B0;
  std::memcpy(params.data(), &loan, 8);
  std::memcpy(params.data() + 8, &iters, 4);
  std::memcpy(params.data() + 12, &mark, 4);
  for (int i = 0; i < 16; ++i) borrower->Post(CallId::kLaunchKernel, OneThread(scribble, params));
  ASSERT_EQ(borrower->Call(CallId::kStreamQuery, v1::StreamRequest()), err::kNotReady)
      << "the borrower's kernels should still be running";

  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.5);
  auto owner = Client::Connect(path_, h);
  ASSERT_TRUE(owner);
  ASSERT_EQ(owner->welcome_status(), 0);
  auto bystander = Client::Connect(path_);
  ASSERT_TRUE(bystander);
  ASSERT_EQ(bystander->welcome_status(), 0);
  const uint64_t scratch = bystander->Malloc(4096);
  ASSERT_NE(scratch, 0u);
  // Within its request: the loan goes. The claim waits for the borrower's work
  // to leave the device; the bystander is served all the while.
  const uint64_t first = usable / 5 * 2;
  std::atomic<bool> claimed{false};
  uint64_t owned = 0;
  std::thread claim([&] {
    owned = owner->Malloc(first);
    claimed = true;
  });
  int served_meanwhile = 0;
  for (uint32_t i = 0; !claimed; ++i) {
    v1::MemsetRequest m;
    m.set_dst(scratch);
    m.set_size(4096);
    m.set_value(i & 0xff);
    v1::MemcpyDtoHRequest d;
    d.set_src(scratch + 4000);
    d.set_size(1);
    v1::MemcpyDtoHReply b;
    const bool ok = bystander->Call(CallId::kMemset, m) == 0 &&
                    bystander->Call(CallId::kMemcpyDtoH, d, &b) == 0 &&
                    b.data() == std::string(1, static_cast<char>(i & 0xff));
    ASSERT_TRUE(ok) << "the bystander was not served: " << bystander->last().message();
    if (!claimed) ++served_meanwhile;
  }
  claim.join();
  ASSERT_NE(owned, 0u);
  EXPECT_GT(served_meanwhile, 0) << "nobody else was served while the loan was reclaimed";
  const std::string why = borrower->WaitEvicted();
  EXPECT_NE(why.find(owner->welcome().tenant()), std::string::npos) << why;
  EXPECT_LT(borrower->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // the session is over

  // The loan is free again once the borrower's session has closed.
  v1::Hello admin;
  admin.set_admin(true);
  auto root = Client::Connect(path_, admin);
  ASSERT_TRUE(root);
  for (int i = 0; i < 400; ++i) {
    v1::TenantList list;
    ASSERT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
    if (list.tenants_size() == 2) break;
    std::this_thread::sleep_for(50ms);
  }
  v1::MallocRequest half;
  half.set_size(usable / 2);
  v1::MallocReply got_half;
  EXPECT_EQ(bystander->Call(CallId::kMalloc, half, &got_half), 0)
      << "the borrower's " << usable / 4 * 3 << " bytes did not come back";

  // The owner's second allocation may reuse where the borrower's kernels wrote.
  const uint64_t second = usable / 20;
  const uint64_t mine = owner->Malloc(second);
  ASSERT_NE(mine, 0u);
  const uint64_t at = mine <= loan && loan + 4096 <= mine + second ? loan : mine;
  v1::MemsetRequest fill;
  fill.set_dst(at);
  fill.set_size(4096);
  fill.set_value(0x11);
  ASSERT_EQ(owner->Call(CallId::kMemset, fill), 0) << owner->last().message();
  std::this_thread::sleep_for(300ms);  // a scribbler still running would show by now
  v1::MemcpyDtoHRequest back;
  back.set_src(at);
  back.set_size(4096);
  v1::MemcpyDtoHReply data;
  ASSERT_EQ(owner->Call(CallId::kMemcpyDtoH, back, &data), 0) << owner->last().message();
  EXPECT_EQ(data.data(), std::string(4096, '\x11'))
      << "the owner's memory changed after it wrote it (the borrower's kernel ran on)";
}

// b never reaches a's memory, kernels or events, by any call that names them;
// a's memory is unchanged afterwards.
TEST_P(IsolationTest, NoCallReachesAnotherTenantsMemoryKernelsOrEvents) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  const uint64_t pa = a->Malloc(64), pb = b->Malloc(64);
  v1::MemsetRequest fill;
  fill.set_dst(pa);
  fill.set_size(64);
  fill.set_value(0x11);
  ASSERT_EQ(a->Call(CallId::kMemset, fill), 0);
  v1::RegisterModuleRequest reg;
  reg.add_images(std::string(kAddPtx, sizeof kAddPtx));
  reg.set_hash(Digest(reg));
  reg.add_kernels("_Z3addPi");
  v1::RegisterModuleReply mod;
  ASSERT_EQ(a->Call(CallId::kRegisterModule, reg, &mod), 0);
  ASSERT_EQ(mod.kernels_size(), 1);
  v1::HandleReply ev;
  ASSERT_EQ(a->Call(CallId::kEventCreate, v1::EventCreateRequest(), &ev), 0);

  v1::MemcpyHtoDRequest h;  // host to a's memory, inline bytes
  h.set_dst(pa);
  h.set_size(4);
  h.mutable_src()->set_data("evil");
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  v1::MemcpyDtoDRequest d;  // b's memory to a's, and a's to b's
  d.set_dst(pa);
  d.set_src(pb);
  d.set_size(16);
  EXPECT_EQ(b->Call(CallId::kMemcpyDtoD, d), err::kInvalidValue);
  d.set_dst(pb);
  d.set_src(pa);
  EXPECT_EQ(b->Call(CallId::kMemcpyDtoD, d), err::kInvalidValue);
  std::string param(8, '\0');
  std::memcpy(param.data(), &pb, sizeof pb);
  EXPECT_EQ(b->Call(CallId::kFuncSetAttribute,
                    [&] {
                      v1::FuncAttributeRequest r;
                      r.set_kernel(mod.kernels(0).handle());
                      return r;
                    }()),
            err::kInvalidDeviceFunction);
  b->Post(CallId::kLaunchKernel, OneThread(mod.kernels(0).handle(), param));
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidDeviceFunction);
  v1::StreamWaitEventRequest w;
  w.set_event(ev.handle());
  b->Post(CallId::kStreamWaitEvent, w);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  v1::EventRecordRequest rec;
  rec.set_event(ev.handle());
  b->Post(CallId::kEventRecord, rec);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  v1::UnregisterModuleRequest un;
  un.set_module(mod.module());
  b->Post(CallId::kUnregisterModule, un);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);

  // a's memory, kernel and event are untouched and still work for a.
  v1::MemcpyDtoHRequest back;
  back.set_src(pa);
  back.set_size(64);
  v1::MemcpyDtoHReply got;
  ASSERT_EQ(a->Call(CallId::kMemcpyDtoH, back, &got), 0);
  EXPECT_EQ(got.data(), std::string(64, '\x11'));
  std::memcpy(param.data(), &pa, sizeof pa);
  a->Post(CallId::kLaunchKernel, OneThread(mod.kernels(0).handle(), param));
  v1::EventRecordRequest mine;
  mine.set_event(ev.handle());
  a->Post(CallId::kEventRecord, mine);
  v1::EventRequest sync;
  sync.set_event(ev.handle());
  EXPECT_EQ(a->Call(CallId::kEventSynchronize, sync), 0);
}

// A device fault breaks the context for every tenant, as on a GPU; the server
// names the tenant whose kernel faulted, rebuilds the context, tells the other
// tenants (whose state is gone) why, and serves new tenants at once.
TEST_F(ServerTest, ADeviceFaultNamesTheCulpritAndNewTenantsAreServed) {
  v1::Hello culprit_hello, bystander_hello, newcomer_hello;
  culprit_hello.set_program("culprit");
  bystander_hello.set_program("bystander");
  newcomer_hello.set_program("newcomer");
  auto a = Client::Connect(path_, culprit_hello);
  auto b = Client::Connect(path_, bystander_hello);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->welcome_status(), 0);
  ASSERT_NE(b->Malloc(1 << 20), 0u);

  uint64_t bad = LoadKernel(*a, kFaultPtx, sizeof kFaultPtx, "_Z3badv");
  ASSERT_NE(bad, 0u);
  a->Post(CallId::kLaunchKernel, OneThread(bad, ""));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kIllegalAddress);

  // The bystander's state died with the context; its calls say whose fault it was.
  bool named = false;
  for (int i = 0; i < 200 && !named; ++i) {
    // MemGetInfo is answered from the ledger: until the rebuild reaches this
    // session it may still succeed; after it, it fails like every call.
    const int code = b->Call(CallId::kMemGetInfo, v1::Empty());
    named = code == err::kIllegalAddress &&
            b->last().message().find("caused by culprit-") != std::string::npos;
    if (!named) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(named) << b->last().message();
  v1::MallocRequest m;
  m.set_size(4096);
  EXPECT_EQ(b->Call(CallId::kMalloc, m), err::kIllegalAddress);  // sticky

  // A new tenant gets a working device: its kernel runs and computes.
  auto c = Client::Connect(path_, newcomer_hello);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  uint64_t p = c->Malloc(4);
  ASSERT_NE(p, 0u);
  v1::MemcpyHtoDRequest h;
  h.set_dst(p);
  h.set_size(4);
  h.mutable_src()->set_data(std::string("\x29\0\0\0", 4));  // 41
  ASSERT_EQ(c->Call(CallId::kMemcpyHtoD, h), 0);
  uint64_t add = LoadKernel(*c, kAddPtx, sizeof kAddPtx, "_Z3addPi");
  ASSERT_NE(add, 0u);
  c->Post(CallId::kLaunchKernel, OneThread(add, std::string(reinterpret_cast<char*>(&p), 8)));
  v1::MemcpyDtoHRequest d;
  d.set_src(p);
  d.set_size(4);
  v1::MemcpyDtoHReply out;
  ASSERT_EQ(c->Call(CallId::kMemcpyDtoH, d, &out), 0);
  ASSERT_EQ(out.data().size(), 4u);
  EXPECT_EQ(out.data()[0], 42);
  EXPECT_EQ(server_->device().last_fault().culprit.rfind("culprit-", 0), 0u)
      << server_->device().last_fault().culprit;
  EXPECT_GE(server_->device().epoch(), 1u);
}

size_t CountThreads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoul(line.substr(8));
  return 0;
}

size_t CountFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// A thousand idle tenants cost no thread each (a fixed pool serves them all),
// and once they leave, every thread and descriptor they cost is gone.
TEST_F(ServerTest, AThousandIdleSessionsHoldNoThreadEachAndLeaveNothing) {
  rlimit nofile{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
  nofile.rlim_cur = nofile.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &nofile), 0);
  constexpr size_t kSessions = 1000;
  if (nofile.rlim_cur < 4 * kSessions + 64) GTEST_SKIP() << "too few descriptors allowed";
  const size_t threads_before = CountThreads(), fds_before = CountFds();
  std::vector<std::unique_ptr<Client>> clients;
  for (size_t i = 0; i < kSessions; ++i) {
    clients.push_back(Client::Connect(path_));
    ASSERT_TRUE(clients.back()) << "session " << i;
    ASSERT_EQ(clients.back()->welcome_status(), 0) << "session " << i;
  }
  ASSERT_TRUE(WaitForSessions(kSessions, 10s));
  // Idle: some time for anything lazily started to settle.
  std::this_thread::sleep_for(200ms);
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_LE(CountThreads(), threads_before + 4 * cores + 16) << "threads grew with idle sessions";
  // Every session still answers.
  for (size_t i = 0; i < kSessions; i += 97)
    EXPECT_EQ(clients[i]->Call(CallId::kStreamQuery, v1::StreamRequest()), 0) << "session " << i;
  clients.clear();
  ASSERT_TRUE(WaitForSessions(0, 30s));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until &&
         (CountThreads() > threads_before || CountFds() > fds_before))
    std::this_thread::sleep_for(20ms);
  EXPECT_LE(CountThreads(), threads_before) << "threads left behind";
  EXPECT_LE(CountFds(), fds_before) << "descriptors left behind";
}

TEST_F(ServerTest, DeadClientIsReapedWithinASecondAndOthersKeepRunning) {
  auto survivor = Client::Connect(path_);
  ASSERT_TRUE(survivor);
  uint64_t keep = survivor->Malloc(1 << 20);
  ASSERT_NE(keep, 0u);
  v1::MemGetInfoReply before;
  ASSERT_EQ(survivor->Call(CallId::kMemGetInfo, v1::Empty(), &before), 0);

  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    auto c = Client::Connect(path_);
    if (!c) _exit(1);
    for (int i = 0; i < 8; ++i) c->Malloc(32 << 20);
    v1::MemsetRequest m;
    m.set_dst(c->Malloc(1 << 20));
    m.set_size(1 << 20);
    for (int i = 0; i < 1000; ++i) c->Post(CallId::kMemsetAsync, m);  // killed mid-stream
    char x = 1;
    (void)!write(ready[1], &x, 1);
    pause();
    _exit(0);
  }
  char x;
  ASSERT_EQ(read(ready[0], &x, 1), 1);
  ASSERT_TRUE(WaitForSessions(2, 2s));
  v1::MemGetInfoReply during;
  ASSERT_EQ(survivor->Call(CallId::kMemGetInfo, v1::Empty(), &during), 0);
  EXPECT_LT(during.free(), before.free());  // the child holds memory
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitForSessions(1, 1000ms)) << "the dead tenant was not reaped within 1 s";
  EXPECT_LE(std::chrono::steady_clock::now() - killed_at, 1000ms);
  v1::MemGetInfoReply after;
  ASSERT_EQ(survivor->Call(CallId::kMemGetInfo, v1::Empty(), &after), 0);
  EXPECT_EQ(after.free(), before.free());  // everything the child held is back
  v1::MemsetRequest m;
  m.set_dst(keep);
  m.set_size(1 << 20);
  EXPECT_EQ(survivor->Call(CallId::kMemset, m), 0);
  close(ready[0]);
  close(ready[1]);
}

// Open mode: a client declares its own quota, so what it may declare is capped.
class OpenCapsTest : public ServerTest {
 protected:
  void Configure(server::ServerOptions& o) override {
    o.open_max_fraction = 0.5;
    o.open_max_priority = sched::Priority::kNormal;
  }
};

TEST_F(OpenCapsTest, ClientsDeclareWithinTheCapsOnly) {
  const uint64_t usable = server_->device().usable_memory();
  v1::Hello big;
  big.mutable_quota()->set_gpu_fraction(0.6);
  auto a = Client::Connect(path_, big);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->welcome_status(), err::kMemoryAllocation);
  EXPECT_NE(a->last().message().find("--open-max-fraction"), std::string::npos)
      << a->last().message();
  v1::Hello high;
  high.mutable_quota()->set_priority("high");
  auto h = Client::Connect(path_, high);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->welcome_status(), err::kNotPermitted);
  v1::Hello greedy;
  greedy.mutable_quota()->set_gpu_compute(0.7);
  auto g = Client::Connect(path_, greedy);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->welcome_status(), err::kInvalidValue);
  // Declaring nothing, or a limit past the cap, gets the cap as its limit.
  auto none = Client::Connect(path_);
  ASSERT_TRUE(none);
  ASSERT_EQ(none->welcome_status(), 0);
  EXPECT_EQ(none->welcome().memory_limit(), usable / 2);
  v1::Hello within;
  within.mutable_quota()->set_gpu_fraction(0.25);
  within.mutable_quota()->set_gpu_fraction_limit(0.9);
  auto w = Client::Connect(path_, within);
  ASSERT_TRUE(w);
  ASSERT_EQ(w->welcome_status(), 0);
  EXPECT_EQ(w->welcome().memory_limit(), usable / 2);
  EXPECT_GT(w->welcome().memory_request(), 0u);
}

// With a tenants file, a token is the only way in, and the file's quota is
// the one granted; one session per tenant; administration needs its token;
// SIGHUP's reload changes who may come next without touching who is here.
class TenantsFileTest : public ServerTest {
 protected:
  void Configure(server::ServerOptions& o) override {
    file_ = path_ + ".yaml";
    Write(R"(
projects:
  - {name: research, gpu-compute: 0.7}
tenants:
  - {name: alice, token: tok-a, project: research, gpu-fraction: 0.25, priority: high}
  - {name: bob, token: tok-b, gpu-memory: 64Mi, gpu-memory-limit: 128Mi}
admin-token: tok-root
)");
    o.tenants_file = file_;
  }
  void TearDown() override {
    ServerTest::TearDown();
    std::filesystem::remove(file_);
  }
  void Write(const std::string& yaml) { std::ofstream(file_) << yaml; }
  static v1::Hello WithToken(const std::string& token) {
    v1::Hello h;
    h.set_token(token);
    h.set_program("prog");
    return h;
  }
  // An administration session with the file's admin token; null (and a test
  // failure) if it was refused.
  std::unique_ptr<Client> Root() {
    v1::Hello admin = WithToken("tok-root");
    admin.set_admin(true);
    auto root = Client::Connect(path_, admin);
    const bool ok = root && root->welcome_status() == 0;
    EXPECT_TRUE(ok);
    return ok ? std::move(root) : nullptr;
  }
  // What `root` lists of tenant `name`: a row per session.
  static std::vector<v1::TenantRow> RowsOf(Client& root, const std::string& name) {
    v1::TenantList list;
    EXPECT_EQ(root.Call(CallId::kListTenants, v1::Empty(), &list), 0);
    std::vector<v1::TenantRow> rows;
    for (const v1::TenantRow& r : list.tenants())
      if (r.tenant().rfind(name + "/", 0) == 0) rows.push_back(r);
    return rows;
  }
  std::string file_;
};

TEST_F(TenantsFileTest, TokensMapToConfiguredTenantsAndTheirQuotas) {
  auto stranger = Client::Connect(path_, WithToken("tok-x"));
  ASSERT_TRUE(stranger);
  EXPECT_EQ(stranger->welcome_status(), err::kNotPermitted);
  auto anonymous = Client::Connect(path_);
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->welcome_status(), err::kNotPermitted);

  v1::Hello asks = WithToken("tok-b");
  asks.mutable_quota()->set_gpu_fraction(0.9);  // ignored: the file says 64Mi
  asks.mutable_quota()->set_priority("high");
  auto bob = Client::Connect(path_, asks);
  ASSERT_TRUE(bob);
  ASSERT_EQ(bob->welcome_status(), 0) << bob->last().message();
  EXPECT_EQ(bob->welcome().memory_request(), 64ull << 20);
  EXPECT_EQ(bob->welcome().memory_limit(), 128ull << 20);
  EXPECT_EQ(bob->welcome().tenant().rfind("bob/", 0), 0u) << bob->welcome().tenant();
  EXPECT_NE(bob->Malloc(100ull << 20), 0u);  // under the limit
  v1::MallocRequest past;
  past.set_size(64ull << 20);
  EXPECT_EQ(bob->Call(CallId::kMalloc, past), err::kMemoryAllocation);

  // The listing shows the project; administration needs the admin token.
  v1::Hello admin = WithToken("tok-a");
  admin.set_admin(true);
  auto not_admin = Client::Connect(path_, admin);
  ASSERT_TRUE(not_admin);
  EXPECT_EQ(not_admin->welcome_status(), err::kNotPermitted);
  auto alice = Client::Connect(path_, WithToken("tok-a"));
  ASSERT_TRUE(alice);
  ASSERT_EQ(alice->welcome_status(), 0);
  admin.set_token("tok-root");
  auto root = Client::Connect(path_, admin);
  ASSERT_TRUE(root);
  ASSERT_EQ(root->welcome_status(), 0);
  v1::TenantList list;
  ASSERT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  ASSERT_EQ(list.tenants_size(), 2);
  for (const v1::TenantRow& r : list.tenants()) {
    if (r.tenant().rfind("alice/", 0) == 0) {
      EXPECT_EQ(r.project(), "research");
      EXPECT_EQ(r.priority(), "high");
    } else {
      EXPECT_EQ(r.project(), "");
    }
  }
  // Evicted by its configured name; then bob may connect again.
  v1::EvictRequest ev;
  ev.set_tenant("bob");
  ASSERT_EQ(root->Call(CallId::kEvictTenant, ev), 0) << root->last().message();
  EXPECT_NE(bob->WaitEvicted().find("administrator"), std::string::npos);
  // Bob's slot is free once his evicted session has ended.
  std::unique_ptr<Client> back;
  for (int i = 0; i < 500 && (!back || back->welcome_status() != 0); ++i) {
    std::this_thread::sleep_for(20ms);
    back = Client::Connect(path_, WithToken("tok-b"));
  }
  ASSERT_TRUE(back);
  EXPECT_EQ(back->welcome_status(), 0) << back->last().message();
}

// remora evict NAME ends every session of the tenant, one per process of it; a
// session id ends that one alone.
TEST_F(TenantsFileTest, EvictByNameEndsEveryProcessOfTheTenant) {
  auto bob1 = Client::Connect(path_, WithToken("tok-b"));
  auto bob2 = Client::Connect(path_, WithToken("tok-b"));
  auto bob3 = Client::Connect(path_, WithToken("tok-b"));
  auto alice = Client::Connect(path_, WithToken("tok-a"));
  for (auto* c : {&bob1, &bob2, &bob3, &alice}) {
    ASSERT_TRUE(*c);
    ASSERT_EQ((*c)->welcome_status(), 0) << (*c)->last().message();
  }
  ASSERT_NE(bob1->Malloc(1 << 20), 0u);
  ASSERT_NE(bob2->Malloc(1 << 20), 0u);
  auto root = Root();
  ASSERT_TRUE(root);
  ASSERT_EQ(RowsOf(*root, "bob").size(), 3u);
  v1::EvictRequest one;
  one.set_session(bob3->welcome().session_id());
  ASSERT_EQ(root->Call(CallId::kEvictTenant, one), 0) << root->last().message();
  EXPECT_NE(bob3->WaitEvicted().find("administrator"), std::string::npos);
  v1::EvictRequest all;
  all.set_tenant("bob");
  ASSERT_EQ(root->Call(CallId::kEvictTenant, all), 0) << root->last().message();
  EXPECT_NE(bob1->WaitEvicted().find("administrator"), std::string::npos);
  EXPECT_NE(bob2->WaitEvicted().find("administrator"), std::string::npos);
  EXPECT_NE(alice->Malloc(1 << 20), 0u);  // another tenant is untouched
  v1::EvictRequest nobody;
  nobody.set_tenant("nobody");
  EXPECT_EQ(root->Call(CallId::kEvictTenant, nobody), err::kInvalidValue);
}

// A tenant's processes share its one target: a second process halves what each
// row shows and leaves the other tenant's as it was.
TEST_F(TenantsFileTest, ListedTargetsCountATenantOnceHoweverManyProcesses) {
  auto alice = Client::Connect(path_, WithToken("tok-a"));
  auto bob1 = Client::Connect(path_, WithToken("tok-b"));
  for (auto* c : {&alice, &bob1}) {
    ASSERT_TRUE(*c);
    ASSERT_EQ((*c)->welcome_status(), 0) << (*c)->last().message();
  }
  auto root = Root();
  ASSERT_TRUE(root);
  const double a1 = RowsOf(*root, "alice").at(0).target_share();
  const double b1 = RowsOf(*root, "bob").at(0).target_share();
  ASSERT_GT(a1, 0);
  ASSERT_GT(b1, 0);
  auto bob2 = Client::Connect(path_, WithToken("tok-b"));
  ASSERT_TRUE(bob2);
  ASSERT_EQ(bob2->welcome_status(), 0);
  EXPECT_NEAR(RowsOf(*root, "alice").at(0).target_share(), a1, 1e-12);
  const std::vector<v1::TenantRow> bobs = RowsOf(*root, "bob");
  ASSERT_EQ(bobs.size(), 2u);
  for (const v1::TenantRow& r : bobs) EXPECT_NEAR(r.target_share(), b1 / 2, 1e-12);
}

// A monitoring session (NVML) sees the slice of the tenant its token names, claims
// nothing (the tenant may still connect, and connects while it watches) and may do
// nothing but ask for that slice.
TEST_F(TenantsFileTest, MonitorSeesItsTenantsSliceAndDoesNothingElse) {
  v1::Hello watch = WithToken("tok-b");
  watch.set_monitor(true);
  auto monitor = Client::Connect(path_, watch);
  ASSERT_TRUE(monitor);
  ASSERT_EQ(monitor->welcome_status(), 0) << monitor->last().message();
  auto bob = Client::Connect(path_, WithToken("tok-b"));
  ASSERT_TRUE(bob);
  ASSERT_EQ(bob->welcome_status(), 0) << "the monitor must not hold bob's one session";
  auto alice = Client::Connect(path_, WithToken("tok-a"));
  ASSERT_TRUE(alice);
  ASSERT_EQ(alice->welcome_status(), 0);
  ASSERT_NE(bob->Malloc(40ull << 20), 0u);
  ASSERT_NE(alice->Malloc(3ull << 20), 0u);

  v1::SliceReply slice;
  ASSERT_EQ(monitor->Call(CallId::kSlice, v1::Empty(), &slice), 0) << monitor->last().message();
  EXPECT_EQ(slice.tenant(), "bob");
  EXPECT_EQ(slice.memory_total(), 128ull << 20);  // bob's limit, from the file
  EXPECT_EQ(slice.memory_used(), 40ull << 20);    // bob's, not alice's
  EXPECT_EQ(slice.memory_free(), 88ull << 20);
  ASSERT_EQ(slice.processes_size(), 1);
  EXPECT_EQ(slice.processes(0).memory_used(), 40ull << 20);
  // Bob asks too, in process (NVML inside a CUDA program): the same slice.
  v1::SliceReply own;
  ASSERT_EQ(bob->Call(CallId::kSlice, v1::Empty(), &own), 0);
  EXPECT_EQ(own.memory_used(), 40ull << 20);

  v1::MallocRequest m;
  m.set_size(1 << 20);
  EXPECT_EQ(monitor->Call(CallId::kMalloc, m), err::kNotPermitted);
  EXPECT_EQ(monitor->Call(CallId::kListTenants, v1::Empty()), err::kNotPermitted);
  v1::Hello stranger = WithToken("tok-x");
  stranger.set_monitor(true);
  auto nobody = Client::Connect(path_, stranger);
  ASSERT_TRUE(nobody);
  EXPECT_EQ(nobody->welcome_status(), err::kNotPermitted);
}

TEST_F(TenantsFileTest, ReloadChangesWhoComesNextAndKeepsWhoIsHere) {
  auto alice = Client::Connect(path_, WithToken("tok-a"));
  ASSERT_TRUE(alice);
  ASSERT_EQ(alice->welcome_status(), 0);
  Write("tenants:\n  - {name: carol, token: tok-c, gpu-fraction: 0.1}\n");
  ASSERT_TRUE(server_->ReloadTenants().ok());
  auto carol = Client::Connect(path_, WithToken("tok-c"));
  ASSERT_TRUE(carol);
  EXPECT_EQ(carol->welcome_status(), 0);
  auto bob = Client::Connect(path_, WithToken("tok-b"));  // no longer in the file
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->welcome_status(), err::kNotPermitted);
  EXPECT_NE(alice->Malloc(1 << 20), 0u);  // alice, admitted before, carries on
  // A broken file is refused and the last good one stays.
  Write("tenants:\n  - {name: dave}\n");
  EXPECT_FALSE(server_->ReloadTenants().ok());
  auto carol2 = Client::Connect(path_, WithToken("tok-c"));  // a second process of carol's
  ASSERT_TRUE(carol2);
  EXPECT_EQ(carol2->welcome_status(), 0) << carol2->last().message();
}

// A tenant's processes share its one quota: what one holds, the other cannot
// take past the limit; each sees the tenant's view; the tenant is listed per
// process with what each holds; a process's memory goes back to the tenant
// when it ends, and the account itself when the last one does.
TEST_F(TenantsFileTest, ATenantsProcessesShareItsQuota) {
  auto bob1 = Client::Connect(path_, WithToken("tok-b"));
  auto bob2 = Client::Connect(path_, WithToken("tok-b"));
  ASSERT_TRUE(bob1 && bob2);
  ASSERT_EQ(bob1->welcome_status(), 0) << bob1->last().message();
  ASSERT_EQ(bob2->welcome_status(), 0) << bob2->last().message();
  EXPECT_EQ(bob2->welcome().memory_limit(), 128ull << 20);
  ASSERT_NE(bob1->Malloc(100ull << 20), 0u);
  v1::MallocRequest big, small;
  big.set_size(64ull << 20);
  small.set_size(16ull << 20);
  EXPECT_EQ(bob2->Call(CallId::kMalloc, big), err::kMemoryAllocation);  // 164Mi > 128Mi
  EXPECT_EQ(bob2->Call(CallId::kMalloc, small), 0) << bob2->last().message();
  v1::MemGetInfoReply info;
  ASSERT_EQ(bob2->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.total(), 128ull << 20);
  EXPECT_EQ(info.free(), 12ull << 20);

  auto root = Root();
  ASSERT_TRUE(root);
  std::vector<uint64_t> used;
  for (const v1::TenantRow& r : RowsOf(*root, "bob")) {
    used.push_back(r.memory_used());
    EXPECT_EQ(r.memory_limit(), 128ull << 20);
    EXPECT_EQ(r.memory_borrowed(), 52ull << 20);  // the tenant's: 116Mi held, 64Mi requested
  }
  std::sort(used.begin(), used.end());
  EXPECT_EQ(used, (std::vector<uint64_t>{16ull << 20, 100ull << 20}));

  // bob1 ends: what it held is the tenant's again.
  bob1.reset();
  int rc = -1;
  for (int i = 0; i < 250 && rc != 0; ++i) {
    std::this_thread::sleep_for(20ms);
    rc = bob2->Call(CallId::kMalloc, big);
  }
  EXPECT_EQ(rc, 0) << bob2->last().message();
  // The last process ends: the account goes, and the next process opens a fresh one.
  bob2.reset();
  std::unique_ptr<Client> bob3;
  uint64_t got = 0;
  for (int i = 0; i < 250 && got == 0; ++i) {
    std::this_thread::sleep_for(20ms);
    bob3 = Client::Connect(path_, WithToken("tok-b"));
    if (bob3 && bob3->welcome_status() == 0) got = bob3->Malloc(128ull << 20);
  }
  EXPECT_NE(got, 0u) << "the whole limit should be free to a fresh process";
}

// A tenant's memory above its request is a loan of the whole tenant: when
// another tenant needs it back, every process of the borrower ends.
TEST_F(TenantsFileTest, AReclaimEndsEveryProcessOfTheBorrower) {
  Write(R"(
tenants:
  - {name: alice, token: tok-a, gpu-fraction: 0.5}
  - {name: bob, token: tok-b, gpu-fraction-limit: 0.9}
)");
  ASSERT_TRUE(server_->ReloadTenants().ok());
  auto bob1 = Client::Connect(path_, WithToken("tok-b"));
  auto bob2 = Client::Connect(path_, WithToken("tok-b"));
  ASSERT_TRUE(bob1 && bob2);
  ASSERT_EQ(bob1->welcome_status(), 0) << bob1->last().message();
  ASSERT_EQ(bob2->welcome_status(), 0) << bob2->last().message();
  const uint64_t limit = bob1->welcome().memory_limit();
  ASSERT_GT(limit, 1u << 30);
  const uint64_t usable = limit / 9 * 10;
  ASSERT_NE(bob1->Malloc(usable / 10 * 3), 0u);
  ASSERT_NE(bob2->Malloc(usable / 10 * 3), 0u);
  auto alice = Client::Connect(path_, WithToken("tok-a"));
  ASSERT_TRUE(alice);
  ASSERT_EQ(alice->welcome_status(), 0) << alice->last().message();
  EXPECT_NE(alice->Malloc(usable / 100 * 45), 0u) << "within alice's request";
  for (Client* bob : {bob1.get(), bob2.get()}) {
    const std::string why = bob->WaitEvicted();
    EXPECT_NE(why.find("reclaimed"), std::string::npos) << why;
    EXPECT_NE(why.find("alice/"), std::string::npos) << why;
  }
}

// With GPU time measured by timing events (as on NVIDIA's driver, whose streams do
// not report their busy time), what the server charges a tenant is what the
// device's own clock says its work took, as the tenant's events measure it.
constexpr char kSpinPtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z4spini(.param .u32 n)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<4>;\n"
    "ld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\nmov.u32 %r3, 0;\n"
    "$L_loop:\nadd.u32 %r3, %r3, 7;\nadd.u32 %r2, %r2, 1;\n"
    "setp.lt.u32 %p1, %r2, %r1;\n@%p1 bra $L_loop;\nret;\n}\n";

class EventTimingTest : public ServerTest {
 protected:
  void Configure(server::ServerOptions&) override { setenv("REMORA_GPU_TIME", "events", 1); }
  void TearDown() override {
    ServerTest::TearDown();
    unsetenv("REMORA_GPU_TIME");
  }
  // The device time charged to the one tenant, once charges stop changing (they
  // land as the executor notices each group's end).
  uint64_t SettledCharge() {
    v1::Hello admin;
    admin.set_admin(true);
    auto root = Client::Connect(path_, admin);
    EXPECT_TRUE(root && root->welcome_status() == 0);
    if (!root) return 0;
    uint64_t charged = 0, before = 1;
    for (int i = 0; i < 100 && (charged == 0 || charged != before); ++i) {
      std::this_thread::sleep_for(50ms);
      before = charged;
      v1::TenantList list;
      EXPECT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
      EXPECT_EQ(list.tenants_size(), 1);
      if (list.tenants_size() != 1) return 0;
      charged = list.tenants(0).gpu_ns();
    }
    return charged;
  }
  // Launches `n` spin kernels of `iters` iterations on `stream`.
  static void Spin(Client& c, uint64_t kernel, uint64_t stream, int n, uint32_t iters) {
    std::string param(4, '\0');
    std::memcpy(param.data(), &iters, sizeof iters);
    v1::LaunchRequest l = OneThread(kernel, param);
    l.set_stream(stream);
    for (int i = 0; i < n; ++i) c.Post(CallId::kLaunchKernel, l);
  }
  // A new event, or 0.
  static uint64_t NewEvent(Client& c) {
    v1::HandleReply e;
    return c.Call(CallId::kEventCreate, v1::EventCreateRequest(), &e) == 0 ? e.handle() : 0;
  }
  static void Record(Client& c, uint64_t event, uint64_t stream) {
    v1::EventRecordRequest rec;
    rec.set_event(event);
    rec.set_stream(stream);
    c.Post(CallId::kEventRecord, rec);  // ordered: answered only with a later call
  }
  // Device ms between two recorded events (after a synchronize), or -1.
  static double ElapsedNs(Client& c, uint64_t start, uint64_t end) {
    v1::EventElapsedRequest el;
    el.set_start(start);
    el.set_end(end);
    v1::EventElapsedReply ms;
    if (c.Call(CallId::kEventElapsedTime, el, &ms) != 0) return -1;
    return static_cast<double>(ms.ms()) * 1e6;
  }
};

TEST_F(EventTimingTest, ChargedGpuTimeIsWhatTheDevicesClockMeasured) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  const uint64_t spin = LoadKernel(*a, kSpinPtx, sizeof kSpinPtx, "_Z4spini");
  ASSERT_NE(spin, 0u);
  const uint64_t e0 = NewEvent(*a), e1 = NewEvent(*a);
  ASSERT_TRUE(e0 != 0 && e1 != 0);
  Record(*a, e0, 0);
  Spin(*a, spin, 0, 8, 2'000'000);
  Record(*a, e1, 0);
  ASSERT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0) << a->last().message();
  const double device_ns = ElapsedNs(*a, e0, e1);
  ASSERT_GT(device_ns, 1e6) << "the kernels should take milliseconds";

  const uint64_t charged = SettledCharge();
  EXPECT_GT(static_cast<double>(charged), 0.8 * device_ns);
  EXPECT_LT(static_cast<double>(charged), 1.25 * device_ns + 2e6);
}

// A stream that waits for another's event is not charged the wait: the time the
// device spent on the other stream's kernels is charged once.
TEST_F(EventTimingTest, AStreamWaitingForAnotherIsNotChargedTheWait) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  const uint64_t spin = LoadKernel(*a, kSpinPtx, sizeof kSpinPtx, "_Z4spini");
  ASSERT_NE(spin, 0u);
  v1::StreamCreateRequest non_blocking;
  non_blocking.set_flags(1);  // cudaStreamNonBlocking: no legacy-stream ordering either
  v1::HandleReply s1, s2;
  ASSERT_EQ(a->Call(CallId::kStreamCreate, non_blocking, &s1), 0);
  ASSERT_EQ(a->Call(CallId::kStreamCreate, non_blocking, &s2), 0);
  const uint64_t e0 = NewEvent(*a), e1 = NewEvent(*a);
  ASSERT_TRUE(e0 != 0 && e1 != 0);
  // s2 starts a group, then waits for s1's kernels, then runs one short kernel.
  Spin(*a, spin, s2.handle(), 1, 1);
  Record(*a, e0, s1.handle());
  Spin(*a, spin, s1.handle(), 8, 2'000'000);
  Record(*a, e1, s1.handle());
  v1::StreamWaitEventRequest w;
  w.set_stream(s2.handle());
  w.set_event(e1);
  a->Post(CallId::kStreamWaitEvent, w);
  Spin(*a, spin, s2.handle(), 1, 1);
  ASSERT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0) << a->last().message();
  const double device_ns = ElapsedNs(*a, e0, e1);
  ASSERT_GT(device_ns, 1e6) << "the kernels should take milliseconds";

  const uint64_t charged = SettledCharge();
  EXPECT_GT(static_cast<double>(charged), 0.8 * device_ns);
  EXPECT_LT(static_cast<double>(charged), 1.25 * device_ns + 2e6) << "the wait was charged";
}

// A reload changes the quota of a tenant that is here: a raised limit lets it
// allocate more at once, a lowered one stops it, and the listing shows both; a
// change that would over-commit the GPU is refused and the old quota stays.
TEST_F(TenantsFileTest, ReloadAppliesNewQuotasToLiveSessions) {
  auto bob = Client::Connect(path_, WithToken("tok-b"));
  ASSERT_TRUE(bob);
  ASSERT_EQ(bob->welcome_status(), 0) << bob->last().message();
  ASSERT_NE(bob->Malloc(100ull << 20), 0u);
  v1::MallocRequest more;
  more.set_size(64ull << 20);
  ASSERT_EQ(bob->Call(CallId::kMalloc, more), err::kMemoryAllocation);  // 128Mi limit
  auto root = Root();
  ASSERT_TRUE(root);
  auto bobs_row = [&] {
    std::vector<v1::TenantRow> rows = RowsOf(*root, "bob");
    if (!rows.empty()) return rows.front();
    ADD_FAILURE() << "bob is not listed";
    return v1::TenantRow();
  };

  Write(R"(
tenants:
  - {name: bob, token: tok-b, gpu-memory: 64Mi, gpu-memory-limit: 256Mi, priority: low, gpu-compute: 0.2}
admin-token: tok-root
)");
  ASSERT_TRUE(server_->ReloadTenants().ok());
  v1::TenantRow row = bobs_row();
  EXPECT_EQ(row.memory_limit(), 256ull << 20);
  EXPECT_EQ(row.priority(), "low");
  EXPECT_DOUBLE_EQ(row.compute_request(), 0.2);
  EXPECT_EQ(bob->Call(CallId::kMalloc, more), 0) << bob->last().message();  // 164Mi now
  v1::MemGetInfoReply info;
  ASSERT_EQ(bob->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.total(), 256ull << 20);
  EXPECT_EQ(info.free(), 92ull << 20);

  // Lowered below what bob holds: he keeps it, and gets nothing more.
  Write(R"(
tenants:
  - {name: bob, token: tok-b, gpu-memory: 32Mi, gpu-memory-limit: 100Mi}
  - {name: carol, token: tok-c, gpu-fraction: 0.5}
admin-token: tok-root
)");
  ASSERT_TRUE(server_->ReloadTenants().ok());
  EXPECT_EQ(bobs_row().memory_limit(), 100ull << 20);
  EXPECT_EQ(bobs_row().memory_used(), 164ull << 20);
  v1::MallocRequest one;
  one.set_size(1 << 20);
  EXPECT_EQ(bob->Call(CallId::kMalloc, one), err::kMemoryAllocation);
  ASSERT_EQ(bob->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.free(), 0u);

  // Beside carol's half, a request of three quarters cannot be guaranteed:
  // refused, and bob's quota stays.
  auto carol = Client::Connect(path_, WithToken("tok-c"));
  ASSERT_TRUE(carol);
  ASSERT_EQ(carol->welcome_status(), 0) << carol->last().message();
  Write(R"(
tenants:
  - {name: bob, token: tok-b, gpu-fraction: 0.75}
  - {name: carol, token: tok-c, gpu-fraction: 0.5}
admin-token: tok-root
)");
  ASSERT_TRUE(server_->ReloadTenants().ok());
  EXPECT_EQ(bobs_row().memory_limit(), 100ull << 20) << "an over-committing change was applied";
}

// /metrics lists each tenant with what it holds and the server's counters.
class MetricsServerTest : public ServerTest {
 protected:
  void Configure(server::ServerOptions& o) override { o.metrics_addr = "127.0.0.1:0"; }
  std::string Scrape() {
    httplib::Client http("127.0.0.1", server_->metrics_port());
    auto r = http.Get("/metrics");
    return r && r->status == 200 ? r->body : "";
  }
};

TEST_F(MetricsServerTest, ScrapeShowsTenantsAndEvictions) {
  ASSERT_GT(server_->metrics_port(), 0);
  v1::Hello h;
  h.set_program("metered");
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  ASSERT_NE(a->Malloc(1 << 20), 0u);
  v1::MallocRequest huge;
  huge.set_size(1ull << 60);
  EXPECT_NE(a->Call(CallId::kMalloc, huge), 0);
  const std::string text = Scrape();
  const std::string labels = "{session=\"" + std::to_string(a->welcome().session_id()) +
                             "\",tenant=\"" + a->welcome().tenant() +
                             "\",project=\"\",priority=\"normal\"}";
  EXPECT_NE(text.find("remora_tenant_memory_used_bytes" + labels + " 1048576\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("remora_tenant_errors_total" + labels + " 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("remora_sessions_opened_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("remora_tenants 1\n"), std::string::npos) << text;

  v1::Hello admin;
  admin.set_admin(true);
  auto root = Client::Connect(path_, admin);
  ASSERT_TRUE(root);
  ASSERT_EQ(root->welcome_status(), 0);
  v1::EvictRequest ev;
  ev.set_session(a->welcome().session_id());
  ASSERT_EQ(root->Call(CallId::kEvictTenant, ev), 0);
  EXPECT_NE(Scrape().find("remora_admin_evictions_total 1\n"), std::string::npos);
}

TEST_F(MetricsServerTest, DrainingShowsAsAGauge) {
  EXPECT_NE(Scrape().find("remora_draining 0\n"), std::string::npos);
  server_->Drain();
  EXPECT_NE(Scrape().find("remora_draining 1\n"), std::string::npos);
}

}  // namespace
}  // namespace remora
