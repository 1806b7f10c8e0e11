// emu/context.h - the primary context: its memory, streams, events, modules.
//
// There is one device and so one context, the primary one, alive for the whole
// process (a CUcontext is its address). It is active while retained; release to
// zero or reset destroys everything in it. Every handle table lives here, and
// every lookup checks that a handle is live in this context.
//
// Ordering: streams run in order, each on its own worker thread while it has
// work (stream.h: an idle stream has none). The NULL (legacy) stream
// waits for all earlier work of every blocking stream, and work in a blocking
// stream waits for earlier work in the NULL stream (CU_STREAM_NON_BLOCKING opts
// out). A kernel fault breaks the context: all later work is skipped and every
// call returns the sticky error until the context is reset.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda.h>

#include "emu/heap.h"
#include "emu/memory.h"
#include "emu/module.h"
#include "emu/program_cache.h"
#include "emu/stream.h"
#include "emu/texture.h"

namespace remora::emu {

struct Event {
  unsigned flags;
  std::shared_ptr<Marker> last;  // the latest record; null if never recorded
};

struct LinkState {
  // cuLinkCreate's options and the caller's values array (kept alive by the caller until
  // cuLinkComplete, as NVIDIA's linker requires): the JIT logs cuLinkComplete writes.
  std::vector<CUjit_option> options;
  void** values = nullptr;
  std::vector<std::string> sources;
  std::vector<std::byte> image;  // cuLinkComplete's output, owned until destroy
  // The program cuLinkComplete parsed, held until destroy so that loading
  // `image` finds it in the program cache instead of parsing again.
  std::shared_ptr<const ParsedProgram> parsed;
};

// A function handle resolved under the context lock: `module` keeps `fn` alive.
struct FunctionRef {
  std::shared_ptr<Module> module;
  Function* fn = nullptr;
};

class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  CUcontext handle() { return reinterpret_cast<CUcontext>(this); }

  // Primary-context reference counting. Retain activates an inactive context;
  // Release to zero tears it down. Release errors: CUDA_ERROR_INVALID_CONTEXT
  // if not retained.
  void Retain();
  CUresult Release();
  // Destroys all work, handles and memory; the retain count is kept.
  void Reset();
  // The fault a Reset found: from then on, as on NVIDIA's driver, no context
  // of this process can be had again (Retain's caller returns it), unless
  // REMORA_EMU_STICKY_FAULTS=context. CUDA_SUCCESS otherwise.
  CUresult ProcessFault() const {
    return static_cast<CUresult>(process_fault_.load(std::memory_order_acquire));
  }

  // What every context-bound call checks first: CUDA_ERROR_CONTEXT_IS_DESTROYED
  // while inactive, the sticky error after a fault, else CUDA_SUCCESS.
  CUresult Check() const;
  // Breaks the context with `code` (the first failure wins, and `stream`, the
  // one whose work failed, is kept with it) and writes `why` to stderr prefixed
  // "remora-emu:". Thread-safe; called from stream workers.
  void Fail(CUresult code, const std::string& why, CUstream stream = nullptr);
  // The stream (as the caller named it) whose work broke the context; nullptr
  // while healthy.
  CUstream FaultStream() const;

  DeviceMemory& memory() { return *memory_; }
  // Device-side malloc/free of this context's kernels.
  Heap& heap() { return heap_; }
  // Parameter buffers of device-side launches (dynamic parallelism), apart from the heap.
  Heap& launch_pool() { return launch_pool_; }
  // Texture and surface objects (cleared by a reset, as every handle is).
  Textures& textures() { return textures_; }
  // cuCtxSetLimit / cuCtxGetLimit. The heap's limit is the heap's (Heap::SetLimit); the
  // stack's sizes the call stacks of launches enqueued after it (CallStackBytes); the others
  // are recorded and read back with a GPU's defaults, as the emulator has no fixed FIFO or
  // launch queue to size. Errors: CUDA_ERROR_UNSUPPORTED_LIMIT for an unknown one, and for
  // setting a read-only one; CUDA_ERROR_INVALID_VALUE for an L2 fetch granularity above 128,
  // and as Heap::SetLimit says; CUDA_ERROR_OUT_OF_MEMORY for a stack past kMaxStackBytes.
  CUresult SetLimit(CUlimit limit, size_t value);
  CUresult GetLimit(CUlimit limit, size_t* value) const;
  // Bytes of call stack each thread of a kernel that calls functions gets: the stack limit,
  // and at least kMinCallStackBytes.
  uint32_t CallStackBytes() const;

  // Device-side heaps kept apart by owner: the server gives each tenant its own, so that one
  // cannot exhaust another's and what one leaks goes with it. A launch draws on the heap of
  // the owner its enqueuing thread named last (SetLaunchOwner; owner 0, the default, is the
  // context's heap()); an owner's heap is made at kDefaultHeapBytes on first use.
  static void SetLaunchOwner(uint64_t owner);
  // The heap a launch enqueued now by this thread uses; the launch holds it while it runs.
  std::shared_ptr<Heap> LaunchHeap();
  // Heap::SetLimit of `owner`'s heap, made if it has none yet. Errors: Heap::SetLimit's.
  CUresult SetOwnerHeapLimit(uint64_t owner, uint64_t bytes);
  // Forgets `owner`'s heap: its memory goes back once no launch holds it.
  void ReleaseOwnerHeap(uint64_t owner);

  // --- streams ----------------------------------------------------------------
  CUresult CreateStream(unsigned flags, int priority, CUstream* out);
  // The priority `s` was created with (the default streams: the least).
  // Errors: CUDA_ERROR_INVALID_HANDLE.
  CUresult StreamPriority(CUstream s, int* out) const;
  // Errors: CUDA_ERROR_INVALID_HANDLE for the NULL stream or an unknown one.
  // Pending work still runs; the worker exits after it.
  CUresult DestroyStream(CUstream s);
  // Queues `w` on `s` behind the legacy-stream dependencies. A null w.done is
  // filled in. Errors: CUDA_ERROR_INVALID_HANDLE.
  CUresult Enqueue(CUstream s, Work w, std::shared_ptr<Marker>* done = nullptr);
  // Blocks until the work queued on `s` so far has run; returns the sticky error
  // if the context broke. Errors: CUDA_ERROR_INVALID_HANDLE.
  CUresult SyncStream(CUstream s);
  // CUDA_SUCCESS if idle, CUDA_ERROR_NOT_READY if work is pending.
  CUresult QueryStream(CUstream s);
  // Blocks until all work queued in the context has run; returns Check().
  CUresult Synchronize();
  // Blocks until `m` is done; returns Check().
  CUresult WaitFor(const std::shared_ptr<Marker>& m);
  // Device time spent on `s`'s work. Errors: CUDA_ERROR_INVALID_HANDLE.
  CUresult StreamBusyTime(CUstream s, uint64_t* ns);
  // Stream::Cancel on `s`: its queued work is dropped and its running kernel stops, without
  // breaking the context. Errors: CUDA_ERROR_INVALID_HANDLE, also for the legacy and
  // per-thread streams (shared by every user of the context).
  CUresult CancelStream(CUstream s);

  // --- events -----------------------------------------------------------------
  CUresult CreateEvent(unsigned flags, CUevent* out);
  CUresult DestroyEvent(CUevent e);
  CUresult RecordEvent(CUevent e, CUstream s);
  CUresult QueryEvent(CUevent e);
  CUresult SyncEvent(CUevent e);
  CUresult ElapsedTime(float* ms, CUevent start, CUevent end);
  CUresult WaitEvent(CUstream s, CUevent e);

  // --- host registrations (decide async copy semantics; DEVICEMAP ones are
  // also device-accessible at their host address) ------------------------------
  // Errors: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED on overlap.
  CUresult RegisterHost(void* p, size_t bytes, unsigned flags);
  // Errors: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED unless `p` starts a registration.
  CUresult UnregisterHost(void* p);
  // True if [p, p + bytes) lies in one registered range.
  bool IsPinned(const void* p, size_t bytes) const;
  // The device address of host pointer `p` (== p: unified addressing) if it lies
  // in a range registered with CU_MEMHOSTREGISTER_DEVICEMAP; else
  // CUDA_ERROR_INVALID_VALUE, as NVIDIA's driver answers for unmapped memory.
  CUresult HostDevicePointer(const void* p, CUdeviceptr* out) const;

  // --- device memory ----------------------------------------------------------
  // Waits for the context's pending work, then frees `p`.
  CUresult FreeMemory(CUdeviceptr p);

  // --- modules, functions, linker ---------------------------------------------
  CUresult AddModule(std::shared_ptr<Module> m, CUmodule* out);
  // Waits for the whole device holding the driver's mapping lock, which registering or
  // unregistering host memory takes: as on an H200, where one tenant's cuModuleUnload behind
  // another's spinning kernel held every cuMemHostRegister for 160 s.
  CUresult UnloadModule(CUmodule m);
  std::shared_ptr<Module> FindModule(CUmodule m) const;
  // Errors: CUDA_ERROR_INVALID_HANDLE (module), CUDA_ERROR_NOT_FOUND (name).
  CUresult GetFunction(CUmodule m, const char* name, CUfunction* out);
  // The module's kernels: their number in *count, and the first `n` in `out` (either may be
  // null). Errors: CUDA_ERROR_INVALID_HANDLE (module).
  CUresult ListFunctions(CUmodule m, unsigned* count, CUfunction* out, unsigned n);
  FunctionRef FindFunction(CUfunction f) const;
  CUresult CreateLink(CUlinkState* out);
  CUresult DestroyLink(CUlinkState l);
  // The link state, or null. REQUIRES: callers use it on one thread at a time,
  // as the CUDA API requires.
  LinkState* FindLink(CUlinkState l) const;

 private:
  Stream* ResolveLocked(CUstream s) const;
  std::vector<std::shared_ptr<Marker>> TailsLocked(const Stream* s) const;
  std::vector<std::shared_ptr<Marker>> AllTailsLocked() const;
  CUresult EnqueueLocked(Stream* st, Work& w);
  void ReapLocked();
  void Activate();
  void TearDown(bool deactivate);

  std::unique_ptr<DeviceMemory> memory_;
  Heap heap_{*memory_};  // after memory_: gives its block back first
  Heap launch_pool_{*memory_, kLaunchPoolBytes};
  Textures textures_{*memory_};
  std::mutex heaps_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Heap>> owned_heaps_;  // guarded by heaps_mu_
  // `owner`'s heap, made at kDefaultHeapBytes if it has none. REQUIRES: heaps_mu_ held.
  std::shared_ptr<Heap>& OwnerHeapLocked(uint64_t owner);
  // Recorded limits by CUlimit; the heap's slot is unused (heap_ holds it).
  std::atomic<size_t> limits_[CU_LIMIT_MAX] = {1024, 1 << 20, 0, 2, 2048, 64, 0, 0, 0, 0};
  Progress progress_;
  // Non-zero while work must be skipped: the sticky error, or
  // CUDA_ERROR_CONTEXT_IS_DESTROYED during teardown.
  std::atomic<int> error_{0};
  std::atomic<CUstream> fault_stream_{nullptr};
  std::atomic<int> process_fault_{0};  // set with the first failure

  std::mutex mapping_mu_;  // see UnloadModule: held across a whole-device wait
  mutable std::mutex mu_;  // guards everything below
  int retain_count_ = 0;
  std::atomic<bool> active_{false};
  std::unique_ptr<Stream> legacy_;
  std::unordered_map<CUstream, std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Stream>> retired_;  // destroyed with work pending
  std::unordered_map<CUevent, std::unique_ptr<Event>> events_;
  std::unordered_map<CUmodule, std::shared_ptr<Module>> modules_;
  std::unordered_map<CUfunction, FunctionRef> functions_;
  std::unordered_map<CUlinkState, std::unique_ptr<LinkState>> links_;
  struct HostReg {
    size_t bytes;
    unsigned flags;
  };
  std::map<uintptr_t, HostReg> host_regs_;  // base -> registration
};

// Device printf delivery (remoraEmuSetPrintfHandler): the handler, or stdout
// when none is set. Thread-safe.
using PrintfHandler = void (*)(void* user, CUstream stream, const char* text, size_t len);
void SetPrintfHandler(PrintfHandler fn, void* user);
void DeliverPrintf(CUstream stream, const std::string& text);

}  // namespace remora::emu
