// tests/emu/stream_test.cc - stream order, legacy-stream semantics, events, destruction.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {
namespace {

// A host function that blocks its stream until Open(); lets tests hold work
// pending without timing assumptions.
struct Gate {
  std::atomic<bool> open{false};
  static void Wait(void* self) {
    auto* g = static_cast<Gate*>(self);
    while (!g->open.load()) std::this_thread::yield();
  }
  void Open() { open = true; }
};

// Host functions append their tag here, in the order they run.
struct Log {
  std::mutex mu;
  std::vector<int> order;
  struct Entry {
    Log* log;
    int tag;
  };
  std::vector<Entry> entries;  // stable storage for user data pointers
  explicit Log(int n) { entries.reserve(n); }
  void* Tag(int tag) { return &entries.emplace_back(Entry{this, tag}); }
  static void Append(void* p) {
    auto* e = static_cast<Entry*>(p);
    std::lock_guard lock(e->log->mu);
    e->log->order.push_back(e->tag);
  }
  std::vector<int> Get() {
    std::lock_guard lock(mu);
    return order;
  }
};

using EmuStream = EmuTest;

TEST_F(EmuStream, HostFunctionsRunInStreamOrder) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  Log log(100);
  std::vector<int> want;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(api.cuLaunchHostFunc(s, Log::Append, log.Tag(i)), CUDA_SUCCESS);
    want.push_back(i);
  }
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), want);
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuStream, QueryReportsPendingWork) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_SUCCESS);
  Gate gate;
  ASSERT_EQ(api.cuLaunchHostFunc(s, Gate::Wait, &gate), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuStream, LegacyStreamWaitsForBlockingStreams) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  Gate gate;
  Log log(2);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Gate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Log::Append, log.Tag(1)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(nullptr, Log::Append, log.Tag(2)), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(nullptr), CUDA_ERROR_NOT_READY);
  EXPECT_TRUE(log.Get().empty());
  gate.Open();
  ASSERT_EQ(api.cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), (std::vector<int>{1, 2}));
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuStream, BlockingStreamsWaitForLegacyStream) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  Gate gate;
  Log log(2);
  ASSERT_EQ(api.cuLaunchHostFunc(CU_STREAM_LEGACY, Gate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(nullptr, Log::Append, log.Tag(1)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Log::Append, log.Tag(2)), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), (std::vector<int>{1, 2}));
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuStream, NonBlockingStreamsAreIndependentOfLegacyStream) {
  CUstream nb;
  ASSERT_EQ(api.cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  Gate gate;
  Log log(2);
  ASSERT_EQ(api.cuLaunchHostFunc(nb, Gate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(nullptr, Log::Append, log.Tag(1)), CUDA_SUCCESS);
  // Would never return if the legacy stream waited for the gated stream.
  ASSERT_EQ(api.cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), (std::vector<int>{1}));
  EXPECT_EQ(api.cuStreamQuery(nb), CUDA_ERROR_NOT_READY);
  // And the other way round: the non-blocking stream does not wait for legacy work.
  Gate legacy_gate;
  ASSERT_EQ(api.cuLaunchHostFunc(nullptr, Gate::Wait, &legacy_gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(nb, Log::Append, log.Tag(2)), CUDA_SUCCESS);
  gate.Open();
  ASSERT_EQ(api.cuStreamSynchronize(nb), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), (std::vector<int>{1, 2}));
  legacy_gate.Open();
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(nb), CUDA_SUCCESS);
}

TEST_F(EmuStream, StreamWaitEventOrdersAcrossStreams) {
  CUstream a, b;
  ASSERT_EQ(api.cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent e;
  ASSERT_EQ(api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  Gate gate;
  Log log(2);
  ASSERT_EQ(api.cuLaunchHostFunc(a, Gate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(a, Log::Append, log.Tag(1)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(e, a), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamWaitEvent(b, e, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(b, Log::Append, log.Tag(2)), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(b), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(api.cuEventQuery(e), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(api.cuStreamSynchronize(b), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), (std::vector<int>{1, 2}));
  EXPECT_EQ(api.cuEventQuery(e), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamWaitEvent(b, e, 0x80), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(b), CUDA_SUCCESS);
}

TEST_F(EmuStream, DestroyWithPendingWorkStillRunsIt) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  Gate gate;
  Log log(1);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Gate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Log::Append, log.Tag(7)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);  // returns while work is pending
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(log.Get().empty());
  gate.Open();
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), (std::vector<int>{7}));
}

TEST_F(EmuStream, BadStreamHandlesAndFlags) {
  CUstream s;
  EXPECT_EQ(api.cuStreamCreate(&s, 0x4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  auto bogus = reinterpret_cast<CUstream>(&s);
  EXPECT_EQ(api.cuStreamSynchronize(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamQuery(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamDestroy(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamDestroy(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuLaunchHostFunc(bogus, Log::Append, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuLaunchHostFunc(nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr p;
  ASSERT_EQ(api.cuMemAlloc(&p, 256), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemsetD8Async(p, 0, 16, bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
  // Priorities outside the range are clamped.
  ASSERT_EQ(api.cuStreamCreateWithPriority(&s, 0, -100), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuStream, EventsTimeInRecordOrder) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  CUevent e1, e2, e3;
  ASSERT_EQ(api.cuEventCreate(&e1, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventCreate(&e2, CU_EVENT_BLOCKING_SYNC), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventCreate(&e3, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  float ms = -1;
  // Never recorded: query succeeds, elapsed time is refused.
  EXPECT_EQ(api.cuEventQuery(e1), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventElapsedTime(&ms, e1, e2), CUDA_ERROR_INVALID_HANDLE);

  Gate gate;
  ASSERT_EQ(api.cuEventRecord(e1, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Gate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(e2, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(e3, s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventQuery(e2), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(api.cuEventElapsedTime(&ms, e1, e2), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(api.cuEventSynchronize(e3), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventQuery(e2), CUDA_SUCCESS);
  float t12 = -1, t13 = -1, t23 = -1;
  ASSERT_EQ(api.cuEventElapsedTime(&t12, e1, e2), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventElapsedTime(&t13, e1, e3), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventElapsedTime(&t23, e2, e3), CUDA_SUCCESS);
  EXPECT_GE(t12, 0.0f);
  EXPECT_GE(t23, 0.0f);
  EXPECT_GE(t13, t12);
  EXPECT_EQ(api.cuEventElapsedTime(nullptr, e1, e2), CUDA_ERROR_INVALID_VALUE);
  for (CUevent e : {e1, e2, e3}) EXPECT_EQ(api.cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventDestroy(e1), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuEventQuery(e1), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuStream, EventFlagsAndTimingDisabled) {
  CUevent e, t;
  EXPECT_EQ(api.cuEventCreate(&e, 0x40), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuEventCreate(&e, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuEventCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventCreate(&t, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(e, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(t, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventSynchronize(t), CUDA_SUCCESS);
  float ms;
  EXPECT_EQ(api.cuEventElapsedTime(&ms, e, t), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuEventElapsedTime(&ms, t, e), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuEventRecord(e, reinterpret_cast<CUstream>(&ms)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventDestroy(t), CUDA_SUCCESS);
}

TEST_F(EmuStream, BusyTimeGrowsWithDeviceWork) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  unsigned long long before = 1;
  ASSERT_EQ(api.remoraEmuGetStreamBusyTime(s, &before), CUDA_SUCCESS);
  EXPECT_EQ(before, 0u);
  CUdeviceptr p;
  const size_t n = 8 << 20;
  ASSERT_EQ(api.cuMemAlloc(&p, n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8Async(p, 1, n, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  unsigned long long after = 0;
  ASSERT_EQ(api.remoraEmuGetStreamBusyTime(s, &after), CUDA_SUCCESS);
  EXPECT_GT(after, before);
  EXPECT_EQ(api.remoraEmuGetStreamBusyTime(reinterpret_cast<CUstream>(&after), &after),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

}  // namespace
}  // namespace remora::emu::test
