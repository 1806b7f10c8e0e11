// tests/client_stub/unit_test.cc - the stub's pieces that need no server.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <vector>

#include "client_stub/api.h"
#include "client_stub/connection.h"
#include "client_stub/env.h"
#include "client_stub/errors.h"
#include "client_stub/kernels.h"
#include "client_stub/managed_advice.h"
#include "client_stub/memcpy.h"
#include "client_stub/mirror.h"
#include "client_stub/pinned_heap.h"
#include "client_stub/state.h"
#include "client_stub/stream_copy.h"

namespace remora::client_stub {
namespace {

template <class T>
T V(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : T{};
}

// ---- cudaError_t names and texts -------------------------------------------------

std::map<std::string, int> ErrorsInDriverTypes() {
  std::ifstream in(REMORA_DRIVER_TYPES_H);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t begin = text.find("enum __device_builtin__ cudaError\n");
  size_t end = text.find("};", begin);
  std::string body = text.substr(begin, end - begin);
  std::map<std::string, int> out;
  std::regex row(R"((cuda(?:Success|Error\w*))\s*=\s*(\d+))");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), row); it != std::sregex_iterator();
       ++it)
    out[(*it)[1]] = std::stoi((*it)[2]);
  return out;
}

TEST(CudaErrors, EveryEnumeratorHasItsNameAndAText) {
  std::map<std::string, int> errors = ErrorsInDriverTypes();
  ASSERT_GT(errors.size(), 100u);
  for (const auto& [name, value] : errors) {
    SCOPED_TRACE(name);
    ASSERT_NE(CudaErrorName(value), nullptr);
    EXPECT_EQ(CudaErrorName(value), name);
    ASSERT_NE(CudaErrorText(value), nullptr);
    EXPECT_GT(std::string(CudaErrorText(value)).size(), 0u);
  }
}

TEST(CudaErrors, KnownTextsAndUnknownCodes) {
  EXPECT_STREQ(CudaErrorText(0), "no error");
  EXPECT_STREQ(CudaErrorText(1), "invalid argument");
  EXPECT_STREQ(CudaErrorText(2), "out of memory");
  EXPECT_STREQ(CudaErrorName(700), "cudaErrorIllegalAddress");
  EXPECT_EQ(CudaErrorName(12345), nullptr);
  EXPECT_EQ(CudaErrorText(-1), nullptr);
}

TEST(CudaErrors, RemoraCodesAreCudaCodes) {
#define REMORA_ERROR(Name, value, sticky, when) EXPECT_NE(CudaErrorName(value), nullptr) << #Name;
#include "proto/errors.def"
}

// ---- pinned heap ------------------------------------------------------------------

// A program's cudaDeviceSchedule* flags say how its threads wait for replies: Spin and Yield
// poll long (Yield yielding the CPU), BlockingSync sleeps at once, Auto polls as the server
// said in its Welcome, or as the transport does when it said nothing.
TEST(ReplySpin, FollowsTheScheduleFlags) {
  using std::chrono::nanoseconds;
  auto spin = ReplySpinFor(cudaDeviceScheduleSpin | cudaDeviceMapHost, 200'000);
  ASSERT_TRUE(spin);
  EXPECT_EQ(spin->spin, kScheduleSpin);
  EXPECT_FALSE(spin->yield);
  auto yield = ReplySpinFor(cudaDeviceScheduleYield, 0);
  ASSERT_TRUE(yield);
  EXPECT_EQ(yield->spin, kScheduleSpin);
  EXPECT_TRUE(yield->yield);
  auto blocking = ReplySpinFor(cudaDeviceScheduleBlockingSync, 200'000);
  ASSERT_TRUE(blocking);
  EXPECT_EQ(blocking->spin, nanoseconds(0));
  auto gpu = ReplySpinFor(cudaDeviceScheduleAuto, 200'000);
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->spin, nanoseconds(200'000));
  EXPECT_FALSE(gpu->yield);
  EXPECT_FALSE(ReplySpinFor(cudaDeviceScheduleAuto | cudaDeviceLmemResizeToMax, 0));
}

// The staging copy gives memcpy's bytes at every size and alignment (head, 64-byte body, tail),
// and writes nothing outside its destination.
TEST(StreamCopy, CopiesWhatMemcpyCopiesAtAnyAlignment) {
  std::mt19937_64 rng(20261130);
  const size_t kMax = kStreamCopyMin + 4096;
  std::vector<unsigned char> src(kMax + 64), dst(kMax + 128), want(kMax + 128);
  for (auto& b : src) b = static_cast<unsigned char>(rng());
  const size_t sizes[] = {0,
                          1,
                          63,
                          4096,
                          kStreamCopyMin - 1,
                          kStreamCopyMin,
                          kStreamCopyMin + 1,
                          kStreamCopyMin + 63,
                          kStreamCopyMin + 4095};
  for (size_t n : sizes) {
    for (size_t so : {0, 1, 8, 17}) {
      for (size_t d_off : {0, 3, 16, 33}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        want = dst;
        std::memcpy(want.data() + d_off, src.data() + so, n);
        StreamCopy(dst.data() + d_off, src.data() + so, n);
        ASSERT_EQ(dst, want) << "n=" << n << " src+" << so << " dst+" << d_off;
      }
    }
  }
}

TEST(PinnedHeap, FirstFitPageAligned) {
  PinnedHeap h(100, 10 * 4096 + 50);  // trimmed to [4096, 40960)
  EXPECT_EQ(h.free_bytes(), 9u * 4096);
  auto a = h.Allocate(1);
  auto b = h.Allocate(4097);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, 4096u);
  EXPECT_EQ(*b, 8192u);
  EXPECT_EQ(h.Find(*b + 5000)->second, 8192u);
  EXPECT_FALSE(h.Find(*b + 8192).has_value());
  EXPECT_TRUE(h.Free(*a));
  EXPECT_FALSE(h.Free(*a));
  EXPECT_EQ(*h.Allocate(100), 4096u);  // lowest fit reused
  EXPECT_FALSE(h.Allocate(100 * 4096).has_value());
  EXPECT_FALSE(h.Allocate(UINT64_MAX).has_value());
}

TEST(PinnedHeap, RandomSequencesNeverOverlapAndCoalesceFully) {
  constexpr uint64_t kBase = 1 << 20, kBytes = 256 * 4096;
  std::mt19937_64 rng(42);
  for (int round = 0; round < 20; ++round) {
    PinnedHeap h(kBase, kBytes);
    std::vector<std::pair<uint64_t, uint64_t>> live;  // offset, requested size
    for (int step = 0; step < 2000; ++step) {
      if (live.empty() || rng() % 3 != 0) {
        uint64_t n = rng() % (6 * 4096) + (rng() % 4 == 0 ? 0 : 1);
        auto off = h.Allocate(n);
        if (!off) continue;
        EXPECT_EQ(*off % 4096, 0u);
        EXPECT_GE(*off, kBase);
        EXPECT_LE(*off + std::max<uint64_t>(n, 1), kBase + kBytes);
        live.emplace_back(*off, n);
      } else {
        size_t i = rng() % live.size();
        EXPECT_TRUE(h.Free(live[i].first));
        live.erase(live.begin() + i);
      }
      // No two allocated blocks overlap; free + used covers everything.
      uint64_t end = 0, used = 0;
      for (const auto& [off, size] : h.allocated()) {
        EXPECT_GE(off, end);
        end = off + size;
        used += size;
      }
      ASSERT_EQ(used + h.free_bytes(), kBytes);
    }
    for (const auto& [off, n] : live) EXPECT_TRUE(h.Free(off));
    EXPECT_EQ(h.free_runs(), 1u);
    EXPECT_EQ(h.free_bytes(), kBytes);
    EXPECT_EQ(*h.Allocate(kBytes), kBase);
  }
}

// ---- settings ---------------------------------------------------------------------

// ---- managed memory's advice ---------------------------------------------------------

// Random advice over 64 slots, against a model holding each slot's attributes: Over gives
// exactly the runs the model has, merged where equal, whatever the order of changes.
TEST(ManagedAdvice, RunsMatchAPerByteModel) {
  constexpr uint64_t kBase = 4096, kSlots = 64;
  std::mt19937 rng(5);
  for (int round = 0; round < 20; ++round) {
    ManagedAdvice advice;
    std::vector<ManagedAdvice::Attrs> model(kSlots);
    for (int step = 0; step < 40; ++step) {
      const uint64_t lo = rng() % kSlots, hi = lo + 1 + rng() % (kSlots - lo);
      const int what = int(rng() % 4), id = int(rng() % 2);
      auto change = [&](ManagedAdvice::Attrs& a) {
        if (what == 0) a.read_mostly = !a.read_mostly;
        if (what == 1) a.preferred = {1, id};
        if (what == 2) a.accessed_by.push_back({2, 0});
        if (what == 3) a = ManagedAdvice::Attrs{};
      };
      advice.Change(kBase + lo, kBase + hi, change);
      for (uint64_t i = lo; i < hi; ++i) change(model[i]);
      const uint64_t qlo = rng() % kSlots, qhi = qlo + 1 + rng() % (kSlots - qlo);
      std::vector<ManagedAdvice::Attrs> want;
      for (uint64_t i = qlo; i < qhi; ++i)
        if (want.empty() || !(want.back() == model[i])) want.push_back(model[i]);
      ASSERT_EQ(advice.Over(kBase + qlo, kBase + qhi), want)
          << "round " << round << " step " << step;
    }
    advice.Reset(kBase, kBase + kSlots);
    EXPECT_EQ(advice.Over(0, kBase + 2 * kSlots), std::vector<ManagedAdvice::Attrs>(1));
  }
}

TEST(ManagedAdvice, LocationsAreTheDeviceOrTheHost) {
  cudaMemLocation at{};
  at.type = cudaMemLocationTypeDevice;
  EXPECT_EQ(ManagedAdvice::Check(at), cudaSuccess);
  at.id = 1;
  EXPECT_EQ(ManagedAdvice::Check(at), cudaErrorInvalidDevice);
  at.type = cudaMemLocationTypeInvalid;
  EXPECT_EQ(ManagedAdvice::Check(at), cudaErrorInvalidValue);
  at.type = cudaMemLocationTypeHost;
  at.id = 9;  // ignored
  EXPECT_EQ(ManagedAdvice::Check(at), cudaSuccess);
  EXPECT_EQ(ManagedAdvice::Of(at), ManagedAdvice::Location(cudaMemLocationTypeHost, 0));
  at.type = cudaMemLocationTypeHostNuma;
  EXPECT_EQ(ManagedAdvice::Of(at), ManagedAdvice::Location(cudaMemLocationTypeHostNuma, 9));
}

TEST(Env, ParseFraction) {
  EXPECT_DOUBLE_EQ(V(ParseFraction("0.5")), 0.5);
  EXPECT_DOUBLE_EQ(V(ParseFraction("1")), 1.0);
  for (const char* junk : {"0", "1.01", "-0.5", "half", "", "0.5x"})
    EXPECT_FALSE(ParseFraction(junk).ok()) << junk;
}

TEST(Env, ParseServer) {
  auto unix_ = ParseServer("unix:/run/remora/gpu0.sock");
  ASSERT_TRUE(unix_.ok());
  EXPECT_EQ(unix_->kind, TransportKind::kShm);
  EXPECT_EQ(unix_->target, "/run/remora/gpu0.sock");
  EXPECT_EQ(ParseServer("grpc://gpu3:7070")->kind, TransportKind::kGrpc);
  EXPECT_EQ(ParseServer("grpcs://gpu3:7070")->target, "gpu3:7070");
  EXPECT_EQ(ParseServer("/tmp/x.sock")->target, "/tmp/x.sock");
  EXPECT_FALSE(ParseServer("http://x").ok());
  EXPECT_FALSE(ParseServer("grpc://").ok());
}

Result<Settings> FromMap(std::map<std::string, std::string> env) {
  return ReadSettings([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Env, ReadSettings) {
  auto s = FromMap(
      {{"REMORA_TOKEN", "t0k"}, {"REMORA_GPU_MEMORY", "4Gi"}, {"REMORA_GPU_MEMORY_LIMIT", "6Gi"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->server.target, "/run/remora/gpu0.sock");
  EXPECT_EQ(s->token, "t0k");
  EXPECT_EQ(s->quota.memory, 4ull << 30);
  EXPECT_EQ(s->quota.memory_limit, 6ull << 30);
  EXPECT_DOUBLE_EQ(FromMap({{"REMORA_GPU_FRACTION", "0.25"}})->quota.fraction, 0.25);
  EXPECT_FALSE(FromMap({{"REMORA_GPU_MEMORY", "lots"}}).ok());
  EXPECT_FALSE(FromMap({{"REMORA_GPU_FRACTION", "0.5"}, {"REMORA_GPU_MEMORY", "1G"}}).ok());
  EXPECT_FALSE(
      FromMap({{"REMORA_GPU_FRACTION", "0.5"}, {"REMORA_GPU_FRACTION_LIMIT", "0.4"}}).ok());
  EXPECT_FALSE(FromMap({{"REMORA_SERVER", "tcp://x"}}).ok());
}

TEST(Env, ComputeShareAndPriority) {
  auto s = FromMap({{"REMORA_GPU_COMPUTE", "0.25"},
                    {"REMORA_GPU_COMPUTE_LIMIT", "0.5"},
                    {"REMORA_PRIORITY", "high"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(s->quota.compute, 0.25);
  EXPECT_DOUBLE_EQ(s->quota.compute_limit, 0.5);
  EXPECT_EQ(s->quota.priority, "high");
  EXPECT_FALSE(FromMap({{"REMORA_GPU_COMPUTE", "1.5"}}).ok());
  EXPECT_FALSE(FromMap({{"REMORA_GPU_COMPUTE", "0.5"}, {"REMORA_GPU_COMPUTE_LIMIT", "0.4"}}).ok());
  auto bad = FromMap({{"REMORA_PRIORITY", "urgent"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("high, normal or low"), std::string::npos);
}

// ---- chunking ---------------------------------------------------------------------

TEST(Chunking, CoversEveryByteOnce) {
  for (uint64_t total : {0ull, 1ull, 4095ull, 4096ull, 4097ull, 10000000ull}) {
    for (uint64_t chunk : {1ull, 4096ull, 1ull << 20}) {
      Chunking c{total, chunk};
      if (chunk == 1 && total > 10000) continue;
      uint64_t next = 0;
      for (uint64_t i = 0; i < c.count(); ++i) {
        EXPECT_EQ(c.offset(i), next);
        EXPECT_GT(c.size(i), 0u);
        EXPECT_LE(c.size(i), chunk);
        next += c.size(i);
      }
      EXPECT_EQ(next, total);
    }
  }
  EXPECT_EQ((Chunking{10, 4}.count()), 3u);
  EXPECT_EQ((Chunking{10, 4}.size(2)), 2u);
}

TEST(Chunking, InlineChunksFitTheFrame) {
  EXPECT_EQ(InlineChunkBytes(4 << 20), (4u << 20) - kInlineOverhead);
  EXPECT_LT(InlineChunkBytes(1000), 1000u);
  EXPECT_GE(InlineChunkBytes(1), 1u);
}

// ---- device properties ------------------------------------------------------------

TEST(DeviceProp, BuiltFromAttributes) {
  v1::DeviceInfo info;
  info.set_name("Remora Emulated GPU");
  info.set_total_mem(8ull << 30);
  info.set_uuid(std::string(16, '\x7f'));
  info.mutable_attributes()->Resize(150, 0);
  auto set = [&](cudaDeviceAttr a, int v) { info.mutable_attributes()->Set(a, v); };
  set(cudaDevAttrMaxThreadsPerBlock, 1024);
  set(cudaDevAttrMaxBlockDimX, 1024);
  set(cudaDevAttrMaxBlockDimZ, 64);
  set(cudaDevAttrMaxGridDimX, 2147483647);
  set(cudaDevAttrWarpSize, 32);
  set(cudaDevAttrComputeCapabilityMajor, 7);
  set(cudaDevAttrComputeCapabilityMinor, 5);
  set(cudaDevAttrMultiProcessorCount, 40);
  set(cudaDevAttrMaxSharedMemoryPerBlock, 49152);
  set(cudaDevAttrMaxSharedMemoryPerMultiprocessor, 65536);
  set(cudaDevAttrL2CacheSize, 4 << 20);
  set(cudaDevAttrHostNumaMultinodeIpcSupported, 1);
  cudaDeviceProp p = BuildDeviceProp(info);
  EXPECT_STREQ(p.name, "Remora Emulated GPU");
  EXPECT_EQ(p.totalGlobalMem, 8ull << 30);
  EXPECT_EQ(p.uuid.bytes[15], '\x7f');
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
  EXPECT_EQ(p.maxThreadsDim[0], 1024);
  EXPECT_EQ(p.maxThreadsDim[2], 64);
  EXPECT_EQ(p.maxGridSize[0], 2147483647);
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_EQ(p.major * 10 + p.minor, 75);
  EXPECT_EQ(p.multiProcessorCount, 40);
  EXPECT_EQ(p.sharedMemPerBlock, 49152u);
  EXPECT_EQ(p.sharedMemPerMultiprocessor, 65536u);
  EXPECT_EQ(p.l2CacheSize, 4 << 20);
  EXPECT_EQ(p.hostNumaMultinodeIpcSupported, 1);

  v1::DeviceInfo empty;  // a short vector leaves fields 0
  cudaDeviceProp q = BuildDeviceProp(empty);
  EXPECT_EQ(q.maxThreadsPerBlock, 0);
  EXPECT_STREQ(q.name, "");
}

TEST(DeviceProp, SessionCapsAreRemoras) {
  v1::DeviceInfo info;
  info.mutable_attributes()->Resize(10, 1);  // short: caps extend it
  info.mutable_attributes()->Set(cudaDevAttrMaxThreadsPerBlock, 1024);
  ApplySessionCaps(&info);
  cudaDeviceProp p = BuildDeviceProp(info);
  EXPECT_EQ(p.managedMemory, 1);
  EXPECT_EQ(p.canMapHostMemory, 1);
  EXPECT_EQ(p.concurrentManagedAccess, 0);
  EXPECT_EQ(p.pageableMemoryAccess, 0);
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
}

// ---- mirrored managed memory ------------------------------------------------------

// The mirror sends a piece when its hash changed: every one-bit change of a piece, at every
// position and with any piece length, must change it.
TEST(MirrorHash, EveryOneBitChangeChangesTheHash) {
  std::vector<std::byte> piece(4096);
  uint64_t seed = 42;
  for (auto& b : piece) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<std::byte>(seed >> 56);
  }
  for (size_t n : {size_t{1}, size_t{7}, size_t{31}, size_t{33}, size_t{4095}, size_t{4096}}) {
    const uint64_t h = mirror::Hash(piece.data(), n);
    EXPECT_EQ(mirror::Hash(piece.data(), n), h);
    for (size_t i = 0; i < n; i += (n > 64 ? 13 : 1))
      for (int bit = 0; bit < 8; ++bit) {
        piece[i] ^= static_cast<std::byte>(1 << bit);
        EXPECT_NE(mirror::Hash(piece.data(), n), h) << "length " << n << " byte " << i;
        piece[i] ^= static_cast<std::byte>(1 << bit);
      }
  }
  // Zero pieces of different lengths, and two swapped words, differ too.
  std::vector<std::byte> zero(4096);
  EXPECT_NE(mirror::Hash(zero.data(), 4096), mirror::Hash(zero.data(), 4088));
  std::vector<std::byte> swapped = piece;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(mirror::Hash(swapped.data(), 4096), mirror::Hash(piece.data(), 4096));
}

TEST(HostMemory, MirroredBlocksAreManagedButNotDeviceMapped) {
  HostMemory m;
  std::vector<std::byte> pages(3 * 4096);
  m.AddMirrored(pages.data() + 100, 5000);
  EXPECT_TRUE(m.IsMirrored(pages.data() + 100));
  EXPECT_TRUE(m.IsMirrored(pages.data() + 5099));
  EXPECT_FALSE(m.IsMirrored(pages.data() + 5100));
  EXPECT_FALSE(m.IsMirrored(pages.data() + 99));
  EXPECT_TRUE(m.IsManaged(pages.data() + 4000));
  EXPECT_TRUE(m.IsManagedRange(pages.data() + 100, 5000));
  EXPECT_FALSE(m.IsManagedRange(pages.data() + 100, 5001));
  EXPECT_FALSE(m.IsDeviceMapped(pages.data() + 100));
  EXPECT_FALSE(m.IsPinned(pages.data() + 100));
  m.Advise(pages.data() + 100, 10, [](ManagedAdvice::Attrs& a) { a.read_mostly = true; });
  EXPECT_TRUE(m.AdviceOver(pages.data() + 100, 10).front().read_mostly);
  EXPECT_FALSE(m.RemoveMirrored(pages.data() + 101));
  EXPECT_TRUE(m.RemoveMirrored(pages.data() + 100));
  EXPECT_FALSE(m.IsManaged(pages.data() + 100));
  EXPECT_FALSE(m.AdviceOver(pages.data() + 100, 10).front().read_mostly);  // forgotten
}

// ---- host memory ----------------------------------------------------------------

TEST(HostMemory, DeviceMappedArenaHoldsPinnedAndManagedBlocks) {
  std::vector<std::byte> arena(1 << 20);
  HostMemory m;
  m.Attach(arena.data(), arena.size(), 64 << 10, (1 << 20) - (64 << 10), /*device_mapped=*/true);
  EXPECT_TRUE(m.device_mapped());
  void* pinned = m.Allocate(5000, cudaHostAllocMapped, /*need_mapped=*/true);
  void* managed = m.AllocateManaged(100);
  ASSERT_NE(pinned, nullptr);
  ASSERT_NE(managed, nullptr);
  auto* pb = static_cast<std::byte*>(pinned);
  EXPECT_EQ(m.Flags(pb + 4999), std::optional<unsigned>(cudaHostAllocMapped));
  EXPECT_EQ(m.Flags(managed), std::nullopt);
  EXPECT_TRUE(m.IsManaged(static_cast<char*>(managed) + 99));
  EXPECT_FALSE(m.IsManaged(pinned));
  EXPECT_TRUE(m.IsDeviceMapped(pb + 10));
  EXPECT_TRUE(m.IsDeviceMapped(managed));
  EXPECT_FALSE(m.IsDeviceMapped(arena.data()));  // staging, not a heap block
  EXPECT_TRUE(m.IsPinned(pinned));
  EXPECT_FALSE(m.IsPinned(managed));
  EXPECT_FALSE(m.Free(managed)) << "cudaFreeHost does not free managed memory";
  EXPECT_FALSE(m.FreeManaged(pinned));
  EXPECT_TRUE(m.FreeManaged(managed));
  EXPECT_FALSE(m.IsManaged(managed));
  EXPECT_TRUE(m.Free(pinned));
  EXPECT_EQ(m.Flags(pinned), std::nullopt);
  EXPECT_EQ(m.AllocateManaged(2 << 20), nullptr) << "larger than the heap";
}

TEST(HostMemory, WithoutADeviceMappedArenaNothingIsMapped) {
  std::vector<std::byte> arena(1 << 20);
  HostMemory m;
  m.Attach(arena.data(), arena.size(), 64 << 10, (1 << 20) - (64 << 10), /*device_mapped=*/false);
  EXPECT_EQ(m.AllocateManaged(100), nullptr);
  EXPECT_EQ(m.Allocate(100, cudaHostAllocMapped, /*need_mapped=*/true), nullptr);
  void* p = m.Allocate(100, cudaHostAllocPortable);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(m.IsDeviceMapped(p));
  EXPECT_EQ(m.Flags(p), std::optional<unsigned>(cudaHostAllocPortable));
  // Past the heap: page-aligned malloc, still with its flags, never mapped.
  void* big = m.Allocate(4 << 20, cudaHostAllocWriteCombined);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(m.Locate(big, 1).kind, HostMemory::Kind::kPinnedMalloc);
  EXPECT_EQ(m.Flags(static_cast<char*>(big) + 12345),
            std::optional<unsigned>(cudaHostAllocWriteCombined));
  EXPECT_FALSE(m.IsDeviceMapped(big));
  EXPECT_TRUE(m.Free(big));
  EXPECT_TRUE(m.Free(p));
}

// cudaHostRegister on a device-mapped arena: the program's private pages move onto a heap block
// (one memory at two addresses: theirs and the block's, where kernels reach it), copies find
// them in the arena, and unregistering gives the program private pages again with the
// contents. Memory that is not private data, or a page another registration holds, is only
// recorded.
TEST(HostMemory, RegisteredPagesMoveOntoTheArenaAndBack) {
  const size_t size = 4 << 20;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* a = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(a, MAP_FAILED);
  auto* arena = static_cast<std::byte*>(a);
  HostMemory m;
  m.Attach(arena, size, 64 << 10, size - (64 << 10), /*device_mapped=*/true);
  void* mine = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mine, MAP_FAILED);
  uint32_t* data = static_cast<uint32_t*>(mine) + 3;  // from an odd offset, over two pages
  const size_t n = page / sizeof(uint32_t);
  for (size_t i = 0; i < n; ++i) data[i] = uint32_t(i * 7);
  ASSERT_TRUE(m.Register(data, n * sizeof(uint32_t)));
  auto* alias = static_cast<uint32_t*>(m.DeviceAlias(data));
  ASSERT_NE(alias, nullptr);
  EXPECT_TRUE(reinterpret_cast<std::byte*>(alias) >= arena + (64 << 10) &&
              reinterpret_cast<std::byte*>(alias) < arena + size);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(alias[i], uint32_t(i * 7)) << i;
  alias[5] = 99;
  data[6] = 77;
  EXPECT_EQ(data[5], 99u);
  EXPECT_EQ(alias[6], 77u);
  const HostMemory::Where w = m.Locate(data + 10, 16);
  EXPECT_EQ(w.kind, HostMemory::Kind::kArena);
  EXPECT_EQ(arena + w.arena_offset, reinterpret_cast<std::byte*>(alias + 10));
  EXPECT_TRUE(m.IsPinned(data));
  EXPECT_EQ(m.Register(data + 1, 4), false) << "overlaps";
  // A registration on the last page the first one holds: recorded, not moved.
  ASSERT_TRUE(m.Register(data + n, 8));
  EXPECT_TRUE(m.IsRegistered(data + n));
  EXPECT_EQ(m.DeviceAlias(data + n), nullptr);
  EXPECT_EQ(m.Locate(data + n, 8).kind, HostMemory::Kind::kRegistered);
  EXPECT_TRUE(m.Unregister(data + n));

  ASSERT_TRUE(m.Unregister(data));
  EXPECT_FALSE(m.Unregister(data));
  EXPECT_EQ(m.DeviceAlias(data), nullptr);
  EXPECT_EQ(m.Locate(data, 4).kind, HostMemory::Kind::kPageable);
  EXPECT_EQ(data[5], 99u);
  EXPECT_EQ(data[6], 77u);
  alias[7] = 12345;  // the block, back in the heap: no longer the program's memory
  EXPECT_EQ(data[7], 49u);
  data[8] = 1;

  // Freed before it was unregistered: the address is left alone.
  void* gone = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gone, MAP_FAILED);
  ASSERT_TRUE(m.Register(gone, page));
  ASSERT_NE(m.DeviceAlias(gone), nullptr);
  munmap(gone, page);
  EXPECT_TRUE(m.Unregister(gone));
  EXPECT_EQ(msync(gone, page, MS_ASYNC), -1) << "nothing mapped there again";

  // Shared memory is not the program's private data: recorded only.
  void* shared = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  ASSERT_TRUE(m.Register(shared, 64));
  EXPECT_EQ(m.DeviceAlias(shared), nullptr);
  EXPECT_TRUE(m.Unregister(shared));
  munmap(shared, page);
  munmap(mine, 4 * page);
  munmap(a, size);
}

// ---- streams and kernels ----------------------------------------------------------

TEST(Streams, HandlesRoundTripAndDefaultsAreZero) {
  EXPECT_EQ(StreamId(nullptr), 0u);
  EXPECT_EQ(StreamId(cudaStreamLegacy), 0u);
  EXPECT_EQ(StreamId(cudaStreamPerThread), 0u);
  for (uint64_t id : {1ull, 2ull, 3ull, 77ull, 1ull << 40}) {
    cudaStream_t h = StreamHandle(id);
    EXPECT_NE(h, cudaStreamLegacy);
    EXPECT_NE(h, cudaStreamPerThread);
    EXPECT_EQ(StreamId(h), id);
  }
  EXPECT_EQ(StreamHandle(77), reinterpret_cast<cudaStream_t>(77));
}

TEST(Kernels, PackParamsFollowsTheLayout) {
  Kernel k;
  k.offsets = {0, 8, 16};
  k.sizes = {8, 4, 12};
  k.param_bytes = 32;
  uint64_t a = 0x1122334455667788;
  int32_t b = -7;
  char c[12] = "hello world";
  void* args[] = {&a, &b, c};
  std::string out;
  ASSERT_TRUE(PackParams(k, args, &out));
  ASSERT_EQ(out.size(), 32u);
  EXPECT_EQ(std::memcmp(out.data(), &a, 8), 0);
  EXPECT_EQ(std::memcmp(out.data() + 8, &b, 4), 0);
  EXPECT_EQ(std::memcmp(out.data() + 16, c, 12), 0);
  k.sizes[2] = 20;  // runs past param_bytes
  EXPECT_FALSE(PackParams(k, args, &out));
}

TEST(Errors, LastErrorIsPerThreadAndReset) {
  EXPECT_EQ(TakeLastError(), cudaSuccess);
  RecordError(cudaErrorInvalidValue);
  EXPECT_EQ(PeekLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(PeekLastError(), cudaErrorInvalidValue);
  std::thread([] { EXPECT_EQ(PeekLastError(), cudaSuccess); }).join();
  EXPECT_EQ(TakeLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(TakeLastError(), cudaSuccess);
}

// The only test here that connects: no server at the address.
TEST(Unreachable, EveryCallFailsWithInitializationErrorAndOneStderrLine) {
  setenv("REMORA_SERVER", "unix:/nonexistent/remora-stub-test.sock", 1);
  testing::internal::CaptureStderr();
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorInitializationError);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorInitializationError);
  int n = -1;
  EXPECT_EQ(cudaGetDeviceCount(&n), cudaErrorInitializationError);
  EXPECT_EQ(n, 0);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("remora: cannot reach remora-server at unix:/nonexistent", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInitializationError);
  // Local answers still work.
  int dev = -1;
  EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(__cudaPushCallConfiguration(dim3(1), dim3(1), 0, nullptr), 0u);
}

}  // namespace
}  // namespace remora::client_stub
