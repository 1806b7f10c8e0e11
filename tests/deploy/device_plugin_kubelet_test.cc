// tests/deploy/device_plugin_kubelet_test.cc - the device plugin against a fake
// kubelet and a live remora-server on the emulated device: registration,
// ListAndWatch as tenants come and go, GetPreferredAllocation, Allocate, a
// server that dies, a kubelet that restarts.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "cli/list.h"
#include "deploy/device_plugin/plugin.h"
#include "deviceplugin.grpc.pb.h"
#include "proto/calls.h"
#include "transport/fragment.h"
#include "transport/shm/shm_channel.h"

namespace remora::device_plugin {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kPatience = 60s;  // generous: sanitizer builds are slow

class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  explicit FakeKubelet(const std::string& socket) {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~FakeKubelet() override { server_->Shutdown(std::chrono::system_clock::now() + 1s); }
  bool serving() const { return server_ != nullptr; }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    std::lock_guard lock(mu_);
    requests_.push_back(*req);
    cv_.notify_all();
    return grpc::Status::OK;
  }
  // The first `n` requests, once that many arrived (fewer if the patience ran out).
  std::vector<v1beta1::RegisterRequest> WaitRequests(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kPatience, [&] { return requests_.size() >= n; });
    return requests_;
  }

 private:
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1beta1::RegisterRequest> requests_;
};

// A ListAndWatch stream read on a thread of its own; tests wait on its latest list.
class Watch {
 public:
  explicit Watch(const std::string& socket)
      : stub_(v1beta1::DevicePlugin::NewStub(
            grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()))) {
    reader_ = stub_->ListAndWatch(&ctx_, v1beta1::Empty());
    thread_ = std::thread([this] {
      v1beta1::ListAndWatchResponse r;
      while (reader_->Read(&r)) {
        std::lock_guard lock(mu_);
        latest_ = r;
        ++count_;
        cv_.notify_all();
      }
    });
  }
  ~Watch() {
    ctx_.TryCancel();
    thread_.join();
  }
  // Waits until the latest list satisfies `ok`; returns that list, or the last seen.
  v1beta1::ListAndWatchResponse WaitFor(
      const std::function<bool(const v1beta1::ListAndWatchResponse&)>& ok) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kPatience, [&] { return count_ > 0 && ok(latest_); });
    return latest_;
  }
  v1beta1::DevicePlugin::Stub& stub() { return *stub_; }

 private:
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  v1beta1::ListAndWatchResponse latest_;
  size_t count_ = 0;
};

size_t CountHealth(const v1beta1::ListAndWatchResponse& r, const std::string& health) {
  size_t n = 0;
  for (const v1beta1::Device& d : r.devices()) n += d.health() == health;
  return n;
}

// Waits for `n` Unhealthy devices out of `total`.
std::function<bool(const v1beta1::ListAndWatchResponse&)> Unhealthy(size_t total, size_t n) {
  return [=](const v1beta1::ListAndWatchResponse& r) {
    return static_cast<size_t>(r.devices_size()) == total && CountHealth(r, "Unhealthy") == n;
  };
}

// remora-server in a child process; killed (SIGKILL) when dropped.
class ServerProcess {
 public:
  explicit ServerProcess(const std::string& socket) {
    std::vector<std::string> argv = {REMORA_SERVER_BIN, "--device=emu", "--listen",
                                     "unix:" + socket, "--no-restart"};
    std::vector<std::string> envs = {"REMORA_EMU_MEMORY=1Gi", "REMORA_LOG=warn"};
    for (char** e = environ; *e; ++e)
      if (!std::string_view(*e).starts_with("REMORA_")) envs.emplace_back(*e);
    std::vector<char*> args, env;
    for (std::string& a : argv) args.push_back(a.data());
    for (std::string& e : envs) env.push_back(e.data());
    args.push_back(nullptr);
    env.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      execve(args[0], args.data(), env.data());
      _exit(127);
    }
  }
  ~ServerProcess() { Kill(); }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// A tenant session holding memory: a bare shm client, as the stub would be.
class Tenant {
 public:
  static std::unique_ptr<Tenant> Connect(const std::string& socket, uint64_t request,
                                         double compute) {
    auto ch = transport::ShmConnect(socket, transport::Deadline::In(10s));
    if (!ch.ok()) return nullptr;
    auto t = std::make_unique<Tenant>();
    t->ch_ = std::make_unique<transport::FragmentingChannel>(std::move(ch).value());
    v1::Hello hello;
    hello.set_protocol_version(kProtocolVersion);
    hello.set_client_pid(getpid());
    hello.set_program("device_plugin_test");
    hello.mutable_quota()->set_gpu_memory(request);
    hello.mutable_quota()->set_gpu_memory_limit(request);
    hello.mutable_quota()->set_gpu_compute(compute);
    if (t->Call(CallId::kHello, hello) != 0) return nullptr;
    return t;
  }
  // cudaMalloc; true if the server granted it.
  bool Malloc(uint64_t bytes) {
    v1::MallocRequest r;
    r.set_size(bytes);
    return Call(CallId::kMalloc, r) == 0;
  }

 private:
  int Call(CallId id, const google::protobuf::Message& req) {
    const std::string body = req.SerializeAsString();
    const uint64_t seq = ++seq_;
    if (!ch_->Send({.call = static_cast<uint32_t>(id), .flags = 0, .seq = seq},
                   std::as_bytes(std::span(body)))
             .ok())
      return -1;
    transport::Frame f;
    do {
      if (!ch_->Receive(f, transport::Deadline::In(kPatience)).ok()) return -2;
    } while (f.header.seq != seq);
    v1::Reply reply;
    if (!reply.ParseFromArray(f.body.data(), static_cast<int>(f.body.size()))) return -3;
    return reply.code();
  }
  std::unique_ptr<transport::Channel> ch_;
  uint64_t seq_ = 0;
};

class DevicePluginKubelet : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/remora-dp-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "kubelet");
    fs::create_directories(dir_ / "run");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Kubelet(const std::string& name) const { return (dir_ / "kubelet" / name).string(); }
  std::string Gpu0() const { return (dir_ / "run" / "gpu0.sock").string(); }

  fs::path dir_;
};

TEST_F(DevicePluginKubelet, RegistersWatchesAllocatesAndNoticesDeath) {
  auto kubelet = std::make_unique<FakeKubelet>(Kubelet("kubelet.sock"));
  ASSERT_TRUE(kubelet->serving());
  ServerProcess server(Gpu0());
  Result<v1::TenantList> first = Error(err::kUnknown, "not yet");
  for (auto until = Clock::now() + kPatience; Clock::now() < until && !first.ok();
       std::this_thread::sleep_for(50ms))
    first = cli::FetchTenants("unix:" + Gpu0(), "");
  ASSERT_TRUE(first.ok()) << "remora-server never answered: " << first.status().ToString();
  const size_t mem_units = first->usable_memory() / kMiB;
  ASSERT_GT(mem_units, 512u);

  Options o;
  o.socket_dir = (dir_ / "run").string();
  o.kubelet_dir = (dir_ / "kubelet").string();
  o.poll = 100ms;
  o.container_socket_dir = "/run/remora";
  o.stub_dir = "/opt/remora-stub";
  Plugin plugin(o);
  ASSERT_TRUE(plugin.Start().ok());

  // Registration: both resources, each with its own socket.
  std::vector<v1beta1::RegisterRequest> regs = kubelet->WaitRequests(2);
  ASSERT_EQ(regs.size(), 2u);
  std::map<std::string, std::string> endpoint;
  for (const v1beta1::RegisterRequest& r : regs) {
    EXPECT_EQ(r.version(), "v1beta1");
    EXPECT_TRUE(r.options().get_preferred_allocation_available());
    endpoint[r.resource_name()] = r.endpoint();
  }
  EXPECT_EQ(endpoint["remora.io/gpu-memory"], "remora-gpu-memory.sock");
  EXPECT_EQ(endpoint["remora.io/gpu-compute"], "remora-gpu-compute.sock");

  // The full lists, all healthy.
  Watch mem(Kubelet("remora-gpu-memory.sock"));
  Watch cmp(Kubelet("remora-gpu-compute.sock"));
  v1beta1::ListAndWatchResponse m = mem.WaitFor(Unhealthy(mem_units, 0));
  ASSERT_EQ(static_cast<size_t>(m.devices_size()), mem_units);
  EXPECT_EQ(CountHealth(m, "Healthy"), mem_units);
  EXPECT_EQ(m.devices(42).id(), "gpu0-mem-00042");
  v1beta1::ListAndWatchResponse c = cmp.WaitFor(Unhealthy(kComputeUnits, 0));
  ASSERT_EQ(c.devices_size(), 1000);
  EXPECT_EQ(c.devices(42).id(), "gpu0-cmp-0042");

  // A tenant Kubernetes did not place: 256 MiB guaranteed (64 used), a quarter of the GPU.
  {
    auto tenant = Tenant::Connect(Gpu0(), 256 * kMiB, 0.25);
    ASSERT_NE(tenant, nullptr);
    ASSERT_TRUE(tenant->Malloc(64 * kMiB));
    m = mem.WaitFor(Unhealthy(mem_units, 256));
    EXPECT_EQ(CountHealth(m, "Unhealthy"), 256u);
    EXPECT_EQ(m.devices(static_cast<int>(mem_units) - 1).health(), "Unhealthy");
    EXPECT_EQ(m.devices(0).health(), "Healthy");
    c = cmp.WaitFor(Unhealthy(kComputeUnits, 250));
    EXPECT_EQ(CountHealth(c, "Unhealthy"), 250u);
    EXPECT_EQ(c.devices(999).health(), "Unhealthy");
  }
  // It goes: everything free again.
  m = mem.WaitFor(Unhealthy(mem_units, 0));
  EXPECT_EQ(CountHealth(m, "Unhealthy"), 0u);
  c = cmp.WaitFor(Unhealthy(kComputeUnits, 0));
  EXPECT_EQ(CountHealth(c, "Unhealthy"), 0u);

  // Kubernetes places a pod: 100 MiB, on the GPU the plugin prefers.
  v1beta1::PreferredAllocationRequest pref;
  auto* want = pref.add_container_requests();
  for (const v1beta1::Device& d : m.devices()) want->add_available_deviceids(d.id());
  want->add_must_include_deviceids("gpu0-mem-00007");
  want->set_allocation_size(100);
  v1beta1::PreferredAllocationResponse prefs;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(mem.stub().GetPreferredAllocation(&ctx, pref, &prefs).ok());
  }
  ASSERT_EQ(prefs.container_responses_size(), 1);
  const auto& ids = prefs.container_responses(0).deviceids();
  ASSERT_EQ(ids.size(), 100);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "gpu0-mem-00007"), 1);

  v1beta1::AllocateRequest alloc;
  alloc.add_container_requests()->mutable_devices_ids()->CopyFrom(ids);
  v1beta1::AllocateResponse granted;
  {
    grpc::ClientContext ctx;
    grpc::Status st = mem.stub().Allocate(&ctx, alloc, &granted);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  ASSERT_EQ(granted.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& cr = granted.container_responses(0);
  EXPECT_EQ(cr.envs().at("REMORA_SERVER"), "unix:/run/remora/gpu0.sock");
  EXPECT_EQ(cr.envs().at("REMORA_GPU_MEMORY"), std::to_string(100 * kMiB));
  EXPECT_EQ(cr.envs().at("LD_LIBRARY_PATH"), "/usr/local/remora/lib");
  ASSERT_EQ(cr.mounts_size(), 2);
  EXPECT_EQ(cr.mounts(0).host_path(), (dir_ / "run").string());
  EXPECT_EQ(cr.mounts(0).container_path(), "/run/remora");
  EXPECT_FALSE(cr.mounts(0).read_only());
  EXPECT_EQ(cr.mounts(1).host_path(), "/opt/remora-stub");
  EXPECT_EQ(cr.mounts(1).container_path(), "/usr/local/remora/lib");
  EXPECT_TRUE(cr.mounts(1).read_only());

  // The pod's tenant holds what was allocated and 50 MiB more: only the 50 are foreign.
  {
    auto tenant = Tenant::Connect(Gpu0(), 150 * kMiB, 0);
    ASSERT_NE(tenant, nullptr);
    m = mem.WaitFor(Unhealthy(mem_units, 50));
    EXPECT_EQ(CountHealth(m, "Unhealthy"), 50u);
    for (const v1beta1::Device& d : m.devices())
      if (std::count(ids.begin(), ids.end(), d.id())) {
        EXPECT_EQ(d.health(), "Healthy") << d.id();
      }
  }
  m = mem.WaitFor(Unhealthy(mem_units, 0));
  EXPECT_EQ(CountHealth(m, "Unhealthy"), 0u);

  // Refusals: an unknown ID, the other resource's ID.
  for (const char* bad : {"gpu0-mem-99999999", "gpu0-cmp-0001", "nvidia0"}) {
    v1beta1::AllocateRequest r;
    r.add_container_requests()->add_devices_ids(bad);
    v1beta1::AllocateResponse rsp;
    grpc::ClientContext ctx;
    grpc::Status st = mem.stub().Allocate(&ctx, r, &rsp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_NE(st.error_message().find(bad), std::string::npos) << st.error_message();
  }

  // The server dies: every device unhealthy, and nothing more is granted there.
  server.Kill();
  m = mem.WaitFor(Unhealthy(mem_units, mem_units));
  EXPECT_EQ(CountHealth(m, "Unhealthy"), mem_units);
  c = cmp.WaitFor(Unhealthy(kComputeUnits, kComputeUnits));
  EXPECT_EQ(CountHealth(c, "Unhealthy"), kComputeUnits);
  {
    v1beta1::AllocateRequest r;
    r.add_container_requests()->add_devices_ids("gpu0-cmp-0001");
    v1beta1::AllocateResponse rsp;
    grpc::ClientContext ctx;
    grpc::Status st = cmp.stub().Allocate(&ctx, r, &rsp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("cannot be reached"), std::string::npos);
  }

  // kubelet restarts: it clears the directory, serves a new socket; the plugin
  // serves its sockets again and registers anew.
  kubelet.reset();
  for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "kubelet")) fs::remove(e);
  kubelet = std::make_unique<FakeKubelet>(Kubelet("kubelet.sock"));
  ASSERT_TRUE(kubelet->serving());
  regs = kubelet->WaitRequests(2);
  ASSERT_EQ(regs.size(), 2u);
  EXPECT_NE(regs[0].resource_name(), regs[1].resource_name());
  EXPECT_TRUE(fs::exists(Kubelet("remora-gpu-memory.sock")));
  EXPECT_TRUE(fs::exists(Kubelet("remora-gpu-compute.sock")));
  plugin.Stop();
}

}  // namespace
}  // namespace remora::device_plugin
