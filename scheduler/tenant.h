// scheduler/tenant.h - who a tenant is to the scheduler: an id and a priority.
//
// Shared by the memory ledger (ledger.h) and the dispatch order (dispatch.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace remora::sched {

// A tenant (one session), as the server numbers them.
using TenantId = uint64_t;

// A tenant's priority class. Smaller is more urgent: kHigh dispatches before
// kNormal before kLow, and may preempt lower classes at admission.
enum class Priority : uint8_t { kHigh = 0, kNormal = 1, kLow = 2 };
inline constexpr int kPriorities = 3;

// "high", "normal" or "low".
inline const char* PriorityName(Priority p) {
  switch (p) {
    case Priority::kHigh:
      return "high";
    case Priority::kNormal:
      return "normal";
    case Priority::kLow:
      return "low";
  }
  return "?";
}

// The class `name` names ("high", "normal", "low"), or nullopt for anything
// else. Shared by the server, the stub and the CLI: one grammar.
inline std::optional<Priority> ParsePriority(std::string_view name) {
  for (Priority p : {Priority::kHigh, Priority::kNormal, Priority::kLow})
    if (name == PriorityName(p)) return p;
  return std::nullopt;
}

}  // namespace remora::sched
