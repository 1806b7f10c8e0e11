// server/session.h - one tenant's session: decode, validate, hand work to the executor.
//
// A Session owns the tenant's channel and its tables: allocations, streams
// (virtual ids mapped onto pool streams the tenant alone uses), events,
// modules, kernels. Every handle and every pointer range in a request is
// checked against these tables before anything reaches the device, so no
// tenant reaches another's memory through the API. Stream-ordered work goes to
// the tenant's queues in the Executor; a call that must wait for the device
// replies from a completion (see Later), so no thread waits for the device.
// When the session ends for any reason (Goodbye, a dead client, shutdown),
// Teardown hands everything it held back once its own work is done.
//
// Handlers are Session::On<Name> for each calls.def row the server answers; the
// dispatch table (dispatch.cc) is generated from calls.def. Calls arrive on one
// thread at a time; completions may run on the executor's thread.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "proto/arena.h"
#include "proto/calls.h"
#include "proto/fixed.h"
#include "remora/v1/session.pb.h"
#include "scheduler/dispatch.h"
#include "scheduler/ledger.h"
#include "server/arena_pins.h"
#include "server/call_errors.h"
#include "server/device.h"
#include "server/device_output.h"
#include "server/executor.h"
#include "server/ipc.h"
#include "server/memops.h"
#include "server/metrics.h"
#include "server/modules.h"
#include "server/staging.h"
#include "server/tables.h"
#include "server/tenants.h"
#include "server/vmm_table.h"
#include "transport/channel.h"

struct cudnnContext;     // cudnnHandle_t's target (cudnn_graph.h)
struct cublasLtContext;  // cublasLtHandle_t's target (cublasLt.h)

namespace remora::server {

namespace v1 = ::remora::v1;

// Why a session is ended for another's sake (counted in /metrics).
enum class EvictKind { kReclaim, kPreemption, kAdmin };

// The server's admission policy, as of one Hello.
struct Admission {
  std::shared_ptr<const TenantBook> book;  // null: open mode
  // Open mode's caps on what a client may declare: its guaranteed memory and
  // compute share as a fraction of the GPU (its memory limit is cut to it),
  // and its priority class.
  double open_max_fraction = 1;
  sched::Priority open_max_priority = sched::Priority::kHigh;
  // Not empty: every tenant's Hello (administration's not) is refused
  // (kDevicesUnavailable) with this message.
  std::string refusal;
};

// A session's kind, chosen at Hello. A tenant runs CUDA work (and may ask for its slice); an
// administration session (Hello.admin, `remora list`) lists and evicts; a monitoring session
// (Hello.monitor, NVML) asks for its slice. Each kind dispatches through its own table
// (dispatch.cc): a call outside it is refused with kNotPermitted.
enum class SessionKind : uint8_t { kTenant, kAdmin, kMonitor };

class Session;

// A handler returns ReplyLater() when a completion made by Session::Later() will reply.
inline constexpr int32_t kReplyLater = -1;
inline Status ReplyLater() {
  return Status(kReplyLater, "reply follows");
}

// Who a session serves.
struct SessionIdentity {
  std::string tenant;      // the name it goes by in logs and `remora list`
  std::string configured;  // the tenants-file name it serves ("" in open mode)
  // Whose slice it counts toward, for monitoring: the configured tenant, or in open mode the
  // client's user on its host.
  std::string owner;
  int64_t client_pid = 0;
  // The ledger id its memory is booked under, which is also its account of GPU time: its own,
  // or in a configured tenant's account, the id of the session that opened it.
  uint64_t ledger_id = 0;
};

// A tenant's cuBLAS handle (handlers/blas.cc).
struct BlasHandle;
// What a library handle leaves when its tenant goes: its destroy call and its memory go into
// `held` (handlers/blas.cc, blaslt.cc, dnn.cc). Returns false: the table keeps nothing.
bool ReleaseBlas(Device& dev, const BlasHandle& handle, Held& held);
bool ReleaseBlasLt(Device& dev, cublasLtContext* handle, Held& held);
bool ReleaseDnn(Device& dev, cudnnContext* handle, Held& held);

// What a session needs from the server around it.
struct SessionEnv {
  Device* device;
  Executor* executor;
  sched::MemoryLedger* ledger;
  ModuleCache* modules;
  // Called (holding no Device::Use) when this session saw a device fault in
  // `epoch`: the server names the culprit and rebuilds the context.
  std::function<void(uint64_t epoch, const std::string& observer, const Status& fault)> on_fault;
  // The tenant whose work broke the context, "" if the driver cannot tell.
  std::function<std::string()> fault_culprit;
  // Ends session `victim` to give its memory to another tenant: it is told
  // `why` and torn down. Thread-safe; a victim already gone is ignored.
  std::function<void(uint64_t victim, const std::string& why, EvictKind kind)> evict;
  // Every tenant's row, for an administration session (remora list).
  std::function<v1::TenantList()> list_tenants;
  // The sessions `req` names, for remora evict: the one with its session id,
  // or every session of the tenant it names (one per process of it). Errors:
  // kInvalidValue if none matches.
  std::function<Result<std::vector<uint64_t>>(const v1::EvictRequest& req)> find_tenant;
  // Who may connect with what: the tenants file (null book: open mode, where
  // clients declare their quotas within the caps). Null: open mode, no caps.
  std::function<Admission()> admission;
  // The sessions of configured tenant `name` (one per process of it) share
  // one account: its memory in the ledger, under the ledger id of the session
  // that opened it, and its share of GPU time (the fair queue's account of
  // that id: one request and limit for all, split evenly). Seats `session`: the first opens the
  // account by calling `admit` (which admits the session's own id to the ledger), later ones join
  // it. Returns the account's ledger id. Errors: admit's; kDevicesUnavailable while the account is
  // being reclaimed. Thread-safe.
  std::function<Result<uint64_t>(const std::string& name, const std::shared_ptr<Session>& session,
                                 const std::function<Status()>& admit)>
      join_tenant;
  // Session `id` leaves `name`'s account; the last one out removes the
  // account from the ledger. Thread-safe.
  std::function<void(const std::string& name, uint64_t id)> leave_tenant;
  // Memory used and GPU time achieved by every listed session whose owner() is
  // `owner`, with their client processes (NVML's view). Thread-safe.
  std::function<v1::SliceReply(const std::string& owner)> slice_of;
  // Server-wide event counts (/metrics); may be null.
  Counters* counters = nullptr;
  // Memory exported for the tenant's other processes (cudaIpcGetMemHandle); null: no IPC.
  IpcRegistry* ipc = nullptr;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(uint64_t id, std::unique_ptr<transport::Channel> channel, transport::PeerInfo peer,
          SessionEnv env);
  ~Session();

  // Serves the session until it ends, then tears it down, on the calling
  // thread (a channel that cannot be served by events, see ServeReady).
  void Run();
  // Event-driven serving: handles every frame waiting now, then arms the
  // channel and returns true (call again once wake_fd() polls readable), or
  // tears the session down and returns false when it ended. One thread at a time.
  bool ServeReady();
  // Polls readable when ServeReady has work; -1 if the channel needs Run().
  int wake_fd() const { return channel_->wake_fd(); }
  // True once a session has waited too long for its Hello (Stop it). Thread-safe.
  bool HandshakeOverdue(std::chrono::steady_clock::time_point now) const;
  // Asks the session to end: its channel closes, Run returns after Teardown.
  // Thread-safe.
  void Stop();
  // Ends the session for another tenant's sake or the device's: logs `why`,
  // tells the tenant (an Evicted frame, so its next call fails with `code`,
  // saying why) and stops. Thread-safe.
  // Returns false if the session was already evicted (nothing done).
  bool Evict(const std::string& why, int32_t code = err::kDevicesUnavailable);
  // True once the tenant's Hello has been answered. Thread-safe.
  bool greeted() const { return greeted_.load(std::memory_order_acquire); }

  uint64_t id() const { return id_; }
  // Who the session serves: set at Hello, before listed(), and read-only from then on.
  const SessionIdentity& who() const { return who_; }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // Device printf text from this tenant's kernels (sent with its next reply), and which
  // CUstreams are the tenant's.
  DeviceOutput& output() { return output_; }
  // True once the tenant was admitted, until its session ended: then tenant()
  // and Row() may be read from any thread. Thread-safe.
  bool listed() const { return listed_.load(std::memory_order_acquire) && !finished(); }
  // The tenant as `remora list` shows it (target_share left 0: it depends on
  // the others), or nullopt before it was admitted, for an administration
  // session, or once it ended. Thread-safe.
  std::optional<v1::TenantRow> Row(std::chrono::steady_clock::time_point now) const;
  // The compute share this session competes with in the dispatch queue (its
  // account's, for a configured tenant). Thread-safe.
  sched::Share QueueShare() const;
  // A reloaded tenants file: a listed session of a configured tenant still in
  // `book` takes the tenant's new quota, compute share, priority and project.
  // A change that does not fit (a request beside the others' requests) is
  // refused and logged, and the session keeps what it had; so does a session
  // whose tenant left the file. Thread-safe.
  void ApplyBook(const TenantBook& book);

  // ---- Handlers: one per calls.def row the server answers. -------------------
#define REMORA_CALL(id, Name, Class, Request, Reply) \
  Status On##Name(const fixed::HandlerRequest<v1::Request>::type& req, v1::Reply& rep);
#include "proto/calls.def"

  // Run by the generated dispatcher before the handler: the handle and device-buffer
  // checks proto/call_checks.def declares for call C, in its order; the first miss.
  template <CallId C, typename Req>
  Status CheckDeclared(const Req& req) const;

  // Called by the generated dispatcher after a handler ran, and by the
  // completions Later() makes. Thread-safe.
  void Finish(const transport::FrameHeader& h, CallClass cls, Status st,
              const google::protobuf::Message& result);

  // One prepared cuBLAS routine (handlers/blas.cc).
  struct BlasCall;
  // One prepared cuDNN operation (handlers/dnn.cc).
  struct DnnCall;

 private:
  // Answers the first frame, which must be Hello.
  Status Greet(const transport::Frame& f);
  // Tears down and reports a fault the teardown saw first.
  void End();
  // Enters the device for one call; if the context was rebuilt since this
  // session's epoch, first forgets the state that died with it (LoseState).
  Device::Use EnterDevice();
  // Forgets every handle of a context that no longer exists (never passing one
  // to the driver), returns its memory to the ledger, and makes every later
  // call fail with the fault that ended it, naming the culprit.
  void LoseState();
  // After a call: reports a device fault this session saw first to the server.
  void ReportFault();
  // Frees all the session held; returns how freeing went (a device fault shows here).
  Status Teardown();
  void Dispatch(const transport::Frame& f);

  Status CheckDeviceRange(uint64_t ptr, uint64_t size, const char* what) const;
  // The checked source of a host-to-device copy (destination, source, stream); checked here
  // rather than declared, so that a refusal still hands the staging slot back.
  Result<const std::byte*> HtoDSource(const v1::MemcpyHtoDRequest& req) const;

  // The reply to the call being handled, sent when the returned completion
  // runs, with `result` (kept alive until then) on success. The handler then
  // returns kReplyLater.
  Executor::Completion Later(std::shared_ptr<const google::protobuf::Message> result = nullptr);
  // Waits for `stream` (every stream: nullopt) and then replies with `result`.
  Status ReplyWhenDone(std::optional<uint64_t> stream,
                       std::shared_ptr<const google::protobuf::Message> result = nullptr,
                       Executor::Wait how = Executor::Wait::kSpin);
  // The CUstream on which a small synchronous copy of `bytes` on `stream` may
  // be issued and waited for right here, bypassing the executor's queues: none
  // of the tenant's work is queued and nothing it must follow is in flight, so
  // stream order holds with nothing to order against. nullopt: queue it.
  std::optional<CUstream> DirectStream(uint64_t stream, uint64_t bytes);

  // What the tenant held, taken out of the tables to be given back once its
  // work is done (device state cannot go while kernels may still use it).
  // Empties the tables (all streams but the default one go back too).
  Held TakeAll();
  // Revokes what this session exported and closes what it opened by IPC (ipc_gone_ calls it
  // whenever the tables go: teardown, cudaDeviceReset, a lost context).
  void ForgetIpc();
  // The server's IPC registry. Errors: kNotSupported where it serves none.
  Result<IpcRegistry*> Ipc() const;
  // Takes no more work on stream `id`; once its work is done, its CUstream goes back to the
  // device's pool (cudaStreamDestroy, and every stream but the legacy one when the tenant goes).
  void RetireStream(uint64_t id);
  // Gives `held` back (REQUIRES: a Use; the tenant's work on it is done).
  // Handles of an older context are forgotten, never passed to the driver.
  void GiveBack(Held& held);
  // Gives `held` back once all of this tenant's work is done. With `reply`,
  // the call being handled replies then (returns kReplyLater); else it
  // returns ok at once.
  Status GiveBackWhenDone(Held held, bool reply,
                          std::shared_ptr<const google::protobuf::Message> result = nullptr);
  // Device memory charged to the tenant's quota as cudaMalloc's is (loans
  // reclaimed within its request) that the tenant cannot name: library
  // workspaces and the server's copies of pointer arrays. `what` says what
  // for a refusal. Errors: kMemoryAllocation past the tenant's limit.
  Result<CUdeviceptr> AllocateCharged(uint64_t bytes, const std::string& what);
  // Books `charged` bytes for the tenant in the ledger, reclaiming loans within its request
  // first; `what` says what for a refusal. Errors: kMemoryAllocation past the tenant's limit.
  Status ClaimCharge(uint64_t charged, const std::string& what);
  // cudaDeviceSetLimit(cudaLimitMallocHeapSize): where the device keeps a heap per tenant,
  // sizes the tenant's, charged to its quota (the default heap is the context's, uncharged);
  // elsewhere accepts what the context's shared heap holds. Errors: kInvalidValue for 0
  // bytes, once the heap is in use, or past the shared heap; ClaimCharge's.
  Status SetHeapLimit(uint64_t bytes);
  // ---- Virtual memory management (handlers/vmm.cc) ----
  // The most address space the tenant may hold reserved: kVmmReserveFactor times the device's
  // memory (a framework reserves a little more than the memory it sees, per pool and stream).
  static constexpr uint64_t kVmmReserveFactor = 8;
  uint64_t MaxReserved() const;
  // kNotSupported unless the device serves virtual memory management; kInvalidValue unless
  // `size` (of `what`) is a positive multiple of its granularity.
  Status NeedVmmSize(uint64_t size, const char* what) const;
  // Unmaps, releases and frees what `e` names (REQUIRES: a Use; the tenant's work is done).
  void UndoVmm(const VmmTable::Everything& e);
  // Gives back what a release or an unmap freed: with `wait`, once the tenant's work is done,
  // replying then with what is accessible (kReplyLater); else at once.
  Status GiveBackVmm(VmmTable::Freed freed, bool wait);
  // Gives memory from AllocateCharged back once the tenant's work is done,
  // keeping `keep` alive until then.
  void ReleaseChargedWhenDone(CUdeviceptr p, uint64_t bytes,
                              std::shared_ptr<const void> keep = nullptr);
  // Describes kernel `fn` of module `module_id` into `k` (its parameters and attributes) and
  // enters it in kernels_ under a new handle.
  void DescribeKernel(CUfunction fn, const std::string& name, uint64_t module_id,
                      v1::KernelLayout& k);
  // ---- cuBLAS (handlers/blas.cc) ----
  // Checks a routine's request against the tenant's tables and builds the
  // call; `host_result`: the call is BlasSync (its value goes in the reply).
  Result<std::shared_ptr<BlasCall>> PrepareBlas(const v1::BlasRequest& req, bool host_result);
  // The cuBLASLt handle serving cuBLAS handle `id` where a matmul names it (NVIDIA's cuBLASLt
  // takes a cuBLAS handle too): the handle's own, made on first use, destroyed with it.
  Result<cublasLtContext*> BlasHandleAsLt(uint64_t id);
  // Queues a prepared call on its stream.
  Status SubmitBlas(std::shared_ptr<BlasCall> call);
  // ---- cuDNN (handlers/dnn.cc) ----
  // Checks an operation's request against the tenant's tables and builds it.
  Result<std::shared_ptr<DnnCall>> PrepareDnn(const v1::DnnRequest& req);
  // A device fault's status with whose work caused it appended (once), when
  // known; any other status as it is.
  Status NameCulprit(Status st) const;
  // Ends every session the ledger chose to reclaim for this one (`what`: what this tenant
  // asked for). For a reclaim (kReclaim: memory within this tenant's request) it then waits,
  // bounded, until their memory is back in the ledger. Errors: kMemoryAllocation if it is not.
  Status Reclaim(const std::vector<sched::TenantId>& victims, const std::string& what,
                 EvictKind kind);
  Status Send(const transport::FrameHeader& h, const google::protobuf::Message& m);
  // Logs the first frame that could not reach the tenant (gone, or it stopped reading).
  void NoteSent(const Status& st);
  // How long a reply may wait for room in a tenant's full ring (transport::Channel::
  // SetSendTimeout): a tenant that reads its replies never fills it (its threads wait for
  // theirs), so one that does has stopped reading and is closed.
  static constexpr std::chrono::milliseconds kReplyTimeout{500};
  // The same for a remote (gRPC) tenant, whose 64 MiB send queue (transport::GrpcOptions)
  // fills only when its process stopped reading or its link is slow: no write done for this
  // long.
  static constexpr std::chrono::seconds kRemoteReplyTimeout{10};
  // The device, its driver table (dev().drv()) and its error mapping (dev().Check()).
  Device& dev() const {
    return *env_.device;
  }

  const uint64_t id_;
  std::unique_ptr<transport::Channel> channel_;
  const transport::PeerInfo peer_;
  const SessionEnv env_;
  const HostStaging staging_{*channel_};
  SessionIdentity who_;
  bool admitted_ = false;
  // What the session is, chosen at Hello; each kind has its own dispatch table.
  SessionKind kind_ = SessionKind::kTenant;
  // What the tenant was granted: set before listed_, changed by ApplyBook.
  mutable std::mutex grant_mu_;
  sched::Quota quota_;
  sched::Share share_;
  std::string project_;
  std::atomic<bool> listed_{false};
  std::atomic<uint64_t> calls_{0};   // frames dispatched (for /metrics)
  std::atomic<uint64_t> errors_{0};  // calls answered with an error
  // What of the shm arena the driver has page-locked (none without an arena; set at Hello).
  std::unique_ptr<ArenaPins> pins_;
  CUdeviceptr arena_device_address_ = 0;
  // Ends this tenant's wait kernels (memops.h) when it leaves.
  std::shared_ptr<WaitStop> wait_stop_ = std::make_shared<WaitStop>();
  // The device epoch this session's handles belong to (none yet: the first
  // EnterDevice makes the context current on this thread).
  std::atomic<uint64_t> epoch_{~uint64_t{0}};  // of the context this session's state lives in
  bool fault_reported_ = false;                // a device fault of this session's was reported

  // Tables: touched only by the thread serving the session. Each registers with tables_,
  // which LoseState and TakeAll walk; each says what it gives up when the tenant goes.
  TableSet tables_;
  OwnedRanges allocations_{tables_, [](uint64_t p, uint64_t size, Held& h) {
                             h.allocations[p] = arena::AlignUp(size, 256);
                           }};            // cudaMalloc: device pointer -> size
  OwnedRanges symbols_{tables_};          // module variables: address -> size
  VmmTable vmm_{tables_, MaxReserved()};  // cuMemAddressReserve, cuMemCreate, cuMemMap
  // IPC openings this session made (CheckDeviceRange asks env_.ipc only when there are).
  std::atomic<uint64_t> ipc_opened_{0};
  // Bytes this session has booked in the ledger (read by Row from any thread).
  std::atomic<uint64_t> allocated_bytes_{0};
  // Of those, the device heap it sized (heap_per_tenant devices); 0 while it has the default.
  std::mutex heap_mu_;
  uint64_t heap_charged_ = 0;  // guarded by heap_mu_
  HandleTable<CUstream> streams_{tables_, "stream", err::kInvalidResourceHandle,
                                 [this](uint64_t id, const CUstream&, Held&) {
                                   if (id == 0) return true;  // the session's while it lives
                                   RetireStream(id);
                                   return false;
                                 }};  // 0: legacy default
  HandleTable<CUevent> events_{tables_, "event", err::kInvalidResourceHandle,
                               [](uint64_t, const CUevent& e, Held& h) {
                                 h.events.push_back(e);
                                 return false;
                               }};
  // Interprocess events: this process's own (exported) and those it opened by IPC. Each has a
  // CUevent of this session's in events_, which its records here go to; every process's
  // waits, queries and synchronizations follow the latest record any of them made (`state`).
  struct IpcEventRef {
    std::shared_ptr<IpcEvent> state;
    bool imported = false;
    std::vector<uint64_t> records;  // the numbers of the records this session made
  };
  std::unordered_map<uint64_t, IpcEventRef> ipc_events_;
  // The IPC event `id` is, if any.
  IpcEventRef* IpcEventOf(uint64_t id) {
    auto it = ipc_events_.find(id);
    return it == ipc_events_.end() ? nullptr : &it->second;
  }
  // The records every process sees of event `id` if it is an interprocess one, else null.
  IpcEvent* IpcStateOf(uint64_t id) {
    IpcEventRef* ipc = IpcEventOf(id);
    return ipc ? ipc->state.get() : nullptr;
  }
  GoesWithTables ipc_gone_{tables_, [this] { ForgetIpc(); }};
  struct Kernel {
    CUfunction fn = nullptr;
    uint32_t param_bytes = 0;
    uint64_t module = 0;
    std::vector<uint32_t> param_offsets;  // for cuLaunchCooperativeKernel's kernelParams
  };
  struct Module {
    CUmodule mod = nullptr;
    std::shared_ptr<const FatbinImages> images;  // keeps the program in the cache
  };
  HandleTable<Module> modules_{tables_, "module", err::kInvalidResourceHandle,
                               [](uint64_t, const Module& m, Held& h) {
                                 h.modules.push_back(m.mod);
                                 return false;
                               }};
  HandleTable<Kernel> kernels_{tables_, "kernel", err::kInvalidDeviceFunction};
  // cuBLAS handles (a bad one is CUBLAS_STATUS_NOT_INITIALIZED to the tenant).
  HandleTable<std::shared_ptr<BlasHandle>> blas_{
      tables_, "cuBLAS handle", err::kInvalidResourceHandle,
      [this](uint64_t, const std::shared_ptr<BlasHandle>& b, Held& h) {
        return ReleaseBlas(*env_.device, *b, h);
      }};
  // cuBLASLt handles (likewise NOT_INITIALIZED); they own no memory of the tenant's.
  HandleTable<cublasLtContext*> blaslt_{tables_, "cuBLASLt handle", err::kInvalidResourceHandle,
                                        [this](uint64_t, cublasLtContext* const& c, Held& h) {
                                          return ReleaseBlasLt(*env_.device, c, h);
                                        }};
  HandleTable<cudnnContext*> dnn_{
      tables_, "cuDNN handle", err::kInvalidResourceHandle,
      [this](uint64_t, cudnnContext* const& c, Held& h) { return ReleaseDnn(*env_.device, c, h); }};
  // Texture and surface objects by the device's own handle (kernels take it as an argument);
  // the value says which of the two it is.
  enum class TexKind : uint8_t { kTexture, kSurface };
  std::function<void()> DestroyTexture(uint64_t handle, TexKind kind) const;
  HandleTable<TexKind> textures_{tables_, "texture or surface object", err::kInvalidValue,
                                 [this](uint64_t h, const TexKind& kind, Held& held) {
                                   held.destroy.push_back(DestroyTexture(h, kind));
                                   return false;
                                 }};
  // Tensor maps this session's device encoded, by their bytes: the bytes of tenant memory
  // each spans (cuTensorMapReplaceAddress moves that span). At most kMaxTensorMaps are kept.
  static constexpr size_t kMaxTensorMaps = 4096;
  std::unordered_map<std::string, uint64_t> tensor_maps_;
  uint64_t next_handle_ = 0x1000;
  std::shared_ptr<Executor::Tenant> work_;  // this tenant's queues, once admitted
  transport::FrameHeader current_;          // the call being handled

  CallErrors failures_;  // deferred and sticky errors, and how the teardown ended

  std::atomic<bool> closing_{false};
  std::atomic<bool> evicted_{false};
  std::atomic<bool> send_failed_{false};  // NoteSent logged
  const std::chrono::steady_clock::time_point created_;
  std::atomic<bool> greeted_{false};  // the first frame was answered
  transport::Frame frame_;            // reused by ServeReady
  std::mutex send_mu_;                // guards send_buf_ and reply_
  std::string send_buf_;
  v1::Reply reply_;  // reused by Finish
  DeviceOutput output_;
  std::atomic<bool> finished_{false};
};

}  // namespace remora::server
