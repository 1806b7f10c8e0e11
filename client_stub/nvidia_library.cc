// client_stub/nvidia_library.cc - see nvidia_library.h.
#include "client_stub/nvidia_library.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace remora::client_stub {
namespace {

// The real path of the object containing `address`, so that a search never finds it again.
std::string PathOf(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  char real[4096];
  return realpath(info.dli_fname, real) ? std::string(real) : std::string(info.dli_fname);
}

// Directories of the objects loaded now, each followed by its wheel layout's `wheel_dir`.
std::string LoadedDirectories(const char* wheel_dir) {
  struct Acc {
    std::string dirs;
    const char* wheel_dir;
  } acc{"", wheel_dir};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        auto* a = static_cast<Acc*>(out);
        const char* path = info->dlpi_name;
        const char* slash = path ? std::strrchr(path, '/') : nullptr;
        if (slash == nullptr) return 0;
        const std::string dir(path, size_t(slash - path));
        a->dirs += ":" + dir + ":" + dir + "/../../" + a->wheel_dir;
        return 0;
      },
      &acc);
  return acc.dirs;
}

}  // namespace

void* OpenNvidiaLibrary(const char* soname, const char* env, const char* wheel_dir,
                        const void* self, const char* consequence) {
  std::vector<std::string> candidates;
  if (const char* path = std::getenv(env)) candidates.emplace_back(path);
  std::string dirs = std::getenv("LD_LIBRARY_PATH") ? std::getenv("LD_LIBRARY_PATH") : "";
  dirs += ":/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib";
  dirs += LoadedDirectories(wheel_dir);
  for (size_t at = 0; at <= dirs.size();) {
    const size_t colon = std::min(dirs.find(':', at), dirs.size());
    if (colon > at) candidates.push_back(dirs.substr(at, colon - at) + "/" + soname);
    at = colon + 1;
  }
  const std::string own = PathOf(self);
  for (const std::string& path : candidates) {
    char real[4096];
    if (access(path.c_str(), R_OK) != 0 || !realpath(path.c_str(), real) || own == real) continue;
    if (void* h = dlopen(real, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)) return h;
  }
  std::fprintf(stderr,
               "remora: NVIDIA's %s was not found (%s, LD_LIBRARY_PATH, /usr/local/cuda/lib64, "
               "beside the libraries loaded): %s\n",
               soname, env, consequence);
  return nullptr;
}

void* NvidiaSymbol(void* lib, const char* name) {
  return lib ? dlsym(lib, name) : nullptr;
}

bool OnEmulatedGpu() {
  static const bool emulated = [] {
    int dev = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return std::strncmp(prop.name, "Remora Emulated", 15) == 0;
  }();
  return emulated;
}

}  // namespace remora::client_stub
