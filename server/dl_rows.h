// server/dl_rows.h - filling a table of entry points from a dlopened library.
#pragma once

#include <dlfcn.h>

#include <type_traits>

namespace remora::server {

// Stands in for an entry point the loaded library lacks: returns `kMissing`
// (nullptr for a function returning a pointer), whatever it is passed.
template <auto kMissing, typename R, typename... A>
R Missing(A...) {
  if constexpr (std::is_pointer_v<R>)
    return nullptr;
  else
    return static_cast<R>(kMissing);
}

// Sets `slot` to `symbol` of `lib`, or to Missing<kMissing> when it has none.
// Returns false in that case.
template <auto kMissing, typename R, typename... A>
bool Resolve(void* lib, const char* symbol, R (*&slot)(A...)) {
  if (void* f = dlsym(lib, symbol)) {
    slot = reinterpret_cast<R (*)(A...)>(f);
    return true;
  }
  slot = &Missing<kMissing, R, A...>;
  return false;
}

}  // namespace remora::server
