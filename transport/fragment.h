// transport/fragment.h - messages larger than one frame, over any Channel.
//
// A transport's frames are bounded (max_body: about 128 KiB on shm, 4 MiB on
// gRPC), but some calls carry more: a fat binary built for nine architectures,
// a module registration listing hundreds of Thrust kernels, or its reply.
// FragmentingChannel wraps a Channel so that Send takes a body of up to
// kMaxMessageBytes: a body past the inner max_body() travels as consecutive
// frames with the same header, each but the last flagged kFrameMore, and
// Receive hands back the reassembled body. Bodies that fit go as one frame,
// untouched, so the hot path costs one flag test.
//
//   auto ch = std::make_unique<FragmentingChannel>(std::move(inner));
//   RETURN_IF_ERROR(ch->Send({.call = 96, .seq = 7}, three_megabytes));
//
// The peer is untrusted: fragments whose header changes mid-message, or a
// message past the limit (kMaxMessageBytes by default), fail Receive with kInvalidValue and close
// the channel (the stream can no longer be parsed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/channel.h"

namespace remora::transport {

// FrameHeader.flags bit: the body continues in the sender's next frame.
inline constexpr uint32_t kFrameMore = 1u << 31;
// The largest reassembled body either side accepts.
inline constexpr size_t kMaxMessageBytes = size_t{1} << 30;

class FragmentingChannel final : public Channel {
 public:
  // `max_message` bounds a reassembled body (both directions).
  explicit FragmentingChannel(std::unique_ptr<Channel> inner,
                              size_t max_message = kMaxMessageBytes);

  // Sends `body` as one frame if it fits the inner channel, else as fragments.
  // Errors: kInvalidValue if body is larger than max_message or header
  // already has kFrameMore set; the inner channel's errors.
  Status Send(const FrameHeader& header, std::span<const std::byte> body) override;
  // Returns the next whole message. A deadline that passes mid-message (a passed
  // one included) keeps the fragments read so far here, returns kNotReady with
  // `out` unspecified, and the next call continues the message. Errors: the inner
  // channel's; kInvalidValue for an inconsistent or oversized fragment sequence.
  Status Receive(Frame& out, Deadline deadline) override;
  // The inner channel's frame limit: callers that stream bulk data chunk to it.
  size_t max_body() const override { return inner_->max_body(); }
  Arena* arena() override { return inner_->arena(); }
  bool PeerAlive() const override { return inner_->PeerAlive(); }
  void Close() override { inner_->Close(); }
  std::string Describe() const override { return inner_->Describe(); }
  // The inner channel's. A message whose first fragments were read waits for the rest
  // like any frame: Arm is true while the inner channel holds no further fragment.
  int wake_fd() const override { return inner_->wake_fd(); }
  bool Arm() override { return inner_->Arm(); }
  void Disarm() override { inner_->Disarm(); }
  void SetReceiveSpin(std::chrono::nanoseconds spin, bool yield) override {
    inner_->SetReceiveSpin(spin, yield);
  }
  void SetSendTimeout(std::chrono::nanoseconds timeout) override {
    inner_->SetSendTimeout(timeout);
  }

 private:
  std::unique_ptr<Channel> inner_;
  const size_t max_message_;
  Frame part_;                    // the fragment being read
  FrameHeader pending_header_{};  // header of the message being reassembled
  std::vector<std::byte> pending_;
  bool assembling_ = false;
};

}  // namespace remora::transport
