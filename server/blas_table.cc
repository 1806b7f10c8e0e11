// server/blas_table.cc - dlopen/dlsym of the cuBLAS table.
#include "server/blas_table.h"

#include "server/dl_rows.h"
#include "server/log.h"

namespace remora::server {

#define REMORA_XSTR(x) REMORA_STR(x)
#define REMORA_STR(x) #x

Result<std::shared_ptr<const BlasTable>> BlasTable::Load(const DriverTable& drv) {
  const std::string path = LibraryFor(drv, "libcublas.so.13");
  ASSIGN_OR_RETURN(void* lib, OpenLibrary(path));
  auto t = std::make_shared<BlasTable>();
  t->library = path;
  int missing = 0;
#define BLAS_FN(name)                                                           \
  if (!Resolve<CUBLAS_STATUS_NOT_SUPPORTED>(lib, REMORA_XSTR(name), t->name)) { \
    ++missing;                                                                  \
    Log(Level::kDebug, "cublas", {{"missing", REMORA_XSTR(name)}});             \
  }
#include "server/blas.def"
  int version = 0;
  (void)t->cublasGetVersion(nullptr, &version);
  Log(Level::kInfo, "cublas", {{"library", path}, {"version", version}, {"missing_rows", missing}});
  return std::shared_ptr<const BlasTable>(std::move(t));
}

std::string BlasStatusName(const BlasTable& t, cublasStatus_t s) {
  const char* name = t.cublasGetStatusName(s);
  return name ? name : "cublasStatus_t " + std::to_string(static_cast<int>(s));
}

}  // namespace remora::server
