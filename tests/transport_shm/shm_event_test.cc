// tests/transport_shm/shm_event_test.cc - event-driven serving of ShmChannels (Arm,
// wake_fd, Disarm): quiet when idle, woken by a frame, a peer Close, a crashed peer
// process or a local Close; no lost wake-up under a stream with random gaps; a thousand
// channels armed on one epoll set wake exactly where frames were sent.
// Linked into shm_channel_test (suite ShmChannelEvents), so the tsan preset runs it.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "transport/shm/shm_channel.h"

namespace remora::transport {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;

// Longest any test waits for a wake-up: a lost one fails instead of hanging.
constexpr int kWakeTimeoutMs = 10'000;

// True if `fd` polls readable (POLLIN, POLLHUP or POLLERR) within `timeout_ms`.
bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  return rc > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

// Spins about `n` iterations: work done between the last look and Arm.
void Dawdle(uint64_t n) {
  for (uint64_t k = 0; k < n; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
}

class ShmChannelEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/remora-shm-event-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/s.sock";
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  static ShmOptions SmallOptions() {
    ShmOptions o;
    o.request_ring_bytes = 64 << 10;
    o.reply_ring_bytes = 64 << 10;
    o.arena_bytes = 0;
    // Long parks: a blocking Receive here would hang visibly, not poll its way out.
    o.wait = {.spin = 1us, .park = 30s};
    return o;
  }

  std::unique_ptr<ShmListener> MustListen(ShmOptions o = SmallOptions()) {
    auto l = ShmListener::Listen(path_, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(l).value() : nullptr;
  }

  // Connects a client and accepts it: {server, client}, or nullptrs after a failure.
  std::pair<std::unique_ptr<Channel>, std::unique_ptr<Channel>> Pair(ShmListener& l) {
    Result<std::unique_ptr<Channel>> client = Status(err::kUnknown, "not run");
    std::thread t([&] { client = ShmConnect(path_, Deadline::In(10s), SmallOptions().wait); });
    PeerInfo peer;
    auto server = l.Accept(peer, Deadline::In(10s));
    t.join();
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!server.ok() || !client.ok()) return {};
    return {std::move(server).value(), std::move(client).value()};
  }

  std::string dir_, path_;
};

TEST_F(ShmChannelEvents, ArmOnAnIdleChannelLeavesWakeFdQuiet) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  const int fd = server->wake_fd();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(server->Arm());
  EXPECT_FALSE(Readable(fd, 50));
  server->Disarm();
  EXPECT_FALSE(Readable(fd, 0));
  Frame f;
  EXPECT_EQ(server->Receive(f, Deadline::Passed()).code(), err::kNotReady);
  EXPECT_EQ(server->wake_fd(), fd) << "stable for the channel's life";
  EXPECT_TRUE(server->PeerAlive());
}

TEST_F(ShmChannelEvents, PeerSendMakesWakeFdReadableAndDisarmConsumesIt) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  const int fd = server->wake_fd();
  for (uint64_t round = 0; round < 3; ++round) {
    ASSERT_TRUE(server->Arm());
    ASSERT_FALSE(Readable(fd, 0));
    ASSERT_TRUE(client->Send({.call = 5, .seq = round}, Bytes(100, std::byte{7})).ok());
    ASSERT_TRUE(client->Send({.call = 6, .seq = round}, {}).ok());  // no second doorbell
    ASSERT_TRUE(Readable(fd, kWakeTimeoutMs)) << "lost wake-up in round " << round;
    server->Disarm();
    EXPECT_FALSE(Readable(fd, 0)) << "Disarm must consume the doorbell";
    Frame f;
    ASSERT_TRUE(server->Receive(f, Deadline::Passed()).ok());
    EXPECT_EQ(f.header.call, 5u);
    EXPECT_EQ(f.header.seq, round);
    EXPECT_EQ(f.body, Bytes(100, std::byte{7}));
    ASSERT_TRUE(server->Receive(f, Deadline::Passed()).ok());
    EXPECT_EQ(f.header.call, 6u);
    EXPECT_EQ(server->Receive(f, Deadline::Passed()).code(), err::kNotReady);
  }
}

TEST_F(ShmChannelEvents, ArmWithAFrameAlreadyWaitingReturnsFalse) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(client->Send({.seq = 1}, {}).ok());
  EXPECT_FALSE(server->Arm());
  EXPECT_FALSE(Readable(server->wake_fd(), 0)) << "nothing was armed, nothing rang";
  server->Disarm();  // a no-op after false
  Frame f;
  ASSERT_TRUE(server->Receive(f, Deadline::Passed()).ok());
  EXPECT_EQ(f.header.seq, 1u);
  EXPECT_TRUE(server->Arm()) << "drained: arming works again";
  server->Disarm();
}

// Frames sent before the Close are received first; then the loss, without blocking.
TEST_F(ShmChannelEvents, PeerCloseWakesAnArmedServer) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(server->Arm());
  ASSERT_TRUE(client->Send({.seq = 1}, {}).ok());
  client->Close();
  ASSERT_TRUE(Readable(server->wake_fd(), kWakeTimeoutMs));
  server->Disarm();
  Frame f;
  ASSERT_TRUE(server->Receive(f, Deadline::Passed()).ok());
  EXPECT_EQ(f.header.seq, 1u);
  EXPECT_EQ(server->Receive(f, Deadline::Passed()).code(), err::kDevicesUnavailable);
  EXPECT_FALSE(server->Arm()) << "the peer is gone: receive instead";
  EXPECT_FALSE(server->PeerAlive());
}

TEST_F(ShmChannelEvents, DestroyedClientWakesAnArmedServer) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(server->Arm());
  client.reset();
  ASSERT_TRUE(Readable(server->wake_fd(), kWakeTimeoutMs));
  server->Disarm();
  Frame f;
  EXPECT_EQ(server->Receive(f, Deadline::Passed()).code(), err::kDevicesUnavailable);
}

// Our own Close, from another thread, wakes the armed receiver too.
TEST_F(ShmChannelEvents, LocalCloseWakesAnArmedServer) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(server->Arm());
  std::thread closer([s = server.get()] {
    std::this_thread::sleep_for(20ms);
    s->Close();
  });
  EXPECT_TRUE(Readable(server->wake_fd(), kWakeTimeoutMs));
  closer.join();
  server->Disarm();
  Frame f;
  EXPECT_EQ(server->Receive(f, Deadline::Passed()).code(), err::kDevicesUnavailable);
  EXPECT_FALSE(server->Arm());
}

// A client process sends three frames and _exit()s without closing anything (its
// state word still says open): the kernel closing its socket is what wakes the server.
TEST_F(ShmChannelEvents, CrashedClientProcessWakesAnArmedServer) {
  auto l = MustListen();
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);
    auto ch = ShmConnect(path_, Deadline::In(10s));
    if (!ch.ok()) ::_exit(2);
    char x;
    if (::read(go[0], &x, 1) != 1) ::_exit(3);
    for (uint64_t i = 0; i < 3; ++i)
      if (!(*ch)->Send({.seq = i}, Bytes(10)).ok()) ::_exit(4);
    ::_exit(0);  // no destructors: no Close, no state store
  }
  ::close(go[0]);
  PeerInfo who;
  auto s = l->Accept(who, Deadline::In(10s));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Channel& server = **s;
  ASSERT_TRUE(server.Arm());
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  uint64_t got = 0;
  Status st;
  Frame f;
  for (int wakes = 0; wakes < 100; ++wakes) {
    while ((st = server.Receive(f, Deadline::Passed())).ok()) EXPECT_EQ(f.header.seq, got++);
    if (st.code() != err::kNotReady) break;
    if (!server.Arm()) continue;
    ASSERT_TRUE(Readable(server.wake_fd(), kWakeTimeoutMs)) << "lost wake-up after " << got;
    server.Disarm();
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  EXPECT_EQ(got, 3u);
  EXPECT_EQ(st.code(), err::kDevicesUnavailable) << st.ToString();
  EXPECT_FALSE(server.PeerAlive());
}

// The client end may be served the same way: the server's Send rings its doorbell.
TEST_F(ShmChannelEvents, ClientEndArmsToo) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(client->Arm());
  EXPECT_FALSE(Readable(client->wake_fd(), 0));
  ASSERT_TRUE(server->Send({.seq = 9}, {}).ok());
  ASSERT_TRUE(Readable(client->wake_fd(), kWakeTimeoutMs));
  client->Disarm();
  Frame f;
  ASSERT_TRUE(client->Receive(f, Deadline::Passed()).ok());
  EXPECT_EQ(f.header.seq, 9u);
}

// One thread streams frames with random gaps (none, a yield, or a sleep) while the server
// loops {Receive until kNotReady; Arm; poll; Disarm}: every frame arrives, in order, and
// no poll ever times out.
TEST_F(ShmChannelEvents, StreamWithRandomGapsLosesNoWakeUp) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  constexpr uint64_t kFrames = 5'000;
#else
  constexpr uint64_t kFrames = 20'000;
#endif
  std::thread sender([c = client.get()] {
    std::mt19937_64 rng(42);
    for (uint64_t i = 0; i < kFrames; ++i) {
      const size_t n = rng() % 64;
      const Bytes body(n, static_cast<std::byte>(i));
      ASSERT_TRUE(c->Send({.call = static_cast<uint32_t>(n), .seq = i}, body).ok());
      switch (rng() % 8) {
        case 0:
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
          break;
        case 1:
          std::this_thread::yield();
          break;
        default:
          break;  // back to back
      }
    }
  });
  uint64_t got = 0, sleeps = 0, false_arms = 0, empty_wakes = 0;
  Frame f;
  while (got < kFrames) {
    Status st;
    const uint64_t before = got;
    while ((st = server->Receive(f, Deadline::Passed())).ok()) {
      ASSERT_EQ(f.header.seq, got);
      ASSERT_EQ(f.body, Bytes(f.header.call, static_cast<std::byte>(got)));
      ++got;
    }
    ASSERT_EQ(st.code(), err::kNotReady) << st.ToString();
    if (sleeps > 0 && got == before) ++empty_wakes;
    if (got == kFrames) break;
    // Sometimes dawdle before arming (as a busy server would), so that frames also land
    // between the last Receive and Arm's re-check: Arm refused, a doorbell rung late.
    Dawdle((got * 7919) % 1024);
    if (!server->Arm()) {
      ++false_arms;
      continue;
    }
    ++sleeps;
    ASSERT_TRUE(Readable(server->wake_fd(), kWakeTimeoutMs))
        << "lost wake-up: " << got << " of " << kFrames << " frames received";
    server->Disarm();
  }
  sender.join();
  EXPECT_EQ(got, kFrames);
  EXPECT_GT(sleeps, 0u);
  std::printf("%llu sleeps, %llu arms refused, %llu wakes without a frame\n",
              static_cast<unsigned long long>(sleeps), static_cast<unsigned long long>(false_arms),
              static_cast<unsigned long long>(empty_wakes));
}

// As many channels as the descriptor limit allows (up to 1000), all armed in one epoll
// set: frames on a random subset wake exactly those; then closing another subset of
// clients wakes exactly those, which then report the loss.
TEST_F(ShmChannelEvents, ThousandArmedChannelsOnOneEpollWakeExactlyWhereSent) {
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  }
  // Two descriptors per pair (the socket's two ends), plus headroom for the rest.
  const size_t n = std::min<size_t>(1000, (lim.rlim_cur - 64) / 2);
  ASSERT_GE(n, 100u) << "descriptor limit too low: " << lim.rlim_cur;
  ShmOptions o = SmallOptions();
  o.request_ring_bytes = o.reply_ring_bytes = shm::SpscRing::kMinCapacity;
  auto l = MustListen(o);
  ASSERT_TRUE(l);

  // One connector thread, one after the other, so Accept's order is the connect order.
  std::vector<std::unique_ptr<Channel>> servers, clients(n);
  std::thread connector([&] {
    for (size_t i = 0; i < n; ++i) {
      auto c = ShmConnect(path_, Deadline::In(10s), o.wait);
      ASSERT_TRUE(c.ok()) << i << ": " << c.status().ToString();
      clients[i] = std::move(c).value();
    }
  });
  for (size_t i = 0; i < n; ++i) {
    PeerInfo who;
    auto s = l->Accept(who, Deadline::In(10s));
    if (!s.ok()) break;
    servers.push_back(std::move(s).value());
  }
  connector.join();
  ASSERT_EQ(servers.size(), n);

  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  for (size_t i = 0; i < n; ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, servers[i]->wake_fd(), &ev), 0) << i;
  }
  // Collects the channels epoll reports until `want` of them (or the wake timeout), then,
  // after a quiet period, once more: level-triggered, a woken channel is reported until
  // its Disarm, so the last look sees every channel woken by then, late extras included.
  std::vector<epoll_event> events(n);
  auto collect = [&](size_t want) {
    std::set<size_t> woken;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWakeTimeoutMs);
    while (woken.size() < want && std::chrono::steady_clock::now() < until) {
      const int k = ::epoll_wait(ep, events.data(), static_cast<int>(n), 100);
      for (int j = 0; j < k; ++j) woken.insert(events[j].data.u64);
    }
    std::this_thread::sleep_for(20ms);
    const int k = ::epoll_wait(ep, events.data(), static_cast<int>(n), 0);
    for (int j = 0; j < k; ++j) woken.insert(events[j].data.u64);
    return woken;
  };
  auto random_subset = [&](std::mt19937_64& rng, size_t k, const std::set<size_t>& skip) {
    std::vector<size_t> all;
    for (size_t i = 0; i < n; ++i)
      if (!skip.count(i)) all.push_back(i);
    std::shuffle(all.begin(), all.end(), rng);
    return std::set<size_t>(all.begin(), all.begin() + static_cast<ptrdiff_t>(k));
  };

  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(servers[i]->Arm()) << i;
  ASSERT_EQ(::epoll_wait(ep, events.data(), static_cast<int>(n), 0), 0) << "idle channels woke";

  std::mt19937_64 rng(7);
  const std::set<size_t> sent = random_subset(rng, n / 7, {});
  for (size_t i : sent) ASSERT_TRUE(clients[i]->Send({.call = 1, .seq = i}, {}).ok());
  EXPECT_EQ(collect(sent.size()), sent);
  Frame f;
  for (size_t i = 0; i < n; ++i) {
    servers[i]->Disarm();
    if (sent.count(i)) {
      ASSERT_TRUE(servers[i]->Receive(f, Deadline::Passed()).ok()) << i;
      EXPECT_EQ(f.header.seq, i);
    }
    ASSERT_EQ(servers[i]->Receive(f, Deadline::Passed()).code(), err::kNotReady) << i;
  }
  ASSERT_EQ(::epoll_wait(ep, events.data(), static_cast<int>(n), 0), 0) << "Disarm left some ready";

  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(servers[i]->Arm()) << i;
  const std::set<size_t> closed = random_subset(rng, n / 11, {});
  for (size_t i : closed) clients[i].reset();
  EXPECT_EQ(collect(closed.size()), closed);
  for (size_t i = 0; i < n; ++i) {
    servers[i]->Disarm();
    EXPECT_EQ(servers[i]->Receive(f, Deadline::Passed()).code(),
              closed.count(i) ? err::kDevicesUnavailable : err::kNotReady)
        << i;
  }
  for (size_t i = 0; i < n; ++i) ::epoll_ctl(ep, EPOLL_CTL_DEL, servers[i]->wake_fd(), nullptr);
  ::close(ep);
}

}  // namespace
}  // namespace remora::transport
