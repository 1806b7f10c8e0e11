// The fixed-layout fast path (proto/fixed.h): every field of every message
// with a layout survives a round trip, and bodies of the wrong shape are refused.
#include "proto/fixed.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace remora {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// Sets every scalar and bytes field of `m` (not submessages) to random values.
void FillRandom(Message& m, std::mt19937_64& rng) {
  const auto* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_UINT64:
        r->SetUInt64(&m, f, rng());
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        r->SetUInt32(&m, f, static_cast<uint32_t>(rng()));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        r->SetBool(&m, f, rng() & 1);
        break;
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string s(rng() % 100, '\0');
        for (char& c : s) c = static_cast<char>(rng());
        r->SetString(&m, f, s);
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;  // set by the test that knows it
      default:
        FAIL() << "field type of " << f->full_name() << " has no fixed layout";
    }
  }
}

template <class Msg>
class FixedLayoutTest : public testing::Test {};

using Messages =
    testing::Types<v1::Empty, v1::StreamRequest, v1::EventRequest, v1::EventRecordRequest,
                   v1::StreamWaitEventRequest, v1::LaunchRequest, v1::MemcpyDtoHRequest,
                   v1::MemcpyDtoDRequest, v1::MemsetRequest, v1::MemcpyHtoDRequest>;
TYPED_TEST_SUITE(FixedLayoutTest, Messages);

// A field added to the schema but not to the layout fails here.
TYPED_TEST(FixedLayoutTest, EveryFieldRoundTrips) {
  static_assert(fixed::kHasLayout<TypeParam>);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    TypeParam in;
    FillRandom(in, rng);
    if constexpr (std::is_same_v<TypeParam, v1::MemcpyHtoDRequest>) {
      if (i % 2)
        in.mutable_src()->set_arena_offset(rng());
      else
        in.mutable_src()->set_data(std::string(rng() % 50, 'x'));
    }
    std::string body;
    fixed::Encode(in, body);
    TypeParam out;
    ASSERT_TRUE(fixed::Decode(Bytes(body), out)) << in.ShortDebugString();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(in, out))
        << in.ShortDebugString() << " came back as " << out.ShortDebugString();
  }
}

TEST(FixedLayout, WrongLengthsAreRefused) {
  v1::EventRecordRequest req;
  req.set_event(1);
  req.set_stream(2);
  std::string body;
  fixed::Encode(req, body);
  ASSERT_EQ(body.size(), 16u);
  v1::EventRecordRequest out;
  EXPECT_FALSE(fixed::Decode(Bytes(body.substr(0, 15)), out));
  EXPECT_FALSE(fixed::Decode(Bytes(body + "x"), out));
  EXPECT_FALSE(fixed::Decode(Bytes(""), out));
  v1::Empty empty;
  EXPECT_FALSE(fixed::Decode(Bytes("x"), empty));
  // A launch's parameters run to the end; its fixed part must still be whole.
  v1::LaunchRequest launch;
  EXPECT_FALSE(fixed::Decode(Bytes(std::string(56, '\0')), launch));
  EXPECT_TRUE(fixed::Decode(Bytes(std::string(57, '\0')), launch));
  EXPECT_TRUE(launch.params().empty());
}

// The server decodes a launch in place: the same fields as the message, the parameters a view
// of the body (no copy); a protobuf-decoded request views the same way.
TEST(FixedLayout, ALaunchViewDecodesInPlaceAsTheMessageDoes) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 50; ++i) {
    v1::LaunchRequest req;
    FillRandom(req, rng);
    std::string body;
    fixed::Encode(req, body);
    fixed::LaunchView view;
    ASSERT_TRUE(fixed::Decode(Bytes(body), view));
    for (const fixed::LaunchView& v : {view, fixed::LaunchView::Of(req)}) {
      EXPECT_EQ(v.kernel(), req.kernel());
      EXPECT_EQ(v.stream(), req.stream());
      EXPECT_EQ(v.grid_x(), req.grid_x());
      EXPECT_EQ(v.grid_y(), req.grid_y());
      EXPECT_EQ(v.grid_z(), req.grid_z());
      EXPECT_EQ(v.block_x(), req.block_x());
      EXPECT_EQ(v.block_y(), req.block_y());
      EXPECT_EQ(v.block_z(), req.block_z());
      EXPECT_EQ(v.shared_bytes(), req.shared_bytes());
      EXPECT_EQ(v.cooperative(), req.cooperative());
      EXPECT_EQ(v.params(), req.params());
    }
    EXPECT_EQ(view.params().data() + view.params().size(), body.data() + body.size());
  }
  fixed::LaunchView view;
  EXPECT_FALSE(fixed::Decode(Bytes(std::string(44, '\0')), view));
}

TEST(FixedLayout, BoolsAreZeroOrOne) {
  v1::MemcpyDtoDRequest req;
  req.set_async(true);
  std::string body;
  fixed::Encode(req, body);
  ASSERT_EQ(body.back(), '\1');
  body.back() = '\2';
  v1::MemcpyDtoDRequest out;
  EXPECT_FALSE(fixed::Decode(Bytes(body), out));
}

TEST(FixedLayout, ArenaSourceTakesNoInlineBytes) {
  v1::MemcpyHtoDRequest req;
  req.mutable_src()->set_arena_offset(4096);
  std::string body;
  fixed::Encode(req, body);
  v1::MemcpyHtoDRequest out;
  ASSERT_TRUE(fixed::Decode(Bytes(body), out));
  EXPECT_TRUE(out.src().has_arena_offset());
  EXPECT_FALSE(fixed::Decode(Bytes(body + "tail"), out));
  // An inline source carries no offset: one body per message (found by fuzzing).
  req.mutable_src()->set_data("xy");
  fixed::Encode(req, body);
  ASSERT_TRUE(fixed::Decode(Bytes(body), out));
  body[30] = '\1';  // the offset's low byte, after dst, size, stream, slot, async, in_arena
  EXPECT_FALSE(fixed::Decode(Bytes(body), out));
}

TEST(FixedLayout, RepliesParseOnlyWhenTheirLengthsAddUp) {
  fixed::FixedReplyHead head;
  head.code = 2;
  head.deferred_code = 700;
  head.message_bytes = 3;
  head.output_bytes = 2;
  std::string body(reinterpret_cast<const char*>(&head), sizeof head);
  body += "whyhiRESULT";
  fixed::ReplyView v;
  ASSERT_TRUE(fixed::ParseReply(Bytes(body), v));
  EXPECT_EQ(v.code, 2);
  EXPECT_EQ(v.deferred_code, 700);
  EXPECT_EQ(v.message, "why");
  EXPECT_EQ(v.output, "hi");
  EXPECT_EQ(v.result, "RESULT");
  std::string encoded;  // the encoder writes what the parser reads
  std::memcpy(fixed::EncodeReply(2, 700, "why", "hi", 6, encoded), "RESULT", 6);
  EXPECT_EQ(encoded, body);
  EXPECT_FALSE(fixed::ParseReply(Bytes(body.substr(0, sizeof head + 4)), v));
  EXPECT_FALSE(fixed::ParseReply(Bytes(body.substr(0, 15)), v));
  head.message_bytes = 0xFFFFFFFF;
  head.output_bytes = 0xFFFFFFFF;
  std::string huge(reinterpret_cast<const char*>(&head), sizeof head);
  EXPECT_FALSE(fixed::ParseReply(Bytes(huge + "x"), v));
}

}  // namespace
}  // namespace remora
