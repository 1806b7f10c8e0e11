// client_stub/once.h - Once: a thing the stub says or does once per process, whatever the thread.
//
//   if (Once("no export table", uuid)) std::fprintf(stderr, "remora: ... %s\n", uuid);
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "client_stub/no_destructor.h"

namespace remora::client_stub {

// True the first time the process calls it with this `site` and `key`, false after.
// Thread-safe; what it remembers lives until the process ends.
inline bool Once(std::string_view site, std::string_view key) {
  static NoDestructor<std::mutex> mu;
  static NoDestructor<std::set<std::string, std::less<>>> seen;
  std::string entry;
  entry.reserve(site.size() + 1 + key.size());
  entry.append(site).append(1, '\0').append(key);
  std::lock_guard lock(*mu);
  return seen->insert(std::move(entry)).second;
}

}  // namespace remora::client_stub
