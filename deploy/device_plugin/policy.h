// deploy/device_plugin/policy.h - what the device plugin offers and grants, as pure functions.
//
// Kubernetes counts devices, so each GPU's memory and compute are cut into
// unit devices: `remora.io/gpu-memory` one per MiB (times --memory-unit-mib) of
// the server's usable memory, IDs like gpu0-mem-00042; `remora.io/gpu-compute`
// 1000 per GPU (per-mille of its time), IDs like gpu0-cmp-0042. Nothing here
// does I/O: tenant lists and remembered allocations come in as arguments.
//
//   std::vector<bool> h = UnitHealth(units, HeldUnits(list, Resource::kMemory, kMiB), mine);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.h"
#include "remora/v1/session.pb.h"

namespace remora::device_plugin {

enum class Resource { kMemory, kCompute };
inline constexpr uint32_t kComputeUnits = 1000;  // per GPU
inline constexpr uint64_t kMiB = uint64_t{1} << 20;

// "remora.io/gpu-memory" or "remora.io/gpu-compute".
const char* ResourceName(Resource r);

struct DeviceId {
  uint32_t gpu = 0;
  Resource resource = Resource::kMemory;
  uint32_t unit = 0;
  auto operator<=>(const DeviceId&) const = default;
};

// gpu<N>-mem-<unit, 5 digits or more> or gpu<N>-cmp-<unit, 4 digits>.
std::string FormatId(const DeviceId& id);
// The inverse of FormatId; nullopt for any other text (no crash on garbage).
std::optional<DeviceId> ParseId(std::string_view text);

// Devices one GPU has for `r`: its usable memory in units of `unit_bytes`
// (rounded down), or kComputeUnits. REQUIRES: unit_bytes > 0.
uint32_t TotalUnits(const v1::TenantList& list, Resource r, uint64_t unit_bytes);

// Units the tenants hold, rounded up and capped at TotalUnits: for memory the
// sum over tenants of max(memory_request, memory_used); for compute the sum of
// compute_request (fractions of the GPU) times kComputeUnits.
uint32_t HeldUnits(const v1::TenantList& list, Resource r, uint64_t unit_bytes);

// Health of each of `units` devices of one GPU, true = Healthy. What tenants
// hold beyond the units this plugin allocated (`allocated`, unit indices) is
// held by someone Kubernetes did not place: that many not-allocated devices,
// highest indices first, are unhealthy. `reachable` false: all unhealthy.
std::vector<bool> UnitHealth(uint32_t units, bool reachable, uint32_t held,
                             const std::set<uint32_t>& allocated);

// GetPreferredAllocation for one container: `size` IDs from `available`,
// including `must_include`, all on one GPU: the must-include IDs' GPU if they
// have one, else the GPU with the most available devices among those with at
// least `size`; lowest units first. If no GPU fits, as many as the best GPU
// has (Allocate refuses what spans GPUs). Unknown IDs are ignored.
std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size);

// A GPU as the plugin knows it.
struct Gpu {
  uint32_t index = 0;
  std::string server;       // what the plugin dials: unix:/run/remora/gpu0.sock
  std::string host_dir;     // the directory of its socket on the host
  std::string socket_name;  // gpu0.sock
  bool reachable = false;
  uint32_t memory_units = 0;  // devices of remora.io/gpu-memory
};

// Where the container finds things; from the plugin's flags.
struct GrantOptions {
  std::string container_socket_dir = "/run/remora";
  std::string stub_dir = "/usr/local/lib/remora/stub";
  uint64_t memory_unit_bytes = kMiB;
};

struct Mount {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

// What Allocate tells kubelet for one container.
struct Grant {
  uint32_t gpu = 0;
  std::vector<uint32_t> units;
  std::map<std::string, std::string> env;
  std::vector<Mount> mounts;
};

// The library directory inside containers (LD_LIBRARY_PATH).
inline constexpr const char* kContainerLibDir = "/usr/local/remora/lib";

// Allocate for one container of resource `r`: env REMORA_SERVER, REMORA_GPU_MEMORY
// (bytes) or REMORA_GPU_COMPUTE (a fraction), LD_LIBRARY_PATH; mounts of the
// socket directory (read-write) and the stub libraries (read-only).
// Errors (kInvalidValue, naming the ID): no IDs, an ID that is not `r`'s or
// names a unit or GPU not in `gpus` (keyed by index), IDs on two GPUs, a GPU
// whose server cannot be reached.
Result<Grant> PlanGrant(Resource r, const std::vector<std::string>& ids,
                        const std::map<uint32_t, Gpu>& gpus, const GrantOptions& opts);

// units / 1000 as a decimal fraction without trailing zeros: 250 -> "0.25", 1000 -> "1".
std::string PerMille(uint32_t units);

}  // namespace remora::device_plugin
