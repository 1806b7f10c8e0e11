// tests/fuzz/request_fuzz.cc - every calls.def row's decoders over untrusted bytes.
//
// The first input byte picks a calls.def row (modulo the row count); the rest is a frame
// body. It is decoded every way a peer's body is decoded:
//   - as the row's Request and Reply messages, and as the Reply envelope, in protobuf
//     form: a message that parses must re-serialize (deterministically) to bytes that
//     parse to the same serialization;
//   - where proto/fixed.h gives the Request a fixed layout, with fixed::Decode: a body it
//     accepts must re-encode to exactly the same bytes (the form has one encoding);
//   - as a fixed-layout reply (fixed::ParseReply): its three views must tile the body,
//     and its result parses as the row's Reply like the protobuf form's.
// A mismatch traps. Builds without proto/fixed.h skip the fixed-layout checks.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "proto/calls.h"
#include "remora/v1/session.pb.h"
#include "tests/fuzz/input.h"
#if __has_include("proto/fixed.h")
#include "proto/fixed.h"
#define REMORA_FUZZ_HAVE_FIXED 1
#endif

namespace {

namespace v1 = remora::v1;
using remora::fuzz::AsChars;
using remora::fuzz::Check;
using remora::fuzz::Input;
using Body = std::span<const std::byte>;

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    Check(m.SerializeToCodedStream(&coded));
  }
  return out;
}

// Parses `wire` as Msg; if it parses, checks that it survives a round trip.
template <class Msg>
void ProtobufRoundTrip(std::string_view wire) {
  Msg m;
  if (!m.ParseFromArray(wire.data(), static_cast<int>(wire.size()))) return;
  const std::string once = Deterministic(m);
  Msg again;
  Check(again.ParseFromString(once));
  Check(Deterministic(again) == once);
}

#ifdef REMORA_FUZZ_HAVE_FIXED
template <class Req>
void FixedRoundTrip(Body body) {
  if constexpr (remora::fixed::kHasLayout<Req>) {
    Req m;
    if (!remora::fixed::Decode(body, m)) return;
    std::string again;
    remora::fixed::Encode(m, again);
    Check(again == AsChars(body));  // one body per message
  }
}

template <class Rep>
void FixedReply(Body body) {
  remora::fixed::ReplyView v;
  if (!remora::fixed::ParseReply(body, v)) return;
  const char* base = reinterpret_cast<const char*>(body.data());
  Check(v.message.data() == base + sizeof(remora::fixed::FixedReplyHead));
  Check(v.output.data() == v.message.data() + v.message.size());
  Check(v.result.data() == v.output.data() + v.output.size());
  Check(v.result.data() + v.result.size() == base + body.size());
  ProtobufRoundTrip<Rep>(v.result);
}
#endif

template <class Req, class Rep>
void DecodeRow(Body body) {
  const std::string_view wire = AsChars(body);
  ProtobufRoundTrip<Req>(wire);
  ProtobufRoundTrip<Rep>(wire);
#ifdef REMORA_FUZZ_HAVE_FIXED
  FixedRoundTrip<Req>(body);
  FixedReply<Rep>(body);
#endif
}

using RowFn = void (*)(Body);
constexpr RowFn kRows[] = {
#define REMORA_CALL(id, Name, Class, Request, Reply) &DecodeRow<v1::Request, v1::Reply>,
#include "proto/calls.def"
};
static_assert(std::size(kRows) == std::size(remora::kCalls));

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);  // UTF-8 noise
  (void)quiet;
  Input in(data, size);
  const size_t row = in.Take<uint8_t>() % std::size(kRows);
  const Body body = in.Rest();
  kRows[row](body);
  ProtobufRoundTrip<v1::Reply>(AsChars(body));
  return 0;
}
