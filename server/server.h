// server/server.h - remora-server: the device, its listeners and the live sessions.
//
// One Server per GPU. It accepts tenants on every listener, runs each Session on
// its own thread, routes device printf output to the session whose stream
// printed, and reaps finished sessions.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/ledger.h"
#include "server/device.h"
#include "server/device_lock.h"
#include "server/executor.h"
#include "server/metrics.h"
#include "server/modules.h"
#include "server/pollers.h"
#include "server/session.h"
#include "server/tenants.h"
#include "transport/channel.h"

namespace remora::server {

struct ServerOptions {
  DeviceKind device = DeviceKind::kAuto;
  std::string emu_dir;                  // where the emulated libcuda.so.1 lives
  std::vector<std::string> unix_paths;  // shm listeners
  std::vector<int> unix_fds;            // their sockets, bound by a parent (or none)
  std::vector<std::string> grpc_addrs;  // gRPC listeners, HOST:PORT
  std::string grpc_token;               // bearer token remote tenants must present
  std::string tls_cert, tls_key;        // PEM files: gRPC over TLS when both are set
  uint64_t arena_bytes = 1ull << 30;    // shm arena per session
  // Order of tenants' work on the device: "fair" (sched::FairQueue: GPU time
  // by compute share, limits, priorities) or "fifo" (first come, first served).
  std::string scheduler = "fair";
  // The fair queue's time slices (sched::FairOptions::slice_ns): tenants of a priority class
  // take the device in turns of this much GPU time, never sharing it; 0: their kernels may
  // run side by side (and are each charged their whole duration). 8 ms: a drain per turn
  // costs a few percent of the device; a newcomer of a busy class waits a turn per tenant.
  uint64_t time_slice_ns = 8'000'000;
  // How long a tenant whose turn it is keeps it while it has nothing on the device
  // (sched::FairOptions::slice_idle_ns): long enough for a tenant that synchronizes between
  // batches to launch the next, short enough that a tenant that stopped costs little.
  uint64_t slice_pause_ns = 1'000'000;
  // Multiprocessors kept for the high class alone (Device::ReserveSms); 0: none. Where the
  // driver cannot, the server says so and runs without.
  unsigned reserve_sms = 0;
  std::string metrics_addr;  // HOST:PORT for Prometheus' /metrics; "" for none
  // Tenants and projects from a YAML file (tenants.h); "" for open mode,
  // where clients declare their quotas within the caps below.
  std::string tenants_file;
  double open_max_fraction = 0.5;
  sched::Priority open_max_priority = sched::Priority::kNormal;
  // Where a server on a GPU takes its DeviceLock; "" for /run/remora where it is
  // writable, else /tmp. (The emulated GPU is the server's own: no lock.)
  std::string lock_dir;
};

class Server {
 public:
  // What --check does: reads the tenants file, checks the options, loads the
  // driver and opens the device, starting nothing. Returns the device's name.
  // Errors: Start's, for the same causes.
  static Result<std::string> Check(const ServerOptions& opts);
  // Loads the driver, opens the device and starts every listener.
  // Errors: kInitializationError (no driver/device), kInvalidValue (bad options).
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& opts);
  ~Server();

  // Blocks until Shutdown() is called or the device is lost.
  void Wait();
  // True once a device fault left a context the driver cannot rebuild in this
  // process: every session has been told why and ended, nothing more is
  // accepted, and the process should exit (kExitDeviceLost). Thread-safe.
  bool device_lost() const { return lost_.load(std::memory_order_acquire); }
  // Stops accepting, ends every session (freeing what it held). Thread-safe.
  void Shutdown();
  // Begins a drain: from now on every tenant's Hello is refused with
  // kDevicesUnavailable and a message saying the server is shutting down
  // (administration sessions are still admitted); sessions already open keep
  // being served. Thread-safe; idempotent.
  void Drain();
  bool draining() const { return counters_.draining.load(std::memory_order_acquire); }
  // Ends every open session with an Evicted notice (`why`, kDevicesUnavailable at
  // the tenant's next call) and waits, at most `wait`, until they all ended and
  // gave back what they held. Thread-safe.
  void EndSessions(const std::string& why, std::chrono::milliseconds wait);

  // Reads the tenants file again. New sessions get the new book; live ones
  // stay, and those whose tenant is still in the file take its new quota,
  // share and priority (Session::ApplyBook). On an error the old book stays.
  // Thread-safe.
  Status ReloadTenants();
  // Sessions not yet finished. Thread-safe.
  size_t sessions() const;
  // Tenants' sessions a drain waits for: admitted and not yet ended, or still
  // waiting for the answer to their Hello (administration sessions and refused
  // ones are not counted). Thread-safe.
  size_t tenant_sessions() const;
  // The port /metrics is served on (0: none).
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  // Bound gRPC port of listener i (for ":0" addresses).
  int grpc_port(size_t i) const;
  Device& device() { return *device_; }
  // Every session not yet reaped, as of now. Thread-safe.
  std::vector<std::shared_ptr<Session>> Sessions() const;

 private:
  struct Live {
    std::shared_ptr<Session> session;
    std::thread thread;
  };
  void AcceptLoop(transport::Listener* listener);
  void Reap(bool all);
  // The tenant owning the stream whose work broke the context; "" if unknown.
  std::string FaultCulprit();
  // Ends what `victim` names (SessionEnv::evict): for a reclaim or a
  // preemption, every session booked under that ledger id (a configured
  // tenant's whole account); for an administrator, that one session.
  void Evict(uint64_t victim, const std::string& why, EvictKind kind);
  // A configured tenant's sessions and their shared account
  // (SessionEnv::join_tenant, leave_tenant).
  Result<uint64_t> JoinTenant(const std::string& name, const std::shared_ptr<Session>& session,
                              const std::function<Status()>& admit);
  void LeaveTenant(const std::string& name, uint64_t id);
  // Every admitted tenant, as `remora list` shows it (SessionEnv::list_tenants).
  v1::TenantList ListTenants();
  // Memory, GPU time and processes of every listed session `owner` holds.
  v1::SliceReply SliceOf(const std::string& owner);
  // The running sessions `req` names (SessionEnv::find_tenant).
  Result<std::vector<uint64_t>> FindTenant(const v1::EvictRequest& req);
  // The admission policy for a Hello now (SessionEnv::admission).
  Admission CurrentAdmission() const;
  // Installs `book`, giving its projects' shares to the scheduler.
  void UseBook(std::shared_ptr<const TenantBook> book);
  // A session saw a device fault in `epoch`: names the culprit, rebuilds the context.
  void OnFault(uint64_t epoch, const std::string& observer, const Status& fault);
  // The context could not be rebuilt: tells every session, stops accepting, wakes Wait().
  void OnDeviceLost(const std::string& culprit, const Status& fault, const Status& why);
  static void OnDevicePrintf(void* user, CUstream stream, const char* text, size_t len);

  ServerOptions opts_;
  DeviceLock device_lock_;  // outlives device_: released only once the context is gone
  std::unique_ptr<Device> device_;
  std::unique_ptr<sched::MemoryLedger> ledger_;
  ModuleCache modules_;
  IpcRegistry ipc_;
  std::unique_ptr<Executor> executor_;   // after what its completions use
  std::unique_ptr<PollerPool> pollers_;  // after the executor: sessions end first
  std::vector<std::unique_ptr<transport::Listener>> listeners_;
  std::vector<int> grpc_ports_;
  std::vector<std::thread> acceptors_;
  mutable std::mutex mu_;
  std::condition_variable stopped_cv_;
  std::map<uint64_t, Live> live_;
  uint64_t next_id_ = 1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> lost_{false};
  Counters counters_;
  std::unique_ptr<MetricsEndpoint> metrics_;  // stopped first: it lists sessions
  mutable std::mutex book_mu_;
  std::shared_ptr<const TenantBook> book_;  // guarded by book_mu_
  struct Account {
    uint64_t ledger_id = 0;
    std::map<uint64_t, std::weak_ptr<Session>> sessions;  // by session id
  };
  std::mutex accounts_mu_;                   // before the ledger's own lock
  std::map<std::string, Account> accounts_;  // by tenant name; guarded by accounts_mu_
};

}  // namespace remora::server
