// emu/device.h - the one emulated device: its configuration and attribute table.
//
// The device looks like an sm_80 data-centre GPU (A100-class limits) named "Remora Emulated
// GPU": it runs the PTX of compute_80 and below, tensor-core and asynchronous-copy
// instructions included, so programs take the paths they take on a modern GPU; and, for a
// module with nothing older, newer PTX up to compute_121's (kNewestPtx).
// Memory size and SM count come from the environment, read once:
//   REMORA_EMU_MEMORY  total device memory, "16G" (default), "512M", "1073741824"
//   REMORA_EMU_SMS     multiprocessor count (default 40)
//   REMORA_EMU_STICKY_FAULTS  "process" (default): as on NVIDIA's driver, a
//                      process whose context faulted never retains a context
//                      again; "context": a reset gives a working one (lenient,
//                      for tests of a server that rebuilds in process)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <cuda.h>

namespace remora::emu {

inline constexpr int kComputeMajor = 8;
inline constexpr int kComputeMinor = 0;
inline constexpr int kArch = 80;
// The newest PTX target the device also runs where a module has none at or below kArch: a
// program built only for sm_90, say, and NVIDIA's libraries (cuSPARSE, cuRAND, cuSOLVER,
// cuBLAS), which carry PTX for compute_120 or compute_121 alone beside their machine code. A GPU
// would refuse it; the interpreter runs the forms it knows, refusing at launch those it lacks
// (clusters, the tensor memory accelerator, wgmma, tcgen05).
inline constexpr int kNewestPtx = 121;
// The same for a fat binary linked with others (cuLinkAddData): compute_90. CUDA 13's device
// runtime library (libcudadevrt), which the emulated GPU serves itself, is such an input with
// compute_121 PTX alone; it is left out of the link, as before.
inline constexpr int kNewestLinkedPtx = 90;
inline constexpr int kDriverVersion = 13000;
inline constexpr int kSharedPerBlock = 48 * 1024;
inline constexpr int kSharedPerBlockOptin = 163 * 1024;
inline constexpr int kSharedPerSm = 164 * 1024;
inline constexpr int kRegistersPerBlock = 65536;
inline constexpr int kRegistersPerSm = 65536;
inline constexpr int kThreadsPerSm = 2048;
inline constexpr int kBlocksPerSm = 32;
inline constexpr int kMaxThreadsPerBlock = 1024;
// A texture's base and a pitched texture's rows must be aligned so (cuTexObjectCreate refuses
// others, as a GPU does); allocations start on kTextureAlignment.
inline constexpr int kTextureAlignment = 512;
inline constexpr int kTexturePitchAlignment = 32;
inline constexpr int kStreamPriorityLeast = 0;
inline constexpr int kStreamPriorityGreatest = -5;
inline constexpr char kDeviceName[] = "Remora Emulated GPU";

struct DeviceConfig {
  uint64_t total_memory;
  int sm_count;
  bool faults_poison_process;
};

// Returns the configuration, parsed from the environment on first call.
// Thread-safe. A malformed variable falls back to the default.
const DeviceConfig& Config();

// Returns the value of `attr`, or nullopt if it is not a CUdevice_attribute.
std::optional<int> DeviceAttribute(int attr);

// The fixed UUID of the emulated device.
CUuuid DeviceUuid();

}  // namespace remora::emu
