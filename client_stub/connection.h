// client_stub/connection.h - Connection: the stub's one session with remora-server.
//
// Connects lazily (std::call_once) on the first call that needs the server,
// using REMORA_SERVER, REMORA_TOKEN and the quota variables (env.h): sends Hello
// as frame call 0 and reads the Welcome. Afterwards:
//   - Call() sends a SYNC row and waits for the reply frame with its seq;
//   - Post() sends an ORDERED row and returns (its failure comes back later as
//     Reply.deferred_code);
//   - host functions (cudaLaunchHostFunc, cudaStreamAddCallback) run in order on
//     one callback thread when the server's HostFuncRun arrives; each is answered
//     with HostFuncDone.
// Whichever waiting thread finds nobody receiving becomes the receiver and hands
// frames for other seqs to their owners, so a lone caller never hops threads.
//
//   v1::MallocReply rep;
//   cudaError_t e = Connection::Get().Call(CallId::kMalloc, req, &rep);
#pragma once

#include <driver_types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "client_stub/env.h"
#include "client_stub/trace.h"
#include "proto/calls.h"
#include "proto/fixed.h"
#include "remora/v1/session.pb.h"
#include "transport/channel.h"

namespace remora::client_stub {

// How a thread waits for a reply, from a program's cudaDeviceSchedule* flags: Spin and Yield
// poll (yielding the CPU for Yield) for kScheduleSpin before they sleep, BlockingSync sleeps at
// once, Auto polls for `auto_spin_ns` (the server's Welcome.reply_spin_ns), or as long as the
// transport's default when that is 0 (nullopt).
struct ReplySpin {
  std::chrono::nanoseconds spin{0};
  bool yield = false;
};
inline constexpr std::chrono::nanoseconds kScheduleSpin = std::chrono::milliseconds(10);
std::optional<ReplySpin> ReplySpinFor(unsigned flags, uint64_t auto_spin_ns);

// What a call may do to device memory, as far as its request says.
struct CallTouch {
  CallId id;
  std::optional<uint64_t> stream;  // the request's stream, when it names one
  // The device bytes it writes, {0, 0} for none (a device-to-host copy); nullopt: any.
  std::optional<std::pair<uint64_t, uint64_t>> writes;
};

template <class Req>
CallTouch TouchOf(CallId id, const Req& req) {
  CallTouch t{id, std::nullopt, std::nullopt};
  if constexpr (requires { req.stream(); }) t.stream = req.stream();
  if constexpr (std::is_same_v<Req, v1::MemcpyDtoHRequest>)
    t.writes = std::pair<uint64_t, uint64_t>{0, 0};
  else if constexpr (std::is_same_v<Req, v1::MemcpyHtoDRequest> ||
                     std::is_same_v<Req, v1::MemcpyDtoDRequest> ||
                     std::is_same_v<Req, v1::MemsetRequest>)
    t.writes = std::pair<uint64_t, uint64_t>{req.dst(), req.size()};
  return t;
}

// Told of every call sent and every host function run while it is installed (mirror.h).
// Calls the observer makes itself from its hooks are not reported to it.
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual void Before(const CallTouch& t) = 0;
  virtual void After(const CallTouch& t, cudaError_t e) = 0;
  virtual void BeforeHostFunc() = 0;
  virtual void AfterHostFunc() = 0;
};

class Connection {
 public:
  // The process's connection, created unconnected on first use, never destroyed.
  static Connection& Get();

  // Connects if nobody has yet. Returns cudaSuccess, or the code every forwarded
  // call now fails with: the server's refusal code, cudaErrorInitializationError
  // if it cannot be reached or the settings do not parse (printed once to stderr),
  // cudaErrorDevicesUnavailable once it is lost, cudaErrorCudartUnloading after exit.
  cudaError_t Ensure() {
    std::call_once(once_, [this] { Connect(); });
    return static_cast<cudaError_t>(fail_.load(std::memory_order_acquire));
  }

  // Sends a SYNC row and waits for its reply. Returns a deferred error in
  // preference (recorded as last error; sticky ones latch), else Reply.code; the
  // session's failure code if it is down; a latched sticky error without sending.
  // `rep` (may be null) is parsed from Reply.result when Reply.code is 0.
  // Thread-safe.
  template <class Req, class Rep>
  cudaError_t Call(CallId id, const Req& req, Rep* rep) {
    return Observed(id, req, [&] { return CallUnobserved(id, req, rep); });
  }
  template <class Req>
  cudaError_t Call(CallId id, const Req& req) {
    return Call<Req, v1::Empty>(id, req, nullptr);
  }

  // Sends an ORDERED row without waiting. Errors: the session's failure code, a
  // latched sticky error. Thread-safe.
  template <class Req>
  cudaError_t Post(CallId id, const Req& req) {
    return Observed(id, req, [&] { return PostUnobserved(id, req); });
  }

  // Installs `o` (not owned; it must live for ever). nullptr removes it.
  void SetObserver(CallObserver* o) { observer_.store(o, std::memory_order_release); }

  // While one lives (and is entered), the calling thread's calls are not reported to the
  // observer: its hooks run so, and so may the observer's own calls made outside them.
  class ObserverScope {
   public:
    ObserverScope() { Enter(); }
    ~ObserverScope() { Leave(); }
    ObserverScope(const ObserverScope&) = delete;
    ObserverScope& operator=(const ObserverScope&) = delete;
    void Enter() { t_in_observer_ = true; }
    void Leave() { t_in_observer_ = false; }
  };

 private:
  // The observer, unless none is installed or this thread is inside one of its hooks.
  CallObserver* Observing() const {
    CallObserver* o = observer_.load(std::memory_order_acquire);
    return o != nullptr && !t_in_observer_ ? o : nullptr;
  }
  static thread_local bool t_in_observer_;

  // Runs `send` (the call itself), between the observer's hooks when one is watching.
  template <class Req, class Send>
  cudaError_t Observed(CallId id, const Req& req, Send send) {
    CallObserver* o = Observing();
    if (o == nullptr) [[likely]]
      return send();
    const CallTouch t = TouchOf(id, req);
    ObserverScope scope;
    o->Before(t);
    scope.Leave();
    const cudaError_t e = send();
    scope.Enter();
    o->After(t, e);
    return e;
  }

  template <class Req, class Rep>
  cudaError_t CallUnobserved(CallId id, const Req& req, Rep* rep) {
    std::string& buf = SendBuffer();
    const uint32_t flags = Encode(req, buf);
    std::string result;
    bool have = false;
    cudaError_t e = CallBytes(id, flags, AsBytes(buf), rep ? &result : nullptr, &have);
    if (rep && have && !rep->ParseFromString(result)) e = cudaErrorUnknown;
    if (TraceEnabled()) [[unlikely]]
      TraceCall(id, req, e, rep && have ? rep : nullptr, LastFailureMessage());
    return e;
  }
  template <class Req>
  cudaError_t PostUnobserved(CallId id, const Req& req) {
    std::string& buf = SendBuffer();
    const uint32_t flags = Encode(req, buf);
    cudaError_t e = PostBytes(id, flags, AsBytes(buf));
    if (TraceEnabled()) [[unlikely]]
      TracePost(id, req, e);
    return e;
  }

 public:
  // `flags` is the frame's: fixed::kFixedLayout for a fixed-layout body.
  cudaError_t CallBytes(CallId id, uint32_t flags, std::span<const std::byte> body,
                        std::string* result, bool* have_result);
  cudaError_t PostBytes(CallId id, uint32_t flags, std::span<const std::byte> body);
  // The server's message for the calling thread's last failed SYNC call (its
  // own failure or a deferred one), "" after a success.
  static const std::string& LastFailureMessage();

  // Queues `fn` to run on the callback thread when the server reports host
  // function `id` reached (fn gets HostFuncRun.status); returns that id, which
  // the caller sends in a HostFuncRequest. Starts the callback thread.
  uint64_t AddHostFunc(std::function<void(cudaError_t)> fn);
  // Forgets a host function whose request could not be sent.
  void DropHostFunc(uint64_t id);
  // True while a host function is queued, waits for its stream or runs (until its
  // HostFuncDone is sent). Lock-free.
  bool HostFuncsOutstanding() const {
    return host_funcs_outstanding_.load(std::memory_order_acquire) != 0;
  }

  // Valid after Ensure() returned cudaSuccess.
  const v1::Welcome& welcome() const { return welcome_; }
  transport::Arena* arena() const { return arena_; }
  // Largest body a frame may carry.
  size_t max_body() const { return max_body_; }
  // False once the session failed, was lost or shut down (no syscall).
  bool Alive() const { return fail_.load(std::memory_order_relaxed) == 0; }
  // True when kernels can dereference arena memory at this process's addresses
  // (shm, same-address mapping, device-mapped): zero-copy and managed memory
  // work. Valid after Ensure() returned cudaSuccess.
  bool zero_copy() const { return zero_copy_; }

  // Sends Goodbye and stops the callback thread; later calls fail with
  // cudaErrorCudartUnloading. Runs from atexit; idempotent.
  void Shutdown();

  // Makes this process's threads wait for replies as `flags`' cudaDeviceSchedule* says
  // (ReplySpinFor). Before the session is up it does nothing: Connect applies the flags the
  // program set by then. Thread-safe.
  void ApplySchedule(unsigned flags);

 private:
  Connection() = default;
  template <class T>
  friend class NoDestructor;

  static std::span<const std::byte> AsBytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
  }
  static std::string& SendBuffer();
  // Writes `req` into `buf` in its fixed layout if it has one (proto/fixed.h),
  // else as protobuf; returns the frame flags that say which.
  template <class Req>
  static uint32_t Encode(const Req& req, std::string& buf) {
    if constexpr (fixed::kHasLayout<Req>) {
      fixed::Encode(req, buf);
      return fixed::kFixedLayout;
    } else {
      req.SerializeToString(&buf);
      return 0;
    }
  }

  void Connect();
  // One attempt at Connect: dials, says Hello, reads the Welcome. The error's
  // code is the cudaError_t the session fails with; `again` says whether the
  // server went away before welcoming this tenant (it may be restarting).
  Status DialAndGreet(const Settings& s, bool& again);
  void Fail(cudaError_t code, const std::string& why);
  cudaError_t Lost(const Status& s);
  cudaError_t Send(CallId id, uint32_t flags, uint64_t seq, std::span<const std::byte> body);
  cudaError_t WaitReply(uint64_t seq, transport::Frame& out);
  bool TryClaimReceiver();
  void ReleaseReceiver();
  void Dispatch(transport::Frame&& f);  // REQUIRES: mu_ held
  void CallbackLoop();

  std::once_flag once_;
  std::atomic<CallObserver*> observer_{nullptr};
  std::atomic<bool> up_{false};  // Connect succeeded: ch_ is set for good
  std::atomic<int> fail_{0};
  std::atomic<bool> fail_printed_{false};
  std::atomic<bool> sticky_printed_{false};  // a sticky error's reason went to stderr
  std::unique_ptr<transport::Channel> ch_;
  transport::Arena* arena_ = nullptr;
  size_t max_body_ = 0;
  bool zero_copy_ = false;
  v1::Welcome welcome_;
  std::atomic<uint64_t> next_seq_{1};

  std::mutex send_mu_;

  // The receiver role: claimed by CAS (under mu_, or without it on the lone-caller
  // fast path), released by a seq_cst store followed by a sleepers_ check.
  std::atomic<bool> receiving_{false};
  // Threads in cv_ waits (written under mu_, read without it by ReleaseReceiver).
  std::atomic<int> sleepers_{0};
  // ready_.size(), written under mu_ (before the role is released); read without
  // it by TryClaimReceiver.
  std::atomic<size_t> handed_{0};
  std::atomic<uint32_t> host_funcs_outstanding_{0};  // HostFuncsOutstanding

  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::unordered_map<uint64_t, transport::Frame> ready_;
  struct HostRun {
    uint64_t id;
    int32_t status;
  };
  std::deque<HostRun> runs_;
  std::string evicted_;  // why the server ended the session, once it said so
  cudaError_t evicted_code_ = cudaErrorDevicesUnavailable;  // and what later calls fail with
  std::unordered_map<uint64_t, std::function<void(cudaError_t)>> host_funcs_;
  uint64_t next_host_func_ = 1;
  std::thread callback_thread_;
  bool stop_ = false;
  bool shut_down_ = false;
};

}  // namespace remora::client_stub
