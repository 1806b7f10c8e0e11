// tests/transport_grpc/grpc_test.cc - GrpcListener and GrpcConnect over loopback.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "transport/grpc/client.h"
#include "transport/grpc/listener.h"

namespace remora::transport {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> RandomBody(std::mt19937& rng, size_t n) {
  std::vector<std::byte> b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

std::unique_ptr<GrpcListener> MustListen(GrpcOptions opts = {}) {
  auto l = GrpcListener::Listen("127.0.0.1:0", std::move(opts));
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(l).value() : nullptr;
}

std::string Target(const GrpcListener& l) {
  return "127.0.0.1:" + std::to_string(l.port());
}

// A connected client/server channel pair.
struct Pair {
  std::unique_ptr<GrpcListener> listener;
  std::unique_ptr<Channel> client;
  std::unique_ptr<Channel> server;
  PeerInfo peer;
};

Pair Connect(GrpcOptions sopts = {}, GrpcClientOptions copts = {}) {
  Pair p;
  p.listener = MustListen(std::move(sopts));
  if (!p.listener) return p;
  auto c = GrpcConnect(Target(*p.listener), std::move(copts), Deadline::In(5s));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return p;
  p.client = std::move(c).value();
  auto s = p.listener->Accept(p.peer, Deadline::In(5s));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok()) p.server = std::move(s).value();
  return p;
}

// Sends `n` random frames from `from` to `to` and checks each arrives intact, in order.
void ExpectOrderedDelivery(Channel& from, Channel& to, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<std::byte>> sent;
  for (int i = 0; i < n; ++i) sent.push_back(RandomBody(rng, rng() % 70'000));
  auto sender = std::async(std::launch::async, [&] {
    for (int i = 0; i < n; ++i) {
      Status s = from.Send({.call = static_cast<uint32_t>(i % 300),
                            .flags = seed,
                            .seq = static_cast<uint64_t>(i) << 32},
                           sent[i]);
      if (!s.ok()) return s;
    }
    return OkStatus();
  });
  Frame f;
  for (int i = 0; i < n; ++i) {
    Status s = to.Receive(f, Deadline::In(10s));
    ASSERT_TRUE(s.ok()) << s.ToString() << " at frame " << i;
    EXPECT_EQ(f.header.call, static_cast<uint32_t>(i % 300));
    EXPECT_EQ(f.header.flags, seed);
    EXPECT_EQ(f.header.seq, static_cast<uint64_t>(i) << 32);
    ASSERT_EQ(f.body, sent[i]) << "frame " << i;
  }
  Status s = sender.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// Run with the server's Receive sleeping at once (default) and spinning first.
class GrpcSpin : public testing::TestWithParam<int> {
 protected:
  Pair Connect() {
    GrpcOptions o;
    o.receive_spin = std::chrono::microseconds(GetParam());
    return transport::Connect(o);
  }
};

TEST_P(GrpcSpin, FramesArriveInOrderBothWays) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ExpectOrderedDelivery(*p.client, *p.server, 300, 1);
  ExpectOrderedDelivery(*p.server, *p.client, 300, 2);
}

TEST_P(GrpcSpin, BothDirectionsAtOnce) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  auto up =
      std::async(std::launch::async, [&] { ExpectOrderedDelivery(*p.client, *p.server, 200, 3); });
  ExpectOrderedDelivery(*p.server, *p.client, 200, 4);
  up.get();
}

TEST_P(GrpcSpin, RequestReply) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  auto echo = std::async(std::launch::async, [&] {
    Frame f;
    int n = 0;
    while (p.server->Receive(f, Deadline::In(10s)).ok() && p.server->Send(f.header, f.body).ok())
      ++n;
    return n;
  });
  std::mt19937 rng(6);
  Frame f;
  for (uint64_t i = 0; i < 500; ++i) {
    auto body = RandomBody(rng, rng() % 256);
    ASSERT_TRUE(p.client->Send({.call = 1, .seq = i}, body).ok());
    ASSERT_TRUE(p.client->Receive(f, Deadline::In(10s)).ok());
    ASSERT_EQ(f.header.seq, i);
    ASSERT_EQ(f.body, body);
  }
  p.client.reset();
  EXPECT_EQ(echo.get(), 500);
}

// The client's receiver polls with tiny deadlines while its sender streams:
// reads left pending by timeouts are picked up, and nothing is lost or reordered.
TEST_P(GrpcSpin, PollingReceiverBesideSender) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  constexpr int kFrames = 400;
  auto echo = std::async(std::launch::async, [&] {
    Frame f;
    for (int i = 0; i < kFrames; ++i)
      if (!p.server->Receive(f, Deadline::In(10s)).ok() || !p.server->Send(f.header, f.body).ok())
        return i;
    return kFrames;
  });
  auto sender = std::async(std::launch::async, [&] {
    std::mt19937 rng(12);
    for (int i = 0; i < kFrames; ++i) {
      auto body = RandomBody(rng, rng() % 2048);
      body.insert(body.begin(), static_cast<std::byte>(i));
      if (!p.client->Send({.seq = static_cast<uint64_t>(i)}, body).ok()) return i;
    }
    return kFrames;
  });
  Frame f;
  int got = 0;
  auto until = std::chrono::steady_clock::now() + 30s;
  while (got < kFrames && std::chrono::steady_clock::now() < until) {
    Status s = p.client->Receive(f, Deadline::In(100us));
    if (s.code() == err::kNotReady) continue;
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(f.header.seq, static_cast<uint64_t>(got));
    ASSERT_EQ(f.body.at(0), static_cast<std::byte>(got));
    ++got;
  }
  EXPECT_EQ(got, kFrames);
  EXPECT_EQ(sender.get(), kFrames);
  EXPECT_EQ(echo.get(), kFrames);
}

INSTANTIATE_TEST_SUITE_P(Spin, GrpcSpin, testing::Values(0, 100), [](const auto& info) {
  return "spin" + std::to_string(info.param) + "us";
});

TEST(GrpcTransport, EmptyBodyAndPeerInfo) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  EXPECT_TRUE(p.peer.address.rfind("ipv4:127.0.0.1:", 0) == 0) << p.peer.address;
  EXPECT_EQ(p.peer.pid, -1);
  EXPECT_EQ(p.server->Describe(), "grpc " + p.peer.address);
  EXPECT_EQ(p.client->Describe(), "grpc " + Target(*p.listener).insert(0, "ipv4:"));
  EXPECT_EQ(p.client->arena(), nullptr);
  EXPECT_EQ(p.server->arena(), nullptr);
  EXPECT_TRUE(p.client->PeerAlive());
  EXPECT_TRUE(p.server->PeerAlive());
  ASSERT_TRUE(p.client->Send({.call = 9, .seq = 77}, {}).ok());
  Frame f;
  f.body.resize(10);
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(5s)).ok());
  EXPECT_EQ(f.header.call, 9u);
  EXPECT_EQ(f.header.seq, 77u);
  EXPECT_TRUE(f.body.empty());
}

TEST(GrpcTransport, ManyConcurrentSessions) {
  auto listener = MustListen();
  ASSERT_TRUE(listener);
  constexpr int kSessions = 12;
  // Server: one echo thread per accepted session.
  std::vector<std::thread> echoes;
  std::thread acceptor([&] {
    for (int i = 0; i < kSessions; ++i) {
      PeerInfo peer;
      auto ch = listener->Accept(peer, Deadline::In(20s));
      if (!ch.ok()) return;
      echoes.emplace_back([c = std::move(ch).value()] {
        Frame f;
        while (c->Receive(f, Deadline::In(20s)).ok())
          if (!c->Send(f.header, f.body).ok()) return;
      });
    }
  });
  std::vector<std::future<int>> clients;
  for (int s = 0; s < kSessions; ++s) {
    clients.push_back(std::async(std::launch::async, [&, s] {
      auto c = GrpcConnect(Target(*listener), {}, Deadline::In(10s));
      if (!c.ok()) return -1;
      std::mt19937 rng(100 + s);
      Frame f;
      int good = 0;
      for (int i = 0; i < 50; ++i) {
        auto body = RandomBody(rng, rng() % 4096);
        if (!(*c)->Send({.call = static_cast<uint32_t>(s), .seq = static_cast<uint64_t>(i)}, body)
                 .ok())
          return good;
        if (!(*c)->Receive(f, Deadline::In(10s)).ok()) return good;
        if (f.header.call == static_cast<uint32_t>(s) && f.header.seq == static_cast<uint64_t>(i) &&
            f.body == body)
          ++good;
      }
      return good;
    }));
  }
  for (int s = 0; s < kSessions; ++s) EXPECT_EQ(clients[s].get(), 50) << "session " << s;
  acceptor.join();
  for (auto& t : echoes) t.join();  // clients are gone, so every Receive fails
}

TEST(GrpcTransport, MaxBodyFitsAndLargerIsRefused) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ASSERT_EQ(p.client->max_body(), kGrpcDefaultMaxBody);
  ASSERT_EQ(p.server->max_body(), kGrpcDefaultMaxBody);
  std::mt19937 rng(5);
  auto big = RandomBody(rng, kGrpcDefaultMaxBody);
  ASSERT_TRUE(p.client->Send({.seq = 1}, big).ok());
  Frame f;
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(10s)).ok());
  EXPECT_EQ(f.body, big);
  ASSERT_TRUE(p.server->Send({.seq = 2}, big).ok());
  ASSERT_TRUE(p.client->Receive(f, Deadline::In(10s)).ok());
  EXPECT_EQ(f.body, big);

  big.push_back(std::byte{1});
  EXPECT_EQ(p.client->Send({.seq = 3}, big).code(), err::kInvalidValue);
  EXPECT_EQ(p.server->Send({.seq = 3}, big).code(), err::kInvalidValue);
  // The refusals did not break the session.
  ASSERT_TRUE(p.client->Send({.seq = 4}, {}).ok());
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(5s)).ok());
  EXPECT_EQ(f.header.seq, 4u);
}

// A server that stops reading stalls the client's Send instead of buffering
// without bound; once it reads again, every frame arrives intact and in order.
TEST(GrpcTransport, FullInboxPushesBackOnClient) {
  GrpcOptions sopts;
  sopts.max_inbox_bytes = 256 << 10;
  Pair p = Connect(sopts);
  ASSERT_TRUE(p.server && p.client);
  constexpr int kFrames = 1024;  // 64 MiB: more than the inbox plus HTTP/2 windows
  std::atomic<int> sent{0};
  auto sender = std::async(std::launch::async, [&] {
    std::vector<std::byte> body(64 << 10);
    for (int i = 0; i < kFrames; ++i) {
      body[i % body.size()] = std::byte{1};
      Status s = p.client->Send({.seq = static_cast<uint64_t>(i)}, body);
      if (!s.ok()) return s;
      sent.store(i + 1);
    }
    return OkStatus();
  });
  std::this_thread::sleep_for(500ms);
  EXPECT_LT(sent.load(), kFrames);  // holds however slow the host; fails if nothing pushes back
  Frame f;
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(p.server->Receive(f, Deadline::In(20s)).ok()) << "frame " << i;
    ASSERT_EQ(f.header.seq, static_cast<uint64_t>(i));
    ASSERT_EQ(f.body.size(), size_t{64} << 10);
    ASSERT_EQ(f.body[i % f.body.size()], std::byte{1});
  }
  Status s = sender.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// A server Send stalled by a client that does not read is woken when the client goes.
TEST(GrpcTransport, StalledSendFailsWhenClientLeaves) {
  GrpcOptions sopts;
  sopts.max_queued_bytes = 1 << 20;
  Pair p = Connect(sopts);
  ASSERT_TRUE(p.server && p.client);
  std::atomic<int> sent{0};
  auto sender = std::async(std::launch::async, [&] {
    std::vector<std::byte> body(1 << 20);
    for (int i = 0; i < 1024; ++i) {
      Status s = p.server->Send({.seq = static_cast<uint64_t>(i)}, body);
      if (!s.ok()) return s.code();
      sent.store(i + 1);
    }
    return 0;
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_LT(sent.load(), 1024);
  p.client.reset();
  EXPECT_EQ(sender.get(), err::kDevicesUnavailable);
}

TEST(GrpcTransport, ReceiveDeadlineThenLateFrame) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  Frame f;
  EXPECT_EQ(p.client->Receive(f, Deadline::In(20ms)).code(), err::kNotReady);
  EXPECT_EQ(p.server->Receive(f, Deadline::In(20ms)).code(), err::kNotReady);
  ASSERT_TRUE(p.server->Send({.seq = 11}, {}).ok());
  ASSERT_TRUE(p.client->Send({.seq = 12}, {}).ok());
  ASSERT_TRUE(p.client->Receive(f, Deadline::In(5s)).ok());
  EXPECT_EQ(f.header.seq, 11u);
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(5s)).ok());
  EXPECT_EQ(f.header.seq, 12u);
}

TEST(GrpcTransport, ClientDisconnectSeenWithinOneSecond) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ASSERT_TRUE(p.client->Send({.seq = 1}, {}).ok());
  Frame f;
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(5s)).ok());  // the stream is fully up
  ASSERT_TRUE(p.client->Send({.seq = 2}, {}).ok());
  p.client.reset();
  // Whatever arrived is delivered first; then the loss, not a timeout.
  Status s = p.server->Receive(f, Deadline::In(1s));
  if (s.ok()) {
    EXPECT_EQ(f.header.seq, 2u);
    s = p.server->Receive(f, Deadline::In(1s));
  }
  EXPECT_EQ(s.code(), err::kDevicesUnavailable) << s.ToString();
  EXPECT_FALSE(p.server->PeerAlive());
  EXPECT_EQ(p.server->Send({.seq = 3}, {}).code(), err::kDevicesUnavailable);
}

// Every stream's call ends once its client is gone, even while the server
// still holds the channel: nothing of a dead client lingers in gRPC.
TEST(GrpcTransport, DeadClientsLeaveNoLiveStreams) {
  auto l = MustListen();
  ASSERT_TRUE(l);
  std::vector<std::unique_ptr<Channel>> clients, servers;
  for (int i = 0; i < 5; ++i) {
    auto c = GrpcConnect(Target(*l), {}, Deadline::In(5s));
    ASSERT_TRUE(c.ok());
    clients.push_back(std::move(c).value());
    PeerInfo peer;
    auto s = l->Accept(peer, Deadline::In(5s));
    ASSERT_TRUE(s.ok());
    servers.push_back(std::move(s).value());
  }
  EXPECT_EQ(l->live_streams(), 5u);
  clients.clear();
  Frame f;
  for (auto& s : servers)
    EXPECT_EQ(s->Receive(f, Deadline::In(5s)).code(), err::kDevicesUnavailable);
  auto until = std::chrono::steady_clock::now() + 10s;
  while (l->live_streams() != 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(l->live_streams(), 0u);
}

// A TCP relay for one connection that can go silent without closing anything,
// like a peer whose host vanished from the network.
class FreezableRelay {
 public:
  explicit FreezableRelay(int target_port) : target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(listen_fd_, 1) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~FreezableRelay() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  void Freeze() { frozen_ = true; }

 private:
  void Run() {
    int a = ::accept(listen_fd_, nullptr, nullptr);
    if (a < 0) return;
    int b = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in t{};
    t.sin_family = AF_INET;
    t.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    t.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (::connect(b, reinterpret_cast<sockaddr*>(&t), sizeof t) == 0) {
      std::vector<char> buf(1 << 16);
      while (!stop_) {
        if (frozen_) {
          std::this_thread::sleep_for(5ms);
          continue;
        }
        pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
        if (::poll(fds, 2, 5) <= 0) continue;
        for (int i = 0; i < 2; ++i) {
          if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
          ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
          if (n <= 0 || ::write(fds[1 - i].fd, buf.data(), static_cast<size_t>(n)) != n)
            stop_ = true;
        }
      }
    }
    ::close(a);
    ::close(b);
  }

  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false}, frozen_{false};
  std::thread thread_;
};

// With neither FIN nor RST, keepalive pings are what notice the lost peer.
TEST(GrpcTransport, SilentPeerDetectedByKeepalive) {
  GrpcOptions sopts;
  sopts.keepalive = 200ms;
  auto l = MustListen(sopts);
  ASSERT_TRUE(l);
  FreezableRelay relay(l->port());
  ASSERT_NE(relay.port(), 0);
  GrpcClientOptions copts;
  copts.keepalive = 200ms;
  auto c = GrpcConnect("127.0.0.1:" + std::to_string(relay.port()), copts, Deadline::In(5s));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  PeerInfo peer;
  auto s = l->Accept(peer, Deadline::In(5s));
  ASSERT_TRUE(s.ok());
  ExpectOrderedDelivery(**c, **s, 5, 11);
  relay.Freeze();
  Frame f;
  EXPECT_EQ((*s)->Receive(f, Deadline::In(20s)).code(), err::kDevicesUnavailable);
  EXPECT_EQ((*c)->Receive(f, Deadline::In(20s)).code(), err::kDevicesUnavailable);
}

TEST(GrpcTransport, ServerChannelCloseSeenByClient) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ASSERT_TRUE(p.server->Send({.seq = 1}, {}).ok());
  p.server->Close();  // flushes the queued frame, then finishes
  Frame f;
  ASSERT_TRUE(p.client->Receive(f, Deadline::In(5s)).ok());
  EXPECT_EQ(f.header.seq, 1u);
  EXPECT_EQ(p.client->Receive(f, Deadline::In(5s)).code(), err::kDevicesUnavailable);
  EXPECT_EQ(p.server->Send({.seq = 2}, {}).code(), err::kDevicesUnavailable);
  EXPECT_EQ(p.server->Receive(f, Deadline::In(5s)).code(), err::kDevicesUnavailable);
}

// A server that closes a session under a client still streaming a bulk copy,
// and then goes away, must not break the connection before the client has read
// what the server sent last (why it closed): the server drains the client's
// frames until it stops sending.
TEST(GrpcTransport, LastFrameReachesAClientStillSending) {
  GrpcOptions sopts;
  sopts.max_inbox_bytes = 4 << 20;  // the client stalls on flow control soon
  Pair p = Connect(sopts);
  ASSERT_TRUE(p.server && p.client);
  auto client = std::async(std::launch::async, [&] {
    std::vector<std::byte> body(1 << 20);
    for (int i = 0; i < 64; ++i)
      if (!p.client->Send({.seq = static_cast<uint64_t>(i)}, body).ok()) break;
    Frame f;
    Status s = p.client->Receive(f, Deadline::In(10s));
    return s.ok() ? f.header.seq : ~uint64_t{0};
  });
  Frame f;
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(5s)).ok());
  ASSERT_TRUE(p.server->Send({.seq = 77}, {}).ok());
  p.server->Close();
  p.listener.reset();  // waits for the stream to end, as a server exiting does
  EXPECT_EQ(client.get(), 77u);
}

TEST(GrpcTransport, ListenerDestructionSeenByClient) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  auto blocked = std::async(std::launch::async, [&] {
    Frame f;
    return p.client->Receive(f, Deadline::In(10s)).code();
  });
  p.listener.reset();
  EXPECT_EQ(blocked.get(), err::kDevicesUnavailable);
  EXPECT_FALSE(p.client->PeerAlive());
  EXPECT_EQ(p.client->Send({}, {}).code(), err::kDevicesUnavailable);
  // The accepted channel outlives its listener and reports the loss.
  Frame f;
  EXPECT_EQ(p.server->Receive(f, Deadline::In(5s)).code(), err::kDevicesUnavailable);
}

TEST(GrpcTransport, CloseWakesBlockedReceive) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  for (Channel* ch : {p.server.get(), p.client.get()}) {
    std::promise<void> entering;
    auto blocked = std::async(std::launch::async, [&] {
      Frame f;
      entering.set_value();
      return ch->Receive(f, Deadline::Never()).code();
    });
    entering.get_future().wait();
    std::this_thread::sleep_for(20ms);  // let it block; the result holds either way
    ch->Close();
    EXPECT_EQ(blocked.get(), err::kDevicesUnavailable) << ch->Describe();
    EXPECT_EQ(ch->Send({}, {}).code(), err::kDevicesUnavailable);
    ch->Close();  // idempotent
  }
}

TEST(GrpcTransport, ShutdownWakesAcceptAndRefusesNewClients) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  auto blocked = std::async(std::launch::async, [&] {
    PeerInfo peer;
    return p.listener->Accept(peer, Deadline::Never()).status().code();
  });
  std::this_thread::sleep_for(20ms);
  p.listener->Shutdown();
  EXPECT_EQ(blocked.get(), err::kDevicesUnavailable);
  auto late = GrpcConnect(Target(*p.listener), {}, Deadline::In(5s));
  // Told apart from an unreachable server: a client may try again (a restart).
  EXPECT_EQ(late.status().code(), err::kDevicesUnavailable) << late.status().ToString();
  Frame f;
  // The session accepted earlier still works.
  ASSERT_TRUE(p.client->Send({.seq = 5}, {}).ok());
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(5s)).ok());
  EXPECT_EQ(f.header.seq, 5u);
}

TEST(GrpcTransport, ShutdownClosesUnacceptedSessions) {
  auto l = MustListen();
  ASSERT_TRUE(l);
  auto c = GrpcConnect(Target(*l), {}, Deadline::In(5s));
  ASSERT_TRUE(c.ok());
  l->Shutdown();
  Frame f;
  EXPECT_EQ((*c)->Receive(f, Deadline::In(5s)).code(), err::kDevicesUnavailable);
}

TEST(GrpcTransport, AcceptDeadline) {
  auto l = MustListen();
  ASSERT_TRUE(l);
  PeerInfo peer;
  EXPECT_EQ(l->Accept(peer, Deadline::In(20ms)).status().code(), err::kNotReady);
}

TEST(GrpcTransport, UnreachableServerIsInitializationError) {
  int port;
  {
    auto l = MustListen();
    ASSERT_TRUE(l);
    port = l->port();
  }
  auto c = GrpcConnect("127.0.0.1:" + std::to_string(port), {}, Deadline::In(300ms));
  EXPECT_EQ(c.status().code(), err::kInitializationError);
}

TEST(GrpcTransport, BusyPortIsRefused) {
  auto a = MustListen();
  ASSERT_TRUE(a);
  auto b = GrpcListener::Listen("127.0.0.1:" + std::to_string(a->port()), {});
  EXPECT_EQ(b.status().code(), err::kInitializationError);
}

TEST(GrpcTransport, TokenRequired) {
  GrpcOptions sopts;
  sopts.token = "s3cret-token";
  auto l = MustListen(sopts);
  ASSERT_TRUE(l);
  for (std::string bad : {"", "wrong-token", "s3cret-toke", "s3cret-token2"}) {
    auto c = GrpcConnect(Target(*l), {.token = bad}, Deadline::In(5s));
    EXPECT_EQ(c.status().code(), err::kNotPermitted) << "token '" << bad << "'";
  }
  PeerInfo peer;
  EXPECT_EQ(l->Accept(peer, Deadline::In(20ms)).status().code(), err::kNotReady);

  auto c = GrpcConnect(Target(*l), {.token = "s3cret-token"}, Deadline::In(5s));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto s = l->Accept(peer, Deadline::In(5s));
  ASSERT_TRUE(s.ok());
  ExpectOrderedDelivery(**c, **s, 10, 7);
}

// Writes a self-signed certificate for "localhost" into a fresh directory.
std::filesystem::path MakeCert() {
  auto dir =
      std::filesystem::temp_directory_path() / ("remora_grpc_tls_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
      " -addext subjectAltName=DNS:localhost -keyout " +
      (dir / "key.pem").string() + " -out " + (dir / "cert.pem").string() + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return {};
  return dir;
}

TEST(GrpcTransport, TlsWithTokenRoundTrips) {
  if (std::system("openssl version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl";
  auto dir = MakeCert();
  ASSERT_FALSE(dir.empty()) << "openssl could not make a certificate";
  GrpcOptions sopts;
  sopts.tls_cert_path = dir / "cert.pem";
  sopts.tls_key_path = dir / "key.pem";
  sopts.token = "tls-token";
  auto l = GrpcListener::Listen("localhost:0", sopts);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  std::string target = "localhost:" + std::to_string((*l)->port());

  auto plain = GrpcConnect(target, {.token = "tls-token"}, Deadline::In(500ms));
  EXPECT_EQ(plain.status().code(), err::kInitializationError);

  GrpcClientOptions copts;
  copts.tls_root_cert_path = dir / "cert.pem";
  copts.token = "tls-token";
  auto c = GrpcConnect(target, copts, Deadline::In(5s));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  PeerInfo peer;
  auto s = (*l)->Accept(peer, Deadline::In(5s));
  ASSERT_TRUE(s.ok());
  ExpectOrderedDelivery(**c, **s, 20, 8);
  ExpectOrderedDelivery(**s, **c, 20, 9);

  // By address, with the certificate's name given explicitly.
  copts.tls_target_name = "localhost";
  auto by_ip = GrpcConnect("127.0.0.1:" + std::to_string((*l)->port()), copts, Deadline::In(5s));
  ASSERT_TRUE(by_ip.ok()) << by_ip.status().ToString();
  auto s2 = (*l)->Accept(peer, Deadline::In(5s));
  ASSERT_TRUE(s2.ok());
  ExpectOrderedDelivery(**by_ip, **s2, 5, 10);
  // A name the certificate does not carry is refused.
  copts.tls_target_name = "not-localhost";
  auto wrong = GrpcConnect("127.0.0.1:" + std::to_string((*l)->port()), copts, Deadline::In(500ms));
  EXPECT_EQ(wrong.status().code(), err::kInitializationError);
  std::filesystem::remove_all(dir);
}

TEST(GrpcTransport, BodyLimitMustFitMessageLimit) {
  GrpcOptions sopts;
  sopts.max_body = sopts.max_message_bytes;
  EXPECT_EQ(GrpcListener::Listen("127.0.0.1:0", sopts).status().code(), err::kInvalidValue);
  GrpcClientOptions copts;
  copts.max_message_bytes = size_t{3} << 30;  // beyond gRPC's int limit
  EXPECT_EQ(GrpcConnect("127.0.0.1:1", copts, Deadline::In(100ms)).status().code(),
            err::kInvalidValue);
}

// A smaller max_body is enforced on both ends.
TEST(GrpcTransport, CustomMaxBody) {
  GrpcOptions sopts;
  sopts.max_body = 1000;
  GrpcClientOptions copts;
  copts.max_body = 1000;
  Pair p = Connect(sopts, copts);
  ASSERT_TRUE(p.server && p.client);
  EXPECT_EQ(p.server->max_body(), 1000u);
  EXPECT_EQ(p.client->max_body(), 1000u);
  std::vector<std::byte> body(1001);
  EXPECT_EQ(p.client->Send({}, body).code(), err::kInvalidValue);
  EXPECT_EQ(p.server->Send({}, body).code(), err::kInvalidValue);
  body.pop_back();
  ASSERT_TRUE(p.client->Send({.seq = 1}, body).ok());
  Frame f;
  ASSERT_TRUE(p.server->Receive(f, Deadline::In(5s)).ok());
  EXPECT_EQ(f.body.size(), 1000u);
}

TEST(GrpcTransport, MissingTlsFilesAreInvalidValue) {
  GrpcOptions sopts;
  sopts.tls_cert_path = "/nonexistent/cert.pem";
  sopts.tls_key_path = "/nonexistent/key.pem";
  EXPECT_EQ(GrpcListener::Listen("127.0.0.1:0", sopts).status().code(), err::kInvalidValue);
  GrpcClientOptions copts;
  copts.tls_root_cert_path = "/nonexistent/roots.pem";
  EXPECT_EQ(GrpcConnect("127.0.0.1:1", copts, Deadline::In(100ms)).status().code(),
            err::kInvalidValue);
}

// ---- Event-driven serving (Arm, wake_fd, Disarm) ----

constexpr int kWakeTimeoutMs = 10'000;  // a lost wake-up fails the test instead of hanging

bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  return rc > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

TEST(GrpcEvents, IdleArmIsQuietAndASendWakesIt) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  const int fd = p.server->wake_fd();
  ASSERT_GE(fd, 0);
  for (uint64_t round = 0; round < 3; ++round) {
    ASSERT_TRUE(p.server->Arm());
    EXPECT_FALSE(Readable(fd, round == 0 ? 50 : 0));
    ASSERT_TRUE(p.client->Send({.call = 4, .seq = round}, {}).ok());
    ASSERT_TRUE(Readable(fd, kWakeTimeoutMs)) << "lost wake-up in round " << round;
    p.server->Disarm();
    EXPECT_FALSE(Readable(fd, 0)) << "Disarm must consume the wake-up";
    Frame f;
    ASSERT_TRUE(p.server->Receive(f, Deadline::Passed()).ok());
    EXPECT_EQ(f.header.seq, round);
    EXPECT_EQ(p.server->Receive(f, Deadline::Passed()).code(), err::kNotReady);
  }
  EXPECT_EQ(p.server->wake_fd(), fd);
}

TEST(GrpcEvents, ArmWithAFrameAlreadyWaitingReturnsFalse) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ASSERT_TRUE(p.client->Send({.seq = 1}, {}).ok());
  // Wait for the frame to reach the server's inbox without receiving it.
  if (p.server->Arm()) {
    ASSERT_TRUE(Readable(p.server->wake_fd(), kWakeTimeoutMs));
    p.server->Disarm();
  }
  EXPECT_FALSE(p.server->Arm());
  EXPECT_FALSE(Readable(p.server->wake_fd(), 0));
  p.server->Disarm();  // a no-op after false
  Frame f;
  ASSERT_TRUE(p.server->Receive(f, Deadline::Passed()).ok());
  EXPECT_EQ(f.header.seq, 1u);
}

TEST(GrpcEvents, PeerCloseWakesAnArmedServer) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ASSERT_TRUE(p.server->Arm());
  p.client->Close();
  ASSERT_TRUE(Readable(p.server->wake_fd(), kWakeTimeoutMs));
  p.server->Disarm();
  Frame f;
  EXPECT_EQ(p.server->Receive(f, Deadline::Passed()).code(), err::kDevicesUnavailable);
  EXPECT_FALSE(p.server->Arm());
}

TEST(GrpcEvents, DestroyedClientWakesAnArmedServer) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ASSERT_TRUE(p.server->Arm());
  p.client.reset();
  ASSERT_TRUE(Readable(p.server->wake_fd(), kWakeTimeoutMs));
  p.server->Disarm();
  Frame f;
  EXPECT_EQ(p.server->Receive(f, Deadline::Passed()).code(), err::kDevicesUnavailable);
}

// The client's connection drops without a word from its gRPC (as when its process
// dies): the TCP relay between them is torn down.
TEST(GrpcEvents, DroppedConnectionWakesAnArmedServer) {
  auto l = MustListen();
  ASSERT_TRUE(l);
  auto relay = std::make_unique<FreezableRelay>(l->port());
  ASSERT_NE(relay->port(), 0);
  auto c = GrpcConnect("127.0.0.1:" + std::to_string(relay->port()), {}, Deadline::In(5s));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  PeerInfo peer;
  auto s = l->Accept(peer, Deadline::In(5s));
  ASSERT_TRUE(s.ok());
  Channel& server = **s;
  ASSERT_TRUE(server.Arm());
  relay.reset();
  ASSERT_TRUE(Readable(server.wake_fd(), kWakeTimeoutMs));
  server.Disarm();
  Frame f;
  EXPECT_EQ(server.Receive(f, Deadline::Passed()).code(), err::kDevicesUnavailable);
}

TEST(GrpcEvents, LocalCloseWakesAnArmedServer) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  ASSERT_TRUE(p.server->Arm());
  std::thread closer([s = p.server.get()] {
    std::this_thread::sleep_for(20ms);
    s->Close();
  });
  EXPECT_TRUE(Readable(p.server->wake_fd(), kWakeTimeoutMs));
  closer.join();
  p.server->Disarm();
  Frame f;
  EXPECT_EQ(p.server->Receive(f, Deadline::Passed()).code(), err::kDevicesUnavailable);
}

TEST(GrpcEvents, ClientEndIsNotServedThisWay) {
  Pair p = Connect();
  ASSERT_TRUE(p.server && p.client);
  EXPECT_EQ(p.client->wake_fd(), -1);
  EXPECT_FALSE(p.client->Arm());
  p.client->Disarm();
}

// Random gaps between frames while the server loops {Receive until kNotReady; Arm;
// poll; Disarm}: every frame arrives, in order, and no poll times out.
TEST(GrpcEvents, StreamWithRandomGapsLosesNoWakeUp) {
  for (int spin : {0, 100}) {
    GrpcOptions o;
    o.receive_spin = std::chrono::microseconds(spin);
    Pair p = Connect(o);
    ASSERT_TRUE(p.server && p.client);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    constexpr uint64_t kFrames = 500;
#else
    constexpr uint64_t kFrames = 2000;
#endif
    auto sender = std::async(std::launch::async, [c = p.client.get()] {
      std::mt19937 rng(8);
      for (uint64_t i = 0; i < kFrames; ++i) {
        auto body = RandomBody(rng, rng() % 300);
        body.insert(body.begin(), static_cast<std::byte>(i));
        if (Status s = c->Send({.seq = i}, body); !s.ok()) return s;
        if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      }
      return OkStatus();
    });
    uint64_t got = 0, sleeps = 0;
    Frame f;
    while (got < kFrames) {
      Status st;
      while ((st = p.server->Receive(f, Deadline::Passed())).ok()) {
        ASSERT_EQ(f.header.seq, got);
        ASSERT_EQ(f.body.at(0), static_cast<std::byte>(got));
        ++got;
      }
      ASSERT_EQ(st.code(), err::kNotReady) << st.ToString();
      if (got == kFrames || !p.server->Arm()) continue;
      ++sleeps;
      ASSERT_TRUE(Readable(p.server->wake_fd(), kWakeTimeoutMs))
          << "lost wake-up: " << got << " of " << kFrames << " frames received";
      p.server->Disarm();
    }
    Status s = sender.get();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_GT(sleeps, 0u) << "spin " << spin;
  }
}

}  // namespace
}  // namespace remora::transport
