// client_stub/monitor.h - a monitoring session: what a tenant's monitoring tools may see.
//
// libnvidia-ml.so.1 opens one (Hello.monitor): it holds no memory, no stream and no share
// of the GPU, so a tool like nvidia-smi never takes from the tenant it watches, and it may
// ask for nothing but the slice of the tenant it belongs to.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "proto/status.h"
#include "remora/v1/session.pb.h"
#include "transport/channel.h"

namespace remora::client_stub {

class MonitorSession {
  struct Key {};

 public:
  // Opens a session as the process's settings say (REMORA_SERVER, REMORA_TOKEN and
  // the declared quota). Errors: kInvalidValue for settings that do not parse; else
  // the cudaError_t code the handshake failed with.
  static Result<std::unique_ptr<MonitorSession>> Open();
  MonitorSession(Key, std::unique_ptr<transport::Channel> ch) : ch_(std::move(ch)) {}
  ~MonitorSession();  // says Goodbye
  MonitorSession(const MonitorSession&) = delete;
  MonitorSession& operator=(const MonitorSession&) = delete;

  // The device and the tenant's limit, as of the handshake.
  const v1::Welcome& welcome() const { return welcome_; }
  // The tenant's slice now. Thread-safe. Errors: kDevicesUnavailable once the
  // server is gone; the server's code if it refused.
  Result<v1::SliceReply> Slice();

 private:
  std::mutex mu_;
  std::unique_ptr<transport::Channel> ch_;
  v1::Welcome welcome_;
  uint64_t seq_ = 0;
};

}  // namespace remora::client_stub
