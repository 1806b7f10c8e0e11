// tests/emu/stream_test.cc - stream order, legacy-stream semantics, events, destruction,
// and stream threads (none while idle).
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
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

// An event record on an idle stream is passed at once (a query right after it
// sees the stream idle, as on a GPU); one behind pending work waits for it.
TEST_F(EmuStream, EventRecordOnAnIdleStreamCompletesAtOnce) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent first, second;
  ASSERT_EQ(api.cuEventCreate(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventCreate(&second, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(first, s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventQuery(first), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_SUCCESS);

  Gate gate;
  ASSERT_EQ(api.cuLaunchHostFunc(s, Gate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(second, s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventQuery(second), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(api.cuEventSynchronize(second), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_SUCCESS);
  float ms = -1;
  ASSERT_EQ(api.cuEventElapsedTime(&ms, first, second), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);

  // On a blocking stream behind a busy legacy stream, it waits for that too.
  CUstream blocking;
  ASSERT_EQ(api.cuStreamCreate(&blocking, 0), CUDA_SUCCESS);
  Gate legacy;
  ASSERT_EQ(api.cuLaunchHostFunc(nullptr, Gate::Wait, &legacy), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(first, blocking), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventQuery(first), CUDA_ERROR_NOT_READY);
  legacy.Open();
  ASSERT_EQ(api.cuEventSynchronize(first), CUDA_SUCCESS);
  for (CUevent e : {first, second}) EXPECT_EQ(api.cuEventDestroy(e), CUDA_SUCCESS);
  for (CUstream x : {s, blocking}) EXPECT_EQ(api.cuStreamDestroy(x), CUDA_SUCCESS);
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

// --- cancellation: the work of a tenant that is gone stops ---------------------------------

// Every thread counts for ever, after adding 1 to a counter in global memory, so the test
// knows the kernel runs and how many of its threads started.
constexpr char kEndlessPtx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.visible .entry endless(.param .u64 started)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<3>;
  ld.param.u64 %rd1, [started];
  cvta.to.global.u64 %rd2, %rd1;
  atom.global.add.u32 %r1, [%rd2], 1;
  mov.u32 %r2, 0;
$L_spin:
  add.u32 %r2, %r2, 1;
  bra.uni $L_spin;
}
)";

// A stream held until another writes the value it waits for: each condition, met and not.
TEST_F(EmuStream, WaitValueHoldsTheStreamUntilTheValueMeetsItsCondition) {
  CUdeviceptr v;
  ASSERT_EQ(api.cuMemAlloc(&v, 16), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8(v, 0, 16), CUDA_SUCCESS);
  // The memset is asynchronous and neither stream waits for the legacy one: landing after
  // the writer's first value, it would hold the waiter for ever.
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  CUstream waiter, writer;
  ASSERT_EQ(api.cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  struct Case {
    unsigned op;
    uint32_t want, before, after;  // `before` leaves the wait waiting, `after` ends it
  };
  const Case cases[] = {{CU_STREAM_WAIT_VALUE_GEQ, 10, 9, 0x80000009u},  // cyclic: 2^31 - 1 on
                        {CU_STREAM_WAIT_VALUE_EQ, 5, 6, 5},
                        {CU_STREAM_WAIT_VALUE_AND, 0x30, 0x0F, 0x10},
                        {CU_STREAM_WAIT_VALUE_NOR, 0xFFFF0000u, 0x0000FFFFu, 0x0000FFFEu}};
  Log log(16);
  int tag = 0;
  for (const Case& c : cases) {
    ASSERT_EQ(api.cuStreamWriteValue32(writer, v, c.before, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuStreamSynchronize(writer), CUDA_SUCCESS);
    ASSERT_EQ(api.cuStreamWaitValue32(waiter, v, c.want, c.op), CUDA_SUCCESS);
    ASSERT_EQ(api.cuLaunchHostFunc(waiter, Log::Append, log.Tag(++tag)), CUDA_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(api.cuStreamQuery(waiter), CUDA_ERROR_NOT_READY) << "op " << c.op;
    EXPECT_EQ(log.Get().size(), size_t(tag - 1));
    ASSERT_EQ(api.cuStreamWriteValue32(writer, v, c.after, 0), CUDA_SUCCESS);
    EXPECT_EQ(api.cuStreamSynchronize(waiter), CUDA_SUCCESS);
    EXPECT_EQ(log.Get().size(), size_t(tag)) << "op " << c.op;
  }
  ASSERT_EQ(api.cuStreamWriteValue64(writer, v + 8, 0x1122334455667788ull, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamWaitValue64(waiter, v + 8, 0x1122334455667788ull, CU_STREAM_WAIT_VALUE_EQ),
            CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(waiter), CUDA_SUCCESS);
  uint64_t got = 0;
  ASSERT_EQ(api.cuMemcpyDtoH(&got, v + 8, 8), CUDA_SUCCESS);
  EXPECT_EQ(got, 0x1122334455667788ull);
  // Misaligned, outside device memory, unknown flags, and remote-write flushes this device
  // says it cannot make.
  EXPECT_EQ(api.cuStreamWriteValue32(writer, v + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamWaitValue64(waiter, v + 4, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamWriteValue32(writer, v + 16, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamWriteValue32(writer, v, 1, 0x10), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamWaitValue32(waiter, v, 1, CU_STREAM_WAIT_VALUE_FLUSH),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamDestroy(waiter), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(writer), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(v), CUDA_SUCCESS);
}

// A memory pool's allocation (cuMemAllocAsync) takes no stream memory operation, as on an
// H200 (CUDA_ERROR_INVALID_VALUE, where cuMemAlloc's takes them).
TEST_F(EmuStream, StreamMemoryOperationsRefuseAPoolsMemory) {
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr pooled = 0, plain = 0;
  ASSERT_EQ(api.cuMemAllocAsync(&pooled, 64, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&plain, 64), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamWriteValue32(s, pooled + 4, 7, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamWaitValue64(s, pooled + 8, 7, CU_STREAM_WAIT_VALUE_EQ),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamWriteValue32(s, plain + 4, 7, 0), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamWaitValue32(s, plain + 4, 7, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFreeAsync(pooled, s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(plain), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

// A wait nobody will meet ends when its stream is cancelled (a tenant that died).
TEST_F(EmuStream, CancelEndsAWaitForAValue) {
  CUdeviceptr v;
  ASSERT_EQ(api.cuMemAlloc(&v, 4), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(v, 0, 1), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamWaitValue32(s, v, 1, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(api.remoraEmuCancelStream(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(v), CUDA_SUCCESS);
}

TEST_F(EmuStream, CancelStopsARunningKernelAndDropsQueuedWorkButNotLaterWork) {
  CUmodule m;
  ASSERT_EQ(api.cuModuleLoadData(&m, kEndlessPtx), CUDA_SUCCESS);
  CUfunction f;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "endless"), CUDA_SUCCESS);
  CUdeviceptr started;
  ASSERT_EQ(api.cuMemAlloc(&started, 4), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(started, 0, 1), CUDA_SUCCESS);
  // A device memset is asynchronous, and a non-blocking stream does not wait for it: were it
  // to land after the kernel's first atomics, `started` would read 0 for ever.
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  CUstream s, other;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  void* args[] = {&started};
  ASSERT_EQ(api.cuLaunchKernel(f, 64, 1, 1, 32, 1, 1, 0, s, args, nullptr), CUDA_SUCCESS);
  Log log(4);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Log::Append, log.Tag(1)), CUDA_SUCCESS);  // queued behind
  uint32_t threads = 0;
  // Poll with pauses: the device's threads run at the host's least priority, and a poller
  // that never sleeps can keep them off the CPU for as long as other work is ready.
  while (threads == 0) {
    ASSERT_EQ(api.cuMemcpyDtoH(&threads, started, 4), CUDA_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_ERROR_NOT_READY);

  ASSERT_EQ(api.remoraEmuCancelStream(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);  // the context is not broken
  EXPECT_TRUE(log.Get().empty());                       // queued work never ran
  ASSERT_EQ(api.cuMemcpyDtoH(&threads, started, 4), CUDA_SUCCESS);
  EXPECT_LT(threads, 64u * 32);  // the blocks still waiting never started

  ASSERT_EQ(api.cuLaunchHostFunc(s, Log::Append, log.Tag(2)), CUDA_SUCCESS);  // pushed after
  ASSERT_EQ(api.cuLaunchHostFunc(other, Log::Append, log.Tag(3)), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<int> ran = log.Get();
  std::sort(ran.begin(), ran.end());
  EXPECT_EQ(ran, (std::vector<int>{2, 3}));

  // The legacy and per-thread streams belong to every user of the context.
  EXPECT_EQ(api.remoraEmuCancelStream(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.remoraEmuCancelStream(CU_STREAM_LEGACY), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.remoraEmuCancelStream(CU_STREAM_PER_THREAD), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.remoraEmuCancelStream(reinterpret_cast<CUstream>(&threads)),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(other), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(started), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
}

// --- threads: a stream has a worker only while it has work ----------------------------------

// The process's thread count, from /proc/self/status.
int ThreadCount() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// Polls until at most `limit` threads remain (workers exit a few ms after their
// stream empties) or `timeout` passes; returns the last count.
int WaitForThreadsAtMost(int limit, std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int n = ThreadCount();
  while (n > limit && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    n = ThreadCount();
  }
  return n;
}

// The thread count once earlier tests' stream workers have gone.
int SettledThreadCount() {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return ThreadCount();
}

// Polls until the process has at least `n` threads or `timeout` passes.
int WaitForThreadsAtLeast(int n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int c = ThreadCount();
  while (c < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    c = ThreadCount();
  }
  return c;
}

// A host function that sleeps (not spins) until Open(): a thousand of them
// must not eat the CPU.
struct SleepingGate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  static void Wait(void* self) {
    auto* g = static_cast<SleepingGate*>(self);
    std::unique_lock lock(g->mu);
    g->cv.wait(lock, [&] { return g->open; });
  }
  void Open() {
    {
      std::lock_guard lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};

// Counts a stream's host functions and notes whether they ran in push order.
struct Steps {
  int next = 0;  // written by the stream's worker only; read after a sync
  bool in_order = true;
  struct Call {
    Steps* steps;
    int k;
  };
  Call calls[2];
  static void Run(void* p) {
    auto* c = static_cast<Call*>(p);
    if (c->steps->next != c->k) c->steps->in_order = false;
    ++c->steps->next;
  }
};

// Slack for threads the runtime may start or end on its own.
constexpr int kThreadSlack = 2;

// Streams made busy at once: all of them, except under ThreadSanitizer, where
// each thread start costs ~10 ms and a thousand would take the test past 10 s.
#if defined(__SANITIZE_THREAD__)
constexpr int kBusyStreams = 200;
#else
constexpr int kBusyStreams = 1000;
#endif

TEST_F(EmuStream, ThousandIdleStreamsHoldNoThreads) {
  constexpr int kStreams = 1000;
  constexpr int kInts = 64;  // per stream: 32 ints of one value, 32 of another
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  const int baseline = SettledThreadCount();
  std::vector<CUstream> streams(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_EQ(api.cuStreamCreate(&streams[i], i % 2 ? CU_STREAM_NON_BLOCKING : 0), CUDA_SUCCESS);
  }
  const int idle = ThreadCount();
  EXPECT_LE(idle, baseline + kThreadSlack);

  // Work on every stream, each held at a gate first, so all are busy at once.
  CUdeviceptr dev;
  ASSERT_EQ(api.cuMemAlloc(&dev, kStreams * kInts * sizeof(int)), CUDA_SUCCESS);
  std::vector<int> host(kStreams * kInts, -1);
  ASSERT_EQ(api.cuMemHostRegister(host.data(), host.size() * sizeof(int), 0), CUDA_SUCCESS);
  std::vector<Steps> steps(kStreams);
  SleepingGate gate;
  for (int i = 0; i < kBusyStreams; ++i) {
    CUstream s = streams[i * (kStreams / kBusyStreams)];
    const CUdeviceptr d = dev + i * kInts * sizeof(int);
    ASSERT_EQ(api.cuLaunchHostFunc(s, SleepingGate::Wait, &gate), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemsetD32Async(d, i, kInts, s), CUDA_SUCCESS);
    steps[i].calls[0] = {&steps[i], 0};
    ASSERT_EQ(api.cuLaunchHostFunc(s, Steps::Run, &steps[i].calls[0]), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemsetD32Async(d + kInts / 2 * sizeof(int), kStreams + i, kInts / 2, s),
              CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemcpyDtoHAsync(&host[i * kInts], d, kInts * sizeof(int), s), CUDA_SUCCESS);
    steps[i].calls[1] = {&steps[i], 1};
    ASSERT_EQ(api.cuLaunchHostFunc(s, Steps::Run, &steps[i].calls[1]), CUDA_SUCCESS);
  }
  // One worker per busy stream, and no more.
  const int loaded = WaitForThreadsAtLeast(baseline + kBusyStreams);
  EXPECT_GE(loaded, baseline + kBusyStreams);
  EXPECT_LE(loaded, baseline + kBusyStreams + kThreadSlack);
  gate.Open();
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < kBusyStreams; ++i) {
    EXPECT_EQ(steps[i].next, 2) << i;
    EXPECT_TRUE(steps[i].in_order) << i;
    for (int j = 0; j < kInts; ++j) {
      ASSERT_EQ(host[i * kInts + j], j < kInts / 2 ? i : kStreams + i) << i << " " << j;
    }
  }
  // The workers leave once their streams have been empty for the linger.
  WaitForThreadsAtMost(baseline + kThreadSlack);
  const int after = WaitForThreadsAtMost(baseline, std::chrono::milliseconds(200));
  EXPECT_LE(after, baseline + kThreadSlack);
  std::printf("threads: baseline %d, %d idle streams %d, %d busy %d, idle again %d\n", baseline,
              kStreams, idle, kBusyStreams, loaded, after);

  // A stream whose worker has gone gets a new one for new work, in order.
  Log log(3);
  for (int t = 0; t < 3; ++t) {
    ASSERT_EQ(api.cuLaunchHostFunc(streams[t * 100], Log::Append, log.Tag(t)), CUDA_SUCCESS);
    ASSERT_EQ(api.cuStreamSynchronize(streams[t * 100]), CUDA_SUCCESS);
  }
  EXPECT_EQ(log.Get(), (std::vector<int>{0, 1, 2}));
  for (CUstream s : streams) EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostUnregister(host.data()), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(dev), CUDA_SUCCESS);
  EXPECT_LE(WaitForThreadsAtMost(baseline + kThreadSlack), baseline + kThreadSlack);
}

TEST_F(EmuStream, BlockedHostFunctionStallsOnlyItsStream) {
  CUstream a, b;
  ASSERT_EQ(api.cuStreamCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamCreate(&b, 0), CUDA_SUCCESS);
  SleepingGate gate;
  Log log(11);
  ASSERT_EQ(api.cuLaunchHostFunc(a, SleepingGate::Wait, &gate), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(a, Log::Append, log.Tag(-1)), CUDA_SUCCESS);
  CUdeviceptr p;
  ASSERT_EQ(api.cuMemAlloc(&p, 1024), CUDA_SUCCESS);
  std::vector<int> want;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(api.cuMemsetD32Async(p, i, 256, b), CUDA_SUCCESS);
    ASSERT_EQ(api.cuLaunchHostFunc(b, Log::Append, log.Tag(i)), CUDA_SUCCESS);
    want.push_back(i);
  }
  // B drains while A's host function is still blocked (polled, so a regression
  // fails here instead of hanging).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  CUresult q;
  while ((q = api.cuStreamQuery(b)) == CUDA_ERROR_NOT_READY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(q, CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(a), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(log.Get(), want);
  gate.Open();
  ASSERT_EQ(api.cuStreamSynchronize(a), CUDA_SUCCESS);
  want.push_back(-1);
  EXPECT_EQ(log.Get(), want);
  EXPECT_EQ(api.cuStreamDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(b), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(EmuStream, DestroyingAnIdleOrLingeringStreamEndsItsWorker) {
  const int baseline = SettledThreadCount();
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  Log log(2);
  ASSERT_EQ(api.cuLaunchHostFunc(s, Log::Append, log.Tag(1)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  // The worker lingers now; destroying the stream lets it go at once.
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_LE(WaitForThreadsAtMost(baseline + kThreadSlack), baseline + kThreadSlack);
  // Events and the legacy stream still order work across worker restarts.
  CUstream t;
  ASSERT_EQ(api.cuStreamCreate(&t, 0), CUDA_SUCCESS);
  CUevent e;
  ASSERT_EQ(api.cuEventCreate(&e, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(e, t), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventSynchronize(e), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the linger
  ASSERT_EQ(api.cuStreamWaitEvent(nullptr, e, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchHostFunc(nullptr, Log::Append, log.Tag(2)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(log.Get(), (std::vector<int>{1, 2}));
  EXPECT_EQ(api.cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(t), CUDA_SUCCESS);
}

// The emulated GPU runs below the host's threads (nice 19), but a stream that
// outranks the least priority runs at nice 5: its work is not left the crumbs.
TEST_F(EmuStream, WorkersOfRankedStreamsRunAtALighterNice) {
  struct Seen {
    int nice = -100;
    int policy = -1;
  };
  auto seen_by = [&](int priority) {
    CUstream s;
    EXPECT_EQ(api.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority), CUDA_SUCCESS);
    Seen seen;
    auto read = [](void* out) {
      Seen& o = *static_cast<Seen*>(out);
      o.nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
      o.policy = sched_getscheduler(0);
    };
    EXPECT_EQ(api.cuLaunchHostFunc(s, read, &seen), CUDA_SUCCESS);
    EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
    EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
    return seen;
  };
  int least = 0, greatest = 0;
  ASSERT_EQ(api.cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
  ASSERT_LT(greatest, least);
  const int own = getpriority(PRIO_PROCESS, 0);  // a worker's nice is never below its process's
  EXPECT_EQ(seen_by(least).nice, std::max(own, 19));
  EXPECT_EQ(seen_by(least).policy, SCHED_IDLE);  // any waking thread preempts it
  EXPECT_EQ(seen_by(greatest).nice, std::max(own, 5));
  EXPECT_EQ(seen_by(greatest).policy, sched_getscheduler(0));
  EXPECT_EQ(seen_by(least - 1).nice, std::max(own, 5));
}

}  // namespace
}  // namespace remora::emu::test
