// tests/fuzz/frame_fuzz.cc - frames from an untrusted peer: remora.v1.Frame parsing (the
// gRPC transport's carriage) and FragmentingChannel's reassembly (both transports).
//
// The input is a script, one opcode byte per step:
//   0 a remora.v1.Frame in protobuf wire form (u16 length, bytes); queued if it parses,
//     converted to a transport Frame as the gRPC session does
//   1 a frame given field by field (kFrameMore set by an opcode bit, so that fragment
//     sequences are common)
//   2 a passed deadline: the fake inner channel answers kNotReady once
//   3 drain: FragmentingChannel::Receive until the inner channel runs dry
// Each reassembled message is checked against a model written from fragment.h's
// contract (a header change mid-message or a message past the limit: kInvalidValue,
// channel closed), then sent back through a FragmentingChannel over a small frame
// limit and received again: it must come back unchanged.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "remora/v1/transport.pb.h"
#include "tests/fuzz/input.h"
#include "transport/fragment.h"

namespace {

namespace err = remora::err;
using remora::Error;
using remora::OkStatus;
using remora::Status;
using remora::fuzz::Check;
using remora::fuzz::Input;
using remora::transport::Arena;
using remora::transport::Channel;
using remora::transport::Deadline;
using remora::transport::FragmentingChannel;
using remora::transport::Frame;
using remora::transport::FrameHeader;
using remora::transport::kFrameMore;

// A queued frame, or (nullopt) a deadline that passes before the next one.
using Item = std::optional<Frame>;
using Queue = std::deque<Item>;

bool SameHeader(const FrameHeader& a, const FrameHeader& b) {
  return a.call == b.call && a.flags == b.flags && a.seq == b.seq;
}
bool SameFrame(const Frame& a, const Frame& b) {
  return SameHeader(a.header, b.header) && a.body == b.body;
}

// An inner channel reading from and writing to a shared queue.
class FakeChannel final : public Channel {
 public:
  FakeChannel(std::shared_ptr<Queue> q, size_t max_body) : q_(std::move(q)), max_(max_body) {}
  Status Send(const FrameHeader& h, std::span<const std::byte> body) override {
    Check(body.size() <= max_);  // FragmentingChannel must respect max_body()
    q_->push_back(Frame{h, {body.begin(), body.end()}});
    return OkStatus();
  }
  Status Receive(Frame& out, Deadline) override {
    if (closed) return Error(err::kDevicesUnavailable, "closed");
    if (q_->empty()) return Error(err::kNotReady, "empty");
    Item item = std::move(q_->front());
    q_->pop_front();
    if (!item) return Error(err::kNotReady, "deadline");
    out = std::move(*item);
    return OkStatus();
  }
  size_t max_body() const override { return max_; }
  Arena* arena() override { return nullptr; }
  bool PeerAlive() const override { return !closed; }
  void Close() override { closed = true; }
  std::string Describe() const override { return "fuzz"; }
  int wake_fd() const override { return -1; }
  bool Arm() override { return false; }
  void Disarm() override {}

  bool closed = false;

 private:
  std::shared_ptr<Queue> q_;
  size_t max_;
};

// fragment.h's contract, frame by frame: the messages a reader must return, then
// (failed) whether it must refuse the stream.
class Model {
 public:
  explicit Model(size_t max_message) : max_(max_message) {}
  void Feed(const Frame& f) {
    if (failed) return;
    const bool more = (f.header.flags & kFrameMore) != 0;
    FrameHeader h = f.header;
    h.flags &= ~kFrameMore;
    if (!assembling_) {
      if (!more) {
        out.push_back(f);
        return;
      }
      assembling_ = true;
      part_ = Frame{h, {}};
    } else if (!SameHeader(h, part_.header)) {
      failed = true;
      return;
    }
    if (part_.body.size() + f.body.size() > max_) {
      failed = true;
      return;
    }
    part_.body.insert(part_.body.end(), f.body.begin(), f.body.end());
    if (!more) {
      assembling_ = false;
      out.push_back(std::move(part_));
    }
  }

  std::deque<Frame> out;
  bool failed = false;

 private:
  size_t max_;
  bool assembling_ = false;
  Frame part_;
};

// A message the reader returned goes out through Send over `max_body` frames and
// must be read back unchanged.
void RoundTrip(const Frame& msg, size_t max_body, size_t max_message) {
  auto q = std::make_shared<Queue>();
  FragmentingChannel tx(std::make_unique<FakeChannel>(q, max_body), max_message);
  FragmentingChannel rx(std::make_unique<FakeChannel>(q, max_body), max_message);
  Check(tx.Send(msg.header, msg.body).ok());
  Frame back;
  Check(rx.Receive(back, Deadline::Passed()).ok());
  Check(SameFrame(back, msg) && q->empty());
}

struct Harness {
  Harness(size_t max_body, size_t max_message)
      : q(std::make_shared<Queue>()),
        model(max_message),
        max_body(max_body),
        max_message(max_message) {
    auto inner = std::make_unique<FakeChannel>(q, max_body);
    fake = inner.get();
    reader = std::make_unique<FragmentingChannel>(std::move(inner), max_message);
  }

  // A real inner channel never delivers a frame past its max_body(): drop those.
  void Push(Frame f) {
    if (f.body.size() > max_body) return;
    model.Feed(f);
    q->push_back(std::move(f));
  }

  void Drain() {
    for (;;) {
      Frame got;
      Status s = reader->Receive(got, Deadline::Passed());
      if (s.ok()) {
        Check(!failed && !model.out.empty() && SameFrame(got, model.out.front()));
        Check((got.header.flags & kFrameMore) == 0 && got.body.size() <= max_message);
        model.out.pop_front();
        RoundTrip(got, max_body, max_message);
      } else if (s.code() == err::kNotReady) {
        Check(!failed);
        if (q->empty()) return;
      } else {
        // Refused (kInvalidValue, inner closed) or, after that, closed for good.
        Check(model.failed && model.out.empty());
        Check(s.code() == (failed ? err::kDevicesUnavailable : err::kInvalidValue));
        Check(fake->closed);
        failed = true;
        return;
      }
    }
  }

  std::shared_ptr<Queue> q;
  FakeChannel* fake;
  std::unique_ptr<FragmentingChannel> reader;
  Model model;
  size_t max_body, max_message;
  bool failed = false;
};

// The gRPC transport's carriage: parse, check it re-serializes to an equal message,
// convert as SessionCore::OnRead does.
std::optional<Frame> ParseGrpcFrame(std::span<const std::byte> wire) {
  remora::v1::Frame msg;
  if (!msg.ParseFromArray(wire.data(), static_cast<int>(wire.size()))) return std::nullopt;
  remora::v1::Frame again;
  Check(again.ParseFromString(msg.SerializeAsString()));
  Check(again.call() == msg.call() && again.flags() == msg.flags() && again.seq() == msg.seq() &&
        again.body() == msg.body());
  Frame f{{msg.call(), msg.flags(), msg.seq()}, {}};
  const auto* p = reinterpret_cast<const std::byte*>(msg.body().data());
  f.body.assign(p, p + msg.body().size());
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);  // UTF-8 noise
  (void)quiet;
  Input in(data, size);
  const uint8_t config = in.Take<uint8_t>();
  // Frames of 1..241 bytes, messages of 256 B..4 MiB (never below one frame, as in Remora).
  Harness h(1 + (config & 15) * 16, size_t{256} << (config >> 4));

  for (int ops = 0; ops < 4096 && !in.empty(); ++ops) {
    const uint8_t op = in.Take<uint8_t>();
    switch (op & 3) {
      case 0:
        if (auto f = ParseGrpcFrame(in.Bytes(in.Take<uint16_t>()))) h.Push(std::move(*f));
        break;
      case 1: {
        // Few distinct calls and seqs, so that consecutive fragments often agree.
        Frame f;
        f.header.call = in.Take<uint8_t>() % 4;
        f.header.seq = in.Take<uint8_t>() % 4;
        f.header.flags =
            ((op >> 2) & 1 ? kFrameMore : 0) | ((op >> 3) & 1 ? in.Take<uint32_t>() : 0);
        auto body = in.Bytes(in.Take<uint8_t>());
        f.body.assign(body.begin(), body.end());
        h.Push(std::move(f));
        break;
      }
      case 2:
        h.q->push_back(std::nullopt);
        break;
      case 3:
        h.Drain();
        break;
    }
  }
  h.Drain();
  if (!h.failed) Check(h.model.out.empty() && !h.model.failed);
  return 0;
}
