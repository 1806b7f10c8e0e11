// client_stub/monitor.cc - MonitorSession.
#include "client_stub/monitor.h"

#include <chrono>

#include "client_stub/env.h"
#include "client_stub/greet.h"
#include "proto/calls.h"

namespace remora::client_stub {

Result<std::unique_ptr<MonitorSession>> MonitorSession::Open() {
  ASSIGN_OR_RETURN(Settings settings, SettingsFromEnv());
  ASSIGN_OR_RETURN(std::unique_ptr<transport::Channel> ch, DialServer(settings));
  auto m = std::make_unique<MonitorSession>(Key{}, std::move(ch));
  v1::Hello hello = HelloFor(settings);
  hello.set_monitor(true);
  bool again = false;
  RETURN_IF_ERROR(Greet(*m->ch_, hello, m->welcome_, again));
  return m;
}

MonitorSession::~MonitorSession() {
  std::lock_guard lock(mu_);
  (void)ch_->Send({.call = static_cast<uint32_t>(CallId::kGoodbye), .flags = 0, .seq = ++seq_}, {});
}

Result<v1::SliceReply> MonitorSession::Slice() {
  std::lock_guard lock(mu_);
  const uint64_t seq = ++seq_;
  const std::string body = v1::Empty().SerializeAsString();
  RETURN_IF_ERROR(ch_->Send({.call = static_cast<uint32_t>(CallId::kSlice), .flags = 0, .seq = seq},
                            std::as_bytes(std::span(body.data(), body.size()))));
  transport::Frame f;
  do {
    Status s = ch_->Receive(f, transport::Deadline::In(std::chrono::seconds(10)));
    if (!s.ok()) return Error(err::kDevicesUnavailable, "remora-server: " + s.message());
  } while (f.header.seq != seq || f.header.call == static_cast<uint32_t>(CallId::kEvicted));
  v1::Reply reply;
  v1::SliceReply slice;
  if (!reply.ParseFromArray(f.body.data(), static_cast<int>(f.body.size())) ||
      (reply.code() == 0 && !slice.ParseFromString(reply.result())))
    return Error(err::kUnknown, "malformed Slice reply");
  if (reply.code() != 0) return Error(reply.code(), reply.message());
  return slice;
}

}  // namespace remora::client_stub
