// client_stub/greet.h - opening a session: dialling the server and the Hello/Welcome exchange.
//
// Shared by the tenant's session (Connection) and the side sessions a stub library opens
// for itself (NVML's monitoring session).
#pragma once

#include <memory>

#include "client_stub/env.h"
#include "proto/status.h"
#include "remora/v1/session.pb.h"
#include "transport/channel.h"

namespace remora::client_stub {

// Connects to `s.server` within the connect timeout, as a FragmentingChannel.
// Errors: kInitializationError (unreachable, or a transport this stub lacks),
// kDevicesUnavailable (a gRPC server that takes no sessions now), kNotPermitted.
Result<std::unique_ptr<transport::Channel>> DialServer(const Settings& s);

// The Hello a process sends: protocol version, token, declared quota, and who it is.
v1::Hello HelloFor(const Settings& s);

// Sends `hello` as the session's first frame and reads the Welcome. The error's
// code is the cudaError_t the session fails with; `again` says whether the server
// went away before answering (it may be restarting: dial again).
Status Greet(transport::Channel& ch, const v1::Hello& hello, v1::Welcome& welcome, bool& again);

}  // namespace remora::client_stub
