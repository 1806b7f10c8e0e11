// server/blaslt_table.cc - dlopen/dlsym of the cuBLASLt table.
#include "server/blaslt_table.h"

#include "server/dl_rows.h"
#include "server/log.h"

namespace remora::server {

Result<std::shared_ptr<const BlasLtTable>> BlasLtTable::Load(const DriverTable& drv) {
  const std::string path = LibraryFor(drv, "libcublasLt.so.13");
  ASSIGN_OR_RETURN(void* lib, OpenLibrary(path));
  auto t = std::make_shared<BlasLtTable>();
  t->library = path;
  int missing = 0;
#define BLASLT_FN(name)                                             \
  if (!Resolve<CUBLAS_STATUS_NOT_SUPPORTED>(lib, #name, t->name)) { \
    ++missing;                                                      \
    Log(Level::kDebug, "cublaslt", {{"missing", #name}});           \
  }
#include "server/blaslt.def"
  Log(Level::kInfo, "cublaslt",
      {{"library", path},
       {"version", static_cast<int64_t>(t->cublasLtGetVersion())},
       {"missing_rows", missing}});
  return std::shared_ptr<const BlasLtTable>(std::move(t));
}

std::string BlasLtStatusName(const BlasLtTable& t, cublasStatus_t s) {
  const char* name = t.cublasLtGetStatusName(s);
  return name ? name : "cublasStatus_t " + std::to_string(static_cast<int>(s));
}

}  // namespace remora::server
