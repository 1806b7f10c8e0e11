// emu/device.h - the one emulated device: its configuration and attribute table.
//
// The device looks like an sm_80 data-centre GPU (A100-class limits) named "Remora Emulated
// GPU": it runs the PTX of compute_80 and below, tensor-core and asynchronous-copy
// instructions included, so programs take the paths they take on a modern GPU; and, for a
// program with nothing older, compute_90's (kNewestPtx).
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
// The newest PTX target the device also runs where a program has none at or below kArch (one
// built only for sm_90, say): a GPU would refuse it; the interpreter runs compute_90's forms,
// refusing at launch the few it lacks (clusters, the tensor memory accelerator, wgmma).
inline constexpr int kNewestPtx = 90;
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
