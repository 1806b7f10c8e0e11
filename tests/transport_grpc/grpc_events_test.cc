// tests/transport_grpc/grpc_events_test.cc - the gRPC server channel's readiness events: an armed
// session wakes for a frame, a close or a lost peer, and never loses a wake-up.
#include "tests/transport_grpc/grpc_harness.h"

namespace remora::transport {
namespace {

using namespace grpc_test;
using namespace std::chrono_literals;

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
  Pair p = Connect({}, {}, /*relayed=*/true);
  ASSERT_TRUE(p.server && p.client);
  Channel& server = *p.server;
  ASSERT_TRUE(server.Arm());
  p.relay.reset();
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
