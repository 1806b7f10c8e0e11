// client_stub/kernels.cc - the module registry, lazy RegisterModule, launch packing.
#include "client_stub/kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "client_stub/connection.h"
#include "client_stub/graph.h"
#include "client_stub/image_module.h"
#include "client_stub/mirror.h"
#include "client_stub/no_destructor.h"
#include "client_stub/once.h"
#include "client_stub/state.h"
#include "client_stub/trace.h"
#include "fatbin/fatbin.h"

namespace remora::client_stub {

struct Module {
  const void* wrapper = nullptr;
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<std::unique_ptr<Variable>> variables;

  std::mutex mu;  // registration
  bool attempted = false;
  cudaError_t error = cudaSuccess;
  uint64_t server_id = 0;
};

namespace {

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<Module*, std::unique_ptr<Module>> modules;
  std::unordered_map<const void*, Kernel*> kernels;
  std::unordered_set<const void*> handles;  // every live Kernel*, the app's cudaKernel_t
  std::unordered_map<const void*, Variable*> variables;
};

Registry& Reg() {
  static NoDestructor<Registry> r;
  return *r;
}

Module* ToModule(void** handle) {
  return reinterpret_cast<Module*>(handle);
}

cudaError_t Register(Module& m) {
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  Result<std::vector<fatbin::Bytes>> images = fatbin::WrapperImages(m.wrapper);
  if (!images.ok()) return static_cast<cudaError_t>(images.status().code());

  // The hash alone first: the server keeps every fat binary it was sent, so a
  // program run again (or a second tenant running it) ships its images once.
  v1::RegisterModuleRequest req;
  req.set_hash(fatbin::ImagesDigest(*images));
  uint32_t version;
  std::memcpy(&version, static_cast<const std::byte*>(m.wrapper) + 4, sizeof version);
  req.set_rdc(version == 2);
  req.set_origin(ImageOrigin(m.wrapper));
  for (const auto& k : m.kernels) req.add_kernels(k->name);
  for (const auto& v : m.variables) req.add_variables(v->name);

  v1::RegisterModuleReply rep;
  if (cudaError_t e = c.Call(CallId::kRegisterModule, req, &rep)) return e;
  if (rep.images_needed()) {
    for (fatbin::Bytes img : *images) req.add_images(img.data(), img.size());
    rep.Clear();
    if (cudaError_t e = c.Call(CallId::kRegisterModule, req, &rep)) return e;
    if (rep.images_needed()) return cudaErrorUnknown;  // a server that lost them: a protocol fault
  }
  m.server_id = rep.module();
  for (const v1::KernelLayout& l : rep.kernels()) {
    for (auto& k : m.kernels)
      if (k->name == l.name()) ApplyLayout(*k, l);
  }
  for (const v1::VariableInfo& vi : rep.variables()) {
    for (auto& v : m.variables) {
      if (v->name != vi.name()) continue;
      v->dptr = vi.dptr();
      if (vi.size()) v->size = vi.size();
      St().device_ranges.Add(v->dptr, v->size);
    }
  }
  for (auto& v : m.variables) {
    if (v->managed_slot == nullptr) continue;
    if (v->dptr == 0) return cudaErrorInvalidSymbol;
    if (cudaError_t e = Mirrors::Get().Adopt(v->dptr, v->size, v->name.c_str())) return e;
    *v->managed_slot = reinterpret_cast<void*>(v->dptr);
  }
  return cudaSuccess;
}

cudaError_t EnsureModule(Module& m) {
  std::lock_guard lock(m.mu);
  if (!m.attempted) {
    m.error = Register(m);
    // A session-level failure is not the module's fault: try again next time.
    m.attempted = m.error == cudaSuccess || Connection::Get().Alive();
  }
  return m.error;
}

// Configurations pushed by <<<...>>> and not yet popped by the launch stub, this thread's.
std::vector<LaunchConfig>& Configs() {
  return ThreadScratch<std::vector<LaunchConfig>, struct LaunchConfigsTag>();
}

}  // namespace

void** AddModule(const void* wrapper) {
  auto m = std::make_unique<Module>();
  m->wrapper = wrapper;
  Module* raw = m.get();
  Registry& r = Reg();
  std::unique_lock lock(r.mu);
  r.modules.emplace(raw, std::move(m));
  return reinterpret_cast<void**>(raw);
}

void AddFunction(void** handle, const void* host_fun, const char* name) {
  Registry& r = Reg();
  std::unique_lock lock(r.mu);
  auto it = r.modules.find(ToModule(handle));
  if (it == r.modules.end() || !name) return;
  auto k = std::make_unique<Kernel>();
  k->module = it->second.get();
  k->host_fun = host_fun;
  k->name = name;
  r.kernels[host_fun] = k.get();
  r.handles.insert(k.get());
  it->second->kernels.push_back(std::move(k));
}

void AddVariable(void** handle, const void* host_var, const char* name, size_t size,
                 bool constant) {
  Registry& r = Reg();
  std::unique_lock lock(r.mu);
  auto it = r.modules.find(ToModule(handle));
  if (it == r.modules.end() || !name) return;
  auto v = std::make_unique<Variable>();
  v->module = it->second.get();
  v->host_var = host_var;
  v->name = name;
  v->size = size;
  v->constant = constant;
  r.variables[host_var] = v.get();
  it->second->variables.push_back(std::move(v));
}

void AddManagedVariable(void** handle, void** host_slot, const char* name, size_t size) {
  AddVariable(handle, host_slot, name, size, false);
  Registry& r = Reg();
  std::unique_lock lock(r.mu);
  if (auto it = r.variables.find(host_slot); it != r.variables.end())
    it->second->managed_slot = host_slot;
}

bool InitModule(void** handle) {
  Module* m = nullptr;
  {
    Registry& r = Reg();
    std::shared_lock lock(r.mu);
    auto it = r.modules.find(ToModule(handle));
    if (it == r.modules.end()) return false;
    m = it->second.get();
  }
  return EnsureModule(*m) == cudaSuccess;
}

void RemoveModule(void** handle) {
  std::unique_ptr<Module> m;
  {
    Registry& r = Reg();
    std::unique_lock lock(r.mu);
    auto it = r.modules.find(ToModule(handle));
    if (it == r.modules.end()) return;
    m = std::move(it->second);
    r.modules.erase(it);
    for (const auto& k : m->kernels) {
      if (auto f = r.kernels.find(k->host_fun); f != r.kernels.end() && f->second == k.get())
        r.kernels.erase(f);
      r.handles.erase(k.get());
    }
    for (const auto& v : m->variables)
      if (auto f = r.variables.find(v->host_var); f != r.variables.end() && f->second == v.get())
        r.variables.erase(f);
  }
  std::lock_guard lock(m->mu);
  if (!m->attempted || m->error != cudaSuccess) return;
  for (const auto& v : m->variables) {
    if (v->dptr) St().device_ranges.Remove(v->dptr);
    if (v->dptr && v->managed_slot) Mirrors::Get().Release(v->dptr);
  }
  Connection& c = Connection::Get();
  if (c.Alive()) {
    v1::UnregisterModuleRequest req;
    req.set_module(m->server_id);
    (void)c.Post(CallId::kUnregisterModule, req);
  }
}

namespace {
std::atomic<uint64_t> g_device_epoch{1};
}  // namespace

uint64_t DeviceEpoch() {
  return g_device_epoch.load(std::memory_order_acquire);
}

void ForgetDeviceState() {
  g_device_epoch.fetch_add(1, std::memory_order_acq_rel);
  State& st = St();
  st.device_ranges.Clear();
  st.streams.Clear();
  st.events.Clear();
  Registry& r = Reg();
  std::shared_lock lock(r.mu);
  for (auto& [raw, m] : r.modules) {
    std::lock_guard mlock(m->mu);
    m->attempted = false;
    m->error = cudaSuccess;
  }
}

Kernel* FindKernel(const void* host_fun) {
  Registry& r = Reg();
  std::shared_lock lock(r.mu);
  auto it = r.kernels.find(host_fun);
  if (it != r.kernels.end()) return it->second;
  // A cudaKernel_t from cudaGetKernel stands for its kernel wherever a function may.
  if (r.handles.count(host_fun)) return const_cast<Kernel*>(static_cast<const Kernel*>(host_fun));
  return nullptr;
}

void NoteAttribute(Kernel& k, int attribute, int value) {
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize) k.max_dynamic_shared = value;
  if (attribute == cudaFuncAttributePreferredSharedMemoryCarveout) k.carveout = value;
  if (attribute == cudaFuncAttributeNonPortableClusterSizeAllowed) k.non_portable_cluster = value;
  if (attribute >= cudaFuncAttributeRequiredClusterWidth &&
      attribute <= cudaFuncAttributeRequiredClusterDepth)
    k.cluster[attribute - cudaFuncAttributeRequiredClusterWidth] = value;
}

int MaxDynamicShared(const Kernel& k, const cudaDeviceProp& prop) {
  if (int set = k.max_dynamic_shared.load(); set >= 0) return set;
  return std::max(0, static_cast<int>(prop.sharedMemPerBlock) - k.shared_size_bytes);
}

size_t AvailableDynamicShared(const Kernel& k, const cudaDeviceProp& prop, int blocks) {
  const size_t split = prop.sharedMemPerMultiprocessor / static_cast<size_t>(blocks);
  const size_t reserved = prop.reservedSharedMemPerBlock;
  if (split <= reserved) return 0;
  const size_t cap = std::min(split - reserved, size_t(prop.sharedMemPerBlockOptin));
  const size_t fixed = static_cast<size_t>(k.shared_size_bytes);
  const size_t room = cap > fixed ? cap - fixed : 0;
  return std::min(room, static_cast<size_t>(MaxDynamicShared(k, prop)));
}

void ApplyLayout(Kernel& k, const v1::KernelLayout& l) {
  k.handle = l.handle();
  k.offsets.assign(l.offsets().begin(), l.offsets().end());
  k.sizes.assign(l.sizes().begin(), l.sizes().end());
  k.param_bytes = l.param_bytes();
  k.max_threads_per_block = l.max_threads_per_block();
  k.shared_size_bytes = l.shared_size_bytes();
  k.local_size_bytes = l.local_size_bytes();
  k.num_regs = l.num_regs();
  k.ptx_version = l.ptx_version();
  k.binary_version = l.binary_version();
  k.const_size_bytes = l.const_size_bytes();
  k.cluster[0] = l.cluster_x();
  k.cluster[1] = l.cluster_y();
  k.cluster[2] = l.cluster_z();
  k.cluster_size_must_be_set = l.cluster_size_must_be_set();
  k.non_portable_cluster = l.non_portable_cluster_size();
}

cudaError_t EnsureRegistered(Kernel& k) {
  if (k.image) return RefreshImageKernel(k);
  return k.module ? EnsureModule(*k.module) : cudaSuccess;
}

void AcceptKernelHandle(const Kernel* k) {
  Registry& r = Reg();
  std::unique_lock lock(r.mu);
  r.handles.insert(k);
}

void ForgetKernelHandle(const Kernel* k) {
  Registry& r = Reg();
  std::unique_lock lock(r.mu);
  r.handles.erase(k);
}

Result<Variable*> ResolveSymbol(const void* symbol) {
  Variable* v = nullptr;
  {
    Registry& r = Reg();
    std::shared_lock lock(r.mu);
    auto it = r.variables.find(symbol);
    if (it != r.variables.end()) {
      v = it->second;
    } else {
      // A __managed__ variable is named by its address, which its host pointer holds once its
      // module is registered (nvcc's host code reads the variable through that pointer).
      for (const auto& [key, var] : r.variables) {
        if (var->managed_slot != nullptr && *var->managed_slot == symbol) {
          v = var;
          break;
        }
      }
    }
  }
  if (!v) return Error(cudaErrorInvalidSymbol, "not a registered variable");
  if (cudaError_t e = EnsureModule(*v->module)) return Error(e, "module registration failed");
  return v;
}

bool PackParams(const Kernel& k, void** args, std::string* out) {
  out->assign(k.param_bytes, '\0');
  if (k.offsets.size() != k.sizes.size()) return false;
  for (size_t i = 0; i < k.offsets.size(); ++i) {
    if (k.offsets[i] > k.param_bytes || k.sizes[i] > k.param_bytes - k.offsets[i]) return false;
    if (k.sizes[i] == 0) continue;
    if (!args || !args[i]) return false;
    std::memcpy(out->data() + k.offsets[i], args[i], k.sizes[i]);
  }
  return true;
}

namespace {

// The device's limits on a launch's grid and block.
bool ConfigurationFits(dim3 grid, dim3 block) {
  const cudaDeviceProp& p = St().prop;
  uint64_t threads = uint64_t{block.x} * block.y * block.z;
  int max_threads = p.maxThreadsPerBlock > 0 ? p.maxThreadsPerBlock : 1024;
  auto over = [](unsigned v, int limit) { return limit > 0 && v > static_cast<unsigned>(limit); };
  if (threads == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      threads > static_cast<uint64_t>(max_threads) || over(block.x, p.maxThreadsDim[0]) ||
      over(block.y, p.maxThreadsDim[1]) || over(block.z, p.maxThreadsDim[2]) ||
      over(grid.x, p.maxGridSize[0]) || over(grid.y, p.maxGridSize[1]) ||
      over(grid.z, p.maxGridSize[2]))
    return false;
  return true;
}

// The launch's shape fits the device: cudaErrorInvalidConfiguration for a grid or block it
// cannot run; a clustered launch needs a device with clusters (else cudaErrorNotSupported) and
// a grid of whole clusters (else cudaErrorInvalidClusterSize).
cudaError_t ShapeFits(dim3 grid, dim3 block, const LaunchMode& mode) {
  if (!ConfigurationFits(grid, block)) return cudaErrorInvalidConfiguration;
  if (!mode.clustered()) return cudaSuccess;
  if (!St().prop.clusterLaunch) return cudaErrorNotSupported;
  if (grid.x % mode.cluster.x || grid.y % mode.cluster.y || grid.z % mode.cluster.z)
    return cudaErrorInvalidClusterSize;
  return cudaSuccess;
}

// What the kernel itself allows a launch, checked here so that the launch call fails as it
// does on a GPU rather than a later synchronization: more registers than a block has give
// cudaErrorLaunchOutOfResources (checked first: the kernel's maxThreadsPerBlock counts them
// too; a warp's are allocated 256 at a time), more threads than the kernel can run (its
// launch bounds) or more dynamic shared memory than its limit cudaErrorInvalidValue. Unknown
// limits (0) pass.
cudaError_t KernelFits(const Kernel& k, dim3 block, size_t shared_bytes) {
  const cudaDeviceProp& p = St().prop;
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  const uint64_t warps = (threads + 31) / 32;
  const uint64_t warp_registers = (uint64_t(k.num_regs) * 32 + 255) / 256 * 256;
  if (p.regsPerBlock > 0 && warp_registers * warps > uint64_t(p.regsPerBlock))
    return cudaErrorLaunchOutOfResources;
  if (k.max_threads_per_block > 0 && threads > static_cast<uint64_t>(k.max_threads_per_block))
    return cudaErrorInvalidValue;
  const bool shared_known = p.sharedMemPerBlock > 0 || k.max_dynamic_shared.load() >= 0;
  if (shared_known && shared_bytes > static_cast<size_t>(MaxDynamicShared(k, p)))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// The calling thread's launch request, reused so its parameter bytes keep their capacity.
v1::LaunchRequest& ThreadLaunchRequest() {
  return ThreadScratch<v1::LaunchRequest, struct LaunchRequestTag>();
}

// Where kernels cannot reach the process's page-locked memory directly (a session without a
// device-mapped arena: gRPC), page-locked memory a launch passes a pointer into is given device
// memory at its address and mirrored (Mirrors::Reach), as a GPU with unified addressing lets
// such a kernel run; memory that cannot be (page-locked outside the mirror, or no device memory
// left) makes the launch fail with cudaErrorNotSupported, named once on stderr: sent, it would
// fault the device for every tenant. Pointers sit at 8-byte aligned offsets of the packed
// parameters, structs' included.
cudaError_t CheckHostPointerArgs(const Kernel& k, std::string_view params) {
  const HostMemory& host = St().host;
  if (host.device_mapped()) return cudaSuccess;
  for (size_t at = 0; at + 8 <= params.size(); at += 8) {
    uint64_t v;
    std::memcpy(&v, params.data() + at, 8);
    const auto* p = reinterpret_cast<const void*>(v);
    if (v == 0 || !host.IsPinned(p)) continue;
    if (Mirrors::Get().Reach(p)) {
      // Told once per kernel: a kernel and the host signalling each other through that memory
      // while it runs (a progress flag, a handshake) would wait for ever, saying nothing.
      if (Once("mirrored kernel argument", k.name))
        std::fprintf(stderr,
                     "remora: kernel %s reaches page-locked host memory (parameter bytes at "
                     "offset %zu) through a device copy over this transport: the host's writes "
                     "reach the kernel when it is launched, its writes reach the host at the next "
                     "synchronisation, not while it runs\n",
                     k.name.c_str(), at);
      continue;
    }
    if (Once("pinned kernel argument", k.name))
      std::fprintf(stderr,
                   "remora: kernel %s not launched: its parameter bytes at offset %zu point into "
                   "page-locked host memory kernels cannot reach over this transport (memory "
                   "registered with cudaHostRegister: pass the address cudaHostGetDevicePointer "
                   "gives); it returns cudaErrorNotSupported\n",
                   k.name.c_str(), at);
    return cudaErrorNotSupported;
  }
  return cudaSuccess;
}

// Posts `req`, its parameters already filled in, as a launch of `k`. REQUIRES: the session is
// up and the shape fits the device.
cudaError_t Post(const Kernel& k, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                 LaunchMode mode, v1::LaunchRequest& req) {
  if (cudaError_t e = CheckHostPointerArgs(k, req.params())) return RecordError(e);
  req.set_kernel(k.handle);
  req.set_grid_x(grid.x);
  req.set_grid_y(grid.y);
  req.set_grid_z(grid.z);
  req.set_block_x(block.x);
  req.set_block_y(block.y);
  req.set_block_z(block.z);
  req.set_shared_bytes(static_cast<uint32_t>(shared_bytes));
  req.set_stream(StreamId(stream));
  req.set_cooperative(mode.cooperative);
  const bool clustered = mode.clustered();  // else 0, as a request without clusters says
  req.set_cluster_x(clustered ? mode.cluster.x : 0);
  req.set_cluster_y(clustered ? mode.cluster.y : 0);
  req.set_cluster_z(clustered ? mode.cluster.z : 0);
  return RecordError(Connection::Get().Post(CallId::kLaunchKernel, req));
}

}  // namespace

cudaError_t ApplyLaunchAttribute(int id, const cudaLaunchAttributeValue& v, LaunchMode* mode) {
  switch (id) {
    case cudaLaunchAttributeIgnore:
    case cudaLaunchAttributeAccessPolicyWindow:
    case cudaLaunchAttributeSynchronizationPolicy:
    case cudaLaunchAttributeClusterSchedulingPolicyPreference:
    // Programmatic dependent launch only lets a kernel start before its predecessor ends.
    case cudaLaunchAttributeProgrammaticStreamSerialization:
    case cudaLaunchAttributePriority:
    case cudaLaunchAttributeMemSyncDomainMap:
    case cudaLaunchAttributeMemSyncDomain:
    case cudaLaunchAttributePreferredClusterDimension:
    case cudaLaunchAttributePreferredSharedMemoryCarveout:
    case cudaLaunchAttributeNvlinkUtilCentricScheduling:
      return cudaSuccess;
    case cudaLaunchAttributeCooperative:
      mode->cooperative = v.cooperative != 0;
      return cudaSuccess;
    case cudaLaunchAttributeClusterDimension:
      if (v.clusterDim.x == 0 || v.clusterDim.y == 0 || v.clusterDim.z == 0)
        return cudaErrorInvalidValue;
      mode->cluster = dim3(v.clusterDim.x, v.clusterDim.y, v.clusterDim.z);
      return cudaSuccess;
    case cudaLaunchAttributeProgrammaticEvent:
    case cudaLaunchAttributeLaunchCompletionEvent:
    case cudaLaunchAttributeDeviceUpdatableKernelNode:
      return cudaErrorNotSupported;
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t ApplyLaunchAttributes(const cudaLaunchAttribute* attrs, unsigned n, LaunchMode* mode,
                                  int* refused) {
  if (n > 0 && attrs == nullptr) return cudaErrorInvalidValue;
  for (unsigned i = 0; i < n; ++i) {
    if (cudaError_t e = ApplyLaunchAttribute(attrs[i].id, attrs[i].val, mode)) {
      if (refused) *refused = attrs[i].id;
      return e;
    }
  }
  return cudaSuccess;
}

dim3 ClusterDimensionOf(const cudaLaunchAttribute* attrs, unsigned n) {
  dim3 cluster(0, 0, 0);
  for (unsigned i = 0; i < n && attrs != nullptr; ++i)
    if (attrs[i].id == cudaLaunchAttributeClusterDimension) {
      const auto& d = attrs[i].val.clusterDim;
      cluster = dim3(d.x, d.y, d.z);
    }
  return cluster;
}

cudaError_t ClusterOccupancy(const Kernel& k, dim3 grid, dim3 block, size_t shared, dim3 cluster,
                             bool potential_size, int* out) {
  v1::ClusterOccupancyRequest req;
  req.set_kernel(k.handle);
  req.set_grid_x(grid.x), req.set_grid_y(grid.y), req.set_grid_z(grid.z);
  req.set_block_x(block.x), req.set_block_y(block.y), req.set_block_z(block.z);
  req.set_shared_bytes(static_cast<uint32_t>(shared));
  req.set_cluster_x(cluster.x), req.set_cluster_y(cluster.y), req.set_cluster_z(cluster.z);
  req.set_potential_size(potential_size);
  v1::IntReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kOccupancyClusters, req, &rep)) return e;
  *out = static_cast<int>(rep.value());
  return cudaSuccess;
}

cudaError_t PackLaunchArgs(const Kernel& k, void** params, void** extra, std::string* out) {
  // cuda.h's CU_LAUNCH_PARAM_END, _BUFFER_POINTER and _BUFFER_SIZE.
  void* const kEnd = nullptr;
  void* const kPointer = reinterpret_cast<void*>(1);
  void* const kSize = reinterpret_cast<void*>(2);
  out->clear();
  if (params != nullptr && extra != nullptr) return cudaErrorInvalidValue;
  if (params != nullptr) return PackParams(k, params, out) ? cudaSuccess : cudaErrorInvalidValue;
  if (extra == nullptr) return k.param_bytes == 0 ? cudaSuccess : cudaErrorInvalidValue;
  const void* buffer = nullptr;
  const size_t* size = nullptr;
  for (void** e = extra; *e != kEnd; e += 2) {
    if (*e == kPointer)
      buffer = e[1];
    else if (*e == kSize)
      size = static_cast<const size_t*>(e[1]);
    else
      return cudaErrorInvalidValue;
  }
  if (buffer == nullptr || size == nullptr || *size < k.param_bytes) return cudaErrorInvalidValue;
  out->assign(static_cast<const char*>(buffer), k.param_bytes);
  return cudaSuccess;
}

GraphOp KernelOp(const Kernel& k, dim3 grid, dim3 block, std::string_view params, size_t shared,
                 LaunchMode mode) {
  GraphOp op;
  op.type = cudaGraphNodeTypeKernel;
  op.kernel = const_cast<Kernel*>(&k);
  op.grid = grid;
  op.block = block;
  op.params.assign(params);
  op.shared = shared;
  op.mode = mode;
  return op;
}

cudaError_t PostLaunch(const Kernel& k, dim3 grid, dim3 block, std::string_view params,
                       size_t shared_bytes, cudaStream_t stream, LaunchMode mode) {
  if (cudaError_t e = Connection::Get().Ensure()) return RecordError(e);
  if (cudaError_t e = ShapeFits(grid, block, mode)) return RecordError(e);
  if (k.image)  // after a device reset, the kernel's module is loaded again
    if (cudaError_t e = RefreshImageKernel(const_cast<Kernel&>(k))) return RecordError(e);
  if (params.size() != k.param_bytes) return RecordError(cudaErrorInvalidValue);
  if (cudaError_t e = KernelFits(k, block, shared_bytes)) return RecordError(e);
  if (AnyCapture())
    if (auto r = CaptureOp(stream, KernelOp(k, grid, block, params, shared_bytes, mode)))
      return RecordError(*r);
  v1::LaunchRequest& req = ThreadLaunchRequest();
  req.set_params(params.data(), params.size());
  return Post(k, grid, block, shared_bytes, stream, mode, req);
}

cudaError_t Launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                   cudaStream_t stream, LaunchMode mode) {
  if (!k) return RecordError(cudaErrorInvalidDeviceFunction);
  if (cudaError_t e = Connection::Get().Ensure()) return RecordError(e);
  if (cudaError_t e = ShapeFits(grid, block, mode)) return RecordError(e);
  if (cudaError_t e = EnsureRegistered(*k)) {
    if (TraceEnabled()) TraceLocal("LaunchKernel", k->name, e, "its module did not register");
    return RecordError(e);
  }
  if (k->handle == 0) {  // the server found no such kernel in the module (its log names it)
    if (TraceEnabled())
      TraceLocal("LaunchKernel", k->name, cudaErrorInvalidDeviceFunction,
                 "the loaded module has no kernel of this name");
    return RecordError(cudaErrorInvalidDeviceFunction);
  }
  if (cudaError_t e = KernelFits(*k, block, shared_bytes)) return RecordError(e);
  v1::LaunchRequest& req = ThreadLaunchRequest();
  if (!PackParams(*k, args, req.mutable_params())) return RecordError(cudaErrorInvalidValue);
  if (AnyCapture())
    if (auto r = CaptureOp(stream, KernelOp(*k, grid, block, req.params(), shared_bytes, mode)))
      return RecordError(*r);
  return Post(*k, grid, block, shared_bytes, stream, mode, req);
}

void PushConfig(const LaunchConfig& c) {
  Configs().push_back(c);
}

bool PopConfig(LaunchConfig* c) {
  if (Configs().empty()) return false;
  *c = Configs().back();
  Configs().pop_back();
  return true;
}

}  // namespace remora::client_stub
