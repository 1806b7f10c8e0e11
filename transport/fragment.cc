// transport/fragment.cc - splitting and reassembling messages larger than a frame.
#include "transport/fragment.h"

#include <utility>

namespace remora::transport {

FragmentingChannel::FragmentingChannel(std::unique_ptr<Channel> inner, size_t max_message)
    : inner_(std::move(inner)), max_message_(max_message) {}

Status FragmentingChannel::Send(const FrameHeader& header, std::span<const std::byte> body) {
  if (header.flags & kFrameMore) [[unlikely]]
    return Error(err::kInvalidValue, "frame flag kFrameMore is reserved for fragmentation");
  const size_t limit = inner_->max_body();
  if (body.size() <= limit) [[likely]]
    return inner_->Send(header, body);
  if (body.size() > max_message_)
    return Error(err::kInvalidValue, "message of " + std::to_string(body.size()) +
                                         " bytes exceeds the " + std::to_string(max_message_) +
                                         "-byte limit");
  FrameHeader part = header;
  part.flags |= kFrameMore;
  while (body.size() > limit) {
    RETURN_IF_ERROR(inner_->Send(part, body.first(limit)));
    body = body.subspan(limit);
  }
  return inner_->Send(header, body);
}

Status FragmentingChannel::Receive(Frame& out, Deadline deadline) {
  for (;;) {
    Frame& f = assembling_ ? part_ : out;
    RETURN_IF_ERROR(inner_->Receive(f, deadline));
    const bool more = (f.header.flags & kFrameMore) != 0;
    if (!assembling_ && !more) [[likely]]
      return OkStatus();

    FrameHeader h = f.header;
    h.flags &= ~kFrameMore;
    if (!assembling_) {
      assembling_ = true;
      pending_header_ = h;
      pending_.clear();
    } else if (h.call != pending_header_.call || h.seq != pending_header_.seq ||
               h.flags != pending_header_.flags) {
      inner_->Close();
      return Error(err::kInvalidValue, "a fragment of call " + std::to_string(h.call) +
                                           " interrupted a message of call " +
                                           std::to_string(pending_header_.call));
    }
    if (f.body.size() > max_message_ - pending_.size()) {
      inner_->Close();
      return Error(err::kInvalidValue,
                   "fragmented message exceeds " + std::to_string(max_message_) + " bytes");
    }
    pending_.insert(pending_.end(), f.body.begin(), f.body.end());
    if (!more) {
      assembling_ = false;
      out.header = pending_header_;
      std::swap(out.body, pending_);
      return OkStatus();
    }
  }
}

}  // namespace remora::transport
