// client_stub/kernels.h - fat binary registration, kernel launches, __device__ symbols.
//
// nvcc's constructors register each translation unit's fat binary, kernels and
// variables before main; nothing is sent then. A module goes to the server
// (RegisterModule: content hash, rdc flag, names) the first time one of its
// kernels or symbols is needed; the images follow in a second RegisterModule
// only if the server answers images_needed (it has not seen the hash). The
// reply's KernelLayout packs `void** args` into LaunchRequest.params. Launches
// are posted, never waited for.
#pragma once

#include <driver_types.h>
#include <vector_types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client_stub/launch_mode.h"
#include "proto/status.h"

namespace remora::v1 {
class KernelLayout;
}

namespace remora::client_stub {

struct Module;

// A kernel known to the stub. Its address is the cudaKernel_t handed to the app.
struct ImageModule;

struct Kernel {
  Module* module = nullptr;
  const void* host_fun = nullptr;
  std::string name;
  // From the server's KernelLayout (valid once the module is registered).
  uint64_t handle = 0;
  std::vector<uint32_t> offsets, sizes;
  uint32_t param_bytes = 0;
  int32_t max_threads_per_block = 0, shared_size_bytes = 0, local_size_bytes = 0, num_regs = 0;
  int32_t ptx_version = 0, binary_version = 0, const_size_bytes = 0;
  int32_t cluster_size_must_be_set = 0;
  // What cudaFuncSetAttribute/cuFuncSetAttribute last set (-1: never), as attributes report it.
  std::atomic<int32_t> max_dynamic_shared{-1}, carveout{-1};
  std::atomic<int32_t> non_portable_cluster{0};
  // The cluster shape the kernel requires: compiled in (__cluster_dims__) or set; 0s for none.
  std::atomic<int32_t> cluster[3] = {0, 0, 0};
  // A kernel of a module loaded from an image (image_module.h), and the DeviceEpoch its
  // handle is from: a device reset makes it stale, and its next use asks for it again.
  ImageModule* image = nullptr;
  std::atomic<uint64_t> epoch{0};
  // What the deprecated execution control API set (cuFuncSetBlockShape, cuParamSet*: the
  // driver's legacy launches, driver_legacy.cc); null until it is used.
  struct LegacyLaunch {
    int block[3] = {0, 0, 0};
    unsigned shared = 0;
    std::string params;
  };
  std::unique_ptr<LegacyLaunch> legacy;
};

// Device resets so far (ForgetDeviceState counts them).
uint64_t DeviceEpoch();

// A __device__/__constant__ variable, by its host shadow.
struct Variable {
  Module* module = nullptr;
  const void* host_var = nullptr;
  std::string name;
  size_t size = 0;
  bool constant = false;
  void** managed_slot = nullptr;  // a __managed__ variable's host pointer, set on registration
  uint64_t dptr = 0;              // valid once the module is registered
};

struct GraphOp;

// Takes the server's description of a kernel (its handle, parameters and attributes).
void ApplyLayout(Kernel& k, const remora::v1::KernelLayout& layout);
// Records an attribute the server accepted for `k` (cudaFuncAttribute numbering, which is the
// driver's CUfunction_attribute numbering too).
void NoteAttribute(Kernel& k, int attribute, int value);
// The kernel's dynamic shared memory limit: what was set, else the block's shared memory less
// its static part.
int MaxDynamicShared(const Kernel& k, const cudaDeviceProp& prop);
// The dynamic shared memory each of `blocks` blocks of `k` resident on one multiprocessor may
// have, as NVIDIA's occupancy calculator answers: the multiprocessor's shared memory split
// `blocks` ways, less the part reserved per block, at most a block's opt-in limit, less the
// kernel's static part, and at most the kernel's dynamic shared memory limit (48 KiB less its
// static part until raised: an H200 answers 49152 for one block and for two). 0 where it
// does not fit.
size_t AvailableDynamicShared(const Kernel& k, const cudaDeviceProp& prop, int blocks);

// Bookkeeping of the __cuda* registration calls. The void** handle is opaque.
void** AddModule(const void* wrapper);
void AddFunction(void** handle, const void* host_fun, const char* name);
void AddVariable(void** handle, const void* host_var, const char* name, size_t size, bool constant);
// A __managed__ variable: once its module is registered, its device memory is mirrored
// (mirror.h) and `*host_slot`, through which the program's host code reaches it, points there.
void AddManagedVariable(void** handle, void** host_slot, const char* name, size_t size);
// __cudaInitModule: registers the module now (the program's host code is about to touch one of
// its managed variables). False if that failed.
bool InitModule(void** handle);
// Forgets the module and tells the server, if it was registered and the session is up.
void RemoveModule(void** handle);

// After cudaDeviceReset: forgets device allocations, streams, events and every
// module's registration (modules register again on next use).
void ForgetDeviceState();

// The kernel registered for `host_fun` (a kernel's host stub, or a
// cudaKernel_t the stub handed out), or nullptr.
Kernel* FindKernel(const void* host_fun);

// A kernel of a module loaded from an image (image_module.h) becomes a handle FindKernel
// accepts, until ForgetKernelHandle.
void AcceptKernelHandle(const Kernel* k);
void ForgetKernelHandle(const Kernel* k);

// Registers the kernel's module with the server if not done yet (a kernel of a module loaded
// from an image was registered when it was named). Returns the
// registration's outcome (cached: a failure is returned again every time).
cudaError_t EnsureRegistered(Kernel& k);

// Checks the configuration, then posts the launch. Errors (also recorded as
// last error): cudaErrorInvalidDeviceFunction for a null kernel;
// cudaErrorInvalidConfiguration for a zero or oversized grid/block;
// registration errors; the session's failure code. A cooperative launch has
// every block co-resident (cudaLaunchCooperativeKernel); one too large for the
// device fails with cudaErrorCooperativeLaunchTooLarge at its stream's next
// synchronising call. A clustered one fails with cudaErrorNotSupported on a device
// without clusters and cudaErrorInvalidClusterSize where the grid is not whole clusters.
cudaError_t Launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                   cudaStream_t stream, LaunchMode mode = {});

// Posts a launch of `k`, whose handle and layout the server gave (`params`: its param_bytes
// packed), after the same configuration checks as Launch. The driver API's cuLaunchKernel.
cudaError_t PostLaunch(const Kernel& k, dim3 grid, dim3 block, std::string_view params,
                       size_t shared_bytes, cudaStream_t stream, LaunchMode mode = {});

// A graph node's work: a launch of `k` with `params` packed by its layout.
GraphOp KernelOp(const Kernel& k, dim3 grid, dim3 block, std::string_view params, size_t shared,
                 LaunchMode mode);

// The variable whose host shadow is `symbol`, registered with the server.
// Errors: cudaErrorInvalidSymbol if unknown; registration errors.
Result<Variable*> ResolveSymbol(const void* symbol);

// Per-thread <<<>>> configuration stack (__cudaPush/PopCallConfiguration).
struct LaunchConfig {
  dim3 grid, block;
  size_t shared_bytes;
  cudaStream_t stream;
};
void PushConfig(const LaunchConfig& c);
// False if the stack is empty.
bool PopConfig(LaunchConfig* c);

// cudaOccupancyMaxActiveClusters (or, with `potential_size`, MaxPotentialClusterSize) for a
// launch of `k` shaped so, asked of the server's device; a cluster of 0x0x0 asks about the
// kernel's compiled-in one. The device's error where it has no clusters.
cudaError_t ClusterOccupancy(const Kernel& k, dim3 grid, dim3 block, size_t shared, dim3 cluster,
                             bool potential_size, int* out);

// Packs `args` (one pointer per parameter) per the layout into `out`
// (param_bytes long). False if the layout is inconsistent.
bool PackParams(const Kernel& k, void** args, std::string* out);
// The driver's two ways to pass a launch's parameters: `params` (as PackParams), or `extra`, a
// list ending in CU_LAUNCH_PARAM_END holding CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE; one of
// them, or neither for a kernel without parameters. cudaErrorInvalidValue otherwise.
cudaError_t PackLaunchArgs(const Kernel& k, void** params, void** extra, std::string* out);

}  // namespace remora::client_stub
