// proto/reply.h - a reply frame's body, written and read in one place.
//
// A SYNC call's reply carries the call's result code, a message saying why it failed, a
// deferred failure of earlier stream-ordered work (reported by the next SYNC reply), the
// device's printf output, and the call's reply message. A request sent in fixed layout
// (proto/fixed.h) is answered in fixed layout; any other with a v1::Reply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proto/fixed.h"

namespace google::protobuf {
class Message;
}

namespace remora {

namespace v1 {
class Reply;
}

struct ReplyParts {
  int32_t code = 0;
  std::string_view message;  // why `code` (empty on success)
  int32_t deferred_code = 0;
  std::string_view deferred_message;
  std::string_view output;                            // device printf text
  const google::protobuf::Message* result = nullptr;  // the call's reply (on success)
};

// Replaces `out` with the body of a reply: fixed layout when `fixed_layout`, else a v1::Reply
// built in `scratch` (reused by the caller so its strings keep their capacity), the result
// serialized in place as its last field rather than copied. False if serializing failed.
bool EncodeReply(bool fixed_layout, const ReplyParts& parts, v1::Reply& scratch, std::string& out);

// Reads a reply body of either form (`fixed_layout`: the frame's flag). Views point into
// `body`, or into `storage` for a v1::Reply. False if it is malformed.
bool DecodeReply(bool fixed_layout, std::span<const std::byte> body, v1::Reply& storage,
                 fixed::ReplyView& view);

}  // namespace remora
