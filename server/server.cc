// server/server.cc - listeners, session threads, printf routing, reaping.
#include "server/server.h"

#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "scheduler/fair_queue.h"
#include "scheduler/shares.h"
#include "server/log.h"
#include "transport/grpc/listener.h"
#include "transport/shm/shm_channel.h"

namespace remora::server {

using transport::Deadline;

namespace {

// One server per GPU: the lock named by the GPU's UUID (device 0, the one Device::Open
// takes), in opts.lock_dir. None for the emulated GPU, which is this process's own.
Result<DeviceLock> LockDevice(const DriverTable& drv, const ServerOptions& opts) {
  if (drv.emulated) return DeviceLock();
  CUdevice dev = 0;
  CUuuid uuid{};
  if (drv.cuDeviceGet(&dev, 0) != CUDA_SUCCESS || drv.cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS)
    return DeviceLock();  // Device::Open reports why the device is unusable
  std::string key = "gpu-";
  for (unsigned char b : uuid.bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    key += kHex[b >> 4];
    key += kHex[b & 15];
  }
  // The same folder whatever else a server is given (sockets, ports), so any two servers of a
  // node meet there: /run/remora (the sockets' home) where it is writable, else /tmp.
  std::string dir = opts.lock_dir;
  if (dir.empty()) dir = ::access("/run/remora", W_OK | X_OK) == 0 ? "/run/remora" : "/tmp";
  return DeviceLock::Acquire(dir, key);
}

}  // namespace

Result<std::string> Server::Check(const ServerOptions& opts) {
  if (!opts.tenants_file.empty()) {
    auto book = TenantBook::Load(opts.tenants_file);
    if (!book.ok()) return book.status();
  }
  if (!(opts.open_max_fraction > 0 && opts.open_max_fraction <= 1))
    return Error(err::kInvalidValue, "--open-max-fraction takes a fraction in (0, 1]");
  if (opts.scheduler != "fair" && opts.scheduler != "fifo")
    return Error(err::kInvalidValue,
                 "--scheduler takes fair or fifo, not '" + opts.scheduler + "'");
  ASSIGN_OR_RETURN(auto drv, DriverTable::Load(opts.device, opts.emu_dir));
  ASSIGN_OR_RETURN(DeviceLock lock, LockDevice(*drv, opts));
  ASSIGN_OR_RETURN(auto device, Device::Open(std::move(drv)));
  return device->info().name();
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& opts) {
  auto s = std::make_unique<Server>();
  s->opts_ = opts;
  ASSIGN_OR_RETURN(auto drv, DriverTable::Load(opts.device, opts.emu_dir));
  ASSIGN_OR_RETURN(s->device_lock_, LockDevice(*drv, opts));
  ASSIGN_OR_RETURN(s->device_, Device::Open(std::move(drv)));
  if (Status st = s->device_->ReserveSms(opts.reserve_sms); !st.ok())
    Log(Level::kWarn, "device",
        {{"event", "no_sm_reservation"},
         {"asked", int64_t(opts.reserve_sms)},
         {"why", st.ToString()}});
  s->ledger_ = std::make_unique<sched::MemoryLedger>(s->device_->usable_memory());
  std::unique_ptr<sched::DispatchQueue> order;
  if (opts.scheduler == "fair") {
    // A second item waits in the device's queue while one runs: no idle gap
    // while the executor notices a completion.
    sched::FairOptions fo;
    fo.min_in_flight = 2;
    fo.slice_ns = opts.time_slice_ns;
    fo.slice_idle_ns = opts.slice_pause_ns;
    order = std::make_unique<sched::FairQueue>(fo);
  } else if (opts.scheduler == "fifo") {
    order = std::make_unique<sched::FifoQueue>();
  } else {
    return Error(err::kInvalidValue,
                 "--scheduler takes fair or fifo, not '" + opts.scheduler + "'");
  }
  s->executor_ = std::make_unique<Executor>(
      *s->device_, std::move(order),
      [srv = s.get()](uint64_t epoch, const std::string& observer, const Status& fault) {
        srv->OnFault(epoch, observer, fault);
      });
  if (!opts.tenants_file.empty()) {
    ASSIGN_OR_RETURN(auto book, TenantBook::Load(opts.tenants_file));
    s->UseBook(std::move(book));
  }
  if (!(opts.open_max_fraction > 0 && opts.open_max_fraction <= 1))
    return Error(err::kInvalidValue, "--open-max-fraction takes a fraction in (0, 1]");
  // Two serving threads per core: enough that a slow call (a module load)
  // does not hold up every tenant; no thread per session.
  ASSIGN_OR_RETURN(s->pollers_,
                   PollerPool::Start(std::max(2u, 2 * std::thread::hardware_concurrency())));
  if (auto set = s->device_->drv().remoraEmuSetPrintfHandler)
    (void)set(&Server::OnDevicePrintf, s.get());

  if (!opts.unix_fds.empty() && opts.unix_fds.size() != opts.unix_paths.size())
    return Error(err::kInvalidValue, "one listening descriptor per unix path");
  for (size_t i = 0; i < opts.unix_paths.size(); ++i) {
    const std::string& path = opts.unix_paths[i];
    transport::ShmOptions so;
    so.arena_bytes = opts.arena_bytes;
    ASSIGN_OR_RETURN(auto l, opts.unix_fds.empty()
                                 ? transport::ShmListener::Listen(path, so)
                                 : transport::ShmListener::Adopt(path, opts.unix_fds[i], so));
    Log(Level::kInfo, "server", {{"event", "listening"}, {"transport", "shm"}, {"path", path}});
    s->listeners_.push_back(std::move(l));
  }
  for (const std::string& addr : opts.grpc_addrs) {
    transport::GrpcOptions go;
    go.token = opts.grpc_token;
    go.tls_cert_path = opts.tls_cert;
    go.tls_key_path = opts.tls_key;
    ASSIGN_OR_RETURN(auto l, transport::GrpcListener::Listen(addr, go));
    s->grpc_ports_.push_back(l->port());
    Log(Level::kInfo, "server",
        {{"event", "listening"},
         {"transport", "grpc"},
         {"address", addr},
         {"port", l->port()},
         {"tls", opts.tls_cert.empty() ? "no" : "yes"}});
    s->listeners_.push_back(std::move(l));
  }
  if (s->listeners_.empty())
    return Error(err::kInvalidValue,
                 "no listener: give --listen unix:PATH and/or --grpc HOST:PORT");
  if (!opts.metrics_addr.empty()) {
    ASSIGN_OR_RETURN(s->metrics_, MetricsEndpoint::Start(opts.metrics_addr, [srv = s.get()] {
                       srv->counters_.stall_releases.store(srv->executor_->StallReleases(),
                                                           std::memory_order_relaxed);
                       return RenderMetrics(srv->ListTenants(), srv->counters_);
                     }));
    Log(Level::kInfo, "server",
        {{"event", "listening"},
         {"transport", "metrics"},
         {"address", opts.metrics_addr},
         {"port", s->metrics_->port()}});
  }
  for (auto& l : s->listeners_) {
    transport::Listener* raw = l.get();
    s->acceptors_.emplace_back([srv = s.get(), raw] { srv->AcceptLoop(raw); });
  }
  return s;
}

Server::~Server() {
  metrics_.reset();
  Shutdown();
  pollers_.reset();   // every session has ended
  executor_.reset();  // runs the last completions (sessions' teardowns)
  if (device_ && device_->drv().remoraEmuSetPrintfHandler)
    (void)device_->drv().remoraEmuSetPrintfHandler(nullptr, nullptr);
}

void Server::AcceptLoop(transport::Listener* listener) {
  while (!stopping_.load(std::memory_order_acquire) && !lost_.load(std::memory_order_acquire)) {
    transport::PeerInfo peer;
    auto ch = listener->Accept(peer, Deadline::In(std::chrono::milliseconds(250)));
    Reap(false);
    if (!ch.ok()) {
      if (ch.status().code() == err::kNotReady) continue;
      if (stopping_) return;
      Log(Level::kWarn, "server", {{"event", "accept_failed"}, {"error", ch.status().ToString()}});
      continue;
    }
    std::unique_lock lock(mu_);
    if (stopping_) return;
    uint64_t id = next_id_++;
    SessionEnv env{
        device_.get(),
        executor_.get(),
        ledger_.get(),
        &modules_,
        [this](uint64_t epoch, const std::string& observer, const Status& fault) {
          OnFault(epoch, observer, fault);
        },
        [this] { return FaultCulprit(); },
        [this](uint64_t victim, const std::string& why, EvictKind kind) {
          Evict(victim, why, kind);
        },
        [this] { return ListTenants(); },
        [this](const v1::EvictRequest& req) { return FindTenant(req); },
        [this] { return CurrentAdmission(); },
        [this](const std::string& name, const std::shared_ptr<Session>& session,
               const std::function<Status()>& admit) { return JoinTenant(name, session, admit); },
        [this](const std::string& name, uint64_t id) { LeaveTenant(name, id); },
        [this](const std::string& owner) { return SliceOf(owner); },
        &counters_,
        &ipc_};
    auto session = std::make_shared<Session>(id, std::move(ch).value(), peer, std::move(env));
    Live& live = live_[id];
    live.session = session;
    if (session->wake_fd() < 0) {
      live.thread = std::thread([session] { session->Run(); });
      continue;
    }
    lock.unlock();  // the pool's first look may answer Hello, which may need mu_
    if (Status st = pollers_->Add(session); !st.ok())
      Log(Level::kWarn, "server", {{"event", "serve_failed"}, {"error", st.ToString()}});
  }
}

void Server::Reap(bool all) {
  std::vector<Live> done;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.session->HandshakeOverdue(now)) it->second.session->Stop();
      if (all || it->second.session->finished()) {
        if (all) it->second.session->Stop();
        done.push_back(std::move(it->second));
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Live& l : done)
    if (l.thread.joinable()) l.thread.join();
}

void Server::Wait() {
  std::unique_lock lock(mu_);
  stopped_cv_.wait(lock, [&] { return stopping_.load() || lost_.load(); });
}

void Server::Shutdown() {
  if (stopping_.exchange(true)) return;
  Log(Level::kInfo, "server", {{"event", "shutdown"}});
  for (auto& l : listeners_) l->Shutdown();
  for (auto& t : acceptors_)
    if (t.joinable()) t.join();
  Reap(true);
  stopped_cv_.notify_all();
}

void Server::Drain() {
  if (counters_.draining.exchange(true)) return;
  Log(Level::kInfo, "server", {{"event", "draining"}, {"sessions", tenant_sessions()}});
}

void Server::EndSessions(const std::string& why, std::chrono::milliseconds wait) {
  for (const auto& s : Sessions()) {
    if (s->finished()) continue;
    if (!s->greeted()) {
      s->Stop();  // nothing admitted yet, nothing to explain
      continue;
    }
    (void)s->Evict(why);
  }
  const auto until = std::chrono::steady_clock::now() + wait;
  while (sessions() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

size_t Server::sessions() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, live] : live_) n += !live.session->finished();
  return n;
}

size_t Server::tenant_sessions() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, live] : live_)
    n += live.session->listed() || (!live.session->greeted() && !live.session->finished());
  return n;
}

int Server::grpc_port(size_t i) const {
  return i < grpc_ports_.size() ? grpc_ports_[i] : -1;
}

std::string Server::FaultCulprit() {
  // The emulator says which stream's work faulted; NVIDIA's driver does not.
  CUstream faulted = nullptr;
  const DriverTable& drv = device_->drv();
  if (!drv.remoraEmuGetFaultStream || drv.remoraEmuGetFaultStream(&faulted) != CUDA_SUCCESS ||
      !faulted)
    return "";
  std::lock_guard lock(mu_);
  for (auto& [id, live] : live_)
    if (live.session->output().Owns(faulted)) return live.session->who().tenant;
  return "";
}

std::vector<std::shared_ptr<Session>> Server::Sessions() const {
  std::vector<std::shared_ptr<Session>> sessions;
  std::lock_guard lock(mu_);
  for (const auto& [id, live] : live_) sessions.push_back(live.session);
  return sessions;
}

v1::TenantList Server::ListTenants() {
  const std::vector<std::shared_ptr<Session>> sessions = Sessions();
  v1::TenantList list;
  list.set_device(device_->info().name());
  list.set_usable_memory(ledger_->usable());
  const auto now = std::chrono::steady_clock::now();
  std::vector<sched::Share> shares;
  for (const auto& s : sessions)
    if (std::optional<v1::TenantRow> r = s->Row(now)) {
      shares.push_back(s->QueueShare());
      *list.add_tenants() = std::move(*r);
    }
  std::map<sched::ProjectId, double> projects;
  if (std::shared_ptr<const TenantBook> book = CurrentAdmission().book)
    for (const ProjectSpec& p : book->projects()) projects[book->ProjectOf(p.name)] = p.gpu_compute;
  std::vector<double> achieved;
  for (const v1::TenantRow& r : list.tenants()) achieved.push_back(r.achieved_share());
  const std::vector<double> target = sched::ListedTargets(shares, achieved, projects);
  for (int i = 0; i < list.tenants_size(); ++i)
    list.mutable_tenants(i)->set_target_share(target[i]);
  return list;
}

v1::SliceReply Server::SliceOf(const std::string& owner) {
  v1::SliceReply rep;
  const auto now = std::chrono::steady_clock::now();
  for (const std::shared_ptr<Session>& s : Sessions()) {
    if (!s->listed() || s->who().owner != owner) continue;
    std::optional<v1::TenantRow> r = s->Row(now);
    if (!r) continue;
    rep.set_memory_used(rep.memory_used() + r->memory_used());
    rep.set_achieved_share(rep.achieved_share() + r->achieved_share());
    v1::SliceReply::Process* p = rep.add_processes();
    p->set_pid(s->who().client_pid);
    p->set_memory_used(r->memory_used());
  }
  return rep;
}

Result<std::vector<uint64_t>> Server::FindTenant(const v1::EvictRequest& req) {
  std::vector<uint64_t> found;
  for (const std::shared_ptr<Session>& s : Sessions()) {
    if (!s->listed()) continue;  // first: its name is set by then
    if (req.session() != 0 ? s->id() == req.session()
                           : s->who().tenant == req.tenant() || s->who().configured == req.tenant())
      found.push_back(s->id());
  }
  const std::string what = req.session() != 0 ? "session " + std::to_string(req.session())
                                              : "tenant '" + req.tenant() + "'";
  if (found.empty()) return Error(err::kInvalidValue, "no running " + what);
  return found;
}

Admission Server::CurrentAdmission() const {
  Admission a;
  {
    std::lock_guard lock(book_mu_);
    a.book = book_;
  }
  a.open_max_fraction = opts_.open_max_fraction;
  a.open_max_priority = opts_.open_max_priority;
  if (draining())
    a.refusal =
        "remora-server is shutting down (draining after SIGTERM) and admits no new sessions; "
        "connect again once its replacement is up";
  return a;
}

void Server::UseBook(std::shared_ptr<const TenantBook> book) {
  for (size_t i = 0; i < book->projects().size(); ++i)
    executor_->ConfigureProject(book->ProjectOf(book->projects()[i].name),
                                book->projects()[i].gpu_compute);
  Log(Level::kInfo, "server",
      {{"event", "tenants"},
       {"file", opts_.tenants_file},
       {"tenants", book->tenants().size()},
       {"projects", book->projects().size()}});
  std::lock_guard lock(book_mu_);
  book_ = std::move(book);
}

Status Server::ReloadTenants() {
  if (opts_.tenants_file.empty())
    return Error(err::kInvalidValue, "no tenants file to reload (open mode)");
  auto book = TenantBook::Load(opts_.tenants_file);
  if (!book.ok()) {
    Log(Level::kError, "server", {{"event", "tenants_kept"}, {"why", book.status().ToString()}});
    return book.status();
  }
  std::shared_ptr<const TenantBook> b = *book;
  UseBook(std::move(*book));
  // Sessions admitted before carry on, under their tenant's new quota.
  for (const std::shared_ptr<Session>& s : Sessions()) s->ApplyBook(*b);
  return OkStatus();
}

void Server::Evict(uint64_t victim, const std::string& why, EvictKind kind) {
  std::vector<std::shared_ptr<Session>> targets;
  if (kind != EvictKind::kAdmin) {
    // Under accounts_mu_: a session joining the account either is seen here
    // or finds the account reclaimed and is refused (JoinTenant).
    std::lock_guard lock(accounts_mu_);
    for (const auto& [name, account] : accounts_)
      if (account.ledger_id == victim)
        for (const auto& [id, weak] : account.sessions)
          if (auto s = weak.lock()) targets.push_back(std::move(s));
  }
  if (targets.empty()) {
    std::lock_guard lock(mu_);
    if (auto it = live_.find(victim); it != live_.end()) targets.push_back(it->second.session);
  }
  bool evicted = false;
  for (const std::shared_ptr<Session>& s : targets) evicted |= s->Evict(why);
  if (!evicted) return;
  std::atomic<uint64_t>& n = kind == EvictKind::kReclaim      ? counters_.reclaims
                             : kind == EvictKind::kPreemption ? counters_.preemptions
                                                              : counters_.admin_evictions;
  n.fetch_add(1, std::memory_order_relaxed);
}

Result<uint64_t> Server::JoinTenant(const std::string& name,
                                    const std::shared_ptr<Session>& session,
                                    const std::function<Status()>& admit) {
  std::lock_guard lock(accounts_mu_);
  auto it = accounts_.find(name);
  if (it == accounts_.end()) {
    RETURN_IF_ERROR(admit());
    it = accounts_.emplace(name, Account{.ledger_id = session->id(), .sessions = {}}).first;
  } else if (ledger_->Reclaimed(it->second.ledger_id)) {
    return Error(err::kDevicesUnavailable,
                 "tenant " + name +
                     "'s memory is being reclaimed for another tenant; connect again once its "
                     "other sessions have ended");
  }
  it->second.sessions[session->id()] = session;
  return it->second.ledger_id;
}

void Server::LeaveTenant(const std::string& name, uint64_t id) {
  std::lock_guard lock(accounts_mu_);
  auto it = accounts_.find(name);
  if (it == accounts_.end() || it->second.sessions.erase(id) == 0) return;
  if (it->second.sessions.empty()) {
    ledger_->Remove(it->second.ledger_id);
    accounts_.erase(it);
  }
}

void Server::OnFault(uint64_t epoch, const std::string& observer, const Status& fault) {
  std::string culprit = FaultCulprit();
  if (culprit.empty()) culprit = observer + " (first to see the fault)";
  Status rebuilt = device_->Recover(epoch, culprit, fault);
  // Each fault that broke the context is rebuilt once, however many sessions
  // saw it: the context's epoch counts them.
  counters_.device_faults.store(device_->epoch(), std::memory_order_relaxed);
  if (!rebuilt.ok()) OnDeviceLost(culprit, fault, rebuilt);
}

void Server::OnDeviceLost(const std::string& culprit, const Status& fault, const Status& why) {
  if (lost_.exchange(true)) return;
  Log(Level::kError, "server",
      {{"event", "device_lost"},
       {"culprit", culprit},
       {"fault", fault.ToString()},
       {"rebuild", why.ToString()},
       {"next", "this process exits so that a fresh one owns the GPU"}});
  // Connections not yet accepted stay queued for the next process.
  for (auto& l : listeners_) l->Shutdown();
  const std::string msg = "the GPU context was lost to a device fault caused by " + culprit + " (" +
                          fault.message() +
                          "); remora-server restarts it, and this session's device memory, "
                          "streams and modules are gone: restart the program";
  // A tenant still in its handshake has nothing to lose: it goes unanswered and
  // its stub connects again, to the next process.
  for (const auto& s : Sessions()) {
    if (s->greeted())
      (void)s->Evict(msg, fault.code());
    else
      s->Stop();
  }
  std::lock_guard lock(mu_);
  stopped_cv_.notify_all();
}

void Server::OnDevicePrintf(void* user, CUstream stream, const char* text, size_t len) {
  auto* self = static_cast<Server*>(user);
  std::lock_guard lock(self->mu_);
  for (auto& [id, live] : self->live_) {
    if (live.session->output().Owns(stream)) {
      live.session->output().Append(std::string_view(text, len));
      return;
    }
  }
  Log(Level::kWarn, "device", {{"event", "orphan_printf"}, {"text", std::string_view(text, len)}});
}

}  // namespace remora::server
