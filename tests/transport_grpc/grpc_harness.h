// tests/transport_grpc/grpc_harness.h - what the gRPC transport tests share: a listener on a
// free loopback port, a connected pair of channels, random bodies and an ordered-delivery check.
#pragma once

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

namespace remora::transport::grpc_test {

using namespace std::chrono_literals;

inline std::vector<std::byte> RandomBody(std::mt19937& rng, size_t n) {
  std::vector<std::byte> b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

inline std::unique_ptr<GrpcListener> MustListen(GrpcOptions opts = {}) {
  auto l = GrpcListener::Listen("127.0.0.1:0", std::move(opts));
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(l).value() : nullptr;
}

inline std::string Target(const GrpcListener& l) {
  return "127.0.0.1:" + std::to_string(l.port());
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

// A connected client/server channel pair; `relay` set when the client connects through one.
struct Pair {
  std::unique_ptr<GrpcListener> listener;
  std::unique_ptr<FreezableRelay> relay;
  std::unique_ptr<Channel> client;
  std::unique_ptr<Channel> server;
  PeerInfo peer;
};

inline Pair Connect(GrpcOptions sopts = {}, GrpcClientOptions copts = {}, bool relayed = false) {
  Pair p;
  p.listener = MustListen(std::move(sopts));
  if (!p.listener) return p;
  std::string target = Target(*p.listener);
  if (relayed) {
    p.relay = std::make_unique<FreezableRelay>(p.listener->port());
    EXPECT_NE(p.relay->port(), 0);
    target = "127.0.0.1:" + std::to_string(p.relay->port());
  }
  auto c = GrpcConnect(target, std::move(copts), Deadline::In(5s));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return p;
  p.client = std::move(c).value();
  auto s = p.listener->Accept(p.peer, Deadline::In(5s));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok()) p.server = std::move(s).value();
  return p;
}

// Sends `n` random frames from `from` to `to` and checks each arrives intact, in order.
inline void ExpectOrderedDelivery(Channel& from, Channel& to, int n, uint32_t seed) {
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

}  // namespace remora::transport::grpc_test
