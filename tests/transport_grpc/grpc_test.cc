// tests/transport_grpc/grpc_test.cc - GrpcListener and GrpcConnect over loopback: ordering both
// ways, request and reply, limits, back-pressure, deadlines and disconnects.
#include "tests/transport_grpc/grpc_harness.h"

namespace remora::transport {
namespace {

using namespace grpc_test;
using namespace std::chrono_literals;

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

}  // namespace
}  // namespace remora::transport
