// transport/grpc/listener.h - GrpcListener: the server end of the remote transport.
//
// Runs a grpc::Server (callback API) serving remora.v1.Remora/Session. Each
// accepted stream becomes one Channel; its frames move through a
// SessionReactor that never blocks a gRPC thread. TLS and the bearer token
// are checked here, before a session starts.
//
//   ASSIGN_OR_RETURN(auto listener, GrpcListener::Listen("0.0.0.0:0", {}));
//   PeerInfo peer;
//   ASSIGN_OR_RETURN(auto channel, listener->Accept(peer, Deadline::Never()));
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "transport/channel.h"
#include "transport/grpc/options.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace remora::transport {

class ReactorRegistry;

class GrpcListener final : public Listener {
  struct Key {};

 public:
  // Use Listen().
  GrpcListener(Key, GrpcOptions opts);

  // Binds `host_port` ("0.0.0.0:7070"; port 0 picks a free one, see port()) and
  // starts serving. Errors: kInvalidValue if a TLS file cannot be read;
  // kInitializationError if the address cannot be bound.
  static Result<std::unique_ptr<GrpcListener>> Listen(const std::string& host_port,
                                                      GrpcOptions opts);

  // Cancels every live session (their channels then report kDevicesUnavailable)
  // and stops the server. Blocks until every gRPC callback has returned.
  ~GrpcListener() override;

  // Waits for the next client stream; PeerInfo.address is its URI
  // ("ipv4:127.0.0.1:51234"). Errors: kNotReady on deadline, kDevicesUnavailable
  // after Shutdown(). Thread-safe.
  Result<std::unique_ptr<Channel>> Accept(PeerInfo& peer, Deadline deadline) override;

  // Wakes Accept; later streams are refused with UNAVAILABLE. Accepted
  // channels keep working. Thread-safe, idempotent.
  void Shutdown() override;

  // The bound TCP port.
  int port() const { return port_; }

  // Streams whose gRPC call has not ended yet (accepted or not), for metrics
  // and leak checks. Thread-safe.
  size_t live_streams() const;

 private:
  class Service;
  struct Pending {
    std::unique_ptr<Channel> channel;
    std::string peer;
  };

  bool accepting();
  // Queues a new session for Accept; closes it instead once shut down.
  void Offer(std::unique_ptr<Channel> channel, std::string peer);

  const GrpcOptions opts_;
  std::unique_ptr<ReactorRegistry> registry_;  // outlives server_
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  std::mutex mu_;
  std::condition_variable offered_;
  std::deque<Pending> pending_;
  bool shutdown_ = false;
};

}  // namespace remora::transport
