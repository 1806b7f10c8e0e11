// tests/client_stub/wire_test.cc - the stub against a fake server (wire_harness.h): the handshake,
// local answers, memory, pageable and pinned copies through the staging slots or inline,
// deferred errors, device output, streams, events and host functions.
#include "tests/client_stub/wire_harness.h"

namespace remora::client_stub {
namespace {

using namespace wire;
using namespace std::chrono_literals;

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
  // Pageable memory is never mapped. (Pinned memory is not device-mapped by this fake server,
  // which cannot share this process's addresses; asking for its device pointer would give it a
  // mirrored device copy, client_stub/mirror.h, and copies would go through that.)
  void* dev_view = nullptr;
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
  EXPECT_NE(wait.stream(), 0u) << "cudaStreamPerThread is this thread's own, not the legacy";
  EXPECT_EQ(wait.stream(), StreamId(cudaStreamPerThread));
  EXPECT_EQ(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
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

}  // namespace
}  // namespace remora::client_stub
