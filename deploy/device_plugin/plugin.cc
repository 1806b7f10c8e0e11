// deploy/device_plugin/plugin.cc - serving, polling and registering the device plugin.
#include "deploy/device_plugin/plugin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "cli/list.h"
#include "deviceplugin.grpc.pb.h"

namespace remora::device_plugin {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

const char* const kUsage =
    "usage: remora-device-plugin [--socket-dir DIR | --server unix:PATH ...]\n"
    "                            [--kubelet-dir DIR] [--token T] [--poll-ms N]\n"
    "                            [--container-socket-dir DIR] [--stub-dir DIR]\n"
    "                            [--memory-unit-mib N]\n"
    "  Advertises remora.io/gpu-memory (one device per MiB of a GPU's usable memory)\n"
    "  and remora.io/gpu-compute (1000 devices per GPU) to kubelet, one GPU per\n"
    "  remora-server.\n"
    "  --socket-dir  the GPUs are the servers' gpu<N>.sock here, rescanned every poll\n"
    "                (default /run/remora)\n"
    "  --server      a server's address instead (unix:PATH; repeatable)\n"
    "  --kubelet-dir kubelet's device-plugin directory: its kubelet.sock and this\n"
    "                plugin's remora-gpu-memory.sock, remora-gpu-compute.sock\n"
    "                (default /var/lib/kubelet/device-plugins)\n"
    "  --token       the servers' admin token (default: REMORA_ADMIN_TOKEN)\n"
    "  --poll-ms     how often to ask the servers what is free (default 2000)\n"
    "  --container-socket-dir  where containers see the server sockets (default\n"
    "                /run/remora): REMORA_SERVER and the socket directory's mount\n"
    "  --stub-dir    the host's Remora tenant libraries, mounted read-only at\n"
    "                /usr/local/remora/lib (default /usr/local/lib/remora/stub)\n"
    "  --memory-unit-mib  MiB per remora.io/gpu-memory device (default 1); raise it\n"
    "                when the node's devices outgrow kubelet's 4 MiB message limit\n";

namespace {

constexpr const char* kApiVersion = "v1beta1";
constexpr const char* kHealthy = "Healthy";
constexpr const char* kUnhealthy = "Unhealthy";
constexpr size_t kKubeletMaxMessage = size_t{4} << 20;  // kubelet's gRPC receive limit
constexpr std::array<Resource, 2> kResources = {Resource::kMemory, Resource::kCompute};

// One log line to stderr, key=value as the server's logs are.
void LogLine(const std::string& level, const std::string& fields) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char when[80];
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                static_cast<long>(ts.tv_nsec / 1000000));
  std::string line =
      std::string("ts=") + when + " level=" + level + " comp=device-plugin " + fields + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

size_t Index(Resource r) {
  return r == Resource::kMemory ? 0 : 1;
}

std::optional<uint32_t> GpuIndexOf(const std::string& file_name) {
  if (!file_name.starts_with("gpu") || !file_name.ends_with(".sock")) return std::nullopt;
  std::string_view digits(file_name.data() + 3, file_name.size() - 3 - 5);
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return std::nullopt;
  return v;
}

Gpu GpuAt(uint32_t index, const fs::path& socket) {
  Gpu g;
  g.index = index;
  g.server = "unix:" + socket.string();
  g.host_dir = socket.parent_path().string();
  g.socket_name = socket.filename().string();
  return g;
}

// Identity of kubelet's socket: a restarted kubelet makes a new one.
std::optional<std::pair<ino_t, int64_t>> SocketIdentity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair<ino_t, int64_t>{st.st_ino,
                                   int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
}

}  // namespace

Result<Options> ParseOptions(const std::vector<std::string>& args, const char* token_env) {
  Options o;
  if (token_env) o.token = token_env;
  static const std::set<std::string> kFlags = {
      "--socket-dir", "--server",   "--kubelet-dir",          "--token",
      "--poll-ms",    "--stub-dir", "--container-socket-dir", "--memory-unit-mib"};
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) flag = flag.substr(0, eq);
    if (!kFlags.count(flag)) return Error(err::kInvalidValue, "unknown flag '" + flag + "'");
    if (eq != std::string::npos) {
      value = args[i].substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return Error(err::kInvalidValue, flag + " needs a value");
    }
    auto positive = [&](uint64_t max) -> Result<uint64_t> {
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || end != value.data() + value.size() || v == 0 || v > max)
        return Error(err::kInvalidValue, flag + " takes a whole number from 1 to " +
                                             std::to_string(max) + ", not '" + value + "'");
      return v;
    };
    if (value.empty()) return Error(err::kInvalidValue, flag + " needs a value");
    if (flag == "--socket-dir") {
      o.socket_dir = value;
    } else if (flag == "--server") {
      if (!value.starts_with("unix:/"))
        return Error(err::kInvalidValue,
                     "--server takes unix:/ABSOLUTE/PATH (containers mount "
                     "the socket's directory), not '" +
                         value + "'");
      o.servers.push_back(value);
    } else if (flag == "--kubelet-dir") {
      o.kubelet_dir = value;
    } else if (flag == "--token") {
      o.token = value;
    } else if (flag == "--poll-ms") {
      ASSIGN_OR_RETURN(uint64_t ms, positive(3600000));
      o.poll = std::chrono::milliseconds(ms);
    } else if (flag == "--container-socket-dir") {
      o.container_socket_dir = value;
    } else if (flag == "--stub-dir") {
      o.stub_dir = value;
    } else {  // --memory-unit-mib
      ASSIGN_OR_RETURN(uint64_t mib, positive(1 << 20));
      o.memory_unit_mib = static_cast<uint32_t>(mib);
    }
  }
  return o;
}

std::vector<Gpu> DiscoverGpus(const Options& o) {
  std::vector<Gpu> gpus;
  if (!o.servers.empty()) {
    for (size_t i = 0; i < o.servers.size(); ++i) {
      fs::path p = o.servers[i].substr(5);
      gpus.push_back(
          GpuAt(GpuIndexOf(p.filename().string()).value_or(static_cast<uint32_t>(i)), p));
    }
    return gpus;
  }
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(o.socket_dir, ec)) {
    std::optional<uint32_t> index = GpuIndexOf(e.path().filename().string());
    if (index && e.is_socket(ec)) gpus.push_back(GpuAt(*index, e.path()));
  }
  return gpus;
}

namespace {

// Everything the services and the poller share, under one mutex.
struct Core {
  Options opts;
  std::mutex mu;
  std::condition_variable changed;  // a new list, or stopping
  bool stopping = false;

  struct Slot {
    Gpu gpu;
    v1::TenantList last;  // its tenants at the last successful poll
  };
  std::map<uint32_t, Slot> gpus;
  // Per resource: the units this plugin handed out, per GPU.
  std::array<std::map<uint32_t, std::set<uint32_t>>, 2> allocated;
  std::array<std::map<uint32_t, std::vector<bool>>, 2> health;
  std::array<std::shared_ptr<const v1beta1::ListAndWatchResponse>, 2> list;
  std::array<uint64_t, 2> version{};
  std::map<std::pair<uint32_t, size_t>, std::vector<std::string>> ids;  // (gpu, resource)

  uint64_t UnitBytes() const { return uint64_t{opts.memory_unit_mib} * kMiB; }

  const std::vector<std::string>& IdsOf(uint32_t gpu, Resource r, uint32_t units) {
    std::vector<std::string>& v = ids[{gpu, Index(r)}];
    if (v.size() != units) {
      v.clear();
      v.reserve(units);
      for (uint32_t u = 0; u < units; ++u) v.push_back(FormatId({gpu, r, u}));
    }
    return v;
  }

  // Recomputes `r`'s health; publishes a new list if it changed. REQUIRES: mu held.
  void Recompute(Resource r) {
    const size_t k = Index(r);
    std::map<uint32_t, std::vector<bool>> now;
    for (const auto& [index, slot] : gpus) {
      const uint32_t units = r == Resource::kMemory ? slot.gpu.memory_units : kComputeUnits;
      const uint32_t held = slot.gpu.reachable ? HeldUnits(slot.last, r, UnitBytes()) : 0;
      now[index] = UnitHealth(units, slot.gpu.reachable, held, allocated[k][index]);
    }
    if (list[k] && now == health[k]) return;
    for (const auto& [index, h] : now) {
      auto old = health[k].find(index);
      if (list[k] && old != health[k].end() && old->second == h) continue;
      const auto healthy = static_cast<size_t>(std::count(h.begin(), h.end(), true));
      LogLine("info", std::string("event=health resource=") + ResourceName(r) +
                          " gpu=" + std::to_string(index) +
                          " reachable=" + (gpus[index].gpu.reachable ? "true" : "false") +
                          " healthy=" + std::to_string(healthy) +
                          " unhealthy=" + std::to_string(h.size() - healthy));
    }
    auto rsp = std::make_shared<v1beta1::ListAndWatchResponse>();
    for (const auto& [index, h] : now) {
      const std::vector<std::string>& names = IdsOf(index, r, static_cast<uint32_t>(h.size()));
      for (size_t u = 0; u < h.size(); ++u) {
        v1beta1::Device* d = rsp->add_devices();
        d->set_id(names[u]);
        d->set_health(h[u] ? kHealthy : kUnhealthy);
      }
    }
    if (size_t bytes = rsp->ByteSizeLong(); bytes > kKubeletMaxMessage)
      LogLine("error", std::string("event=too-many-devices resource=") + ResourceName(r) +
                           " devices=" + std::to_string(rsp->devices_size()) +
                           " bytes=" + std::to_string(bytes) +
                           " why=\"over kubelet's 4 MiB message limit: raise --memory-unit-mib\"");
    health[k] = std::move(now);
    list[k] = std::move(rsp);
    ++version[k];
    changed.notify_all();
  }

  // Takes in one poll's results: every GPU found, with its tenants or nullopt if unreachable.
  void Refresh(const std::vector<std::pair<Gpu, std::optional<v1::TenantList>>>& polled) {
    std::lock_guard lock(mu);
    for (auto& [index, slot] : gpus) slot.gpu.reachable = false;  // vanished: unreachable
    for (const auto& [gpu, tenants] : polled) {
      Slot& slot = gpus[gpu.index];
      const uint32_t units = slot.gpu.memory_units;
      slot.gpu = gpu;
      slot.gpu.reachable = tenants.has_value();
      slot.gpu.memory_units = units;
      if (tenants) {
        slot.last = *tenants;
        slot.gpu.memory_units = TotalUnits(*tenants, Resource::kMemory, UnitBytes());
      }
    }
    for (Resource r : kResources) Recompute(r);
  }

  // Plans every container's grant; records them only if all can be granted.
  Result<std::vector<Grant>> Allocate(Resource r,
                                      const std::vector<std::vector<std::string>>& containers) {
    std::lock_guard lock(mu);
    std::map<uint32_t, Gpu> known;
    for (const auto& [index, slot] : gpus) known[index] = slot.gpu;
    GrantOptions go{opts.container_socket_dir, opts.stub_dir, UnitBytes()};
    std::vector<Grant> grants;
    for (const std::vector<std::string>& ids_of : containers) {
      ASSIGN_OR_RETURN(Grant g, PlanGrant(r, ids_of, known, go));
      grants.push_back(std::move(g));
    }
    for (const Grant& g : grants) {
      allocated[Index(r)][g.gpu].insert(g.units.begin(), g.units.end());
      std::string env;
      for (const auto& [k, v] : g.env) env += " " + k + "=" + v;
      LogLine("info", std::string("event=allocate resource=") + ResourceName(r) + " gpu=" +
                          std::to_string(g.gpu) + " units=" + std::to_string(g.units.size()) + env);
    }
    Recompute(r);
    return grants;
  }
};

class Service final : public v1beta1::DevicePlugin::Service {
 public:
  Service(Core& core, Resource r) : core_(core), r_(r) {}

  // Ends this service's streams (the server is being replaced or stopped).
  void Retire() {
    std::lock_guard lock(core_.mu);
    retired_ = true;
    core_.changed.notify_all();
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* rsp) override {
    rsp->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    const size_t k = Index(r_);
    uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<const v1beta1::ListAndWatchResponse> next;
      {
        std::unique_lock lock(core_.mu);
        // Bounded waits: a cancelled stream is noticed without a notification.
        core_.changed.wait_for(
            lock, 200ms, [&] { return retired_ || core_.stopping || core_.version[k] != seen; });
        if (retired_ || core_.stopping) break;
        if (core_.version[k] != seen) {
          next = core_.list[k];
          seen = core_.version[k];
        }
      }
      if (ctx->IsCancelled()) break;
      if (next && !writer->Write(*next)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* rsp) override {
    for (const v1beta1::ContainerPreferredAllocationRequest& c : req->container_requests()) {
      std::vector<std::string> available(c.available_deviceids().begin(),
                                         c.available_deviceids().end());
      std::vector<std::string> must(c.must_include_deviceids().begin(),
                                    c.must_include_deviceids().end());
      v1beta1::ContainerPreferredAllocationResponse* out = rsp->add_container_responses();
      for (std::string& id : PreferredAllocation(available, must, c.allocation_size()))
        out->add_deviceids(std::move(id));
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* rsp) override {
    std::vector<std::vector<std::string>> containers;
    for (const v1beta1::ContainerAllocateRequest& c : req->container_requests())
      containers.emplace_back(c.devices_ids().begin(), c.devices_ids().end());
    Result<std::vector<Grant>> grants = core_.Allocate(r_, containers);
    if (!grants.ok()) {
      LogLine("warn", std::string("event=allocate-refused resource=") + ResourceName(r_) +
                          " why=\"" + grants.status().message() + "\"");
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, grants.status().message());
    }
    for (const Grant& g : *grants) {
      v1beta1::ContainerAllocateResponse* c = rsp->add_container_responses();
      for (const auto& [k, v] : g.env) (*c->mutable_envs())[k] = v;
      for (const Mount& m : g.mounts) {
        v1beta1::Mount* mount = c->add_mounts();
        mount->set_container_path(m.container_path);
        mount->set_host_path(m.host_path);
        mount->set_read_only(m.read_only);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  Core& core_;
  const Resource r_;
  bool retired_ = false;  // guarded by core_.mu
};

}  // namespace

struct Plugin::Impl {
  Core core;
  struct Served {
    std::unique_ptr<Service> service;
    std::unique_ptr<grpc::Server> server;
  };
  std::array<Served, 2> served;
  // kubelet.sock's identity when each resource last registered successfully.
  std::array<std::optional<std::pair<ino_t, int64_t>>, 2> registered;
  bool waiting_logged = false;
  std::thread poller;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop = false;  // guarded by stop_mu

  std::string SocketPath(Resource r) const {
    return (fs::path(core.opts.kubelet_dir) / SocketName(r)).string();
  }

  void Poll() {
    std::vector<std::pair<Gpu, std::optional<v1::TenantList>>> polled;
    for (Gpu& g : DiscoverGpus(core.opts)) {
      Result<v1::TenantList> list = cli::FetchTenants(g.server, core.opts.token);
      std::optional<v1::TenantList> tenants;
      if (list.ok()) tenants = std::move(list).value();
      polled.emplace_back(std::move(g), std::move(tenants));
    }
    core.Refresh(polled);
  }

  Status Serve(Resource r) {
    Served& s = served[Index(r)];
    Unserve(r);
    const std::string path = SocketPath(r);
    std::error_code ec;
    fs::remove(path, ec);
    s.service = std::make_unique<Service>(core, r);
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
    b.RegisterService(s.service.get());
    s.server = b.BuildAndStart();
    if (!s.server) {
      s.service.reset();
      return Error(err::kInitializationError,
                   "cannot serve " + std::string(ResourceName(r)) + " on unix:" + path);
    }
    return OkStatus();
  }

  void Unserve(Resource r) {
    Served& s = served[Index(r)];
    if (!s.server) return;
    s.service->Retire();
    s.server->Shutdown(std::chrono::system_clock::now() + 2s);
    s.server->Wait();
    s.server.reset();
    s.service.reset();
  }

  bool Register(Resource r) {
    auto channel =
        grpc::CreateChannel("unix:" + (fs::path(core.opts.kubelet_dir) / "kubelet.sock").string(),
                            grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    v1beta1::RegisterRequest req;
    req.set_version(kApiVersion);
    req.set_endpoint(SocketName(r));
    req.set_resource_name(ResourceName(r));
    req.mutable_options()->set_get_preferred_allocation_available(true);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    v1beta1::Empty rsp;
    grpc::Status st = stub->Register(&ctx, req, &rsp);
    LogLine(st.ok() ? "info" : "warn", std::string("event=register resource=") + ResourceName(r) +
                                           " endpoint=" + SocketName(r) +
                                           " ok=" + (st.ok() ? "true" : "false") +
                                           (st.ok() ? "" : " why=\"" + st.error_message() + "\""));
    return st.ok();
  }

  // Serves a socket kubelet removed and registers again with a new kubelet.
  void KeepRegistered() {
    const std::string kubelet = (fs::path(core.opts.kubelet_dir) / "kubelet.sock").string();
    std::optional<std::pair<ino_t, int64_t>> id = SocketIdentity(kubelet);
    if (!id) {
      if (!waiting_logged) LogLine("info", "event=waiting-for-kubelet socket=" + kubelet);
      waiting_logged = true;
      registered = {};
      return;
    }
    waiting_logged = false;
    for (Resource r : kResources) {
      std::error_code ec;
      const bool missing = !fs::exists(SocketPath(r), ec);
      if (missing) {
        if (Status st = Serve(r); !st.ok()) {
          LogLine("error", "event=serve-failed why=\"" + st.message() + "\"");
          continue;
        }
      }
      if (missing || registered[Index(r)] != id) {
        registered[Index(r)].reset();
        if (Register(r)) registered[Index(r)] = id;
      }
    }
  }

  void Run() {
    for (;;) {
      {
        std::unique_lock lock(stop_mu);
        if (stop_cv.wait_for(lock, core.opts.poll, [&] { return stop; })) return;
      }
      Poll();
      KeepRegistered();
    }
  }
};

Plugin::Plugin(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->core.opts = std::move(options);
}

Plugin::~Plugin() {
  Stop();
}

Status Plugin::Start() {
  impl_->Poll();
  for (Resource r : kResources) RETURN_IF_ERROR(impl_->Serve(r));
  impl_->KeepRegistered();
  impl_->poller = std::thread([this] { impl_->Run(); });
  return OkStatus();
}

void Plugin::Stop() {
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stop = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->poller.joinable()) impl_->poller.join();
  {
    std::lock_guard lock(impl_->core.mu);
    impl_->core.stopping = true;
    impl_->core.changed.notify_all();
  }
  for (Resource r : kResources) {
    if (!impl_->served[Index(r)].server) continue;
    impl_->Unserve(r);
    std::error_code ec;
    fs::remove(impl_->SocketPath(r), ec);
  }
}

}  // namespace remora::device_plugin
