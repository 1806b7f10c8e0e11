// tests/fuzz/make_seeds.cc - writes the structured seed corpora: shm_ring, frame, request.
//
//   fuzz_make_seeds <corpus dir>     (make_seeds.sh runs it; the output is committed)
//
// Each seed is a valid script or body in the format its target's file head describes,
// reaching one path the target is after: records round-tripping and wrapping the ring,
// forged headers and padding, fragment sequences, interrupted ones and deadlines, and
// for every calls.def row its request and reply, in protobuf and in fixed layout.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include "proto/calls.h"
#include "remora/v1/session.pb.h"
#include "remora/v1/transport.pb.h"
#include "transport/fragment.h"
#include "transport/shm/spsc_ring.h"
#if __has_include("proto/fixed.h")
#include "proto/fixed.h"
#define REMORA_FUZZ_HAVE_FIXED 1
#endif

namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
namespace v1 = remora::v1;

// Builds one script: bytes appended little-endian.
struct Script {
  std::string s;
  template <class T>
  Script& Put(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Script& Op(uint8_t op) { return Put(op); }
  Script& Raw(std::string_view b) {
    s.append(b);
    return *this;
  }
};

void Write(const fs::path& dir, const std::string& name, std::string_view bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(bytes.data(), bytes.size());
}

// ---- shm_ring: opcodes 0 scribble, 1 forge, 2 trailer, 3 write, 4 read, 5 publish, 6 layout.
constexpr uint8_t kWrite = 3, kRead = 4, kReadPrefix = 11, kPublish = 5, kLayout = 6;
constexpr uint8_t kForge = 1, kTrailer = 2, kScribble = 0;

uint64_t Header(uint64_t length, uint32_t type) {
  return length | uint64_t{type} << 32;
}

void ShmRingSeeds(const fs::path& dir) {
  Script ping;
  for (int i = 0; i < 4; ++i) ping.Op(kWrite).Put<uint8_t>(i * 40).Op(kReadPrefix);
  ping.Op(kRead).Op(kPublish);
  Write(dir, "write_read", ping.s);

  Script wrap;  // enough traffic to wrap the 4 KiB ring several times, with padding
  for (int i = 0; i < 48; ++i) {
    wrap.Op(kWrite + 7 * (i % 3)).Put<uint8_t>(uint8_t(37 * i));
    if (i % 2) wrap.Op(kReadPrefix).Op(kRead).Op(kPublish);
  }
  wrap.Op(kRead).Op(kPublish);
  Write(dir, "wrap", wrap.s);

  Script full;  // the producer runs out of room, then the consumer frees it
  for (int i = 0; i < 24; ++i) full.Op(kWrite).Put<uint8_t>(255);
  for (int i = 0; i < 24; ++i) full.Op(kRead);
  full.Op(kPublish).Op(kWrite).Put<uint8_t>(7).Op(kRead);
  Write(dir, "full", full.s);

  // A forged record: plausible, too long, type 0, padding at a bad and a good index.
  const uint64_t forged[] = {Header(8 + 16, 7), Header(1u << 20, 7), Header(24, 0),
                             Header(4096 - 64, remora::transport::shm::SpscRing::kPaddingType),
                             Header(4096, remora::transport::shm::SpscRing::kPaddingType)};
  int n = 0;
  for (uint64_t h : forged) {
    Script s;
    s.Op(kWrite).Put<uint8_t>(4).Op(kForge).Put<uint16_t>(n == 3 ? 8 : 0).Put(h);
    s.Op(kReadPrefix).Op(kRead).Op(kReadPrefix);
    Write(dir, "forged_" + std::to_string(n++), s.s);
  }
  Script torn;  // a record whose payload is overwritten after it was published
  torn.Op(kWrite).Put<uint8_t>(32).Op(kScribble).Put<uint16_t>(8).Put<uint8_t>(8).Raw("XXXXXXXX");
  torn.Op(kReadPrefix).Op(kRead);
  Write(dir, "torn", torn.s);

  Script head;  // the consumer's head in the trailer set to nonsense: the producer refuses
  head.Op(kWrite).Put<uint8_t>(1).Op(kRead).Op(kPublish);
  head.Op(kTrailer).Put<uint16_t>(128).Put<uint8_t>(8).Put<uint64_t>(~uint64_t{0});
  for (int i = 0; i < 20; ++i) head.Op(kWrite).Put<uint8_t>(200);
  head.Op(kRead);
  Write(dir, "bad_head", head.s);

  Script layout;
  layout.Op(kLayout).Put<uint8_t>(7).Put<uint64_t>(20).Put<uint64_t>(20).Put<uint64_t>(30);
  layout.Op(kLayout).Put<uint8_t>(0).Put<uint64_t>(4096).Put<uint64_t>(1u << 20).Put<uint64_t>(
      12345);
  Write(dir, "layout", layout.s);
}

// ---- frame: opcodes 0 protobuf frame, 1 fields (|4 kFrameMore, |8 flags), 2 deadline, 3 drain.
constexpr uint8_t kPbFrame = 0, kFields = 1, kMore = 4, kDeadline = 2, kDrain = 3;

Script& Fields(Script& s, bool more, uint8_t call, uint8_t seq, std::string_view body) {
  s.Op(kFields | (more ? kMore : 0)).Put(call).Put(seq).Put<uint8_t>(body.size()).Raw(body);
  return s;
}

void FrameSeeds(const fs::path& dir) {
  const uint8_t config = 0x12;  // 33-byte frames, 512-byte messages
  v1::Frame f;
  f.set_call(33);
  f.set_seq(7);
  f.set_body(std::string(20, 'b'));
  Script grpc;
  grpc.Put(config);
  const std::string wire = f.SerializeAsString();
  grpc.Op(kPbFrame).Put<uint16_t>(wire.size()).Raw(wire).Op(kDrain);
  f.set_flags(remora::transport::kFrameMore);  // fragments carried by gRPC frames
  const std::string part = f.SerializeAsString();
  f.set_flags(0);
  grpc.Op(kPbFrame).Put<uint16_t>(part.size()).Raw(part);
  grpc.Op(kPbFrame).Put<uint16_t>(wire.size()).Raw(wire).Op(kDrain);
  Write(dir, "grpc_frames", grpc.s);

  Script frag;
  frag.Put(config);
  Fields(frag, true, 1, 2, std::string(33, 'x'));
  Fields(frag, true, 1, 2, std::string(33, 'y'));
  Fields(frag, false, 1, 2, "end");
  Fields(frag.Op(kDrain), false, 3, 0, "single").Op(kDrain);
  Write(dir, "fragments", frag.s);

  Script interrupted;  // a fragment of another call arrives mid-message
  interrupted.Put(config);
  Fields(interrupted, true, 1, 2, "first");
  Fields(interrupted, false, 2, 2, "other").Op(kDrain);
  Fields(interrupted, false, 1, 2, "late").Op(kDrain);
  Write(dir, "interrupted", interrupted.s);

  Script deadline;  // the deadline passes between fragments
  deadline.Put(config);
  Fields(deadline, true, 0, 1, "part");
  deadline.Op(kDeadline).Op(kDrain);
  Fields(deadline, false, 0, 1, "rest").Op(kDrain);
  Write(dir, "deadline", deadline.s);

  Script oversize;  // more fragments than the 256-byte message limit allows
  oversize.Put<uint8_t>(0x02);
  for (int i = 0; i < 10; ++i) Fields(oversize, true, 1, 1, std::string(32, 'z'));
  Fields(oversize, false, 1, 1, "z").Op(kDrain);
  Write(dir, "oversize", oversize.s);
}

// ---- request: one byte of row index, then a body.

// Sets every field of `m` to a value other than its default (depth-limited).
void Fill(pb::Message& m, int depth) {
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->containing_oneof() && f->index_in_oneof() != 0) continue;
    const int copies = f->is_repeated() ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      using T = pb::FieldDescriptor;
      switch (f->cpp_type()) {
        case T::CPPTYPE_INT32:
          f->is_repeated() ? r->AddInt32(&m, f, -3 + c) : r->SetInt32(&m, f, 2);
          break;
        case T::CPPTYPE_INT64:
          f->is_repeated() ? r->AddInt64(&m, f, 1 + c) : r->SetInt64(&m, f, 4242);
          break;
        case T::CPPTYPE_UINT32:
          f->is_repeated() ? r->AddUInt32(&m, f, 3 + c) : r->SetUInt32(&m, f, 256);
          break;
        case T::CPPTYPE_UINT64:
          f->is_repeated() ? r->AddUInt64(&m, f, 0x7f00'0000'1000 + c)
                           : r->SetUInt64(&m, f, 0x7f00'0000'1000);
          break;
        case T::CPPTYPE_DOUBLE:
          f->is_repeated() ? r->AddDouble(&m, f, 0.25) : r->SetDouble(&m, f, 0.5);
          break;
        case T::CPPTYPE_FLOAT:
          f->is_repeated() ? r->AddFloat(&m, f, 1.5f) : r->SetFloat(&m, f, 2.5f);
          break;
        case T::CPPTYPE_BOOL:
          f->is_repeated() ? r->AddBool(&m, f, true) : r->SetBool(&m, f, true);
          break;
        case T::CPPTYPE_ENUM:
          f->is_repeated() ? r->AddEnumValue(&m, f, 1) : r->SetEnumValue(&m, f, 1);
          break;
        case T::CPPTYPE_STRING: {
          const std::string v = f->type() == T::TYPE_BYTES ? std::string("\x01\x00\xff", 3)
                                                           : std::string("_Z6kernelPf");
          f->is_repeated() ? r->AddString(&m, f, v) : r->SetString(&m, f, v);
          break;
        }
        case T::CPPTYPE_MESSAGE:
          if (depth > 0)
            Fill(f->is_repeated() ? *r->AddMessage(&m, f) : *r->MutableMessage(&m, f), depth - 1);
          break;
      }
    }
  }
}

template <class Req, class Rep>
void RequestRow(const fs::path& dir, uint8_t row, std::string_view name) {
  const std::string index(1, char(row));
  Req req;
  Rep rep;
  Fill(req, 2);
  Fill(rep, 2);
  const bool has_request = req.GetDescriptor()->field_count() > 0 || row == 0;
  if (has_request) Write(dir, std::string(name) + ".request", index + req.SerializeAsString());
  if (rep.GetDescriptor()->field_count() > 0)
    Write(dir, std::string(name) + ".reply", index + rep.SerializeAsString());
#ifdef REMORA_FUZZ_HAVE_FIXED
  if constexpr (remora::fixed::kHasLayout<Req>) {
    std::string body;
    remora::fixed::Encode(req, body);
    if (has_request) Write(dir, std::string(name) + ".fixed", index + body);
  }
  remora::fixed::FixedReplyHead head{
      .code = 1, .deferred_code = 0, .message_bytes = 5, .output_bytes = 3};
  Script reply;
  reply.Raw(index).Put(head).Raw("why??").Raw("out").Raw(rep.SerializeAsString());
  if (has_request || rep.GetDescriptor()->field_count() > 0)
    Write(dir, std::string(name) + ".fixed_reply", reply.s);
#endif
}

void RequestSeeds(const fs::path& dir) {
  uint8_t row = 0;
#define REMORA_CALL(id, Name, Class, Request, Reply) \
  RequestRow<v1::Request, v1::Reply>(dir, row++, #Name);
#include "proto/calls.def"
  v1::Reply envelope;
  Fill(envelope, 1);
  Write(dir, "envelope.reply", std::string(1, char(33)) + envelope.SerializeAsString());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  ShmRingSeeds(root / "shm_ring");
  FrameSeeds(root / "frame");
  RequestSeeds(root / "request");
  return 0;
}
