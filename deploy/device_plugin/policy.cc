// deploy/device_plugin/policy.cc - device IDs, health, preferred allocation, grants.
#include "deploy/device_plugin/policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace remora::device_plugin {
namespace {

constexpr std::string_view kMemTag = "-mem-";
constexpr std::string_view kCmpTag = "-cmp-";

std::optional<uint32_t> ParseIndex(std::string_view s) {
  uint32_t v = 0;
  if (s.empty() || s.size() > 9) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

const char* ResourceName(Resource r) {
  return r == Resource::kMemory ? "remora.io/gpu-memory" : "remora.io/gpu-compute";
}

std::string FormatId(const DeviceId& id) {
  char buf[48];
  if (id.resource == Resource::kMemory)
    std::snprintf(buf, sizeof buf, "gpu%u-mem-%05u", id.gpu, id.unit);
  else
    std::snprintf(buf, sizeof buf, "gpu%u-cmp-%04u", id.gpu, id.unit);
  return buf;
}

std::optional<DeviceId> ParseId(std::string_view text) {
  const std::string_view whole = text;
  if (!text.starts_with("gpu")) return std::nullopt;
  text.remove_prefix(3);
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::optional<uint32_t> gpu = ParseIndex(text.substr(0, dash));
  std::string_view rest = text.substr(dash);
  DeviceId id;
  if (rest.starts_with(kMemTag)) {
    id.resource = Resource::kMemory;
  } else if (rest.starts_with(kCmpTag)) {
    id.resource = Resource::kCompute;
  } else {
    return std::nullopt;
  }
  std::optional<uint32_t> unit = ParseIndex(rest.substr(kMemTag.size()));
  if (!gpu || !unit) return std::nullopt;
  id.gpu = *gpu;
  id.unit = *unit;
  if (FormatId(id) != whole) return std::nullopt;  // one spelling per device
  return id;
}

uint32_t TotalUnits(const v1::TenantList& list, Resource r, uint64_t unit_bytes) {
  if (r == Resource::kCompute) return kComputeUnits;
  return static_cast<uint32_t>(std::min<uint64_t>(list.usable_memory() / unit_bytes, UINT32_MAX));
}

uint32_t HeldUnits(const v1::TenantList& list, Resource r, uint64_t unit_bytes) {
  const uint32_t total = TotalUnits(list, r, unit_bytes);
  if (r == Resource::kMemory) {
    uint64_t bytes = 0;
    for (const v1::TenantRow& t : list.tenants())
      bytes += std::max(t.memory_request(), t.memory_used());
    return static_cast<uint32_t>(std::min<uint64_t>((bytes + unit_bytes - 1) / unit_bytes, total));
  }
  double share = 0;
  for (const v1::TenantRow& t : list.tenants())
    if (t.compute_request() > 0) share += t.compute_request();
  // A share computed as 0.25 may arrive as 0.2500000001: not a 251st unit.
  const double units = std::ceil(share * kComputeUnits - 1e-6);
  return units >= total ? total : static_cast<uint32_t>(std::max(units, 0.0));
}

std::vector<bool> UnitHealth(uint32_t units, bool reachable, uint32_t held,
                             const std::set<uint32_t>& allocated) {
  std::vector<bool> healthy(units, reachable);
  if (!reachable) return healthy;
  uint32_t mine = 0;
  for (uint32_t u : allocated)
    if (u < units) ++mine;
  uint32_t foreign = held > mine ? held - mine : 0;
  for (uint32_t u = units; u-- > 0 && foreign > 0;) {
    if (allocated.count(u)) continue;
    healthy[u] = false;
    --foreign;
  }
  return healthy;
}

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size) {
  std::map<uint32_t, std::map<uint32_t, std::string>> by_gpu;  // by unit, lowest first
  for (const std::string& s : available)
    if (std::optional<DeviceId> id = ParseId(s)) by_gpu[id->gpu].emplace(id->unit, s);
  std::set<uint32_t> must_gpus;
  for (const std::string& s : must_include)
    if (std::optional<DeviceId> id = ParseId(s)) must_gpus.insert(id->gpu);

  std::optional<uint32_t> pick;
  if (must_gpus.size() == 1) {
    pick = *must_gpus.begin();
  } else {
    size_t best = 0;
    for (const auto& [gpu, ids] : by_gpu) {
      bool fits = ids.size() >= static_cast<size_t>(std::max(size, 0));
      bool best_fits = pick && best >= static_cast<size_t>(std::max(size, 0));
      if (!pick || (fits && !best_fits) || (fits == best_fits && ids.size() > best)) {
        pick = gpu;
        best = ids.size();
      }
    }
  }
  std::vector<std::string> out;
  std::set<std::string> taken;
  for (const std::string& s : must_include)
    if (taken.insert(s).second) out.push_back(s);
  if (!pick) return out;
  for (const auto& [unit, s] : by_gpu[*pick]) {
    if (out.size() >= static_cast<size_t>(std::max(size, 0))) break;
    if (taken.insert(s).second) out.push_back(s);
  }
  return out;
}

std::string PerMille(uint32_t units) {
  std::string s = std::to_string(units / 1000);
  uint32_t frac = units % 1000;
  if (frac == 0) return s;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%03u", frac);
  std::string f = buf;
  while (f.back() == '0') f.pop_back();
  return s + "." + f;
}

Result<Grant> PlanGrant(Resource r, const std::vector<std::string>& ids,
                        const std::map<uint32_t, Gpu>& gpus, const GrantOptions& opts) {
  if (ids.empty()) return Error(err::kInvalidValue, "no device IDs to allocate");
  Grant g;
  const Gpu* gpu = nullptr;
  std::set<uint32_t> units;
  for (const std::string& s : ids) {
    std::optional<DeviceId> id = ParseId(s);
    if (!id || id->resource != r)
      return Error(err::kInvalidValue,
                   "device '" + s + "' is not a " + ResourceName(r) + " device of this plugin");
    auto it = gpus.find(id->gpu);
    if (it == gpus.end())
      return Error(err::kInvalidValue, "device '" + s + "' names GPU " + std::to_string(id->gpu) +
                                           ", which is unknown");
    const uint32_t limit = r == Resource::kMemory ? it->second.memory_units : kComputeUnits;
    if (id->unit >= limit)
      return Error(err::kInvalidValue, "device '" + s + "' is beyond the " + std::to_string(limit) +
                                           " devices of GPU " + std::to_string(id->gpu));
    if (gpu && gpu != &it->second)
      return Error(err::kInvalidValue, "devices span GPUs " + std::to_string(gpu->index) + " and " +
                                           std::to_string(id->gpu) + " ('" + s +
                                           "'); a container gets one GPU");
    gpu = &it->second;
    units.insert(id->unit);
  }
  if (!gpu->reachable)
    return Error(err::kInvalidValue, "GPU " + std::to_string(gpu->index) + "'s server " +
                                         gpu->server + " cannot be reached");
  g.gpu = gpu->index;
  g.units.assign(units.begin(), units.end());
  const auto n = static_cast<uint32_t>(g.units.size());
  g.env["REMORA_SERVER"] = "unix:" + opts.container_socket_dir + "/" + gpu->socket_name;
  if (r == Resource::kMemory)
    g.env["REMORA_GPU_MEMORY"] = std::to_string(uint64_t{n} * opts.memory_unit_bytes);
  else
    g.env["REMORA_GPU_COMPUTE"] = PerMille(n);
  g.env["LD_LIBRARY_PATH"] = kContainerLibDir;
  g.mounts.push_back({opts.container_socket_dir, gpu->host_dir, false});
  g.mounts.push_back({kContainerLibDir, opts.stub_dir, true});
  return g;
}

}  // namespace remora::device_plugin
