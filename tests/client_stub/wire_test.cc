// tests/client_stub/wire_test.cc - the stub against a fake server on an in-process shm listener.
//
// The fake server keeps device memory in host vectors and answers the calls the
// stub makes, so the tests check both what goes on the wire and what the app
// sees. One connection serves the whole binary (the stub connects once per
// process); the sticky-error test runs last because a sticky error never clears.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "client_stub/api.h"
#include "proto/arena.h"
#include "proto/calls.h"
#include "proto/fixed.h"
#include "proto/reply.h"
#include "remora/v1/session.pb.h"
#include "transport/fragment.h"
#include "transport/shm/shm_channel.h"
#ifdef REMORA_WIRE_GRPC
#include "transport/grpc/listener.h"
#endif

namespace remora::client_stub {
namespace {

using namespace std::chrono_literals;
using transport::Deadline;
using transport::Frame;

// Built twice: over shm (arena, staging slots) and, with REMORA_WIRE_GRPC, over
// gRPC (no arena: bytes travel inline, in chunks below the 4 MiB frame body).
#ifdef REMORA_WIRE_GRPC
constexpr bool kShm = false;
#else
constexpr bool kShm = true;
#endif

constexpr uint32_t kSlots = 2;
constexpr uint64_t kSlotBytes = 64 << 10;
constexpr uint64_t kHeapOffset = arena::AlignUp(arena::StagingBytes(kSlots, kSlotBytes), 1 << 20);
constexpr uint64_t kHeapBytes = 4 << 20;

struct Logged {
  uint32_t call;
  uint64_t seq;
  std::string body;
  uint32_t flags = 0;
};

// A request body in whichever form the stub sent it (protobuf, or the fixed
// layout of proto/fixed.h for the messages that have one).
template <class M>
bool DecodeRequest(uint32_t flags, std::string_view body, M& m) {
  if (flags & fixed::kFixedLayout) {
    if constexpr (fixed::kHasLayout<M>)
      return fixed::Decode(std::as_bytes(std::span(body.data(), body.size())), m);
    else
      return false;
  }
  return m.ParseFromArray(body.data(), static_cast<int>(body.size()));
}
template <class M>
bool DecodeRequest(const Logged& l, M& m) {
  return DecodeRequest(l.flags, l.body, m);
}

class FakeServer {
 public:
  // Listens on `path` (shm) or an ephemeral local port (grpc); address() is
  // what REMORA_SERVER should say.
  explicit FakeServer([[maybe_unused]] std::string path) {
#ifdef REMORA_WIRE_GRPC
    auto l = transport::GrpcListener::Listen("127.0.0.1:0", {});
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    address_ = "grpc://127.0.0.1:" + std::to_string((*l)->port());
#else
    transport::ShmOptions opts;
    opts.arena_bytes = 64 << 20;
    auto l = transport::ShmListener::Listen(path, opts);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    address_ = "unix:" + path;
#endif
    listener_ = std::move(*l);
    thread_ = std::thread([this] { Run(); });
  }
  const std::string& address() const {
    return address_;
  }
  ~FakeServer() {
    stop_ = true;
    listener_->Shutdown();
    thread_.join();
  }

  std::vector<Logged> Log() {
    std::lock_guard lock(mu_);
    return log_;
  }
  size_t LogSize() {
    std::lock_guard lock(mu_);
    return log_.size();
  }
  // The last frame the stub sent with `id`, parsed.
  template <class M>
  M Last(CallId id) {
    M m;
    std::lock_guard lock(mu_);
    for (auto it = log_.rbegin(); it != log_.rend(); ++it) {
      if (it->call == static_cast<uint32_t>(id)) {
        EXPECT_TRUE(DecodeRequest(*it, m));
        return m;
      }
    }
    ADD_FAILURE() << "no frame with call " << static_cast<uint32_t>(id);
    return m;
  }
  size_t Count(CallId id) {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const Logged& l : log_) n += l.call == static_cast<uint32_t>(id);
    return n;
  }
  // Reported as Reply.deferred_code by the next SYNC reply.
  void Defer(int code) {
    deferred_ = code;
  }
  void DeviceOutput(std::string s) {
    std::lock_guard lock(mu_);
    device_output_ = std::move(s);
  }
  // shm: true if no staging slot is claimed (every flag 0).
  bool SlotsFree() {
    for (uint32_t i = 0; i < kSlots; ++i)
      if (std::atomic_ref<uint32_t>(
              *reinterpret_cast<uint32_t*>(Arena() + arena::StagingFlagOffset(0, i)))
              .load(std::memory_order_acquire) != 0)
        return false;
    return true;
  }
  std::vector<std::byte>* Memory(uint64_t addr) {
    std::lock_guard lock(mu_);
    auto it = mem_.find(addr);
    return it == mem_.end() ? nullptr : &it->second;
  }

 private:
  void Run() {
    transport::PeerInfo peer;
    while (!stop_ && !ch_) {
      auto ch = listener_->Accept(peer, Deadline::In(100ms));
      if (ch.ok()) ch_ = std::make_unique<transport::FragmentingChannel>(std::move(*ch));
    }
    Frame f;
    while (!stop_ && ch_) {
      Status s = ch_->Receive(f, Deadline::In(50ms));
      if (s.code() == err::kNotReady) continue;
      if (!s.ok()) break;
      {
        std::lock_guard lock(mu_);
        log_.push_back({f.header.call, f.header.seq,
                        std::string(reinterpret_cast<const char*>(f.body.data()), f.body.size()),
                        f.header.flags});
      }
      Handle(f);
    }
  }

  std::byte* Arena() {
    return ch_->arena()->base();
  }

  // The device bytes at [addr, addr + n), or nullptr if outside every allocation.
  std::byte* Device(uint64_t addr, uint64_t n) {
    std::lock_guard lock(mu_);
    auto it = mem_.upper_bound(addr);
    if (it == mem_.begin()) return nullptr;
    --it;
    if (addr - it->first + n > it->second.size()) return nullptr;
    return it->second.data() + (addr - it->first);
  }

  template <class M>
  static M Parse(const Frame& f) {
    M m;
    EXPECT_TRUE(DecodeRequest(f.header.flags,
                              {reinterpret_cast<const char*>(f.body.data()), f.body.size()}, m));
    return m;
  }

  void Reply(const Frame& f, int code, const google::protobuf::Message* result = nullptr) {
    const CallInfo* info = FindCall(f.header.call);
    if (!info || info->cls != CallClass::kSync) return;  // ORDERED: failures are deferred
    std::string output;
    {
      std::lock_guard lock(mu_);
      output = std::exchange(device_output_, "");
    }
    // A fixed-layout request is answered in fixed layout, as the real server does.
    const uint32_t flags = f.header.flags & fixed::kFixedLayout;
    v1::Reply scratch;
    std::string body;
    ReplyParts parts;
    parts.code = code;
    parts.deferred_code = deferred_.exchange(0);
    parts.output = output;
    parts.result = code == 0 ? result : nullptr;
    ASSERT_TRUE(EncodeReply(flags != 0, parts, scratch, body));
    ASSERT_TRUE(ch_->Send({.call = f.header.call, .flags = flags, .seq = f.header.seq},
                          {reinterpret_cast<const std::byte*>(body.data()), body.size()})
                    .ok());
  }

  uint64_t Alloc(uint64_t size) {
    std::lock_guard lock(mu_);
    uint64_t a = next_addr_;
    next_addr_ += arena::AlignUp(size, 256) + 256;
    mem_[a].resize(size);
    return a;
  }

  void Handle(const Frame& f) {
    switch (static_cast<CallId>(f.header.call)) {
      case CallId::kHello: {
        v1::Welcome w;
        w.set_protocol_version(kProtocolVersion);
        w.set_session_id(7);
        w.set_tenant("test");
        v1::DeviceInfo* d = w.mutable_device();
        d->set_name("Fake GPU");
        d->set_total_mem(1 << 30);
        d->set_driver_version(13000);
        d->mutable_attributes()->Resize(150, 0);
        d->mutable_attributes()->Set(cudaDevAttrMaxThreadsPerBlock, 1024);
        d->mutable_attributes()->Set(cudaDevAttrMaxBlockDimX, 1024);
        d->mutable_attributes()->Set(cudaDevAttrMaxBlockDimY, 1024);
        d->mutable_attributes()->Set(cudaDevAttrMaxBlockDimZ, 64);
        d->mutable_attributes()->Set(cudaDevAttrMaxGridDimX, 2147483647);
        d->mutable_attributes()->Set(cudaDevAttrMaxGridDimY, 65535);
        d->mutable_attributes()->Set(cudaDevAttrMaxGridDimZ, 65535);
        d->mutable_attributes()->Set(cudaDevAttrMultiProcessorCount, 4);
        w.set_staging_offset(0);
        w.set_staging_slot_bytes(kSlotBytes);
        w.set_staging_slots(kSlots);
        w.set_heap_offset(kHeapOffset);
        w.set_heap_bytes(kHeapBytes);
        v1::Reply r;
        r.set_result(w.SerializeAsString());
        std::string body = r.SerializeAsString();
        ASSERT_TRUE(ch_->Send({.call = 0, .seq = f.header.seq},
                              {reinterpret_cast<const std::byte*>(body.data()), body.size()})
                        .ok());
        return;
      }
      case CallId::kMalloc: {
        v1::MallocReply rep;
        rep.set_dptr(Alloc(Parse<v1::MallocRequest>(f).size()));
        return Reply(f, 0, &rep);
      }
      case CallId::kFree: {
        bool found;
        {
          std::lock_guard lock(mu_);
          found = mem_.erase(Parse<v1::FreeRequest>(f).dptr()) != 0;
        }
        return Reply(f, found ? 0 : cudaErrorInvalidValue);
      }
      case CallId::kMemcpyHtoD:
      case CallId::kMemcpyHtoDAsync: {
        auto req = Parse<v1::MemcpyHtoDRequest>(f);
        std::byte* dst = Device(req.dst(), req.size());
        const std::byte* src = req.src().has_arena_offset()
                                   ? Arena() + req.src().arena_offset()
                                   : reinterpret_cast<const std::byte*>(req.src().data().data());
        if (dst) std::memcpy(dst, src, req.size());
        if (req.staging_slot())
          std::atomic_ref<uint32_t>(
              *reinterpret_cast<uint32_t*>(Arena() +
                                           arena::StagingFlagOffset(0, req.staging_slot() - 1)))
              .store(0, std::memory_order_release);
        if (!dst) deferred_ = cudaErrorInvalidValue;
        return Reply(f, 0);
      }
      case CallId::kMemcpyDtoH:
      case CallId::kMemcpyDtoHAsync: {
        auto req = Parse<v1::MemcpyDtoHRequest>(f);
        std::byte* src = Device(req.src(), req.size());
        if (!src && req.async()) {  // as the real server: reported by the next SYNC reply
          int none = 0;
          deferred_.compare_exchange_strong(none, cudaErrorInvalidValue);
        }
        if (!src) return Reply(f, cudaErrorInvalidValue);
        v1::MemcpyDtoHReply rep;
        if (req.to_arena())
          std::memcpy(Arena() + req.dst_arena_offset(), src, req.size());
        else
          rep.set_data(src, req.size());
        return Reply(f, 0, &rep);
      }
      case CallId::kMemcpyDtoD:
      case CallId::kMemcpyDtoDAsync: {
        auto req = Parse<v1::MemcpyDtoDRequest>(f);
        std::byte* dst = Device(req.dst(), req.size());
        std::byte* src = Device(req.src(), req.size());
        if (dst && src) std::memmove(dst, src, req.size());
        return Reply(f, dst && src ? 0 : cudaErrorInvalidValue);
      }
      case CallId::kMemset:
      case CallId::kMemsetAsync: {
        auto req = Parse<v1::MemsetRequest>(f);
        std::byte* dst = Device(req.dst(), req.size());
        if (dst) std::memset(dst, static_cast<int>(req.value()), req.size());
        return Reply(f, dst ? 0 : cudaErrorInvalidValue);
      }
      case CallId::kStreamCreate:
      case CallId::kEventCreate: {
        v1::HandleReply rep;
        rep.set_handle(next_handle_++);
        return Reply(f, 0, &rep);
      }
      case CallId::kLaunchHostFunc: {
        v1::HostFuncRun run;
        run.set_id(Parse<v1::HostFuncRequest>(f).id());
        std::string body = run.SerializeAsString();
        ASSERT_TRUE(ch_->Send({.call = static_cast<uint32_t>(CallId::kHostFuncRun), .seq = 0},
                              {reinterpret_cast<const std::byte*>(body.data()), body.size()})
                        .ok());
        return;
      }
      case CallId::kEventElapsedTime: {
        v1::EventElapsedReply rep;
        rep.set_ms(1.5f);
        return Reply(f, 0, &rep);
      }
      case CallId::kMemGetInfo: {
        v1::MemGetInfoReply rep;
        rep.set_free(3 << 20);
        rep.set_total(1 << 30);
        return Reply(f, 0, &rep);
      }
      case CallId::kRegisterModule: {
        auto req = Parse<v1::RegisterModuleRequest>(f);
        v1::RegisterModuleReply rep;
        bool known;
        {
          std::lock_guard lock(mu_);
          if (req.images_size() > 0) known_hashes_.insert(req.hash());
          known = known_hashes_.count(req.hash()) > 0;
        }
        if (!known) {  // as the real server: ask for the images
          rep.set_images_needed(true);
          return Reply(f, 0, &rep);
        }
        rep.set_module(42);
        uint64_t handle = 500;
        for (const std::string& k : req.kernels()) {
          if (k.find("missing") != std::string::npos) continue;  // as if not in the module
          v1::KernelLayout* l = rep.add_kernels();
          l->set_name(k);
          l->set_handle(handle++);
          l->add_offsets(0);
          l->add_sizes(8);
          l->add_offsets(8);
          l->add_sizes(4);
          l->set_param_bytes(16);
        }
        for (const std::string& v : req.variables()) {
          v1::VariableInfo* vi = rep.add_variables();
          vi->set_name(v);
          vi->set_dptr(Alloc(64));
        }
        return Reply(f, 0, &rep);
      }
      default:
        return Reply(f, 0);
    }
  }

  std::string address_;
  std::unique_ptr<transport::Listener> listener_;
  std::unique_ptr<transport::Channel> ch_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> deferred_{0};
  std::mutex mu_;
  std::vector<Logged> log_;
  std::map<uint64_t, std::vector<std::byte>> mem_;
  std::set<std::string> known_hashes_;
  std::string device_output_;
  uint64_t next_addr_ = 0x700000000000;
  uint64_t next_handle_ = 1;
};

class Wire : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    std::string path = "/tmp/remora-stub-wire-" + std::to_string(getpid()) + ".sock";
    server_ = new FakeServer(path);  // NOLINT: lives for the whole binary
    setenv("REMORA_SERVER", server_->address().c_str(), 1);
    setenv("REMORA_TOKEN", "tok-123", 1);
    setenv("REMORA_GPU_MEMORY", "512Mi", 1);
    setenv("REMORA_GPU_MEMORY_LIMIT", "1Gi", 1);
  }
  static FakeServer* server_;
};
FakeServer* Wire::server_ = nullptr;

std::vector<std::byte> Pattern(size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) & 0xFF);
  return v;
}

// Waits until `pred` holds (the server thread runs asynchronously).
template <class Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 400; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

TEST_F(Wire, HelloCarriesTokenQuotaAndIdentity) {
  int n = -1;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 1);
  auto hello = server_->Last<v1::Hello>(CallId::kHello);
  EXPECT_EQ(hello.protocol_version(), kProtocolVersion);
  EXPECT_EQ(hello.token(), "tok-123");
  EXPECT_EQ(hello.quota().gpu_memory(), 512u << 20);
  EXPECT_EQ(hello.quota().gpu_memory_limit(), 1u << 30);
  EXPECT_EQ(hello.client_pid(), getpid());
  EXPECT_FALSE(hello.program().empty());
}

TEST_F(Wire, DevicePropertiesAreLocal) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);  // connected: Hello is behind us
  size_t before = server_->LogSize();
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_STREQ(p.name, "Fake GPU");
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
  EXPECT_EQ(p.multiProcessorCount, 4);
  int v = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMaxGridDimY, 0), cudaSuccess);
  EXPECT_EQ(v, 65535);
  EXPECT_EQ(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  int dev = -1;
  EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(dev, 0);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(12345)), "unrecognized error code");
  EXPECT_STREQ(cudaGetErrorString(static_cast<cudaError_t>(12345)), "unrecognized error code");
  int rt = 0;
  EXPECT_EQ(cudaRuntimeGetVersion(&rt), cudaSuccess);
  EXPECT_EQ(rt, 13000);
  EXPECT_EQ(server_->LogSize(), before);
}

TEST_F(Wire, MallocSendsRequestAndReturnsThePointer) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1000), cudaSuccess);
  EXPECT_EQ(server_->Last<v1::MallocRequest>(CallId::kMalloc).size(), 1000u);
  EXPECT_NE(server_->Memory(reinterpret_cast<uintptr_t>(d)), nullptr);
  cudaPointerAttributes a;
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(d) + 10), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(server_->Last<v1::FreeRequest>(CallId::kFree).dptr(), reinterpret_cast<uintptr_t>(d));
  EXPECT_EQ(server_->Memory(reinterpret_cast<uintptr_t>(d)), nullptr);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(free, 3u << 20);

  // A pitched allocation whose row size overflows is refused, never a null success.
  size_t pitch = 0;
  d = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaMallocPitch(&d, &pitch, SIZE_MAX - 3, 2), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMallocPitch(&d, &pitch, SIZE_MAX / 2, 4), cudaErrorMemoryAllocation);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaMallocPitch(&d, &pitch, 1000, 3), cudaSuccess);
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(server_->Last<v1::MallocRequest>(CallId::kMalloc).size(), 3072u);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Wire, PageableCopiesAreChunked) {
  // shm: six staged chunks each way; grpc: three inline chunks.
  const size_t n = kShm ? 5 * kSlotBytes + 123 : (8 << 20) + 123;
  const size_t chunks = kShm ? 6 : 3;
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
  auto src = Pattern(n, 1);
  size_t htod = server_->Count(CallId::kMemcpyHtoD),
         htod_async = server_->Count(CallId::kMemcpyHtoDAsync);
  ASSERT_EQ(cudaMemcpy(d, src.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kMemcpyHtoD), htod + 1);  // only the last chunk waits
  EXPECT_EQ(server_->Count(CallId::kMemcpyHtoDAsync), htod_async + chunks - 1);
  auto last = server_->Last<v1::MemcpyHtoDRequest>(CallId::kMemcpyHtoD);
  EXPECT_EQ(last.staging_slot() != 0, kShm);
  EXPECT_EQ(last.src().has_data(), !kShm);
  EXPECT_LE(last.size(), kShm ? kSlotBytes : 4u << 20);
  EXPECT_EQ(*server_->Memory(reinterpret_cast<uintptr_t>(d)), src);

  std::vector<std::byte> back(n);
  ASSERT_EQ(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, src);
  auto dtoh = server_->Last<v1::MemcpyDtoHRequest>(CallId::kMemcpyDtoH);
  EXPECT_EQ(dtoh.to_arena(), kShm);
  EXPECT_LE(dtoh.size(), kShm ? kSlotBytes : 4u << 20);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

// shm: a pageable device-to-host copy keeps two slots busy. Here (two slots)
// every batch is one chunk: the first is waited for whole, each later one is
// posted but for a one-page tail that the stub sends, to wait, once it copied the
// previous chunk out; a last chunk of a page or less goes whole.
TEST_F(Wire, PageableDeviceToHostIsPipelined) {
  const size_t n = 7 * kSlotBytes + 321;  // eight chunks
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
  const uint64_t base = reinterpret_cast<uintptr_t>(d);
  auto src = Pattern(n, 5);
  *server_->Memory(base) = src;
  const size_t mark = server_->LogSize();
  std::vector<std::byte> back(n);
  ASSERT_EQ(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, src);
  if (kShm) {
    EXPECT_TRUE(server_->SlotsFree());
    // The pieces cover the source once, in order, each inside one staging slot.
    const uint64_t slots_at = arena::StagingSlotOffset(0, kSlots, kSlotBytes, 0);
    uint64_t at = base;
    size_t waited = 0, posted = 0;
    std::vector<Logged> log = server_->Log();
    for (size_t i = mark; i < log.size(); ++i) {
      const auto id = static_cast<CallId>(log[i].call);
      if (id != CallId::kMemcpyDtoH && id != CallId::kMemcpyDtoHAsync) continue;
      v1::MemcpyDtoHRequest req;
      ASSERT_TRUE(DecodeRequest(log[i], req));
      EXPECT_EQ(req.src(), at);
      EXPECT_TRUE(req.to_arena());
      EXPECT_EQ(req.async(), id == CallId::kMemcpyDtoHAsync);
      ASSERT_GE(req.dst_arena_offset(), slots_at);
      EXPECT_LE((req.dst_arena_offset() - slots_at) % kSlotBytes + req.size(), kSlotBytes);
      EXPECT_EQ((req.dst_arena_offset() - slots_at) % kSlotBytes, (req.src() - base) % kSlotBytes);
      at += req.size();
      ++(id == CallId::kMemcpyDtoH ? waited : posted);
    }
    EXPECT_EQ(at, base + n);
    EXPECT_EQ(posted, 6u);
    EXPECT_EQ(waited, 8u);
    EXPECT_EQ(server_->Last<v1::MemcpyDtoHRequest>(CallId::kMemcpyDtoH).size(), 321u);
  }
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

// A piece failing after the first batch: its error comes back from that batch's
// wait; shm: the stream is synchronised before the slots the failed batch was
// posted into go back, and every slot is free again.
TEST_F(Wire, PageableDeviceToHostFailingMidwayFreesTheSlots) {
  const size_t n = 3 * kSlotBytes;
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
  const uint64_t base = reinterpret_cast<uintptr_t>(d);
  server_->Memory(base)->resize(kSlotBytes);  // the server lost the rest: chunk 1 fails
  const size_t syncs = server_->Count(CallId::kStreamSynchronize);
  std::vector<std::byte> back(n);
  EXPECT_EQ(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  if (kShm) {
    EXPECT_TRUE(server_->SlotsFree());
    EXPECT_EQ(server_->Count(CallId::kStreamSynchronize), syncs + 1);
  }
  auto src = Pattern(n, 6);
  *server_->Memory(base) = src;
  ASSERT_EQ(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, src);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

// Threads sharing the slots: a pipelined device-to-host copy waits for a slot
// only while it holds none, so copies both ways from several threads all finish.
TEST_F(Wire, PageableCopiesFromManyThreadsShareTheSlots) {
  constexpr int kThreads = 4;
  const size_t n = 4 * kSlotBytes + 77;
  std::vector<void*> d(kThreads);
  for (void*& p : d) ASSERT_EQ(cudaMalloc(&p, n), cudaSuccess);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::byte> back(n);
      for (int round = 0; round < 6; ++round) {
        auto src = Pattern(n, 10 * t + round);
        if (cudaMemcpy(d[t], src.data(), n, cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemcpy(back.data(), d[t], n, cudaMemcpyDeviceToHost) != cudaSuccess || back != src)
          ++failures;
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  if (kShm) {
    EXPECT_TRUE(server_->SlotsFree());
  }
  for (void* p : d) ASSERT_EQ(cudaFree(p), cudaSuccess);
}

// shm: pinned memory lives in the arena heap; grpc: page-aligned malloc, inline bytes.
TEST_F(Wire, PinnedCopiesUseArenaOffsetsInOnePass) {
  void* h = nullptr;
  ASSERT_EQ(cudaMallocHost(&h, 3 * kSlotBytes), cudaSuccess);
  // The fake server does not map the arena for kernels (it cannot share this
  // process's addresses): pinned memory is not device-mapped.
  void* dev_view = nullptr;
  EXPECT_EQ(cudaHostGetDevicePointer(&dev_view, h, 0), cudaErrorNotSupported);
  std::vector<std::byte> pageable(16);
  EXPECT_EQ(cudaHostGetDevicePointer(&dev_view, pageable.data(), 0), cudaErrorInvalidValue);
  (void)cudaGetLastError();

  auto src = Pattern(3 * kSlotBytes, 2);
  std::memcpy(h, src.data(), src.size());
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, src.size()), cudaSuccess);
  size_t before = server_->Count(CallId::kMemcpyHtoD);
  ASSERT_EQ(cudaMemcpy(d, h, src.size(), cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kMemcpyHtoD), before + 1);
  auto req = server_->Last<v1::MemcpyHtoDRequest>(CallId::kMemcpyHtoD);
  if (kShm) {
    EXPECT_GE(req.src().arena_offset(), kHeapOffset);
  }
  EXPECT_EQ(req.src().has_data(), !kShm);
  EXPECT_EQ(req.staging_slot(), 0u);
  EXPECT_EQ(req.size(), src.size());

  std::memset(h, 0, src.size());
  ASSERT_EQ(cudaMemcpyAsync(h, d, src.size(), cudaMemcpyDeviceToHost, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(std::memcmp(h, src.data(), src.size()), 0);
  if (kShm) {
    EXPECT_TRUE(server_->Last<v1::MemcpyDtoHRequest>(CallId::kMemcpyDtoHAsync).to_arena());
  }
  ASSERT_EQ(cudaFreeHost(h), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pageable.data()), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Wire, DefaultKindMemsetAndDirectionChecks) {
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 256), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 256), cudaSuccess);
  ASSERT_EQ(cudaMemset(a, 0x5A, 256), cudaSuccess);
  EXPECT_EQ(server_->Last<v1::MemsetRequest>(CallId::kMemset).value(), 0x5Au);
  ASSERT_EQ(cudaMemcpy(b, a, 256, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(server_->Last<v1::MemcpyDtoDRequest>(CallId::kMemcpyDtoD).src(),
            reinterpret_cast<uintptr_t>(a));
  std::vector<unsigned char> out(256);
  ASSERT_EQ(cudaMemcpy(out.data(), b, 256, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(out, std::vector<unsigned char>(256, 0x5A));

  EXPECT_EQ(cudaMemcpy(out.data(), b, 256, static_cast<cudaMemcpyKind>(7)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpy(out.data(), b, 257, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaFree(a), cudaSuccess);
  ASSERT_EQ(cudaFree(b), cudaSuccess);
}

TEST_F(Wire, DeferredCodeSurfacesOnNextSyncCallAndInLastError) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d, 1, 64, nullptr), cudaSuccess);  // posted
  server_->Defer(cudaErrorLaunchOutOfResources);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchOutOfResources);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorLaunchOutOfResources);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchOutOfResources);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Wire, DeviceOutputIsPrintedToStdout) {
  server_->DeviceOutput("hello from the device\n");
  testing::internal::CaptureStdout();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "hello from the device\n");
}

TEST_F(Wire, StreamsAndEvents) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_NE(s, nullptr);
  EXPECT_NE(s, cudaStreamLegacy);
  EXPECT_NE(s, cudaStreamPerThread);
  EXPECT_EQ(server_->Last<v1::StreamCreateRequest>(CallId::kStreamCreate).flags(),
            static_cast<unsigned>(cudaStreamNonBlocking));
  cudaStream_t bad_flags;
  EXPECT_EQ(cudaStreamCreateWithFlags(&bad_flags, 0x10), cudaErrorInvalidValue);

  size_t before = server_->LogSize();
  EXPECT_EQ(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x999)),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(server_->LogSize(), before);  // refused locally

  cudaEvent_t e0, e1;
  ASSERT_EQ(cudaEventCreate(&e0), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&e1, cudaEventBlockingSync), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e0, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e1, s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(cudaStreamPerThread, e1, 0), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(e1), cudaSuccess);  // the server has read the posted frames
  auto wait = server_->Last<v1::StreamWaitEventRequest>(CallId::kStreamWaitEvent);
  EXPECT_EQ(wait.stream(), 0u);
  EXPECT_EQ(wait.event(), reinterpret_cast<uintptr_t>(e1));
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
  EXPECT_FLOAT_EQ(ms, 1.5f);
  auto rec = server_->Last<v1::EventRecordRequest>(CallId::kEventRecord);
  EXPECT_EQ(rec.stream(), StreamId(s));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(server_->Last<v1::StreamRequest>(CallId::kStreamSynchronize).stream(), StreamId(s));
  ASSERT_EQ(cudaEventDestroy(e0), cudaSuccess);
  ASSERT_EQ(cudaEventDestroy(e1), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(e1), cudaErrorInvalidResourceHandle);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
}

std::atomic<int> g_host_calls{0};
std::atomic<int> g_callback_status{-1};

TEST_F(Wire, HostFunctionsRunOnTheCallbackThreadAndAreAcknowledged) {
  size_t done_before = server_->Count(CallId::kHostFuncDone);
  ASSERT_EQ(
      cudaLaunchHostFunc(
          nullptr, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &g_host_calls),
      cudaSuccess);
  ASSERT_EQ(
      cudaStreamAddCallback(
          nullptr, [](cudaStream_t, cudaError_t status, void*) { g_callback_status = status; },
          nullptr, 0),
      cudaSuccess);
  EXPECT_TRUE(Eventually([] { return g_host_calls.load() == 1 && g_callback_status == 0; }));
  EXPECT_TRUE(Eventually([&] { return server_->Count(CallId::kHostFuncDone) == done_before + 2; }));
  auto req = server_->Last<v1::HostFuncRequest>(CallId::kLaunchHostFunc);
  EXPECT_EQ(server_->Last<v1::HostFuncDone>(CallId::kHostFuncDone).id(), req.id());
  EXPECT_EQ(cudaStreamAddCallback(nullptr, nullptr, nullptr, 0), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

// What __cudaRegisterFatBinary receives: a v1 wrapper around one fat binary.
struct FatbinWrapper {
  uint32_t magic = 0x466243B1, version = 1;
  const void* data;
  const void* extra = nullptr;
};

// A registered "module": an empty fat binary behind a v1 wrapper.
struct FakeFatbin {
  alignas(8) uint32_t fatbin[4] = {0xBA55ED50, 0x00100001, 0, 0};  // magic, v1, header 16, 0 bytes
  FatbinWrapper wrapper{.data = fatbin};
};

void FakeKernel(int64_t, int) {}

// What nvcc's constructor does for one kernel of a module.
void RegisterKernel(void** module, void (*host_stub)(int64_t, int), const char* name) {
  __cudaRegisterFunction(module, reinterpret_cast<const char*>(host_stub), nullptr, name, -1,
                         nullptr, nullptr, nullptr, nullptr, nullptr);
}
int g_device_var_shadow;

TEST_F(Wire, KernelsRegisterLazilyAndLaunchWithPackedParams) {
  static FakeFatbin fb;
  size_t registers = server_->Count(CallId::kRegisterModule);
  void** h = __cudaRegisterFatBinary(&fb.wrapper);
  RegisterKernel(h, &FakeKernel, "_Z4fakeli");
  __cudaRegisterVar(h, reinterpret_cast<char*>(&g_device_var_shadow), nullptr, "dvar", 0,
                    sizeof(int), 0, 0);
  __cudaRegisterFatBinaryEnd(h);
  EXPECT_EQ(server_->Count(CallId::kRegisterModule), registers);  // nothing sent yet

  cudaKernel_t k = nullptr;
  ASSERT_EQ(__cudaGetKernel(&k, reinterpret_cast<const void*>(&FakeKernel)), cudaSuccess);
  cudaKernel_t again = nullptr;
  ASSERT_EQ(__cudaGetKernel(&again, reinterpret_cast<const void*>(&FakeKernel)), cudaSuccess);
  EXPECT_EQ(k, again);

  EXPECT_EQ(__cudaPushCallConfiguration(dim3(3, 2), dim3(128), 64, nullptr), 0u);
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
  ASSERT_EQ(__cudaPopCallConfiguration(&grid, &block, &shmem, &stream), cudaSuccess);
  EXPECT_EQ(grid.y, 2u);
  EXPECT_EQ(block.x, 128u);

  int64_t a = 0x0102030405060708;
  int b = 99;
  void* args[] = {&a, &b};
  ASSERT_EQ(__cudaLaunchKernel(k, grid, block, args, shmem, stream), cudaSuccess);
  // Dedup: the hash alone, then (the server lacking it) again with the images.
  EXPECT_EQ(server_->Count(CallId::kRegisterModule), registers + 2);
  {
    auto log = server_->Log();
    std::vector<v1::RegisterModuleRequest> regs;
    for (const Logged& l : log)
      if (l.call == static_cast<uint32_t>(CallId::kRegisterModule))
        DecodeRequest(l, regs.emplace_back());
    ASSERT_GE(regs.size(), 2u);
    const auto& first = regs[regs.size() - 2];
    const auto& second = regs.back();
    EXPECT_EQ(first.images_size(), 0);
    EXPECT_EQ(second.images_size(), 1);
    EXPECT_EQ(first.hash(), second.hash());
    EXPECT_EQ(first.kernels_size(), 1);
  }
  auto reg = server_->Last<v1::RegisterModuleRequest>(CallId::kRegisterModule);
  EXPECT_EQ(reg.kernels_size(), 1);
  EXPECT_EQ(reg.variables(0), "dvar");
  EXPECT_EQ(reg.hash().size(), 32u);
  EXPECT_FALSE(reg.rdc());
  ASSERT_TRUE(Eventually([&] { return server_->Count(CallId::kLaunchKernel) > 0; }));
  auto launch = server_->Last<v1::LaunchRequest>(CallId::kLaunchKernel);
  EXPECT_EQ(launch.kernel(), 500u);
  EXPECT_EQ(launch.grid_x(), 3u);
  EXPECT_EQ(launch.block_x(), 128u);
  EXPECT_EQ(launch.shared_bytes(), 64u);
  ASSERT_EQ(launch.params().size(), 16u);
  EXPECT_EQ(std::memcmp(launch.params().data(), &a, 8), 0);
  EXPECT_EQ(std::memcmp(launch.params().data() + 8, &b, 4), 0);

  // Bad configurations fail locally and land in cudaGetLastError.
  (void)__cudaLaunchKernel(k, dim3(1), dim3(2048), args, 0, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  (void)__cudaLaunchKernel(k, dim3(0), dim3(1), args, 0, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&Wire::SetUpTestSuite), dim3(1), dim3(1),
                             args, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();

  // Symbols resolve to the server's addresses.
  int value = 1234;
  ASSERT_EQ(cudaMemcpyToSymbol(&g_device_var_shadow, &value, sizeof value), cudaSuccess);
  void* dvar = nullptr;
  ASSERT_EQ(cudaGetSymbolAddress(&dvar, &g_device_var_shadow), cudaSuccess);
  size_t size = 0;
  ASSERT_EQ(cudaGetSymbolSize(&size, &g_device_var_shadow), cudaSuccess);
  EXPECT_EQ(size, sizeof(int));
  int read = 0;
  ASSERT_EQ(cudaMemcpyFromSymbol(&read, &g_device_var_shadow, sizeof read), cudaSuccess);
  EXPECT_EQ(read, 1234);
  EXPECT_EQ(cudaMemcpyToSymbol(&g_device_var_shadow, &value, sizeof value, 4),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpyToSymbol(&g_host_calls, &value, sizeof value), cudaErrorInvalidSymbol);
  (void)cudaGetLastError();

  __cudaUnregisterFatBinary(h);
  ASSERT_TRUE(Eventually([&] { return server_->Count(CallId::kUnregisterModule) > 0; }));
  EXPECT_EQ(server_->Last<v1::UnregisterModuleRequest>(CallId::kUnregisterModule).module(), 42u);
  EXPECT_EQ(__cudaGetKernel(&k, reinterpret_cast<const void*>(&FakeKernel)),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
}

void OtherFakeKernel(int64_t, int) {}
void MissingFakeKernel(int64_t, int) {}

// A fat binary of several MiB (nine architectures, many kernels) registers
// whole, whatever the transport's frame limit; a kernel the server found no
// code for is never launched: the launch fails with the GPU's error.
TEST_F(Wire, LargeFatBinariesRegisterAndMissingKernelsNeverLaunch) {
  struct Big {
    std::vector<uint64_t> words = std::vector<uint64_t>(3 << 17);  // 3 MiB
    FatbinWrapper wrapper{.data = nullptr};
  };
  static Big big;
  const uint32_t header[4] = {0xBA55ED50, 0x00100001, static_cast<uint32_t>((3 << 20) - 16), 0};
  std::memcpy(big.words.data(), header, sizeof header);
  for (size_t i = 2; i < big.words.size(); ++i) big.words[i] = i * 0x9E3779B97F4A7C15ull;
  big.wrapper.data = big.words.data();
  void** h = __cudaRegisterFatBinary(&big.wrapper);
  RegisterKernel(h, &FakeKernel, "_Z4fakeli");
  RegisterKernel(h, &MissingFakeKernel, "_Z7missingli");
  __cudaRegisterFatBinaryEnd(h);
  int64_t x = 1;
  int y = 2;
  void* args[] = {&x, &y};
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&FakeKernel), dim3(1), dim3(1), args, 0,
                             nullptr),
            cudaSuccess);
  auto reg = server_->Last<v1::RegisterModuleRequest>(CallId::kRegisterModule);
  ASSERT_EQ(reg.images_size(), 1);
  ASSERT_EQ(reg.images(0).size(), size_t{3} << 20);
  EXPECT_EQ(std::memcmp(reg.images(0).data(), big.words.data(), size_t{3} << 20), 0);

  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the server has logged the launch
  size_t launches = server_->Count(CallId::kLaunchKernel);
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&MissingFakeKernel), dim3(1), dim3(1),
                             args, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
  cudaFuncAttributes attr;
  EXPECT_EQ(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&MissingFakeKernel)),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kLaunchKernel), launches) << "nothing was sent";
  __cudaUnregisterFatBinary(h);
}

// A second module with the same fat binary (another run of the program, as far
// as the server knows): only the hash travels.
TEST_F(Wire, KnownFatBinariesAreSentOnce) {
  static FakeFatbin a, b;
  void** ha = __cudaRegisterFatBinary(&a.wrapper);
  RegisterKernel(ha, &FakeKernel, "_Z4fakeli");
  __cudaRegisterFatBinaryEnd(ha);
  void** hb = __cudaRegisterFatBinary(&b.wrapper);
  RegisterKernel(hb, &OtherFakeKernel, "_Z4fakeli");
  __cudaRegisterFatBinaryEnd(hb);
  int64_t x = 1;
  int y = 2;
  void* args[] = {&x, &y};
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&FakeKernel), dim3(1), dim3(1), args, 0,
                             nullptr),
            cudaSuccess);
  size_t before = server_->Count(CallId::kRegisterModule);
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&OtherFakeKernel), dim3(1), dim3(1),
                             args, 0, nullptr),
            cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kRegisterModule), before + 1);
  EXPECT_EQ(server_->Last<v1::RegisterModuleRequest>(CallId::kRegisterModule).images_size(), 0);
  const char* name = nullptr;
  ASSERT_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(&OtherFakeKernel)), cudaSuccess);
  EXPECT_STREQ(name, "_Z4fakeli");
  size_t off = 0, size = 0;
  ASSERT_EQ(cudaFuncGetParamInfo(reinterpret_cast<const void*>(&FakeKernel), 1, &off, &size),
            cudaSuccess);
  EXPECT_EQ(off, 8u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(cudaFuncGetName(&name, &x), cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();

  // A cudaKernel_t from cudaGetKernel launches and describes its kernel.
  cudaKernel_t handle = nullptr;
  ASSERT_EQ(cudaGetKernel(&handle, reinterpret_cast<const void*>(&OtherFakeKernel)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // earlier launches are logged
  size_t launches_before = server_->Count(CallId::kLaunchKernel);
  ASSERT_EQ(
      cudaLaunchKernel(reinterpret_cast<const void*>(handle), dim3(2), dim3(3), args, 0, nullptr),
      cudaSuccess);
  ASSERT_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(handle)), cudaSuccess);
  EXPECT_STREQ(name, "_Z4fakeli");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kLaunchKernel), launches_before + 1);
  EXPECT_EQ(server_->Last<v1::LaunchRequest>(CallId::kLaunchKernel).block_x(), 3u);
  __cudaUnregisterFatBinary(ha);
  __cudaUnregisterFatBinary(hb);
}

// Without a device-mapped same-address arena (gRPC; or this in-process fake,
// whose arena mapping cannot share the stub's address), mapped and managed
// memory fail clearly and the device says so.
TEST_F(Wire, MappedAndManagedMemoryNeedAZeroCopySession) {
  int v = -1;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrManagedMemory, 0), cudaSuccess);
  EXPECT_EQ(v, 0);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrCanMapHostMemory, 0), cudaSuccess);
  EXPECT_EQ(v, 0);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrConcurrentManagedAccess, 0), cudaSuccess);
  EXPECT_EQ(v, 0);
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_EQ(p.managedMemory, 0);
  EXPECT_EQ(p.canMapHostMemory, 0);

  void* m = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaMallocManaged(&m, 4096), cudaErrorNotSupported);
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  EXPECT_EQ(cudaMallocManaged(&m, 0), cudaErrorInvalidValue);
  void* h = nullptr;
  EXPECT_EQ(cudaHostAlloc(&h, 4096, cudaHostAllocMapped), cudaErrorNotSupported);
  (void)cudaGetLastError();

  // Flags are recorded per allocation, for any pointer inside it.
  ASSERT_EQ(cudaHostAlloc(&h, 3 * 4096, cudaHostAllocPortable | cudaHostAllocWriteCombined),
            cudaSuccess);
  unsigned flags = 99;
  ASSERT_EQ(cudaHostGetFlags(&flags, static_cast<char*>(h) + 5000), cudaSuccess);
  EXPECT_EQ(flags, unsigned{cudaHostAllocPortable | cudaHostAllocWriteCombined});
  void* plain = nullptr;
  ASSERT_EQ(cudaMallocHost(&plain, 100), cudaSuccess);
  ASSERT_EQ(cudaHostGetFlags(&flags, plain), cudaSuccess);
  EXPECT_EQ(flags, 0u);
  int stack = 0;
  EXPECT_EQ(cudaHostGetFlags(&flags, &stack), cudaErrorInvalidValue);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  EXPECT_EQ(cudaHostGetFlags(&flags, d), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, h), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  EXPECT_EQ(attr.hostPointer, h);
  EXPECT_EQ(attr.devicePointer, nullptr);  // not device-mapped here
  ASSERT_EQ(cudaPointerGetAttributes(&attr, d), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.hostPointer, nullptr);
  ASSERT_EQ(cudaFreeHost(h), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(plain), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Wire, SmallLocalAnswers) {
  size_t before = server_->LogSize();
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(nullptr, &cs), cudaSuccess);
  EXPECT_EQ(cs, cudaStreamCaptureStatusNone);
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  cudaGraph_t g;
  EXPECT_EQ(cudaStreamEndCapture(nullptr, &g), cudaErrorIllegalState);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  void* fn = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, 0, nullptr),
            cudaErrorNotSupported);
  EXPECT_EQ(fn, nullptr);
  ASSERT_EQ(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared), cudaSuccess);
  cudaFuncCache cache;
  ASSERT_EQ(cudaDeviceGetCacheConfig(&cache), cudaSuccess);
  EXPECT_EQ(cache, cudaFuncCachePreferShared);
  size_t limit = 0;
  ASSERT_EQ(cudaDeviceGetLimit(&limit, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(limit, 1024u);
  unsigned dflags = 0;
  ASSERT_EQ(cudaGetDeviceFlags(&dflags), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  EXPECT_EQ(server_->LogSize(), before);  // all answered locally

  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 64), cudaSuccess);
  EXPECT_EQ(cudaMemcpyPeer(b, 0, a, 1, 64), cudaErrorInvalidDevice);
  size_t dtod = server_->Count(CallId::kMemcpyDtoD);
  ASSERT_EQ(cudaMemcpyPeer(b, 0, a, 0, 64), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kMemcpyDtoD), dtod + 1);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaFree(a), cudaSuccess);
  ASSERT_EQ(cudaFree(b), cudaSuccess);
}

// Last: a sticky error never clears.
TEST_F(Wire, ZStickyErrorPoisonsEveryLaterCall) {
  server_->Defer(cudaErrorIllegalAddress);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  size_t before = server_->LogSize();
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, 16), cudaErrorIllegalAddress);
  EXPECT_EQ(server_->LogSize(), before);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
}

}  // namespace
}  // namespace remora::client_stub
