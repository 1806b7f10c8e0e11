// transport/grpc/options.h - settings shared by the gRPC listener and client.
//
// Both ends must agree on message and body limits: a frame is one
// remora.v1.Frame message, so max_message_bytes bounds max_body plus the
// header fields. Defaults allow 64 MiB messages and 4 MiB bodies.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace remora::transport {

inline constexpr size_t kGrpcDefaultMaxBody = size_t{4} << 20;
inline constexpr size_t kGrpcDefaultMaxMessage = (size_t{64} << 20) + (size_t{1} << 20);

// True if a frame with a `max_body` body fits in one message (header slack
// included) and the limit is one gRPC accepts (an int).
constexpr bool BodyFits(size_t max_body, size_t max_message_bytes) {
  return max_message_bytes <= size_t{INT32_MAX} && max_body <= max_message_bytes &&
         max_message_bytes - max_body >= 64;
}

// Initial-metadata key a server sends once it accepts a session. A refused
// stream has none: gRPC then sends status without initial metadata.
inline constexpr char kSessionAcceptedKey[] = "remora-session";

// Server side. Empty TLS paths mean an insecure (plaintext) port; an empty
// token means no authentication.
struct GrpcOptions {
  size_t max_message_bytes = kGrpcDefaultMaxMessage;
  size_t max_body = kGrpcDefaultMaxBody;
  // Bytes a session may queue for writing before Send blocks.
  size_t max_queued_bytes = size_t{64} << 20;
  // Bytes of received frames a session buffers before it stops reading; the
  // client's Send then stalls on HTTP/2 flow control. Reading resumes at half.
  size_t max_inbox_bytes = size_t{64} << 20;
  // How long a server-side Receive polls (yielding the CPU) before it sleeps.
  // Spares a request/reply exchange the wake-up of a sleeping thread, but only
  // pays with idle cores: on a busy 2-core host it slows the round trip
  // (bench/transport_grpc). 0 sleeps at once.
  std::chrono::nanoseconds receive_spin{0};
  // Ping period and ping timeout for detecting a vanished peer. Keep the
  // client's no shorter than the server's, or the server refuses its pings.
  std::chrono::milliseconds keepalive{2000};
  // After the server closes a session, how long it goes on reading (and
  // dropping) what the client still sends before it ends the stream, unless
  // the client ends it first. Ending the stream under a client that is still
  // writing breaks its connection, and the client may then lose the frames sent
  // last (an Evicted notice saying why).
  std::chrono::milliseconds close_drain{2000};
  std::string tls_cert_path{};  // PEM certificate chain
  std::string tls_key_path{};   // PEM private key
  std::string token{};          // required "authorization: Bearer <token>"
};

// Client side. An empty root-cert path means plaintext.
struct GrpcClientOptions {
  size_t max_message_bytes = kGrpcDefaultMaxMessage;
  size_t max_body = kGrpcDefaultMaxBody;
  std::chrono::milliseconds keepalive{2000};  // see GrpcOptions::keepalive
  std::string tls_root_cert_path{};           // PEM roots the server certificate must chain to
  std::string tls_target_name{};              // overrides the name checked against the certificate
  std::string token{};                        // sent as "authorization: Bearer <token>"
};

}  // namespace remora::transport
