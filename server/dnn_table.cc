// server/dnn_table.cc - dlopen/dlsym of the cuDNN table.
#include "server/dnn_table.h"

#include "server/dl_rows.h"
#include "server/log.h"

namespace remora::server {

#define REMORA_XSTR(x) REMORA_STR(x)
#define REMORA_STR(x) #x

Result<std::shared_ptr<const DnnTable>> DnnTable::Load(const DriverTable& drv) {
  const std::string path = LibraryFor(drv, "libcudnn.so.9");
  ASSIGN_OR_RETURN(void* lib, OpenLibrary(path));
  auto t = std::make_shared<DnnTable>();
  t->library = path;
  int missing = 0;
#define DNN_FN(name)                                                           \
  if (!Resolve<CUDNN_STATUS_NOT_SUPPORTED>(lib, REMORA_XSTR(name), t->name)) { \
    ++missing;                                                                 \
    Log(Level::kDebug, "cudnn", {{"missing", REMORA_XSTR(name)}});             \
  }
#include "server/dnn.def"
  Log(Level::kInfo, "cudnn",
      {{"library", path},
       {"version", static_cast<uint64_t>(t->cudnnGetVersion())},
       {"missing_rows", missing}});
  return std::shared_ptr<const DnnTable>(std::move(t));
}

}  // namespace remora::server
