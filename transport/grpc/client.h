// transport/grpc/client.h - GrpcConnect: the client end of the remote transport.
//
// Opens one remora.v1.Remora/Session stream and wraps it as a Channel. The
// caller's threads drive the stream directly (no transport thread), so a
// strict request/reply costs one network round trip and no thread hand-off.
//
//   ASSIGN_OR_RETURN(auto ch, GrpcConnect("gpu3:7070", {.token = t}, Deadline::In(5s)));
#pragma once

#include <memory>
#include <string>

#include "transport/channel.h"
#include "transport/grpc/options.h"

namespace remora::transport {

// Connects to `target` ("host:port"; TLS when opts.tls_root_cert_path is set)
// and starts a session, presenting opts.token as a bearer token. The returned
// channel's Send/Receive fail with kDevicesUnavailable once the stream breaks;
// max_body() is opts.max_body; arena() is nullptr.
// Errors: kInitializationError if the server cannot be reached or does not
// accept the session by `deadline`; kNotPermitted if it refuses the token;
// kDevicesUnavailable if it takes no sessions now (shutting down); kInvalidValue if the root
// certificate cannot be read.
Result<std::unique_ptr<Channel>> GrpcConnect(const std::string& target, GrpcClientOptions opts,
                                             Deadline deadline);

}  // namespace remora::transport
