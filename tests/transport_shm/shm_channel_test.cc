// tests/transport_shm/shm_channel_test.cc - ShmListener/ShmConnect/ShmChannel: round trips,
// limits, arena sharing, many clients, handshake errors, Close/Shutdown wakeups, and peers
// killed with SIGKILL (fork).
#include "transport/shm/shm_channel.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

namespace remora::transport {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;

class ShmChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/remora-shm-test-XXXXXX";
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
    o.arena_bytes = 16 << 20;
    return o;
  }

  std::unique_ptr<ShmListener> MustListen(ShmOptions o = SmallOptions()) {
    auto l = ShmListener::Listen(path_, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(l).value() : nullptr;
  }

  // Connects a client and accepts it; both ends, or nullptrs after a failed expectation.
  std::pair<std::unique_ptr<Channel>, std::unique_ptr<Channel>> Pair(ShmListener& l,
                                                                     PeerInfo* who = nullptr) {
    Result<std::unique_ptr<Channel>> client = Status(err::kUnknown, "not run");
    std::thread t([&] { client = ShmConnect(path_, Deadline::In(10s)); });
    PeerInfo peer;
    auto server = l.Accept(peer, Deadline::In(10s));
    t.join();
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (who != nullptr) *who = peer;
    if (!server.ok() || !client.ok()) return {};
    return {std::move(server).value(), std::move(client).value()};
  }

  std::string dir_, path_;
};

Bytes RandomBytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

TEST_F(ShmChannelTest, RoundTripsCarryHeaderAndBodyIntact) {
  auto l = MustListen();
  PeerInfo who;
  auto [server, client] = Pair(*l, &who);
  ASSERT_TRUE(server && client);
  EXPECT_EQ(who.pid, ::getpid());
  EXPECT_EQ(who.uid, static_cast<int64_t>(::getuid()));
  EXPECT_EQ(client->Describe(),
            "shm uid=" + std::to_string(::getuid()) + " pid=" + std::to_string(::getpid()));
  EXPECT_TRUE(server->PeerAlive());
  EXPECT_TRUE(client->PeerAlive());

  std::thread echo([&, s = server.get()] {
    Frame f;
    while (s->Receive(f, Deadline::Never()).ok()) {
      f.header.flags ^= 0xFFFF;
      ASSERT_TRUE(s->Send(f.header, f.body).ok());
    }
  });
  std::mt19937_64 rng(1);
  Frame reply;
  for (uint64_t seq = 1; seq <= 3000; ++seq) {
    const Bytes body = RandomBytes(rng, rng() % 3 == 0 ? rng() % client->max_body() : rng() % 200);
    const FrameHeader h{.call = static_cast<uint32_t>(rng()), .flags = 7, .seq = seq};
    ASSERT_TRUE(client->Send(h, body).ok());
    ASSERT_TRUE(client->Receive(reply, Deadline::In(30s)).ok());
    ASSERT_EQ(reply.header.call, h.call);
    ASSERT_EQ(reply.header.seq, seq);
    ASSERT_EQ(reply.header.flags, 7u ^ 0xFFFF);
    ASSERT_EQ(reply.body, body) << "seq " << seq;
  }
  client->Close();
  echo.join();
}

TEST_F(ShmChannelTest, MaxBodyIsAnEighthOfTheRing) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  ASSERT_EQ(client->max_body(), (64u << 10) / 8 - sizeof(FrameHeader));
  std::mt19937_64 rng(2);
  const Bytes max = RandomBytes(rng, client->max_body());
  Status over = client->Send({.call = 1}, Bytes(client->max_body() + 1));
  EXPECT_EQ(over.code(), err::kInvalidValue);
  ASSERT_TRUE(client->Send({.call = 2}, max).ok());
  Frame f;
  ASSERT_TRUE(server->Receive(f, Deadline::In(10s)).ok());
  EXPECT_EQ(f.header.call, 2u) << "the refused frame must not have been sent";
  EXPECT_EQ(f.body, max);
}

TEST_F(ShmChannelTest, ArenaIsSharedBothWays) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  Arena* ca = client->arena();
  Arena* sa = server->arena();
  ASSERT_TRUE(ca && sa);
  ASSERT_EQ(ca->size(), 16u << 20);
  ASSERT_EQ(sa->size(), ca->size());
  std::mt19937_64 rng(3);
  const Bytes up = RandomBytes(rng, 3 << 20);
  const uint64_t off = 5 << 20;
  ASSERT_TRUE(ca->Contains(off, up.size()));
  std::memcpy(ca->base() + off, up.data(), up.size());
  ASSERT_TRUE(client->Send({.call = 1, .seq = off}, {}).ok());
  Frame f;
  ASSERT_TRUE(server->Receive(f, Deadline::In(10s)).ok());
  ASSERT_TRUE(sa->Contains(f.header.seq, up.size()));
  EXPECT_EQ(std::memcmp(sa->base() + f.header.seq, up.data(), up.size()), 0);
  const Bytes down = RandomBytes(rng, 1 << 20);
  std::memcpy(sa->base() + sa->size() - down.size(), down.data(), down.size());
  ASSERT_TRUE(server->Send({.call = 2}, {}).ok());
  ASSERT_TRUE(client->Receive(f, Deadline::In(10s)).ok());
  EXPECT_EQ(std::memcmp(ca->base() + ca->size() - down.size(), down.data(), down.size()), 0);
  EXPECT_FALSE(ca->Contains(ca->size() - 1, 2));
}

TEST_F(ShmChannelTest, SeveralClientsEachGetTheirOwnChannel) {
  constexpr int kClients = 4;
  constexpr int kFrames = 2000;
  auto l = MustListen();
  std::vector<std::thread> sessions;
  std::thread acceptor([&] {
    for (int i = 0; i < kClients; ++i) {
      PeerInfo who;
      auto ch = l->Accept(who, Deadline::In(30s));
      ASSERT_TRUE(ch.ok()) << ch.status().ToString();
      sessions.emplace_back([ch = std::move(ch).value()] {
        Frame f;
        while (ch->Receive(f, Deadline::Never()).ok()) {
          if (!ch->Send(f.header, f.body).ok()) break;
        }
      });
    }
  });
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto ch = ShmConnect(path_, Deadline::In(30s));
      if (!ch.ok()) {
        failures.fetch_add(1);
        return;
      }
      Frame f;
      for (uint64_t i = 0; i < kFrames; ++i) {
        const Bytes body(1 + i % 50, static_cast<std::byte>(c));
        if (!(*ch)->Send({.call = static_cast<uint32_t>(c), .seq = i}, body).ok() ||
            !(*ch)->Receive(f, Deadline::In(30s)).ok() || f.header.call != uint32_t(c) ||
            f.header.seq != i || f.body != body)
          failures.fetch_add(1);
      }
    });
  }
  for (auto& t : clients) t.join();  // each client closes its channel on exit
  acceptor.join();
  for (auto& t : sessions) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ShmChannelTest, SendBlocksWhileTheRingIsFullAndKeepsOrder) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  constexpr int kFrames = 5000;  // ~5 MB through a 64 KiB ring
  std::thread sender([&, c = client.get()] {
    const Bytes body(1000, std::byte{9});
    for (uint64_t i = 0; i < kFrames; ++i) ASSERT_TRUE(c->Send({.seq = i}, body).ok());
  });
  std::this_thread::sleep_for(50ms);  // let the sender fill the ring and park
  Frame f;
  for (uint64_t i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(server->Receive(f, Deadline::In(30s)).ok());
    ASSERT_EQ(f.header.seq, i);
    ASSERT_EQ(f.body.size(), 1000u);
  }
  sender.join();
}

// With a send timeout, a sender whose peer reads nothing waits that long for room, then
// closes the channel: that Send and every later one fail, and the peer still reads every frame
// that got in before it learns the channel is closed. A reader that keeps up never meets it.
TEST_F(ShmChannelTest, SendTimeoutClosesTheChannelOfAPeerThatStoppedReading) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  server->SetSendTimeout(100ms);
  const Bytes body(1000, std::byte{5});
  uint64_t sent = 0;
  Status st;
  const auto t0 = std::chrono::steady_clock::now();
  while ((st = server->Send({.seq = sent}, body)).ok()) ++sent;
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(st.code(), err::kDevicesUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("read nothing"), std::string::npos) << st.message();
  EXPECT_GE(waited, 100ms);
  EXPECT_GT(sent, 30u) << "the ring held frames before it was full";
  EXPECT_LT(sent, 70u) << "64 KiB of ring";
  EXPECT_EQ(server->Send({.seq = sent}, body).code(), err::kDevicesUnavailable);
  Frame f;
  for (uint64_t i = 0; i < sent; ++i) {
    ASSERT_TRUE(client->Receive(f, Deadline::In(5s)).ok()) << i;
    EXPECT_EQ(f.header.seq, i);
  }
  EXPECT_EQ(client->Receive(f, Deadline::In(5s)).code(), err::kDevicesUnavailable);

  // A reader that keeps up: 5 MB through the same 64 KiB ring under the same timeout.
  auto [server2, client2] = Pair(*l);
  ASSERT_TRUE(server2 && client2);
  server2->SetSendTimeout(2s);
  std::thread reader([c = client2.get()] {
    Frame g;
    for (uint64_t i = 0; i < 5000; ++i) {
      ASSERT_TRUE(c->Receive(g, Deadline::In(30s)).ok());
      ASSERT_EQ(g.header.seq, i);
    }
  });
  for (uint64_t i = 0; i < 5000; ++i) ASSERT_TRUE(server2->Send({.seq = i}, body).ok()) << i;
  reader.join();
}

// However the receiver waits (SetReceiveSpin: sleep at once, poll long, poll yielding, the
// transport's own), every reply arrives, whether it comes at once or after the poll ran out.
TEST_F(ShmChannelTest, EveryReceiveSpinDeliversEveryFrame) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  std::thread echo([&, s = server.get()] {
    std::mt19937_64 rng(2);
    Frame f;
    while (s->Receive(f, Deadline::Never()).ok()) {
      if (rng() % 2) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      ASSERT_TRUE(s->Send(f.header, f.body).ok());
    }
  });
  const std::pair<std::chrono::nanoseconds, bool> ways[] = {
      {0ns, false}, {10ms, false}, {10ms, true}, {-1ns, false}};
  uint64_t seq = 0;
  for (auto [spin, yield] : ways) {
    client->SetReceiveSpin(spin, yield);
    for (int i = 0; i < 200; ++i) {
      const Bytes body(static_cast<size_t>(i % 64), std::byte{0x5a});
      const FrameHeader h{.call = 1, .flags = 0, .seq = ++seq};
      ASSERT_TRUE(client->Send(h, body).ok());
      Frame reply;
      ASSERT_TRUE(client->Receive(reply, Deadline::In(30s)).ok()) << spin.count() << " " << yield;
      ASSERT_EQ(reply.header.seq, seq);
      ASSERT_EQ(reply.body, body);
    }
  }
  client->Close();
  echo.join();
}

TEST_F(ShmChannelTest, ReceiveTimesOutWithNotReady) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  Frame f;
  EXPECT_EQ(server->Receive(f, Deadline::In(20ms)).code(), err::kNotReady);
  EXPECT_EQ(server->Receive(f, Deadline::In(0ns)).code(), err::kNotReady);
  EXPECT_TRUE(server->PeerAlive());
}

TEST_F(ShmChannelTest, CloseWakesABlockedReceiveOnBothEnds) {
  // Parks of 30 s: only a futex wake from Close() can end the waits sooner.
  ShmOptions o = SmallOptions();
  o.wait = {.spin = 1us, .park = 30s};
  auto l = MustListen(o);
  Result<std::unique_ptr<Channel>> c = Status(err::kUnknown, "not run");
  std::thread t([&] { c = ShmConnect(path_, Deadline::In(10s), o.wait); });
  PeerInfo who;
  auto s = l->Accept(who, Deadline::In(10s));
  t.join();
  ASSERT_TRUE(s.ok() && c.ok());
  std::unique_ptr<Channel> server = std::move(s).value(), client = std::move(c).value();
  Status local, remote;
  const auto start = std::chrono::steady_clock::now();
  std::thread a([&] {
    Frame f;
    local = server->Receive(f, Deadline::Never());
  });
  std::thread b([&] {
    Frame f;
    remote = client->Receive(f, Deadline::Never());
  });
  std::this_thread::sleep_for(200ms);  // both park on their futex words
  server->Close();
  a.join();
  b.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << "a wakeup was lost";
  EXPECT_EQ(local.code(), err::kDevicesUnavailable);
  EXPECT_EQ(remote.code(), err::kDevicesUnavailable);
  EXPECT_FALSE(client->PeerAlive());
  EXPECT_EQ(client->Send({}, {}).code(), err::kDevicesUnavailable);
  EXPECT_EQ(server->Send({}, {}).code(), err::kDevicesUnavailable);
  server->Close();  // idempotent
}

TEST_F(ShmChannelTest, PeerCloseDrainsSentFramesFirst) {
  auto l = MustListen();
  auto [server, client] = Pair(*l);
  ASSERT_TRUE(server && client);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(client->Send({.seq = i}, Bytes(10)).ok());
  client.reset();  // destructor closes
  Frame f;
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(server->Receive(f, Deadline::In(10s)).ok());
    EXPECT_EQ(f.header.seq, i);
  }
  EXPECT_EQ(server->Receive(f, Deadline::In(10s)).code(), err::kDevicesUnavailable);
  EXPECT_FALSE(server->PeerAlive());
}

TEST_F(ShmChannelTest, ShutdownWakesAccept) {
  auto l = MustListen();
  Status st;
  std::thread t([&] {
    PeerInfo who;
    st = l->Accept(who, Deadline::Never()).status();
  });
  std::this_thread::sleep_for(50ms);
  l->Shutdown();
  t.join();
  EXPECT_EQ(st.code(), err::kDevicesUnavailable);
  PeerInfo who;
  EXPECT_EQ(l->Accept(who, Deadline::In(1s)).status().code(), err::kDevicesUnavailable);
}

TEST_F(ShmChannelTest, AcceptTimesOutWithNotReady) {
  auto l = MustListen();
  PeerInfo who;
  EXPECT_EQ(l->Accept(who, Deadline::In(20ms)).status().code(), err::kNotReady);
}

TEST_F(ShmChannelTest, ConnectErrorsAreInitializationErrors) {
  auto absent = ShmConnect(path_, Deadline::In(1s));
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), err::kInitializationError);
  EXPECT_NE(absent.status().message().find("no Remora server socket"), std::string::npos)
      << absent.status().message();

  // A socket nobody accepts on (bound, not listening): refused.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path_.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  auto refused = ShmConnect(path_, Deadline::In(1s));
  EXPECT_EQ(refused.status().code(), err::kInitializationError);
  EXPECT_NE(refused.status().message().find("refused"), std::string::npos);

  // A listener that accepts but never hands over a session: the deadline ends the wait.
  ASSERT_EQ(::listen(fd, 4), 0);
  auto silent = ShmConnect(path_, Deadline::In(50ms));
  EXPECT_EQ(silent.status().code(), err::kInitializationError);
  EXPECT_NE(silent.status().message().find("deadline"), std::string::npos);

  // A server that answers with something other than a Remora header.
  std::thread junk([fd] {
    int c = ::accept(fd, nullptr, nullptr);  // the silent client's connection
    ::close(c);
    c = ::accept(fd, nullptr, nullptr);
    const char msg[48] = "HTTP/1.1 400 Bad Request";
    [[maybe_unused]] auto n = ::send(c, msg, sizeof msg, 0);
    ::close(c);
  });
  auto bad = ShmConnect(path_, Deadline::In(10s));
  junk.join();
  EXPECT_EQ(bad.status().code(), err::kInitializationError);
  EXPECT_NE(bad.status().message().find("not a Remora shm header"), std::string::npos)
      << bad.status().message();
  ::close(fd);
}

TEST_F(ShmChannelTest, ListenReplacesStaleSocketButNotALiveServer) {
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);  // leaves a stale socket file behind
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path_.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  auto l = MustListen();
  ASSERT_TRUE(l);
  auto second = ShmListener::Listen(path_, SmallOptions());
  EXPECT_EQ(second.status().code(), err::kInitializationError);
  auto [server, client] = Pair(*l);
  EXPECT_TRUE(server && client) << "the live listener still works";
}

TEST_F(ShmChannelTest, ListenRejectsBadOptions) {
  ShmOptions o = SmallOptions();
  o.request_ring_bytes = 5000;
  EXPECT_EQ(ShmListener::Listen(path_, o).status().code(), err::kInvalidValue);
  o = SmallOptions();
  o.arena_bytes = 12345;
  EXPECT_EQ(ShmListener::Listen(path_, o).status().code(), err::kInvalidValue);
}

// A hostile client does the handshake by hand and writes into the memfd directly: a
// record too short for a FrameHeader, then a reply-ring head past the tail. The server
// refuses both with kDevicesUnavailable and reads nothing outside the mapping.
TEST_F(ShmChannelTest, HostileClientWritingTheMemfdGetsErrors) {
  auto l = MustListen();
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path_.c_str());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  PeerInfo who;
  auto server = l->Accept(who, Deadline::In(10s));
  ASSERT_TRUE(server.ok());

  shm::HandshakeHeader h;
  iovec iov{&h, sizeof h};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  ASSERT_EQ(::recvmsg(fd, &msg, 0), static_cast<ssize_t>(sizeof h));
  int memfd;
  std::memcpy(&memfd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof memfd);
  auto layout = shm::ShmLayout::Make(h.request_capacity, h.reply_capacity, h.arena_size);
  ASSERT_TRUE(layout.ok());
  void* p = ::mmap(nullptr, layout->total_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* base = static_cast<std::byte*>(p);
  EXPECT_NE(::ftruncate(memfd, 4096), 0) << "the memfd is sealed against shrinking";

  auto req = shm::SpscRing::Producer::Attach(
      {base + layout->request_offset, shm::SpscRing::RegionSize(layout->request_capacity)},
      layout->request_capacity);
  ASSERT_TRUE(req.ok());
  ASSERT_TRUE(req->TryWrite(1, Bytes(4)).ok());  // 4 bytes: shorter than a FrameHeader
  Frame f;
  EXPECT_EQ((*server)->Receive(f, Deadline::In(10s)).code(), err::kDevicesUnavailable);

  auto* reply_trailer =
      reinterpret_cast<shm::RingTrailer*>(base + layout->reply_offset + layout->reply_capacity);
  const Bytes body(4000);
  Status st;
  for (int i = 0; i < 10000 && st.ok(); ++i) {  // fill the reply ring, then lie about head
    if (i == 10) reply_trailer->head.store(uint64_t{1} << 50);
    st = (*server)->Send({.seq = uint64_t(i)}, body);
  }
  EXPECT_EQ(st.code(), err::kDevicesUnavailable) << st.ToString();
  ::munmap(p, layout->total_size);
  ::close(memfd);
  ::close(fd);
}

// A client process streaming frames is SIGKILLed; the server drains what it sent, then
// its Receive reports the loss within a second.
TEST_F(ShmChannelTest, KilledClientIsNoticedWithinOneSecond) {
  auto l = MustListen();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto ch = ShmConnect(path_, Deadline::In(10s));
    if (!ch.ok()) ::_exit(2);
    const Bytes body(100, std::byte{1});
    for (uint64_t i = 0;; ++i) {
      if (!(*ch)->Send({.seq = i}, body).ok()) ::_exit(3);
    }
  }
  PeerInfo who;
  auto server = l->Accept(who, Deadline::In(10s));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ(who.pid, child);
  Frame f;
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE((*server)->Receive(f, Deadline::In(10s)).ok());
    ASSERT_EQ(f.header.seq, i);
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus));
  const Deadline one_second = Deadline::In(1s);
  Status st;
  uint64_t drained = 0;
  while ((st = (*server)->Receive(f, one_second)).ok()) ++drained;
  EXPECT_EQ(st.code(), err::kDevicesUnavailable) << st.ToString() << " after " << drained;
  EXPECT_FALSE((*server)->PeerAlive());
}

// The server process dies; the client's blocked Receive and its next Send report it.
TEST_F(ShmChannelTest, KilledServerIsNoticedByTheClient) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    auto l = ShmListener::Listen(path_, SmallOptions());
    if (!l.ok()) ::_exit(2);
    [[maybe_unused]] auto n = ::write(ready[1], "x", 1);
    PeerInfo who;
    auto ch = (*l)->Accept(who, Deadline::In(10s));
    if (!ch.ok()) ::_exit(3);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char x;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  ::close(ready[0]);
  auto client = ShmConnect(path_, Deadline::In(10s));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Status st;
  std::thread receiver([&] {
    Frame f;
    st = (*client)->Receive(f, Deadline::In(1s + 200ms));
  });
  std::this_thread::sleep_for(200ms);  // the receiver parks
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  receiver.join();
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_EQ(st.code(), err::kDevicesUnavailable) << st.ToString();
  EXPECT_FALSE((*client)->PeerAlive());
  EXPECT_EQ((*client)->Send({}, {}).code(), err::kDevicesUnavailable);
}

}  // namespace
}  // namespace remora::transport
