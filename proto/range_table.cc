// proto/range_table.cc - the out-of-range refusal's message.
#include "proto/range_table.h"

#include <cstdio>

namespace remora {

Status OutsideAllocations(const char* what, uint64_t ptr, uint64_t size) {
  char buf[96];
  std::snprintf(buf, sizeof buf, " [0x%llx, +%llu) lies outside this tenant's allocations",
                static_cast<unsigned long long>(ptr), static_cast<unsigned long long>(size));
  return Error(err::kInvalidValue, std::string(what) + buf);
}

}  // namespace remora
