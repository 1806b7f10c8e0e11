// server/dl_rows.cc - where the libraries beside the driver are, and loading them.
#include "server/dl_rows.h"

namespace remora::server {

std::string LibraryFor(const DriverTable& drv, const std::string& soname) {
  if (!drv.emulated) return soname;
  const size_t slash = drv.library.rfind('/');
  return (slash == std::string::npos ? std::string(".") : drv.library.substr(0, slash)) + "/" +
         soname;
}

Result<void*> OpenLibrary(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    return Error(err::kNotSupported, "cannot load " + path + ": " + (e ? e : "?"));
  }
  return lib;
}

}  // namespace remora::server
