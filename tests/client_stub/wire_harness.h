// tests/client_stub/wire_harness.h - what the stub's wire tests share: a fake server on an
// in-process listener (shm, or gRPC when built with REMORA_WIRE_GRPC) that keeps device memory
// in host vectors and answers the calls the stub makes, and the Wire fixture. One connection
// serves the whole binary (the stub connects once per process).
#pragma once

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
#include "proto/mirror.h"
#include "proto/reply.h"
#include "remora/v1/session.pb.h"
#include "transport/fragment.h"
#include "transport/shm/shm_channel.h"
#ifdef REMORA_WIRE_GRPC
#include "transport/grpc/listener.h"
#endif

namespace remora::client_stub::wire {

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
      case CallId::kMirrorFetch: {  // as the server: the pieces whose hash moved
        auto req = Parse<v1::MirrorFetchRequest>(f);
        v1::MirrorFetchReply rep;
        for (const v1::MirrorFetchRequest::Range& r : req.ranges()) {
          const std::byte* src = Device(r.addr(), r.size());
          if (!src || static_cast<size_t>(r.agreed_size()) != mirror::Pieces(r.size()))
            return Reply(f, cudaErrorInvalidValue);
          mirror::ForChangedPieces(
              src, r.size(), [&](size_t i) { return r.agreed(static_cast<int>(i)); },
              [&](size_t off, size_t n) {
                v1::MirrorFetchReply::Piece* p = rep.add_pieces();
                p->set_addr(r.addr() + off);
                p->set_data(src + off, n);
              });
        }
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
    socket_path_ = "/tmp/remora-stub-wire-" + std::to_string(getpid()) + ".sock";
    server_ = new FakeServer(socket_path_);  // NOLINT: lives for the whole binary
    setenv("REMORA_SERVER", server_->address().c_str(), 1);
    setenv("REMORA_TOKEN", "tok-123", 1);
    setenv("REMORA_GPU_MEMORY", "512Mi", 1);
    setenv("REMORA_GPU_MEMORY_LIMIT", "1Gi", 1);
  }
  // The server lives on (the stub's connection never closes); its socket file does not.
  static void TearDownTestSuite() { unlink(socket_path_.c_str()); }
  static inline FakeServer* server_ = nullptr;
  static inline std::string socket_path_;
};

inline std::vector<std::byte> Pattern(size_t n, int seed) {
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

}  // namespace remora::client_stub::wire
