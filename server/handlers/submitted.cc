// server/handlers/submitted.cc - the default handler, generated for each row of submitted.def.
#include <tuple>

#include "server/session.h"

namespace remora::server {
namespace {

// A calls.def row's request (as its handler takes it) and reply.
template <CallId C>
struct RowOf;
#define REMORA_CALL(id, Name, Class, Request, Reply)      \
  template <>                                             \
  struct RowOf<CallId::k##Name> {                         \
    using Req = fixed::HandlerRequest<v1::Request>::type; \
    using Rep = v1::Reply;                                \
  };
#include "proto/calls.def"

}  // namespace

#define REMORA_SUBMIT(Row, fn, ...)                                                                \
  static_assert(ClassOf(CallId::k##Row) == CallClass::kOrdered,                                    \
                "submitted.def: " #Row " is not an ORDERED row");                                  \
  Status Session::On##Row(const RowOf<CallId::k##Row>::Req& req, RowOf<CallId::k##Row>::Rep&) {    \
    return work_->Submit(req.stream(), [dev = env_.device,                                         \
                                        args = std::make_tuple(__VA_ARGS__)](CUstream s) {         \
      return std::apply([&](auto... a) { return dev->Check(dev->drv().fn(a..., s), #fn); }, args); \
    });                                                                                            \
  }
#define REMORA_SUBMIT_SYNC(Row, Async)                                                    \
  static_assert(ClassOf(CallId::k##Row) == CallClass::kSync,                              \
                "submitted.def: " #Row " is not a SYNC row");                             \
  static_assert(std::is_same_v<RowOf<CallId::k##Row>::Req, RowOf<CallId::k##Async>::Req>, \
                "submitted.def: " #Row " and " #Async " take different requests");        \
  Status Session::On##Row(const RowOf<CallId::k##Row>::Req& req,                          \
                          RowOf<CallId::k##Row>::Rep& rep) {                              \
    RETURN_IF_ERROR(On##Async(req, rep));                                                 \
    return ReplyWhenDone(req.stream());                                                   \
  }
#include "server/handlers/submitted.def"

}  // namespace remora::server
