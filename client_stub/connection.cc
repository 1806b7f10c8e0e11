// client_stub/connection.cc - connecting, the SYNC/ORDERED paths, receive demultiplexing,
// the host-function callback thread.
#include "client_stub/connection.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "client_stub/errors.h"
#include "client_stub/greet.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"
#include "proto/reply.h"

namespace remora::client_stub {
namespace {

using namespace std::chrono_literals;
using transport::Deadline;
using transport::Frame;

constexpr auto kConnectTimeout = 10s;
constexpr auto kRedialPause = 50ms;
// How long the callback thread holds the receiver role before re-checking its queue.
constexpr auto kCallbackPoll = 20ms;

void AtExit() {
  Connection::Get().Shutdown();
}

// Writes what the tenant's kernels printed (printf, assert) to stdout, where a GPU's driver
// writes it.
void WriteDeviceOutput(std::string_view text) {
  if (text.empty()) return;
  std::fflush(stdout);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

Connection& Connection::Get() {
  NoteRuntimeUse();  // every runtime call that reaches the session comes here
  static NoDestructor<Connection> c;
  return *c;
}

thread_local bool Connection::t_in_observer_ = false;

std::string& Connection::SendBuffer() {
  return ThreadScratch<std::string, struct SendBufferTag>();
}

void Connection::Fail(cudaError_t code, const std::string& why) {
  int expected = 0;
  fail_.compare_exchange_strong(expected, code, std::memory_order_acq_rel);
  if (!fail_printed_.exchange(true)) {
    const char* name = CudaErrorName(code);
    std::fprintf(stderr, "remora: %s (%s)\n", why.c_str(), name ? name : "cudaError");
  }
}

cudaError_t Connection::Lost(const Status& s) {
  if (fail_.load(std::memory_order_acquire) == 0) {
    // A server that ends the session on purpose says why first (Evicted): read
    // what it sent until the channel reports its end (a remote one may deliver
    // that frame after a failed send shows the loss), unless another thread
    // is reading.
    if (TryClaimReceiver()) {
      Frame f;
      const Deadline until = Deadline::In(std::chrono::milliseconds(500));
      while (ch_->Receive(f, until).ok()) {
        std::lock_guard lock(mu_);
        Dispatch(std::move(f));
      }
      ReleaseReceiver();
    }
    std::string why;
    cudaError_t code = cudaErrorDevicesUnavailable;
    {
      std::lock_guard lock(mu_);
      why = evicted_;
      code = evicted_code_;
    }
    Fail(code, why.empty() ? "lost remora-server: " + s.message()
                           : "remora-server ended the session: " + why);
  }
  {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
  return static_cast<cudaError_t>(fail_.load(std::memory_order_acquire));
}

Status Connection::DialAndGreet(const Settings& settings, bool& again) {
  Result<std::unique_ptr<transport::Channel>> ch = DialServer(settings);
  if (!ch.ok()) {
    // kDevicesUnavailable: a gRPC server that no longer takes sessions.
    again = ch.status().code() == err::kDevicesUnavailable;
    const char* env = std::getenv("REMORA_SERVER");
    return Error(cudaErrorInitializationError, std::string("cannot reach remora-server at ") +
                                                   (env ? env : kDefaultServer) + ": " +
                                                   ch.status().message());
  }
  ch_ = std::move(ch).value();
  return Greet(*ch_, HelloFor(settings), welcome_, again);
}

// Runs once, under call_once: nothing else touches the channel yet. A server
// that restarts (its supervisor replacing a process that lost the GPU) drops
// or refuses tenants it has not welcomed yet: those connect again, until the
// connect timeout.
void Connection::Connect() {
  Result<Settings> settings = SettingsFromEnv();
  if (!settings.ok()) return Fail(cudaErrorInitializationError, settings.status().message());
  const auto until = std::chrono::steady_clock::now() + kConnectTimeout;
  for (;;) {
    bool again = false;
    Status s = DialAndGreet(*settings, again);
    if (s.ok()) break;
    if (!again || std::chrono::steady_clock::now() + kRedialPause >= until)
      return Fail(static_cast<cudaError_t>(s.code()), s.message());
    ch_.reset();
    std::this_thread::sleep_for(kRedialPause);
  }

  arena_ = ch_->arena();
  max_body_ = ch_->max_body();
  // Kernels reach arena memory at our addresses only if the server mapped it
  // at the same address and registered it device-mapped.
  zero_copy_ = arena_ && welcome_.arena_device_address() != 0 &&
               welcome_.arena_device_address() == reinterpret_cast<uintptr_t>(arena_->base());
  ApplySessionCaps(welcome_.mutable_device());
  State& st = St();
  st.prop = BuildDeviceProp(welcome_.device());
  if (arena_)
    st.host.Attach(arena_->base(), arena_->size(), welcome_.heap_offset(), welcome_.heap_bytes(),
                   zero_copy_, welcome_.heap_pin_chunk_bytes(), [this](uint64_t off, uint64_t n) {
                     v1::PinArenaRequest req;
                     req.set_offset(off);
                     req.set_bytes(n);
                     return Call(CallId::kPinArena, req) == cudaSuccess;
                   });
  up_.store(true, std::memory_order_release);
  ApplySchedule(St().device_flags.load(std::memory_order_relaxed));
  std::atexit(AtExit);
}

std::optional<ReplySpin> ReplySpinFor(unsigned flags, uint64_t auto_spin_ns) {
  switch (flags & cudaDeviceScheduleMask) {
    case cudaDeviceScheduleSpin:
      return ReplySpin{kScheduleSpin, false};
    case cudaDeviceScheduleYield:
      return ReplySpin{kScheduleSpin, true};
    case cudaDeviceScheduleBlockingSync:
      return ReplySpin{std::chrono::nanoseconds(0), false};
    default:
      if (auto_spin_ns == 0) return std::nullopt;
      return ReplySpin{std::chrono::nanoseconds(auto_spin_ns), false};
  }
}

void Connection::ApplySchedule(unsigned flags) {
  if (!up_.load(std::memory_order_acquire)) return;
  if (std::optional<ReplySpin> r = ReplySpinFor(flags, welcome_.reply_spin_ns()))
    ch_->SetReceiveSpin(r->spin, r->yield);
  else
    ch_->SetReceiveSpin(std::chrono::nanoseconds(-1), false);  // the transport's own
}

namespace {
std::string& FailureMessage() {
  return ThreadScratch<std::string, struct FailureMessageTag>();
}
}  // namespace

const std::string& Connection::LastFailureMessage() {
  return FailureMessage();
}

cudaError_t Connection::Send(CallId id, uint32_t flags, uint64_t seq,
                             std::span<const std::byte> body) {
  Status s;
  {
    std::lock_guard lock(send_mu_);
    s = ch_->Send({.call = static_cast<uint32_t>(id), .flags = flags, .seq = seq}, body);
  }
  if (s.ok()) [[likely]]
    return cudaSuccess;
  if (s.code() == err::kInvalidValue) return cudaErrorInvalidValue;  // body too large
  return Lost(s);
}

cudaError_t Connection::PostBytes(CallId id, uint32_t flags, std::span<const std::byte> body) {
  if (cudaError_t e = Ensure()) [[unlikely]]
    return e;
  if (cudaError_t e = StickyError()) [[unlikely]]
    return e;
  return Send(id, flags, next_seq_.fetch_add(1, std::memory_order_relaxed), body);
}

cudaError_t Connection::CallBytes(CallId id, uint32_t flags, std::span<const std::byte> body,
                                  std::string* result, bool* have_result) {
  *have_result = false;
  FailureMessage().clear();
  if (cudaError_t e = Ensure()) [[unlikely]]
    return e;
  if (cudaError_t e = StickyError()) [[unlikely]]
    return e;
  uint64_t seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  if (cudaError_t e = Send(id, flags, seq, body)) [[unlikely]]
    return e;
  Frame& frame = ThreadScratch<Frame, struct ReplyFrameTag>();
  if (cudaError_t e = WaitReply(seq, frame)) [[unlikely]]
    return e;
  // A fixed-layout request is answered in fixed layout; anything else with a Reply.
  fixed::ReplyView reply;
  v1::Reply parsed;
  if (!DecodeReply(frame.header.flags & fixed::kFixedLayout, frame.body, parsed, reply))
      [[unlikely]]
    return Lost(Error(err::kUnknown, "malformed reply"));

  WriteDeviceOutput(reply.output);
  auto code = static_cast<cudaError_t>(reply.code);
  if (!reply.message.empty()) FailureMessage().assign(reply.message);
  if (code == cudaSuccess && result) {
    result->assign(reply.result);
    *have_result = true;
  }
  const auto returned =
      reply.deferred_code != 0 ? static_cast<cudaError_t>(reply.deferred_code) : code;
  if (ErrorIsSticky(returned) && !sticky_printed_.exchange(true)) [[unlikely]] {
    // A device fault ends the program's GPU work: say once why, and whose.
    const char* name = CudaErrorName(returned);
    std::fprintf(stderr, "remora: %s (%s)\n", FailureMessage().c_str(), name ? name : "?");
  }
  if (reply.deferred_code != 0) return RecordError(returned);
  if (code != cudaSuccess && ErrorIsSticky(code)) RecordError(code);
  return code;
}

// Receives frames until the one with `seq` arrives, either as the receiver or
// by being handed it by whichever thread is. A lone caller (receiver role free,
// nothing handed over) receives without taking mu_; see TryClaimReceiver.
cudaError_t Connection::WaitReply(uint64_t seq, Frame& out) {
  if (fail_.load(std::memory_order_acquire) == 0 && TryClaimReceiver()) [[likely]] {
    Status s = ch_->Receive(out, Deadline::Never());
    if (!s.ok()) [[unlikely]] {
      ReleaseReceiver();
      return Lost(s);
    }
    if (out.header.seq == seq && out.header.call != static_cast<uint32_t>(CallId::kHostFuncRun))
        [[likely]] {
      ReleaseReceiver();
      return cudaSuccess;
    }
    // Someone else's reply or a HostFuncRun: hand it over before giving up the
    // role, so whoever claims the role next sees handed_ != 0.
    {
      std::lock_guard lock(mu_);
      Dispatch(std::move(out));
      receiving_.store(false, std::memory_order_seq_cst);
    }
    cv_.notify_all();
  }
  std::unique_lock lock(mu_);
  for (;;) {
    if (auto it = ready_.find(seq); it != ready_.end()) {
      out = std::move(it->second);
      ready_.erase(it);
      handed_.store(ready_.size(), std::memory_order_relaxed);
      return cudaSuccess;
    }
    if (int f = fail_.load(std::memory_order_acquire)) return static_cast<cudaError_t>(f);
    // seq_cst increment before the role check: pairs with ReleaseReceiver.
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    bool expected = false;
    if (!receiving_.compare_exchange_strong(expected, true, std::memory_order_seq_cst)) {
      cv_.wait(lock);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    lock.unlock();
    Status s = ch_->Receive(out, Deadline::Never());
    lock.lock();
    const bool mine = s.ok() && out.header.seq == seq &&
                      out.header.call != static_cast<uint32_t>(CallId::kHostFuncRun);
    if (s.ok() && !mine) Dispatch(std::move(out));
    receiving_.store(false, std::memory_order_seq_cst);
    cv_.notify_all();  // a reply for someone else, or the receiver role is free
    if (!s.ok()) {
      lock.unlock();
      return Lost(s);
    }
    if (mine) return cudaSuccess;
  }
}

// Claims the receiver role without mu_. Fails if another thread holds it or a
// frame was handed over (possibly ours): the caller then takes the locked path.
// handed_ is written under mu_ before the role is released (seq_cst store), so
// the claiming CAS that reads that release also sees the hand-over.
bool Connection::TryClaimReceiver() {
  if (handed_.load(std::memory_order_acquire) != 0) return false;
  bool expected = false;
  if (!receiving_.compare_exchange_strong(expected, true, std::memory_order_seq_cst)) return false;
  if (handed_.load(std::memory_order_seq_cst) == 0) [[likely]]
    return true;
  ReleaseReceiver();
  return false;
}

// Gives up the role taken by TryClaimReceiver. The store and the sleepers_
// load are seq_cst, as are a waiter's sleepers_ increment and role CAS: either
// the waiter sees the role free or we see the waiter and wake it under mu_.
void Connection::ReleaseReceiver() {
  receiving_.store(false, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) [[unlikely]] {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
}

void Connection::Dispatch(Frame&& f) {
  if (f.header.call == static_cast<uint32_t>(CallId::kEvicted)) {
    // The session is over: fail now rather than wait for a reply that will
    // not come (a remote server keeps the stream open a while after this).
    v1::Evicted e;
    if (e.ParseFromArray(f.body.data(), static_cast<int>(f.body.size()))) {
      WriteDeviceOutput(e.device_output());
      evicted_ = e.message().empty() ? "evicted" : e.message();
      if (e.code() > 0) evicted_code_ = static_cast<cudaError_t>(e.code());
    }
    Fail(evicted_code_, "remora-server ended the session: " + evicted_);
    return;
  }
  if (f.header.call == static_cast<uint32_t>(CallId::kHostFuncRun)) {
    v1::HostFuncRun run;
    if (run.ParseFromArray(f.body.data(), static_cast<int>(f.body.size())))
      runs_.push_back({run.id(), run.status()});
    return;
  }
  ready_[f.header.seq] = std::move(f);
  handed_.store(ready_.size(), std::memory_order_relaxed);
}

uint64_t Connection::AddHostFunc(std::function<void(cudaError_t)> fn) {
  std::lock_guard lock(mu_);
  uint64_t id = next_host_func_++;
  host_funcs_.emplace(id, std::move(fn));
  host_funcs_outstanding_.fetch_add(1, std::memory_order_acq_rel);
  if (!callback_thread_.joinable() && !shut_down_)
    callback_thread_ = std::thread([this] { CallbackLoop(); });
  return id;
}

void Connection::DropHostFunc(uint64_t id) {
  std::lock_guard lock(mu_);
  if (host_funcs_.erase(id) != 0) host_funcs_outstanding_.fetch_sub(1, std::memory_order_acq_rel);
}

// Runs host functions in arrival order; while some are outstanding and no
// caller is receiving, receives in their place so a HostFuncRun is never stuck.
void Connection::CallbackLoop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (!runs_.empty()) {
      HostRun run = runs_.front();
      runs_.pop_front();
      std::function<void(cudaError_t)> fn;
      bool ours = false;
      if (auto it = host_funcs_.find(run.id); it != host_funcs_.end()) {
        fn = std::move(it->second);
        host_funcs_.erase(it);
        ours = true;
      }
      lock.unlock();
      if (fn) {
        // Managed memory a host function reads or writes agrees with the device around it.
        CallObserver* o = Observing();
        if (o) {
          ObserverScope scope;
          o->BeforeHostFunc();
        }
        fn(static_cast<cudaError_t>(run.status));
        if (o) {
          ObserverScope scope;
          o->AfterHostFunc();
        }
      }
      // Sent even after a sticky error: the server holds the stream until it arrives.
      v1::HostFuncDone done;
      done.set_id(run.id);
      std::string body = done.SerializeAsString();
      (void)Send(CallId::kHostFuncDone, 0, next_seq_.fetch_add(1, std::memory_order_relaxed),
                 AsBytes(body));
      if (ours) host_funcs_outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      lock.lock();
      continue;
    }
    bool expected = false;
    if (!host_funcs_.empty() && fail_.load(std::memory_order_acquire) == 0 &&
        receiving_.compare_exchange_strong(expected, true, std::memory_order_seq_cst)) {
      lock.unlock();
      Frame f;
      Status s = ch_->Receive(f, Deadline::In(kCallbackPoll));
      lock.lock();
      if (s.ok()) Dispatch(std::move(f));  // before the role is free: see TryClaimReceiver
      receiving_.store(false, std::memory_order_seq_cst);
      cv_.notify_all();
      if (!s.ok() && s.code() != err::kNotReady) {
        lock.unlock();
        Lost(s);
        lock.lock();
      }
      continue;
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    cv_.wait_for(lock, kCallbackPoll);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Connection::Shutdown() {
  std::thread cb;
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
    stop_ = true;
    cv_.notify_all();
    cb = std::move(callback_thread_);
  }
  if (cb.joinable()) {
    if (cb.get_id() == std::this_thread::get_id())
      cb.detach();
    else
      cb.join();
  }
  if (fail_.load(std::memory_order_acquire) == 0 && ch_)
    (void)Send(CallId::kGoodbye, 0, next_seq_.fetch_add(1, std::memory_order_relaxed), {});
  int expected = 0;
  fail_.compare_exchange_strong(expected, cudaErrorCudartUnloading, std::memory_order_acq_rel);
}

}  // namespace remora::client_stub
