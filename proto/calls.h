// proto/calls.h - the forwarded-call table (calls.def) as C++ constants.
#pragma once

#include <cstdint>
#include <string_view>

namespace remora {

enum class CallClass : uint8_t { kSetup, kSync, kOrdered, kNotify, kLocal };

// Stable wire ids, one per calls.def row: CallId::kMalloc == 33.
enum class CallId : uint32_t {
#define REMORA_CALL(id, Name, Class, Request, Reply) k##Name = id,
#include "proto/calls.def"
};

inline constexpr uint32_t kProtocolVersion = 1;

struct CallInfo {
  uint32_t id;
  std::string_view name;
  CallClass cls;
  std::string_view request;
  std::string_view reply;
};

// Every row of calls.def, in file order.
inline constexpr CallInfo kCalls[] = {
#define SETUP CallClass::kSetup
#define SYNC CallClass::kSync
#define ORDERED CallClass::kOrdered
#define NOTIFY CallClass::kNotify
#define LOCAL CallClass::kLocal
#define REMORA_CALL(id, Name, Class, Request, Reply) {id, #Name, Class, #Request, #Reply},
#include "proto/calls.def"
#undef SETUP
#undef SYNC
#undef ORDERED
#undef NOTIFY
#undef LOCAL
};

// The largest id in calls.def; the server's dispatch table has a row per id up
// to it, so keep ids dense within each library's range (calls.def says which).
inline constexpr uint32_t kMaxCallId = [] {
  uint32_t max = 0;
  for (const CallInfo& c : kCalls) max = c.id > max ? c.id : max;
  return max;
}();

// The class of row `id` (kLocal for an id no row has).
constexpr CallClass ClassOf(CallId id) {
  for (const CallInfo& c : kCalls)
    if (c.id == static_cast<uint32_t>(id)) return c.cls;
  return CallClass::kLocal;
}

// The row for `id`, or nullptr if no row has it.
constexpr const CallInfo* FindCall(uint32_t id) {
  for (const CallInfo& c : kCalls)
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace remora
