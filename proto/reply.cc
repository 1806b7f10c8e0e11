// proto/reply.cc - reply bodies in both forms (reply.h).
#include "proto/reply.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstring>

#include "remora/v1/session.pb.h"

namespace remora {

bool EncodeReply(bool fixed_layout, const ReplyParts& p, v1::Reply& reply, std::string& out) {
  const size_t n = p.result ? p.result->ByteSizeLong() : 0;
  if (fixed_layout) {
    // One message: the deferred failure's when there is one (it is what the call returns).
    const std::string_view message = p.deferred_code != 0 ? p.deferred_message : p.message;
    char* at = fixed::EncodeReply(p.code, p.deferred_code, message, p.output, n, out);
    if (n != 0) p.result->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(at));
    return true;
  }
  reply.Clear();
  reply.set_code(p.code);
  if (!p.message.empty()) reply.set_message(std::string(p.message));
  if (p.deferred_code != 0) {
    reply.set_deferred_code(p.deferred_code);
    reply.set_deferred_message(std::string(p.deferred_message));
  }
  if (!p.output.empty()) reply.set_device_output(std::string(p.output));
  if (!reply.SerializeToString(&out)) return false;
  if (n != 0) {
    // Reply's last field (bytes result = 6), written by hand: tag, length, message.
    namespace pb = google::protobuf;
    uint8_t head[1 + 10];
    uint8_t* end = pb::io::CodedOutputStream::WriteTagToArray(
        pb::internal::WireFormatLite::MakeTag(
            v1::Reply::kResultFieldNumber, pb::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED),
        head);
    end = pb::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(n), end);
    const size_t at = out.size(), head_bytes = static_cast<size_t>(end - head);
    out.resize(at + head_bytes + n);
    std::memcpy(out.data() + at, head, head_bytes);
    p.result->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data()) + at +
                                              head_bytes);
  }
  return true;
}

bool DecodeReply(bool fixed_layout, std::span<const std::byte> body, v1::Reply& parsed,
                 fixed::ReplyView& view) {
  if (fixed_layout) return fixed::ParseReply(body, view);
  if (!parsed.ParseFromArray(body.data(), static_cast<int>(body.size()))) return false;
  view = {parsed.code(), parsed.deferred_code(),
          parsed.deferred_code() != 0 ? parsed.deferred_message() : parsed.message(),
          parsed.device_output(), parsed.result()};
  return true;
}

}  // namespace remora
