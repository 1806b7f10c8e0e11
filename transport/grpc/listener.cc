// transport/grpc/listener.cc - GrpcListener, its Session service and the token check.
#include "transport/grpc/listener.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include "transport/grpc/session.h"

namespace remora::transport {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(err::kInvalidValue, "cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compares in time independent of where the strings differ.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The one place the bearer token is checked: "authorization: Bearer <token>".
bool Authorized(const grpc::CallbackServerContext& ctx, const std::string& token) {
  if (token.empty()) return true;
  constexpr std::string_view kPrefix = "Bearer ";
  auto range = ctx.client_metadata().equal_range("authorization");
  for (auto it = range.first; it != range.second; ++it) {
    std::string_view v(it->second.data(), it->second.size());
    if (v.substr(0, kPrefix.size()) == kPrefix && SameSecret(v.substr(kPrefix.size()), token))
      return true;
  }
  return false;
}

}  // namespace

class GrpcListener::Service final : public v1::Remora::CallbackService {
 public:
  explicit Service(GrpcListener* owner) : owner_(owner) {}

  grpc::ServerBidiReactor<v1::Frame, v1::Frame>* Session(
      grpc::CallbackServerContext* ctx) override {
    ReactorRegistry& reg = *owner_->registry_;
    if (!Authorized(*ctx, owner_->opts_.token))
      return Refuse(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad or missing token"));
    if (!owner_->accepting())
      return Refuse(grpc::Status(grpc::StatusCode::UNAVAILABLE, "listener shut down"));
    auto core = std::make_shared<SessionCore>(owner_->opts_);
    SessionReactor* r = reg.Add(std::make_unique<SessionReactor>(core, &reg));
    r->Start(*ctx);
    // Losing a race with Shutdown() drops the channel, which ends the stream.
    auto channel = std::make_unique<GrpcServerChannel>(std::move(core), ctx->peer());
    owner_->Offer(std::move(channel), ctx->peer());
    return r;
  }

 private:
  grpc::ServerBidiReactor<v1::Frame, v1::Frame>* Refuse(grpc::Status status) {
    ReactorRegistry& reg = *owner_->registry_;
    RefusedReactor* r = reg.Add(std::make_unique<RefusedReactor>(&reg));
    r->Start(std::move(status));
    return r;
  }

  GrpcListener* owner_;
};

GrpcListener::GrpcListener(Key, GrpcOptions opts)
    : opts_(std::move(opts)),
      registry_(std::make_unique<ReactorRegistry>()),
      service_(std::make_unique<Service>(this)) {}

Result<std::unique_ptr<GrpcListener>> GrpcListener::Listen(const std::string& host_port,
                                                           GrpcOptions opts) {
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (!BodyFits(opts.max_body, opts.max_message_bytes))
    return Error(err::kInvalidValue, "max_body does not fit in max_message_bytes");
  if (opts.tls_cert_path.empty() != opts.tls_key_path.empty())
    return Error(err::kInvalidValue, "TLS needs both a certificate and a key");
  if (!opts.tls_cert_path.empty()) {
    ASSIGN_OR_RETURN(std::string cert, ReadFile(opts.tls_cert_path));
    ASSIGN_OR_RETURN(std::string key, ReadFile(opts.tls_key_path));
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({std::move(key), std::move(cert)});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }

  auto l = std::make_unique<GrpcListener>(Key{}, std::move(opts));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(host_port, creds, &l->port_);
  builder.RegisterService(l->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(l->opts_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(l->opts_.max_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Notice a silently vanished client (no FIN/RST) within two keepalive
  // periods, however long the session idles; accept client pings as often.
  const int keepalive_ms = static_cast<int>(l->opts_.keepalive.count());
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive_ms);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             keepalive_ms / 2);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  l->server_ = builder.BuildAndStart();
  if (l->server_ == nullptr || l->port_ == 0)
    return Error(err::kInitializationError, "cannot listen on " + host_port);
  return l;
}

GrpcListener::~GrpcListener() {
  Shutdown();
  if (server_ != nullptr) {
    // Sessions already closed finish once their last frames are written (an
    // Evicted notice, say) and their clients stop sending; whatever is still
    // live after the drain is cancelled.
    server_->Shutdown(std::chrono::system_clock::now() + opts_.close_drain);
    registry_->WaitEmpty();
    server_.reset();
  }
  std::lock_guard lock(mu_);
  pending_.clear();
}

bool GrpcListener::accepting() {
  std::lock_guard lock(mu_);
  return !shutdown_;
}

void GrpcListener::Offer(std::unique_ptr<Channel> channel, std::string peer) {
  std::unique_lock lock(mu_);
  if (shutdown_) {
    lock.unlock();
    return;  // `channel` closes here
  }
  pending_.push_back({std::move(channel), std::move(peer)});
  offered_.notify_one();
}

Result<std::unique_ptr<Channel>> GrpcListener::Accept(PeerInfo& peer, Deadline deadline) {
  std::unique_lock lock(mu_);
  auto ready = [&] { return shutdown_ || !pending_.empty(); };
  if (deadline.at == Deadline::Never().at) {
    offered_.wait(lock, ready);
  } else if (!offered_.wait_until(lock, deadline.at, ready)) {
    return Error(err::kNotReady, "no client before the deadline");
  }
  if (shutdown_) return Error(err::kDevicesUnavailable, "listener shut down");
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  peer = PeerInfo{.pid = -1, .uid = -1, .address = std::move(p.peer)};
  return std::move(p.channel);
}

size_t GrpcListener::live_streams() const {
  return registry_->size();
}

// Sessions nobody accepted yet are closed: they never will be.
void GrpcListener::Shutdown() {
  std::deque<Pending> unaccepted;  // closed after mu_ is released
  std::lock_guard lock(mu_);
  shutdown_ = true;
  unaccepted.swap(pending_);
  offered_.notify_all();
}

}  // namespace remora::transport
