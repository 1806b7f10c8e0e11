// server/dispatch.cc - decode and dispatch, generated from calls.def.
//
// Each frame's `call` indexes a table built at compile time from calls.def; the
// entry parses the request message, runs Session::On<Name> and hands the result
// to Session::Finish. A row without a handler does not compile. Rows the stub
// answers itself (LOCAL), server notifications (NOTIFY) and a second Hello get
// a refusal here rather than a missing entry.
#include <array>
#include <type_traits>

#include "proto/fixed.h"

#include "server/session.h"

namespace remora::server {
namespace {

using Handler = void (*)(Session&, const transport::Frame&);

struct Entry {
  Handler fn = nullptr;
};

// Decodes the request in whichever form the frame says (protobuf, or the fixed
// layout for the messages that have one: proto/fixed.h).
template <typename Req>
bool Decode(const transport::Frame& f, Req& req) {
  if (f.header.flags & fixed::kFixedLayout) {
    if constexpr (fixed::kHasLayout<Req>)
      return fixed::Decode(f.body, req);
    else
      return false;
  }
  return req.ParseFromArray(f.body.data(), static_cast<int>(f.body.size()));
}

// A request the handler takes in place (fixed::HandlerRequest): a view of the frame's body,
// or of the protobuf form decoded into `msg`.
template <typename Msg, typename View>
bool DecodeView(const transport::Frame& f, Msg& msg, View& view) {
  if (f.header.flags & fixed::kFixedLayout) return fixed::Decode(f.body, view);
  if (!Decode(f, msg)) return false;
  view = View::Of(msg);
  return true;
}

template <CallId Id, typename Msg, typename Rep, CallClass C>
void Handle(Session& s, const transport::Frame& f,
            Status (Session::*m)(const typename fixed::HandlerRequest<Msg>::type&, Rep&)) {
  // One request per type and thread, so its strings (inline bytes, a protobuf
  // launch's parameters) keep their capacity from call to call.
  thread_local Msg msg;
  using Req = typename fixed::HandlerRequest<Msg>::type;
  Rep rep;
  Status st;
  bool decoded = false;
  if constexpr (std::is_same_v<Req, Msg>) {
    decoded = Decode(f, msg);
    if (decoded) st = s.CheckDeclared<Id>(msg);
    if (decoded && st.ok()) st = (s.*m)(msg, rep);
  } else {
    Req view;
    decoded = DecodeView(f, msg, view);
    if (decoded) st = s.CheckDeclared<Id>(view);
    if (decoded && st.ok()) st = (s.*m)(view, rep);
  }
  if (!decoded) st = Error(err::kInvalidValue, "malformed request body");
  s.Finish(f.header, C, std::move(st), rep);
}

template <CallId Id, typename Msg, typename Rep, auto M, CallClass C>
void HandleCall(Session& s, const transport::Frame& f) {
  Handle<Id, Msg, Rep, C>(s, f, M);
}

// Declared checks name calls the server handles (a LOCAL or NOTIFY row never gets here).
#define REMORA_HANDLE(Call, field, table)                           \
  static_assert(ClassOf(CallId::k##Call) != CallClass::kLocal &&    \
                    ClassOf(CallId::k##Call) != CallClass::kNotify, \
                "call_checks.def: " #Call " is not handled by the server");
#define REMORA_DEVICE(Call, ptr, size, access, what) REMORA_HANDLE(Call, ptr, _)
#include "proto/call_checks.def"

// Calls every session may make, even after a sticky fault: Goodbye and HostFuncDone.
constexpr bool EverySessions(uint32_t id) {
  return id == static_cast<uint32_t>(CallId::kGoodbye) ||
         id == static_cast<uint32_t>(CallId::kHostFuncDone);
}

// Which calls a kind of session may make: ids 3000-3999 are administration's, 4000-4999
// monitoring's (calls.def); a tenant may ask for its slice too.
constexpr bool Allowed(SessionKind kind, uint32_t id) {
  if (EverySessions(id)) return true;
  const bool admin = id >= 3000 && id < 4000, monitor = id >= 4000 && id < 5000;
  switch (kind) {
    case SessionKind::kAdmin:
      return admin;
    case SessionKind::kMonitor:
      return monitor;
    default:
      return !admin;
  }
}

using Table = std::array<Entry, kMaxCallId + 1>;

constexpr Table BuildTable(SessionKind kind) {
  Table t{};
#define SETUP CallClass::kSetup
#define SYNC CallClass::kSync
#define ORDERED CallClass::kOrdered
#define NOTIFY CallClass::kNotify
#define LOCAL CallClass::kLocal
// A row's class says what its handler does: an ORDERED call is never answered, so it
// has no reply message; a LOCAL or NOTIFY row carries nothing the server reads.
#define REMORA_CALL(id, Name, Class, Request, Reply)                                      \
  static_assert(id <= kMaxCallId);                                                        \
  static_assert(Class != CallClass::kOrdered || std::is_same_v<v1::Reply, v1::Empty>,     \
                "calls.def: ORDERED " #Name " cannot have a reply");                      \
  static_assert(Class != CallClass::kLocal || (std::is_same_v<v1::Request, v1::Empty> &&  \
                                               std::is_same_v<v1::Reply, v1::Empty>),     \
                "calls.def: LOCAL " #Name " never travels");                              \
  if (Allowed(kind, id))                                                                  \
    t[id].fn = &HandleCall < CallId::k##Name, v1::Request, v1::Reply, &Session::On##Name, \
    (Class == CallClass::kLocal || Class == CallClass::kNotify) ? CallClass::kSync : Class > ;
#include "proto/calls.def"
#undef SETUP
#undef SYNC
#undef ORDERED
#undef NOTIFY
#undef LOCAL
  return t;
}

// Indexed by SessionKind.
constexpr Table kTables[] = {BuildTable(SessionKind::kTenant), BuildTable(SessionKind::kAdmin),
                             BuildTable(SessionKind::kMonitor)};

constexpr const char* kRefusals[] = {
    "only an administration session lists or evicts",
    "an administration session may only list and evict",
    "a monitoring session may only ask for its slice",
};

}  // namespace

template <CallId C, typename Req>
Status Session::CheckDeclared(const Req& req) const {
#define REMORA_HANDLE(Call, field, table) \
  if constexpr (C == CallId::k##Call) RETURN_IF_ERROR(table##_.Check(req.field()));
#define REMORA_DEVICE(Call, ptr, size, access, what) \
  if constexpr (C == CallId::k##Call)                \
    RETURN_IF_ERROR(CheckDeviceRange(req.ptr(), req.size(), what));
#include "proto/call_checks.def"
  return OkStatus();
}

void Session::Dispatch(const transport::Frame& f) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  uint32_t call = f.header.call;
  const bool always = EverySessions(call);
  if (call == static_cast<uint32_t>(CallId::kHello)) {
    Finish(f.header, CallClass::kSync, Error(err::kNotPermitted, "session set-up happens once"),
           v1::Empty());
    return;
  }
  if (call > kMaxCallId || (!kTables[0][call].fn && !kTables[1][call].fn && !kTables[2][call].fn)) {
    Finish(f.header, CallClass::kSync,
           Error(err::kNotSupported, "call id " + std::to_string(call) + " is unknown"),
           v1::Empty());
    return;
  }
  const size_t kind = static_cast<size_t>(kind_);
  if (!kTables[kind][call].fn) {
    const CallInfo* info = FindCall(call);
    Finish(f.header, info ? info->cls : CallClass::kSync,
           Error(err::kNotPermitted, kRefusals[kind]), v1::Empty());
    return;
  }
  if (!always) {
    if (Status st = failures_.sticky(); !st.ok()) {
      // After a device fault every call fails as on a GPU; still answer SYNC calls.
      const CallInfo* info = FindCall(call);
      Finish(f.header, info ? info->cls : CallClass::kSync, st, v1::Empty());
      return;
    }
  }
  current_ = f.header;
  kTables[kind][call].fn(*this, f);
}

// Rows the server never serves: answered locally by the stub, sent by the
// server, or the handshake repeated mid-session.
#define REFUSE_SETUP(Name, Request, Reply)
#define REFUSE_LOCAL(Name, Request, Reply)                                                \
  Status Session::On##Name(const fixed::HandlerRequest<v1::Request>::type&, v1::Reply&) { \
    return Error(err::kNotSupported, #Name " is answered by the stub runtime");           \
  }
#define REFUSE_NOTIFY(Name, Request, Reply)                                               \
  Status Session::On##Name(const fixed::HandlerRequest<v1::Request>::type&, v1::Reply&) { \
    return Error(err::kNotPermitted, #Name " is sent by the server only");                \
  }
#define REFUSE_SYNC(Name, Request, Reply)
#define REFUSE_ORDERED(Name, Request, Reply)
#define REMORA_CALL(id, Name, Class, Request, Reply) REFUSE_##Class(Name, Request, Reply)
#include "proto/calls.def"

}  // namespace remora::server
