// tests/transport/fragment_test.cc - FragmentingChannel: messages past a frame's limit
// round-trip intact over a fake channel and over real shm; small frames pass untouched;
// an inconsistent or oversized fragment sequence from an untrusted peer is refused; a
// passed deadline mid-message (event-driven serving) keeps the part read so far.
#include "transport/fragment.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <random>
#include <thread>

#include "transport/shm/shm_channel.h"

namespace remora::transport {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;

// One direction of an in-process pipe with a small frame limit; records frames sent.
class FakeChannel final : public Channel {
 public:
  explicit FakeChannel(size_t max_body) : max_body_(max_body) {}
  Status Send(const FrameHeader& h, std::span<const std::byte> body) override {
    if (body.size() > max_body_) return Error(err::kInvalidValue, "too big");
    frames.push_back({h, Bytes(body.begin(), body.end())});
    return OkStatus();
  }
  Status Receive(Frame& out, Deadline) override {
    if (frames.empty()) return Error(err::kNotReady, "empty");
    out = std::move(frames.front());
    frames.pop_front();
    return OkStatus();
  }
  size_t max_body() const override { return max_body_; }
  Arena* arena() override { return nullptr; }
  bool PeerAlive() const override { return !closed; }
  void Close() override { closed = true; }
  std::string Describe() const override { return "fake"; }
  int wake_fd() const override { return -1; }
  bool Arm() override { return false; }
  void Disarm() override {}

  std::deque<Frame> frames;
  bool closed = false;

 private:
  size_t max_body_;
};

Bytes RandomBytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

TEST(Fragment, LargeBodiesSplitAndReassembleSmallOnesPassUntouched) {
  auto inner = std::make_unique<FakeChannel>(100);
  FakeChannel* fake = inner.get();
  FragmentingChannel ch(std::move(inner));
  EXPECT_EQ(ch.max_body(), 100u);
  std::mt19937_64 rng(3);
  for (size_t n : {0, 1, 99, 100, 101, 250, 1000, 12345}) {
    const Bytes body = RandomBytes(rng, n);
    const FrameHeader h{.call = 96, .flags = 4, .seq = n + 1};
    ASSERT_TRUE(ch.Send(h, body).ok());
    const size_t frames = n <= 100 ? 1 : (n + 99) / 100;
    ASSERT_EQ(fake->frames.size(), frames) << n;
    for (size_t i = 0; i < frames; ++i)
      EXPECT_EQ((fake->frames[i].header.flags & kFrameMore) != 0, i + 1 < frames);
    Frame out;
    ASSERT_TRUE(ch.Receive(out, Deadline::Never()).ok());
    EXPECT_EQ(out.header.call, 96u);
    EXPECT_EQ(out.header.seq, n + 1);
    EXPECT_EQ(out.header.flags, 4u);
    EXPECT_EQ(out.body, body) << n;
    EXPECT_TRUE(fake->frames.empty());
  }
}

TEST(Fragment, ADeadlineMidMessageKeepsWhatWasRead) {
  auto inner = std::make_unique<FakeChannel>(10);
  FakeChannel* fake = inner.get();
  FragmentingChannel ch(std::move(inner));
  std::mt19937_64 rng(4);
  const Bytes body = RandomBytes(rng, 35);
  ASSERT_TRUE(ch.Send({.call = 1, .seq = 9}, body).ok());
  std::deque<Frame> rest(fake->frames.begin() + 2, fake->frames.end());
  fake->frames.resize(2);
  Frame out;
  EXPECT_EQ(ch.Receive(out, Deadline::In(1ms)).code(), err::kNotReady);
  fake->frames = std::move(rest);
  ASSERT_TRUE(ch.Receive(out, Deadline::Never()).ok());
  EXPECT_EQ(out.body, body);
}

// Fragments trickle in one at a time while the receiver polls with passed deadlines
// (event-driven serving's way): every empty poll returns kNotReady and keeps the part.
TEST(Fragment, PassedDeadlinesMidMessageNeverLoseOrCorruptThePart) {
  auto inner = std::make_unique<FakeChannel>(10);
  FakeChannel* fake = inner.get();
  FragmentingChannel ch(std::move(inner));
  std::mt19937_64 rng(6);
  const Bytes body = RandomBytes(rng, 45);
  ASSERT_TRUE(ch.Send({.call = 3, .flags = 2, .seq = 8}, body).ok());
  std::deque<Frame> parts = std::move(fake->frames);
  fake->frames.clear();
  ASSERT_EQ(parts.size(), 5u);
  Frame out;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    fake->frames.push_back(std::move(parts[i]));
    EXPECT_EQ(ch.Receive(out, Deadline::Passed()).code(), err::kNotReady) << i;
    EXPECT_TRUE(fake->frames.empty()) << "the fragment was taken in";
    EXPECT_EQ(ch.Receive(out, Deadline::Passed()).code(), err::kNotReady) << i;
  }
  fake->frames.push_back(std::move(parts.back()));
  fake->frames.push_back({{.call = 4, .seq = 9}, Bytes(3, std::byte{1})});
  ASSERT_TRUE(ch.Receive(out, Deadline::Passed()).ok());
  EXPECT_EQ(out.header.call, 3u);
  EXPECT_EQ(out.header.flags, 2u);
  EXPECT_EQ(out.header.seq, 8u);
  EXPECT_EQ(out.body, body);
  ASSERT_TRUE(ch.Receive(out, Deadline::Passed()).ok());
  EXPECT_EQ(out.header.seq, 9u);
  EXPECT_EQ(out.body, Bytes(3, std::byte{1}));
  EXPECT_FALSE(fake->closed);
}

TEST(Fragment, RefusesReservedFlagAndOversizedBodies) {
  FragmentingChannel ch(std::make_unique<FakeChannel>(10), 100);
  Bytes small(4), big(101);
  EXPECT_EQ(ch.Send({.call = 1, .flags = kFrameMore, .seq = 1}, small).code(), err::kInvalidValue);
  EXPECT_EQ(ch.Send({.call = 1, .seq = 2}, big).code(), err::kInvalidValue);
  EXPECT_TRUE(ch.Send({.call = 1, .seq = 3}, Bytes(100)).ok());
}

TEST(Fragment, AnInterleavedFragmentFromAnUntrustedPeerClosesTheChannel) {
  auto inner = std::make_unique<FakeChannel>(1 << 20);
  FakeChannel* fake = inner.get();
  FragmentingChannel ch(std::move(inner));
  fake->frames.push_back({{.call = 96, .flags = kFrameMore, .seq = 1}, Bytes(8)});
  fake->frames.push_back({{.call = 33, .flags = 0, .seq = 2}, Bytes(8)});
  Frame out;
  EXPECT_EQ(ch.Receive(out, Deadline::Never()).code(), err::kInvalidValue);
  EXPECT_TRUE(fake->closed);
}

TEST(Fragment, AFragmentedMessagePastTheLimitClosesTheChannel) {
  auto inner = std::make_unique<FakeChannel>(64);
  FakeChannel* fake = inner.get();
  FragmentingChannel ch(std::move(inner), 100);
  // Fragments whose sizes together pass the limit: the last is never buffered.
  fake->frames.push_back({{.call = 96, .flags = kFrameMore, .seq = 1}, Bytes(64)});
  fake->frames.push_back({{.call = 96, .flags = 0, .seq = 1}, Bytes(37)});
  Frame out;
  EXPECT_EQ(ch.Receive(out, Deadline::Never()).code(), err::kInvalidValue);
  EXPECT_TRUE(fake->closed);
}

TEST(Fragment, MultiMegabyteMessagesCrossRealShmBothWays) {
  char tmpl[] = "/tmp/remora-frag-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/s.sock";
  ShmOptions o;
  o.request_ring_bytes = 64 << 10;
  o.reply_ring_bytes = 64 << 10;
  o.arena_bytes = 16 << 20;
  auto l = ShmListener::Listen(path, o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  Result<std::unique_ptr<Channel>> client = Status(err::kUnknown, "not run");
  std::thread t([&] { client = ShmConnect(path, Deadline::In(10s)); });
  PeerInfo peer;
  auto server = (*l)->Accept(peer, Deadline::In(10s));
  t.join();
  ASSERT_TRUE(server.ok() && client.ok());
  FragmentingChannel s(std::move(server).value()), c(std::move(client).value());
  ASSERT_LT(c.max_body(), 16u << 10);

  std::thread echo([&] {
    Frame f;
    while (s.Receive(f, Deadline::Never()).ok()) ASSERT_TRUE(s.Send(f.header, f.body).ok());
  });
  std::mt19937_64 rng(5);
  for (size_t n : {size_t{3} << 20, c.max_body() + 1, size_t{100}, size_t{5} << 20}) {
    const Bytes body = RandomBytes(rng, n);
    ASSERT_TRUE(c.Send({.call = 96, .seq = n}, body).ok());
    Frame reply;
    ASSERT_TRUE(c.Receive(reply, Deadline::In(30s)).ok());
    EXPECT_EQ(reply.header.seq, n);
    EXPECT_EQ(reply.body, body) << n;
  }
  c.Close();
  echo.join();
  (*l)->Shutdown();
  ::unlink(path.c_str());
  ::rmdir(tmpl);
}

// Over real shm, served event-driven: the client sends a message's fragments one by one
// (by hand, on the raw channel) with the server armed in between; each fragment wakes
// it, each passed-deadline Receive until the last returns kNotReady, and the message
// comes out whole.
TEST(Fragment, EventDrivenServerReassemblesAcrossWakeUpsOverShm) {
  char tmpl[] = "/tmp/remora-frag-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/s.sock";
  ShmOptions o;
  o.request_ring_bytes = 64 << 10;
  o.reply_ring_bytes = 64 << 10;
  o.arena_bytes = 0;
  auto l = ShmListener::Listen(path, o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  Result<std::unique_ptr<Channel>> c = Status(err::kUnknown, "not run");
  std::thread t([&] { c = ShmConnect(path, Deadline::In(10s)); });
  PeerInfo peer;
  auto server = (*l)->Accept(peer, Deadline::In(10s));
  t.join();
  ASSERT_TRUE(server.ok() && c.ok());
  std::unique_ptr<Channel> client = std::move(c).value();
  FragmentingChannel s(std::move(server).value());
  ASSERT_GE(s.wake_fd(), 0);

  std::mt19937_64 rng(7);
  const size_t limit = client->max_body();
  const Bytes body = RandomBytes(rng, 3 * limit + 17);
  const FrameHeader h{.call = 96, .flags = 1, .seq = 5};
  FrameHeader more = h;
  more.flags |= kFrameMore;
  Frame out;
  for (size_t off = 0; off < body.size(); off += limit) {
    const size_t n = std::min(limit, body.size() - off);
    const bool last = off + n == body.size();
    ASSERT_TRUE(s.Arm()) << "nothing waits in the inner channel at offset " << off;
    ASSERT_TRUE(client->Send(last ? h : more, std::span(body).subspan(off, n)).ok());
    pollfd p{s.wake_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10'000), 1) << "lost wake-up at offset " << off;
    s.Disarm();
    const Status st = s.Receive(out, Deadline::Passed());
    if (!last) {
      ASSERT_EQ(st.code(), err::kNotReady) << st.ToString();
      ASSERT_EQ(s.Receive(out, Deadline::Passed()).code(), err::kNotReady);
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(out.header.call, h.call);
    EXPECT_EQ(out.header.flags, h.flags);
    EXPECT_EQ(out.header.seq, h.seq);
    EXPECT_EQ(out.body, body);
  }
  client->Close();
  EXPECT_FALSE(s.Arm()) << "the peer closed: receive instead";
  EXPECT_EQ(s.Receive(out, Deadline::Passed()).code(), err::kDevicesUnavailable);
  (*l)->Shutdown();
  ::unlink(path.c_str());
  ::rmdir(tmpl);
}

}  // namespace
}  // namespace remora::transport
