// emu/ptx/device_runtime.h - CUDA's device runtime (dynamic parallelism, CDP2) on the
// interpreter: kernels that launch kernels, make streams and events, allocate, copy and set
// memory.
//
// nvcc compiles a launch in device code into calls to the device runtime's __cudaCDP2*
// functions, which NVIDIA's libcudadevrt defines in machine code only. The emulated GPU's
// linker resolves them to the builtins here instead, as it does vprintf and malloc. The work a
// grid's threads ask for is queued, and runs once the grid's own blocks have ended: in the
// order it was asked, tail launches (cudaStreamTailLaunch) after the rest, each child's own
// children before the next. That is one of the schedules a GPU may choose (since CUDA 12 a
// parent cannot wait for its children), it keeps every stream's order, and the parent's launch
// completes, as on a GPU, only when all its descendants have.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "proto/status.h"

namespace remora::emu::ptx {

class Program;
struct LaunchConfig;
struct Exec;
struct Inst;
struct CallSite;

enum class RuntimeCall : uint8_t {
  kNone,
  kGetParameterBuffer,
  kGetParameterBufferV2,
  kLaunchDevice,
  kLaunchDeviceV2,
  kStreamCreate,
  kEventCreate,
  kOrdering,  // stream and event calls sequential execution already honours
  kGetLastError,
  kPeekAtLastError,
  kGetDevice,
  kGetDeviceCount,
  kRuntimeGetVersion,
  kMalloc,
  kFree,
  kMemcpyAsync,
  kMemsetAsync,
  kGetErrorName,
  kGetErrorString,
};

// The device runtime function `name` declares (a __cudaCDP2* name, _ptsz forms included), or
// kNone for one the emulated GPU does not serve: the link then fails naming it.
RuntimeCall RuntimeCallNamed(std::string_view name);

// The launches, copies and sets one grid's threads queued. Thread-safe.
class DeviceWork {
 public:
  // `depth`: the grid's nesting depth, 0 for a launch from the host.
  DeviceWork(const Program& program, uint32_t depth);
  ~DeviceWork();
  DeviceWork(const DeviceWork&) = delete;
  DeviceWork& operator=(const DeviceWork&) = delete;

  // Runs what was queued, with `parent`'s memory, heap, textures, printf and priority; frees
  // the parameter buffers. Returns the first failure of a child grid or operation. With
  // `discard` (the parent failed or was cancelled: its launch tree ends with it) nothing runs.
  Status Run(const LaunchConfig& parent, bool discard = false);

  struct State;
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

// Executes call `c` for every lane of x.mask, in lane order. Returns an exec result (kNext, or
// kFault after recording the fault).
int CallDeviceRuntime(Exec& x, const Inst& in, const CallSite& site, RuntimeCall c);

// Launch, for a grid launched from device code at nesting depth `depth` (launch.cc).
Status LaunchNested(const Program& program, size_t kernel, const LaunchConfig& config,
                    uint32_t depth);

}  // namespace remora::emu::ptx
