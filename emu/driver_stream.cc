// emu/driver_stream.cc - entry points: streams, host functions, events.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <type_traits>

#include "emu/device.h"
#include "emu/driver.h"

namespace {

constexpr unsigned kEventFlags =
    CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

}  // namespace

using namespace remora::emu;  // NOLINT: entry points are global by ABI

REMORA_EMU_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags,
                                                           int priority) {
  EMU_CURRENT_CONTEXT(ctx);
  if (phStream == nullptr || (flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Out-of-range priorities are clamped, as documented.
  priority = std::clamp(priority, kStreamPriorityGreatest, kStreamPriorityLeast);
  return ctx->CreateStream(flags, priority, phStream);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return cuStreamCreateWithPriority(phStream, Flags, kStreamPriorityLeast);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int* priority) {
  EMU_CURRENT_CONTEXT(ctx);
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->StreamPriority(hStream, priority);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->DestroyStream(hStream);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->SyncStream(hStream);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->QueryStream(hStream);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                                  unsigned int Flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if ((Flags & ~unsigned{CU_EVENT_WAIT_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  return ctx->WaitEvent(hStream, hEvent);
}

REMORA_EMU_API CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  EMU_CURRENT_CONTEXT(ctx);
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Work w;
  w.run = [fn, userData] { fn(userData); };
  return ctx->Enqueue(hStream, std::move(w));
}

namespace {

// Where a stream memory operation may reach: device memory, or registered host memory, at
// the value's alignment; not a memory pool's (cuMemAllocAsync): an H200 refuses those with
// CUDA_ERROR_INVALID_VALUE.
template <class T>
CUresult MemOpTarget(Context* ctx, CUdeviceptr addr, T** out) {
  if (addr % sizeof(T) != 0 || ctx->memory().Pooled(addr)) return CUDA_ERROR_INVALID_VALUE;
  auto* p = reinterpret_cast<T*>(addr);
  if (!ctx->memory().Contains(addr, sizeof(T)) && !ctx->IsPinned(p, sizeof(T)))
    return CUDA_ERROR_INVALID_VALUE;
  *out = p;
  return CUDA_SUCCESS;
}

template <class T>
CUresult WriteValue(CUstream stream, CUdeviceptr addr, T value, unsigned flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if ((flags & ~unsigned{CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER}) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  T* p = nullptr;
  EMU_RETURN_IF_ERROR(MemOpTarget(ctx, addr, &p));
  Work w;
  w.run = [p, value] { std::atomic_ref<T>(*p).store(value, std::memory_order_release); };
  return ctx->Enqueue(stream, std::move(w));
}

// Whether `v` meets a wait's condition: at least `want` (compared cyclically, as a GPU does),
// equal to it, sharing a set bit with it (AND), or with a bit clear in both (NOR).
template <class T>
bool Meets(T v, T want, unsigned op) {
  switch (op) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return static_cast<std::make_signed_t<T>>(v - want) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
      return v == want;
    case CU_STREAM_WAIT_VALUE_AND:
      return (v & want) != 0;
    default:  // CU_STREAM_WAIT_VALUE_NOR
      return static_cast<T>(~(v | want)) != 0;
  }
}

// The stream waits on the device, taking no device time: its worker polls the value, briefly
// at first, then every 20 us, until it meets the condition or the stream is cancelled.
template <class T>
CUresult WaitValue(CUstream stream, CUdeviceptr addr, T value, unsigned flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if ((flags & ~3u) != 0) return CUDA_ERROR_INVALID_VALUE;  // no remote writes to flush here
  T* p = nullptr;
  EMU_RETURN_IF_ERROR(MemOpTarget(ctx, addr, &p));
  Work w;
  w.run = [p, value, op = flags & 3u] {
    const std::atomic<bool>* cancelled = CurrentWorkCancelled();
    for (int spins = 0;; ++spins) {
      if (Meets(std::atomic_ref<T>(*p).load(std::memory_order_acquire), value, op)) return;
      if (cancelled != nullptr && cancelled->load(std::memory_order_relaxed)) return;
      if (spins < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  };
  return ctx->Enqueue(stream, std::move(w));
}

// The user data of one remoraEmuLaunchDeviceWork item: `fn` runs it, or, if the
// item is dropped unrun (broken or reset context), `discard` frees it.
class DeviceWork {
 public:
  DeviceWork(CUhostFn fn, CUhostFn discard, void* user) : fn_(fn), discard_(discard), user_(user) {}
  ~DeviceWork() {
    if (armed_ && discard_ != nullptr) discard_(user_);
  }
  DeviceWork(const DeviceWork&) = delete;
  DeviceWork& operator=(const DeviceWork&) = delete;

  void Run() {
    armed_ = false;
    fn_(user_);
  }
  // The caller keeps ownership of the user data (the enqueue failed).
  void Disarm() { armed_ = false; }

 private:
  CUhostFn fn_;
  CUhostFn discard_;
  void* user_;
  bool armed_ = true;
};

}  // namespace

// Remora extension: cuLaunchHostFunc whose run time counts as device time
// (remoraEmuGetStreamBusyTime), for emulated libraries (emu/blas) computing on
// the stream. `discard` (may be null) is called instead of `fn` when the item is
// dropped without running (a broken or reset context), so `userData` never
// leaks. On an error return neither is called.
REMORA_EMU_API CUresult remoraEmuLaunchDeviceWork(CUstream hStream, CUhostFn fn, void* userData,
                                                  CUhostFn discard) {
  EMU_CURRENT_CONTEXT(ctx);
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto work = std::make_shared<DeviceWork>(fn, discard, userData);
  Work w;
  w.run = [work] { work->Run(); };
  w.device_time = true;
  const CUresult r = ctx->Enqueue(hStream, std::move(w));
  if (r != CUDA_SUCCESS) work->Disarm();
  return r;
}

// Stream memory operations: 32- and 64-bit writes and waits (cuda.h names the current ABI).
REMORA_EMU_API CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr,
                                                     cuuint32_t value, unsigned int flags) {
  return WriteValue(stream, addr, value, flags);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamWriteValue64(CUstream stream, CUdeviceptr addr,
                                                     cuuint64_t value, unsigned int flags) {
  return WriteValue(stream, addr, value, flags);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamWaitValue32(CUstream stream, CUdeviceptr addr,
                                                    cuuint32_t value, unsigned int flags) {
  return WaitValue(stream, addr, value, flags);
}

REMORA_EMU_API CUresult CUDAAPI cuStreamWaitValue64(CUstream stream, CUdeviceptr addr,
                                                    cuuint64_t value, unsigned int flags) {
  return WaitValue(stream, addr, value, flags);
}

REMORA_EMU_API CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if (phEvent == nullptr || (Flags & ~kEventFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  // An interprocess event must have timing disabled.
  if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return ctx->CreateEvent(Flags, phEvent);
}

REMORA_EMU_API CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->RecordEvent(hEvent, hStream);
}

REMORA_EMU_API CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->SyncEvent(hEvent);
}

REMORA_EMU_API CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->QueryEvent(hEvent);
}

REMORA_EMU_API CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart,
                                                   CUevent hEnd) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->ElapsedTime(pMilliseconds, hStart, hEnd);
}

REMORA_EMU_API CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->DestroyEvent(hEvent);
}
