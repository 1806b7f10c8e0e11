// proto/fixed.h - the fixed-layout fast path: the hottest calls without protobuf.
//
// A frame whose header carries kFixedLayout holds, instead of the protobuf
// message calls.def names for it, that message's fixed-layout form: its fields
// in the order FixedLayout<Msg> lists them, each as its native little-endian
// bytes (bool as one byte, 0 or 1), then at most one variable-length tail (a
// kernel's parameters, inline copy bytes) running to the end of the body.
// Nothing is optional, nothing is skipped: a body of the wrong length is
// malformed. Only messages with a FixedLayout have this form; the stub uses it
// for them always, the server accepts both forms.
//
// The reply to a kFixedLayout request is kFixedLayout too: FixedReplyHead, then
// the message (why the call, or an earlier deferred one, failed), the device
// printf output, then the call's own reply message in protobuf form (empty for
// most hot calls). Protobuf stays the schema; this is only its envelope and the
// decoding of a few flat messages, done with loads instead of a parser.
//
//   std::string body;
//   fixed::Encode(req, body);                      // stub
//   if (!fixed::Decode(frame_body, req)) refuse;   // server
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "remora/v1/session.pb.h"

namespace remora::fixed {

static_assert(std::endian::native == std::endian::little, "the fixed layout is little-endian");

// FrameHeader.flags bit: the body is in fixed layout (transport flags use the top bits).
inline constexpr uint32_t kFixedLayout = 1u << 0;

// FixedLayout<Msg>::Fields(io, m) lists Msg's wire fields; messages without a
// specialization have no fixed form.
template <class Msg>
struct FixedLayout {
  static constexpr bool kDefined = false;
};
template <class Msg>
inline constexpr bool kHasLayout = FixedLayout<Msg>::kDefined;

// A scalar field `name` of type T, read with m.name() and written with m.set_name().
#define REMORA_FIXED(io, m, T, name)                    \
  do {                                                  \
    if constexpr (std::decay_t<decltype(io)>::kReads) { \
      T v_{};                                           \
      if (!(io).Take(v_)) return;                       \
      (m).set_##name(v_);                               \
    } else {                                            \
      (io).Put(static_cast<T>((m).name()));             \
    }                                                   \
  } while (0)
// The variable-length tail: the bytes field `name`, last in the layout.
#define REMORA_FIXED_TAIL(io, m, name)                  \
  do {                                                  \
    if constexpr (std::decay_t<decltype(io)>::kReads) { \
      std::string_view t_ = (io).Rest();                \
      (m).set_##name(t_.data(), t_.size());             \
    } else {                                            \
      (io).Append((m).name());                          \
    }                                                   \
  } while (0)

#define REMORA_FIXED_MESSAGE(Msg)          \
  template <>                              \
  struct FixedLayout<v1::Msg> {            \
    static constexpr bool kDefined = true; \
    template <class Io, class M>           \
    static void Fields(Io& io, M& m);      \
  };                                       \
  template <class Io, class M>             \
  void FixedLayout<v1::Msg>::Fields([[maybe_unused]] Io& io, [[maybe_unused]] M& m)

REMORA_FIXED_MESSAGE(Empty) {}
REMORA_FIXED_MESSAGE(StreamRequest) {
  REMORA_FIXED(io, m, uint64_t, stream);
}
REMORA_FIXED_MESSAGE(EventRequest) {
  REMORA_FIXED(io, m, uint64_t, event);
}
REMORA_FIXED_MESSAGE(EventRecordRequest) {
  REMORA_FIXED(io, m, uint64_t, event);
  REMORA_FIXED(io, m, uint64_t, stream);
}
REMORA_FIXED_MESSAGE(StreamWaitEventRequest) {
  REMORA_FIXED(io, m, uint64_t, stream);
  REMORA_FIXED(io, m, uint64_t, event);
  REMORA_FIXED(io, m, uint32_t, flags);
}
REMORA_FIXED_MESSAGE(LaunchRequest) {
  REMORA_FIXED(io, m, uint64_t, kernel);
  REMORA_FIXED(io, m, uint64_t, stream);
  REMORA_FIXED(io, m, uint32_t, grid_x);
  REMORA_FIXED(io, m, uint32_t, grid_y);
  REMORA_FIXED(io, m, uint32_t, grid_z);
  REMORA_FIXED(io, m, uint32_t, block_x);
  REMORA_FIXED(io, m, uint32_t, block_y);
  REMORA_FIXED(io, m, uint32_t, block_z);
  REMORA_FIXED(io, m, uint32_t, shared_bytes);
  REMORA_FIXED(io, m, bool, cooperative);
  REMORA_FIXED(io, m, uint32_t, cluster_x);
  REMORA_FIXED(io, m, uint32_t, cluster_y);
  REMORA_FIXED(io, m, uint32_t, cluster_z);
  REMORA_FIXED_TAIL(io, m, params);
}
// LaunchRequest decoded in place (the server's hot path): the same fields, the parameters
// a view of the body it was decoded from, valid while that is. Decode(body, view) fills it
// from a fixed-layout body; Of() views a protobuf-decoded request.
class LaunchView {
 public:
#define REMORA_VIEW_FIELD(T, name) \
  T name() const {                 \
    return name##_;                \
  }                                \
  void set_##name(T v) {           \
    name##_ = v;                   \
  }
  REMORA_VIEW_FIELD(uint64_t, kernel)
  REMORA_VIEW_FIELD(uint64_t, stream)
  REMORA_VIEW_FIELD(uint32_t, grid_x)
  REMORA_VIEW_FIELD(uint32_t, grid_y)
  REMORA_VIEW_FIELD(uint32_t, grid_z)
  REMORA_VIEW_FIELD(uint32_t, block_x)
  REMORA_VIEW_FIELD(uint32_t, block_y)
  REMORA_VIEW_FIELD(uint32_t, block_z)
  REMORA_VIEW_FIELD(uint32_t, shared_bytes)
  REMORA_VIEW_FIELD(bool, cooperative)
  REMORA_VIEW_FIELD(uint32_t, cluster_x)
  REMORA_VIEW_FIELD(uint32_t, cluster_y)
  REMORA_VIEW_FIELD(uint32_t, cluster_z)
#undef REMORA_VIEW_FIELD
  std::string_view params() const {
    return params_;
  }
  void set_params(const char* p, size_t n) {
    params_ = std::string_view(p, n);
  }
  void Clear() {
    *this = LaunchView();
  }

  static LaunchView Of(const v1::LaunchRequest& r) {
    LaunchView v;
    v.kernel_ = r.kernel(), v.stream_ = r.stream();
    v.grid_x_ = r.grid_x(), v.grid_y_ = r.grid_y(), v.grid_z_ = r.grid_z();
    v.block_x_ = r.block_x(), v.block_y_ = r.block_y(), v.block_z_ = r.block_z();
    v.shared_bytes_ = r.shared_bytes();
    v.cooperative_ = r.cooperative();
    v.cluster_x_ = r.cluster_x(), v.cluster_y_ = r.cluster_y(), v.cluster_z_ = r.cluster_z();
    v.params_ = r.params();
    return v;
  }

 private:
  uint64_t kernel_ = 0, stream_ = 0;
  uint32_t grid_x_ = 0, grid_y_ = 0, grid_z_ = 0, block_x_ = 0, block_y_ = 0, block_z_ = 0;
  uint32_t shared_bytes_ = 0;
  bool cooperative_ = false;
  uint32_t cluster_x_ = 0, cluster_y_ = 0, cluster_z_ = 0;
  std::string_view params_;
};
template <>
struct FixedLayout<LaunchView> : FixedLayout<v1::LaunchRequest> {};

// How the server's handler for Msg takes its request: decoded in place where a view exists.
template <class Msg>
struct HandlerRequest {
  using type = Msg;
};
template <>
struct HandlerRequest<v1::LaunchRequest> {
  using type = LaunchView;
};

REMORA_FIXED_MESSAGE(MemcpyDtoHRequest) {
  REMORA_FIXED(io, m, uint64_t, src);
  REMORA_FIXED(io, m, uint64_t, size);
  REMORA_FIXED(io, m, uint64_t, stream);
  REMORA_FIXED(io, m, uint64_t, dst_arena_offset);
  REMORA_FIXED(io, m, bool, async);
  REMORA_FIXED(io, m, bool, to_arena);
}
REMORA_FIXED_MESSAGE(MemcpyDtoDRequest) {
  REMORA_FIXED(io, m, uint64_t, dst);
  REMORA_FIXED(io, m, uint64_t, src);
  REMORA_FIXED(io, m, uint64_t, size);
  REMORA_FIXED(io, m, uint64_t, stream);
  REMORA_FIXED(io, m, bool, async);
}
REMORA_FIXED_MESSAGE(MemsetRequest) {
  REMORA_FIXED(io, m, uint64_t, dst);
  REMORA_FIXED(io, m, uint64_t, size);
  REMORA_FIXED(io, m, uint64_t, stream);
  REMORA_FIXED(io, m, uint32_t, value);
  REMORA_FIXED(io, m, bool, async);
}
// The source is an arena offset (in_arena 1) or the bytes inline (the tail).
REMORA_FIXED_MESSAGE(MemcpyHtoDRequest) {
  REMORA_FIXED(io, m, uint64_t, dst);
  REMORA_FIXED(io, m, uint64_t, size);
  REMORA_FIXED(io, m, uint64_t, stream);
  REMORA_FIXED(io, m, uint32_t, staging_slot);
  REMORA_FIXED(io, m, bool, async);
  if constexpr (std::decay_t<decltype(io)>::kReads) {
    bool in_arena = false;
    uint64_t offset = 0;
    if (!io.Take(in_arena) || !io.Take(offset)) return;
    if (in_arena) {
      m.mutable_src()->set_arena_offset(offset);
      if (!io.Rest().empty()) io.Fail();
    } else if (offset != 0) {
      io.Fail();  // one body per message: an inline source has no offset
    } else {
      std::string_view t = io.Rest();
      m.mutable_src()->set_data(t.data(), t.size());
    }
  } else {
    io.Put(m.src().has_arena_offset());
    io.Put(static_cast<uint64_t>(m.src().arena_offset()));
    if (!m.src().has_arena_offset()) io.Append(m.src().data());
  }
}

#undef REMORA_FIXED_MESSAGE
#undef REMORA_FIXED_TAIL
#undef REMORA_FIXED

namespace internal {

struct Writer {
  static constexpr bool kReads = false;
  std::string& out;
  template <class T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if constexpr (std::is_same_v<T, bool>) {
      out.push_back(v ? '\1' : '\0');
    } else {
      const size_t at = out.size();
      out.resize(at + sizeof v);
      std::memcpy(out.data() + at, &v, sizeof v);
    }
  }
  void Append(std::string_view b) { out.append(b); }
};

struct Reader {
  static constexpr bool kReads = true;
  std::span<const std::byte> in;
  bool ok = true;
  template <class T>
  bool Take(T& v) {
    if (!ok || in.size() < (std::is_same_v<T, bool> ? 1 : sizeof v)) return ok = false;
    if constexpr (std::is_same_v<T, bool>) {
      const auto b = static_cast<uint8_t>(in[0]);
      if (b > 1) return ok = false;
      v = b == 1;
      in = in.subspan(1);
    } else {
      std::memcpy(&v, in.data(), sizeof v);
      in = in.subspan(sizeof v);
    }
    return true;
  }
  std::string_view Rest() {
    std::string_view r(reinterpret_cast<const char*>(in.data()), in.size());
    in = {};
    return r;
  }
  void Fail() { ok = false; }
};

}  // namespace internal

// Replaces `out` with `m` in fixed layout. REQUIRES: kHasLayout<Msg>.
template <class Msg>
void Encode(const Msg& m, std::string& out) {
  out.clear();
  internal::Writer w{out};
  FixedLayout<Msg>::Fields(w, m);
}

// Fills `m` (cleared first) from a fixed-layout body. False if the body is
// short, long, or holds a bool that is neither 0 nor 1.
template <class Msg>
bool Decode(std::span<const std::byte> body, Msg& m) {
  m.Clear();
  internal::Reader r{body};
  FixedLayout<Msg>::Fields(r, m);
  return r.ok && r.in.empty();
}

// The head of a fixed-layout reply; the three byte strings follow it.
struct FixedReplyHead {
  int32_t code = 0;            // cudaError_t of this call
  int32_t deferred_code = 0;   // an earlier stream-ordered call's failure, reported now
  uint32_t message_bytes = 0;  // why: of the deferred failure if there is one, else this call's
  uint32_t output_bytes = 0;   // device printf text produced since the last reply
};
static_assert(sizeof(FixedReplyHead) == 16);

// A reply in either form, as views into the frame (or the parsed Reply).
struct ReplyView {
  int32_t code = 0;
  int32_t deferred_code = 0;
  std::string_view message;
  std::string_view output;
  std::string_view result;  // the call's reply message, protobuf-serialized
};

// Replaces `out` with a fixed-layout reply: the head, `message`, `output`, and
// room for `result_bytes` of the result (protobuf), whose start it returns.
inline char* EncodeReply(int32_t code, int32_t deferred_code, std::string_view message,
                         std::string_view output, size_t result_bytes, std::string& out) {
  FixedReplyHead head;
  head.code = code;
  head.deferred_code = deferred_code;
  head.message_bytes = static_cast<uint32_t>(message.size());
  head.output_bytes = static_cast<uint32_t>(output.size());
  out.resize(sizeof head + message.size() + output.size() + result_bytes);
  char* p = out.data();
  std::memcpy(p, &head, sizeof head);
  p += sizeof head;
  // An empty view may have no data pointer, which memcpy must not be given.
  if (!message.empty()) std::memcpy(p, message.data(), message.size());
  p += message.size();
  if (!output.empty()) std::memcpy(p, output.data(), output.size());
  return p + output.size();
}

// Parses a fixed-layout reply body. False if its lengths do not add up.
inline bool ParseReply(std::span<const std::byte> body, ReplyView& v) {
  FixedReplyHead h;
  if (body.size() < sizeof h) return false;
  std::memcpy(&h, body.data(), sizeof h);
  const uint64_t rest = body.size() - sizeof h;
  if (uint64_t{h.message_bytes} + h.output_bytes > rest) return false;
  const char* p = reinterpret_cast<const char*>(body.data()) + sizeof h;
  v.code = h.code;
  v.deferred_code = h.deferred_code;
  v.message = {p, h.message_bytes};
  v.output = {p + h.message_bytes, h.output_bytes};
  v.result = {p + h.message_bytes + h.output_bytes,
              static_cast<size_t>(rest - h.message_bytes - h.output_bytes)};
  return true;
}

}  // namespace remora::fixed
