// server/session.h - one tenant's session: its handle tables and every call it makes.
//
// A Session owns the tenant's channel, and everything the tenant created on the
// device: allocations, streams (virtual ids mapped onto pool streams), events,
// modules. Every handle and every pointer range in a request is checked against
// these tables before the driver sees it, so no tenant reaches another's memory
// through the API. Calls arrive on one thread (Run); when the session ends for
// any reason (Goodbye, a dead client, shutdown), Teardown frees all it held.
//
// Handlers are Session::On<Name> for each calls.def row the server answers; the
// dispatch table (dispatch.cc) is generated from calls.def.
#pragma once

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "proto/calls.h"
#include "remora/v1/session.pb.h"
#include "scheduler/ledger.h"
#include "server/device.h"
#include "server/modules.h"
#include "transport/channel.h"

namespace remora::server {

namespace v1 = ::remora::v1;

// What a session needs from the server around it.
struct SessionEnv {
  Device* device;
  sched::MemoryLedger* ledger;
  ModuleCache* modules;
  // Called (holding no Device::Use) when this session saw a device fault in
  // `epoch`: the server names the culprit and rebuilds the context.
  std::function<void(uint64_t epoch, const std::string& observer, const Status& fault)> on_fault;
  // The tenant whose work broke the context, "" if the driver cannot tell.
  std::function<std::string()> fault_culprit;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(uint64_t id, std::unique_ptr<transport::Channel> channel, transport::PeerInfo peer,
          SessionEnv env);
  ~Session();

  // Serves the session until it ends, then tears it down. Runs on its own thread.
  void Run();
  // Asks the session to end: its channel closes, Run returns after Teardown.
  // Thread-safe.
  void Stop();

  uint64_t id() const { return id_; }
  const std::string& tenant() const { return tenant_; }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // Device printf text from this tenant's kernels; sent with the next reply.
  void AppendDeviceOutput(std::string_view text);
  // Owner of `stream` among this session's mapped streams.
  bool OwnsStream(CUstream s) const;
  // Ends every host function of this session that is waiting for the tenant
  // and makes later ones return at once (their context is about to be reset).
  // Thread-safe.
  void AbandonHostFuncs();

  // ---- Handlers: one per calls.def row the server answers. -------------------
#define REMORA_CALL(id, Name, Class, Request, Reply) \
  Status On##Name(const v1::Request& req, v1::Reply& rep);
#include "proto/calls.def"

  // Called by the generated dispatcher after a handler ran.
  void Finish(const transport::FrameHeader& h, CallClass cls, Status st,
              const google::protobuf::Message& result);
  // Runs a host function's rendezvous with the tenant (on a driver thread).
  void RunHostFunc(uint64_t id);

 private:
  struct Stream {
    CUstream s = nullptr;
    bool blocking = true;               // synchronizes with the legacy default stream
    uint64_t gen = 0;                   // work items enqueued so far
    CUevent marker = nullptr;           // recorded on demand for cross-stream ordering
    std::map<uint64_t, uint64_t> seen;  // other stream id -> its gen this one waited for
  };

  Status Handshake();
  void Serve();
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

  Result<Stream*> FindStream(uint64_t id);
  Result<CUevent> FindEvent(uint64_t id);
  // Orders work about to go onto stream `id` after what the legacy default
  // stream semantics require, then counts it.
  Result<CUstream> Enqueue(uint64_t id);
  Status CheckDeviceRange(uint64_t ptr, uint64_t size, const char* what) const;
  Result<std::byte*> ArenaRange(uint64_t offset, uint64_t size) const;
  Result<const std::byte*> HostSource(const v1::HostBytes& src, uint64_t size) const;
  // Waits for `s` (or every stream when null), serving host-function
  // completions meanwhile so the tenant's callbacks cannot deadlock it.
  Status Wait(CUstream s);
  Status WaitEvent(CUevent e);
  template <typename Query>
  Status PollUntilDone(Query query, const char* what);
  // Before a copy from or to pageable host memory: see session.cc.
  Status DrainForPageable(CUstream s);
  Status SyncAll();
  void ReleaseStagingSlot(uint32_t slot_plus_one);
  // kInvalidValue unless `slot_plus_one` is 0 (none) or one of this session's slots.
  Status CheckStagingSlot(uint32_t slot_plus_one) const;
  // Enqueues `fn` to run on the stream when it gets there.
  Status EnqueueHost(CUstream s, std::function<void()> fn);
  Status Send(const transport::FrameHeader& h, const google::protobuf::Message& m);
  void ServeBacklogFrame(const transport::Frame& f);
  Status FreeAll();
  Status Check(CUresult r, const char* what) const {
    return env_.device->Check(r, what);
  }
  const DriverTable& drv() const {
    return env_.device->drv();
  }

  const uint64_t id_;
  std::unique_ptr<transport::Channel> channel_;
  const transport::PeerInfo peer_;
  const SessionEnv env_;
  std::string tenant_;
  bool admitted_ = false;
  bool arena_registered_ = false;
  // The device epoch this session's handles belong to (none yet: the first
  // EnterDevice makes the context current on this thread).
  uint64_t epoch_ = ~uint64_t{0};
  bool fault_reported_ = false;  // a device fault of this session's was reported

  // Tables: touched only by the session thread.
  std::map<uint64_t, uint64_t> allocations_;  // device pointer -> size (cudaMalloc)
  std::map<uint64_t, uint64_t> symbols_;      // module variables: address -> size
  uint64_t allocated_bytes_ = 0;
  std::unordered_map<uint64_t, Stream> streams_;  // 0 = legacy default stream
  std::unordered_map<uint64_t, CUevent> events_;
  struct Kernel {
    CUfunction fn = nullptr;
    uint32_t param_bytes = 0;
    uint64_t module = 0;
  };
  std::unordered_map<uint64_t, CUmodule> modules_;
  std::unordered_map<uint64_t, Kernel> kernels_;
  // Loads a module from `images`; `how` says which image or linked PTX it used.
  Result<CUmodule> LoadModule(const FatbinImages& images, std::string* how);
  uint64_t next_handle_ = 0x1000;

  Status deferred_;  // first failure of a stream-ordered call since the last reply
  Status sticky_;    // a device fault: every later call returns it

  // Host functions: the driver thread waits until the tenant says it ran one.
  std::mutex hf_mu_;
  std::condition_variable hf_cv_;
  std::set<uint64_t> hf_done_;
  std::atomic<int> hf_pending_{0};  // enqueued and not yet completed
  std::atomic<bool> closing_{false};
  std::atomic<bool> abandoned_{false};    // host functions return at once (AbandonHostFuncs)
  std::deque<transport::Frame> backlog_;  // frames read while waiting

  std::mutex send_mu_;
  std::string send_buf_;
  v1::Reply reply_;  // reused by Finish (session thread only)
  mutable std::mutex out_mu_;
  std::string device_output_;
  std::set<CUstream> mapped_;  // guarded by out_mu_, for printf routing
  std::atomic<bool> finished_{false};
};

}  // namespace remora::server
