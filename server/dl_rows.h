// server/dl_rows.h - filling a table of entry points from a dlopened library.
#pragma once

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "proto/status.h"
#include "server/driver_table.h"

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

// Where the library `soname` that goes with `drv` is: beside the emulated
// driver, or by soname (the loader's search) beside NVIDIA's.
std::string LibraryFor(const DriverTable& drv, const std::string& soname);

// dlopens `path` for good (a library stays loaded until exit, as the driver
// does). Errors: kNotSupported naming the library and dlerror.
Result<void*> OpenLibrary(const std::string& path);

// A table loaded on first use, once; later calls get the same table or error.
template <typename Table>
class LazyTable {
 public:
  template <typename Load>
  Result<const Table*> Get(Load load) {
    std::call_once(once_, [&] {
      Result<std::shared_ptr<const Table>> t = load();
      if (t.ok())
        table_ = *t;
      else
        status_ = t.status();
    });
    if (!table_) return status_;
    return table_.get();
  }

 private:
  std::once_flag once_;
  std::shared_ptr<const Table> table_;
  Status status_;
};

}  // namespace remora::server
