// server/device.h - the one GPU this server owns: its context, description and stream pool.
//
// Every thread that calls the driver first calls MakeCurrent(). Tenants' streams
// are virtual; the Device hands out real streams from a pool and takes them back.
//
// Fault recovery: a device fault (illegal address, trap, assert) breaks the
// context for everyone. Every thread holds a Use while it calls the driver;
// Recover() closes the gate, waits for the Uses in flight to end, resets the
// context and opens the gate on a new epoch. A session whose epoch is older
// than the device's has lost its device state and must not touch its handles.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proto/status.h"
#include "remora/v1/session.pb.h"
#include "scheduler/gpu_priority.h"
#include "scheduler/tenant.h"
#include "server/blas_table.h"
#include "server/blaslt_table.h"
#include "server/dl_rows.h"
#include "server/dnn_table.h"
#include "server/driver_table.h"

namespace remora::server {

class Device {
 public:
  // Retains the primary context of device 0 and reads its description.
  // Errors: kInitializationError with the driver's reason.
  static Result<std::unique_ptr<Device>> Open(std::shared_ptr<DriverTable> drv);
  Device() = default;  // use Open
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DriverTable& drv() const { return *drv_; }
  // cuBLAS, cuDNN and cuBLASLt for this device, loaded on first use. Thread-safe.
  // Errors: kNotSupported naming the library that could not be loaded.
  Result<const BlasTable*> blas() {
    return blas_.Get([this] { return BlasTable::Load(*drv_); });
  }
  Result<const DnnTable*> dnn() {
    return dnn_.Get([this] { return DnnTable::Load(*drv_); });
  }
  Result<const BlasLtTable*> blaslt() {
    return blaslt_.Get([this] { return BlasLtTable::Load(*drv_); });
  }
  CUcontext context() const { return ctx_; }
  // Makes the context current on the calling thread. Errors: driver failure.
  Status MakeCurrent() const;
  // What tenants see of the device (name, memory, every attribute).
  const remora::v1::DeviceInfo& info() const { return info_; }
  // The device's ordinal in the driver (a CUmemLocation's id).
  CUdevice ordinal() const { return dev_; }
  // cuMemCreate's properties for plain memory of this device (no shareable handle).
  CUmemAllocationProp DeviceMemory() const {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev_;
    return prop;
  }
  // Device memory tenants may share: total minus the context's own reserve.
  uint64_t usable_memory() const { return usable_; }

  // Device-side malloc: true where the driver keeps a heap per tenant (the emulated GPU);
  // elsewhere the context's one heap of shared_heap_bytes() serves every tenant.
  bool heap_per_tenant() const { return drv_->remoraEmuHeapSetLimit != nullptr; }
  static constexpr uint64_t shared_heap_bytes() { return kSharedHeapBytes; }
  // Raises every thread's stack in the context to at least `bytes`, for every tenant alike
  // (the stack is the context's): never lowers it, and a rebuilt context gets it again. On
  // a GPU this waits for the work already on the device. Thread-safe. Errors: the driver's
  // refusal (cudaErrorMemoryAllocation where the device cannot hold so large a stack).
  Status RaiseStack(uint64_t bytes);

  // A non-blocking stream from the pool (created when the pool has none alike) whose GPU
  // priority is sched::GpuStreamPriority of the tenant's class and the priority it `asked`
  // for (none: a plain stream's): every stream of a higher class outranks a lower class's, so
  // the GPU's block scheduler serves a higher class's kernels first, and within a class a
  // tenant's more urgent streams first. Under ReserveSms, the streams of classes below kHigh
  // run on the multiprocessors not reserved. REQUIRES: the context is current. Thread-safe.
  Result<CUstream> AcquireStream(sched::Priority cls = sched::Priority::kNormal,
                                 std::optional<int> asked = std::nullopt);
  // Keeps `count` multiprocessors (rounded up to the device's partition step) for the kHigh
  // class alone, from the streams acquired after it: a priority only orders blocks waiting
  // to start, and a saturating lower-class kernel holds every multiprocessor until its blocks
  // end, so a high-priority kernel waited for them (a green context holds the rest). Lasts
  // until the context is rebuilt. Call before any stream is acquired. Errors: kNotSupported
  // where the driver has no green contexts (the emulated GPU), or the driver's refusal.
  Status ReserveSms(unsigned count);
  // Returns a stream to the pool; it is handed out again once its work is
  // done. Never waits. REQUIRES: the context is current.
  void ReleaseStream(CUstream s);

  // Kernel `name` of the server's own PTX module `ptx` (a string that lives as long as the
  // process), loaded into the context at first use in each epoch. REQUIRES: the context is
  // current. Thread-safe. Errors: the driver's, loading the module or finding the kernel.
  Result<CUfunction> OwnKernel(const char* ptx, const char* name);

  // Runs `work` once no stream of the device has work left, from the executor's thread
  // (RunWhenIdle). For the calls that wait for the whole device, every tenant's kernels,
  // holding the driver's lock meanwhile (unloading a module, destroying a library handle,
  // unmapping): on an H200 one tenant's cuModuleUnload behind another's spinning kernel
  // held the executor and every cuMemHostRegister for 160 s. Work of an epoch since rebuilt
  // is dropped: what it would free died with its context. Thread-safe.
  void WhenIdle(std::vector<std::function<void()>> work, uint64_t epoch);
  // Runs the waiting work if no stream has work now; true while some still waits.
  // REQUIRES: the context is current (a Device::Use held).
  bool RunWhenIdle();
  bool HasIdleWork() const { return idle_pending_.load(std::memory_order_acquire); }

  // A wake-up from the device's own progress: Ring(s) queues a host function
  // on `s` that, when the stream gets there, calls the listener (if one is
  // set then). It lives as long as the context, so a ring still queued when
  // its listener goes is harmless and nothing is allocated per ring.
  class Doorbell {
   public:
    // Sets the function rings call (on the driver's thread; it must not
    // block), or none; returns once no call to the old one is running.
    void Listen(std::function<void()> listener);
    // Best effort: a stream that refuses the host function is never rung.
    // REQUIRES: the context is current.
    void Ring(CUstream s);

   private:
    friend class Device;
    explicit Doorbell(const Device& device) : device_(device) {}
    // What a ring reaches. Lines are kept for the process's life (MakeLine), so a ring the
    // driver runs after its Device is gone (its stream destroyed with the host function still
    // queued) finds its line alive, and one it never runs leaves nothing behind.
    struct Line {
      std::mutex mu;
      std::function<void()> listener;  // guarded by mu
    };
    static Line& MakeLine();
    static void CUDA_CB Fire(void* line);
    const Device& device_;
    Line& line_ = MakeLine();
  };
  Doorbell& doorbell() { return doorbell_; }

  // Wraps a driver result: ok, or the tenant-visible cudaError_t with `what`
  // and the driver's own description.
  Status Check(CUresult r, const char* what) const;

  // Runs `call` (a driver call named `what`) and logs it when it held the calling thread
  // over 20 ms: on a GPU some calls (unregistering host memory, unloading a module) wait for
  // the whole device, every tenant's work, and that must be visible where it happens.
  template <class Call>
  CUresult Timed(const char* what, Call call) const {
    const auto t0 = std::chrono::steady_clock::now();
    const CUresult r = call();
    NoteIfSlow(what, std::chrono::steady_clock::now() - t0);
    return r;
  }

  // Permission to call the driver in the current epoch; held for the length of
  // one tenant call. Cheap: one atomic increment when no recovery is pending.
  class Use {
   public:
    Use(Use&& o) noexcept : d_(std::exchange(o.d_, nullptr)), epoch_(o.epoch_) {}
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    ~Use();
    uint64_t epoch() const { return epoch_; }

   private:
    friend class Device;
    Use(Device* d, uint64_t epoch) : d_(d), epoch_(epoch) {}
    Device* d_;
    uint64_t epoch_;
  };
  // Waits while a recovery is in progress, then returns a Use of the epoch,
  // with the epoch's context current on the calling thread.
  Use Enter();
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  // What broke the context last, and who.
  struct Fault {
    std::string culprit;  // tenant whose work faulted (or who saw it first)
    Status status;        // the fault, as its first observer got it
  };
  Fault last_fault() const;

  // Rebuilds the context after a fault seen in epoch `seen`; does nothing if
  // that epoch already ended. REQUIRES: the caller holds no Use. Returns the
  // reset's outcome. On NVIDIA's driver the rebuild fails (no context can be
  // had again in a process whose context faulted): the device is lost.
  Status Recover(uint64_t seen, const std::string& culprit, const Status& fault);
  // True once a Recover failed: nothing done in this process reaches the GPU.
  bool lost() const { return lost_.load(std::memory_order_acquire); }

 private:
  // The heap of device-side malloc/new where it is the context's, one for every tenant:
  // eight times a GPU's default, since one program's default would be shared by all.
  static constexpr uint64_t kSharedHeapBytes = 64ull << 20;
  void NoteIfSlow(const char* what, std::chrono::steady_clock::duration took) const;
  // Sizes the current context's heap and stack (kSharedHeapBytes, stack_): at Open and
  // after a rebuild, whose context starts with the driver's defaults. Logs a refusal.
  void ApplyLimits();
  std::mutex stack_mu_;
  uint64_t stack_ = 0;  // the most stack a tenant asked for; 0: the driver's (stack_mu_)
  // Sets info_'s granularity and the virtual memory attributes tenants see.
  void DescribeVmm();
  std::shared_ptr<DriverTable> drv_;
  Doorbell doorbell_{*this};
  LazyTable<BlasTable> blas_;
  LazyTable<DnnTable> dnn_;
  LazyTable<BlasLtTable> blaslt_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  remora::v1::DeviceInfo info_;
  uint64_t usable_ = 0;
  sched::PriorityRange priorities_;  // the device's stream priorities
  std::mutex pool_mu_;
  std::mutex own_mu_;
  std::unordered_map<const char*, std::pair<uint64_t, CUmodule>> own_modules_;  // (epoch, module)
  CUgreenCtx rest_ = nullptr;  // ReserveSms: the multiprocessors of the classes below kHigh
  struct Pooled {
    CUstream stream;
    sched::Priority cls;  // where it runs
    int priority;         // its GPU priority (GpuStreamPriority)
  };
  std::vector<Pooled> pool_;
  std::vector<Pooled> draining_;  // given back with work possibly in flight
  // Every stream handed out: its class and GPU priority.
  std::unordered_map<CUstream, std::pair<sched::Priority, int>> class_of_;
  // Moves finished streams from draining_ to the pool. REQUIRES: pool_mu_, context current.
  void ReapDrainedLocked();
  std::mutex idle_mu_;
  std::vector<std::pair<uint64_t, std::function<void()>>> idle_work_;  // (epoch, work)
  std::atomic<bool> idle_pending_{false};
  std::atomic<int64_t> idle_looked_us_{0};  // when RunWhenIdle last queried the streams

  // The gate: users_ counts Uses in flight; closing_ turns new ones away.
  std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> lost_{false};
  std::atomic<int> users_{0};
  std::atomic<bool> closing_{false};
  mutable std::mutex gate_mu_;  // for the waits below, and recover_mu_'s data
  std::condition_variable gate_cv_;
  std::mutex recover_mu_;  // one recovery at a time
  Fault last_fault_;       // guarded by gate_mu_
};

}  // namespace remora::server
