// tests/transport_grpc/grpc_lifecycle_test.cc - gRPC sessions that end or stall: keepalive against
// a silent peer, closes and shutdowns seen by the other side, tokens and TLS, body limits.
#include "tests/transport_grpc/grpc_harness.h"

namespace remora::transport {
namespace {

using namespace grpc_test;
using namespace std::chrono_literals;

// With neither FIN nor RST, keepalive pings are what notice the lost peer.
TEST(GrpcTransport, SilentPeerDetectedByKeepalive) {
  GrpcOptions sopts;
  sopts.keepalive = 200ms;
  GrpcClientOptions copts;
  copts.keepalive = 200ms;
  Pair p = Connect(sopts, copts, /*relayed=*/true);
  ASSERT_TRUE(p.server && p.client);
  ExpectOrderedDelivery(*p.client, *p.server, 5, 11);
  p.relay->Freeze();
  Frame f;
  EXPECT_EQ(p.server->Receive(f, Deadline::In(20s)).code(), err::kDevicesUnavailable);
  EXPECT_EQ(p.client->Receive(f, Deadline::In(20s)).code(), err::kDevicesUnavailable);
}

// With a send timeout, a server whose peer stopped reading (the connection frozen: nothing
// acknowledged, no FIN, no RST) waits that long once its queue is full, then closes the session:
// that Send and every later one fail, well before keepalive would notice.
TEST(GrpcTransport, SendTimeoutClosesASessionWhosePeerStoppedReading) {
  GrpcOptions sopts;
  sopts.max_queued_bytes = 1 << 20;
  Pair p = Connect(sopts, {}, /*relayed=*/true);
  ASSERT_TRUE(p.server && p.client);
  ExpectOrderedDelivery(*p.server, *p.client, 3, 13);
  p.relay->Freeze();
  p.server->SetSendTimeout(300ms);
  const std::vector<std::byte> body(256 << 10, std::byte{3});
  Status st;
  int sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (sent < 4000 && (st = p.server->Send({.seq = uint64_t(sent)}, body)).ok()) ++sent;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
  EXPECT_EQ(st.code(), err::kDevicesUnavailable) << "after " << sent << " frames";
  EXPECT_NE(st.message().find("read nothing"), std::string::npos) << st.message();
  EXPECT_EQ(p.server->Send({.seq = 1}, {}).code(), err::kDevicesUnavailable);
  p.relay.reset();  // the connection drops: the client's channel need not wait for the frozen one
}

// A healthy session outlives any number of keepalive periods in which nobody calls: the pings of
// both ends are sent, answered and accepted (a server refusing pings as too frequent would end it).
// In one process gRPC's server threads also poll the client's connection; the client polling on
// its own while idle is checked across processes (cuda.idle_session.grpc).
TEST(GrpcTransport, IdleSessionOutlivesKeepalivePeriods) {
  GrpcOptions sopts;
  sopts.keepalive = 200ms;
  GrpcClientOptions copts;
  copts.keepalive = 200ms;
  Pair p = Connect(sopts, copts);
  ASSERT_TRUE(p.server && p.client);
  ExpectOrderedDelivery(*p.client, *p.server, 3, 5);
  std::this_thread::sleep_for(2s);  // ten periods, nobody calling
  EXPECT_TRUE(p.client->PeerAlive());
  ExpectOrderedDelivery(*p.client, *p.server, 3, 7);
  ExpectOrderedDelivery(*p.server, *p.client, 3, 9);
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

}  // namespace
}  // namespace remora::transport
