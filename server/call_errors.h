// server/call_errors.h - what went wrong with a session's calls, as CUDA reports it later.
//
// A call that is not answered (a launch, an asynchronous copy) that fails has its error
// returned by the tenant's next answered call (deferred); a device fault is returned by every
// later call (sticky) until the context is reset. Thread-safe: completions record from the
// executor's thread.
#pragma once

#include <atomic>
#include <mutex>

#include "proto/status.h"

namespace remora::server {

class CallErrors {
 public:
  // An unanswered call failed with `st`: deferred, and sticky for a fault. kNotReady and ok
  // are not failures. True if `st` is now the deferred error (none was waiting).
  bool Record(const Status& st);
  // The sticky fault; ok if none. Lock-free while there is no error at all.
  Status sticky() const;
  // A reply is going out with `st`: a fault in it sticks. Returns the deferred error the reply
  // carries too, which is cleared.
  Status TakeForReply(const Status& st);
  // The context is gone: `lost` sticks; nothing is deferred any more.
  void Lose(const Status& lost);
  // cudaDeviceReset: every error is forgotten.
  void Clear();
  // How the session's teardown ended (its wait for the tenant's work).
  void set_torn(const Status& st);
  Status torn() const;

 private:
  mutable std::mutex mu_;
  Status deferred_;
  Status sticky_;
  Status torn_;
  // True while deferred_ or sticky_ holds an error: lets a call skip mu_.
  std::atomic<bool> any_{false};
};

}  // namespace remora::server
