// client_stub/nvrtc_interpose.cc - libremora_nvrtc.so, which `remora run` preloads: NVRTC's
// machine code, asked for on the emulated GPU, becomes the PTX it would have been made from.
//
// A program that compiles its kernels at run time with NVIDIA's NVRTC for the device's own
// architecture (`--gpu-architecture=sm_80`, as the public samples' nvrtc_helper.h does) takes
// the CUBIN and loads it with cuModuleLoadData. The emulated GPU runs PTX only. So while the
// device is Remora's emulated GPU, a compile for a real architecture sm_XX is made for the
// virtual one, compute_XX, and nvrtcGetCUBINSize/nvrtcGetCUBIN hand out its PTX, which
// cuModuleLoadData takes as it takes a CUBIN. The program's options, log and errors are
// otherwise NVIDIA's. On a GPU every call goes straight to NVIDIA's NVRTC.
//
// Only these four NVRTC functions are defined here; each forwards to the next definition
// (NVIDIA's libnvrtc) found after this library.
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "emu/device.h"

namespace {

// The next definition of `name` after this library: NVIDIA's.
template <class Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// Whether the process's CUDA device is Remora's emulated GPU (its driver names it so).
bool OnEmulatedGpu() {
  static const bool emulated = [] {
    void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (cuda == nullptr) cuda = dlopen("libcuda.so.1", RTLD_LAZY);
    if (cuda == nullptr) return false;
    auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(cuda, "cuInit"));
    auto name = reinterpret_cast<int (*)(char*, int, int)>(dlsym(cuda, "cuDeviceGetName"));
    char buf[256] = {};
    if (init == nullptr || name == nullptr || init(0) != 0 || name(buf, sizeof buf, 0) != 0)
      return false;
    return std::strcmp(buf, remora::emu::kDeviceName) == 0;
  }();
  return emulated;
}

std::mutex g_mu;
std::set<nvrtcProgram> g_as_ptx;  // programs compiled for a virtual architecture here

// If `option` names a real architecture ("-arch=sm_80", "--gpu-architecture=sm_90a"), the same
// option for its virtual one; otherwise empty.
std::string VirtualArch(const char* option) {
  for (const char* prefix : {"--gpu-architecture=", "-arch=", "--gpu-architecture", "-arch"}) {
    const size_t n = std::strlen(prefix);
    if (std::strncmp(option, prefix, n) != 0) continue;
    const char* arch = option + n;
    if (std::strncmp(arch, "sm_", 3) != 0) return "";
    std::string digits;
    for (const char* p = arch + 3; *p >= '0' && *p <= '9'; ++p) digits += *p;
    return digits.empty() ? "" : std::string(option, n) + "compute_" + digits;
  }
  return "";
}

// NVIDIA's `cubin` call for `prog`, or its `ptx` one for a program compiled here for a virtual
// architecture.
template <class Out>
nvrtcResult CubinOrPtx(nvrtcProgram prog, const char* cubin, const char* ptx, Out out) {
  bool as_ptx;
  {
    std::lock_guard lock(g_mu);
    as_ptx = g_as_ptx.contains(prog);
  }
  using Fn = nvrtcResult (*)(nvrtcProgram, Out);
  const Fn fn = Next<Fn>(as_ptx ? ptx : cubin);
  return fn ? fn(prog, out) : NVRTC_ERROR_INTERNAL_ERROR;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvrtcResult nvrtcCompileProgram(nvrtcProgram prog,
                                                                       int numOptions,
                                                                       const char* const* options) {
  using Fn = nvrtcResult (*)(nvrtcProgram, int, const char* const*);
  static const Fn next = Next<Fn>("nvrtcCompileProgram");
  if (next == nullptr) return NVRTC_ERROR_INTERNAL_ERROR;
  std::vector<std::string> rewritten;
  bool changed = false;
  if (numOptions > 0 && options != nullptr && OnEmulatedGpu()) {
    for (int i = 0; i < numOptions; ++i) {
      std::string v = options[i] ? VirtualArch(options[i]) : "";
      // "-arch sm_80" as two options: the second is the architecture.
      if (v.empty() && i > 0 && options[i] && options[i - 1] &&
          (std::strcmp(options[i - 1], "-arch") == 0 ||
           std::strcmp(options[i - 1], "--gpu-architecture") == 0)) {
        const std::string joined = VirtualArch((std::string("-arch=") + options[i]).c_str());
        if (!joined.empty()) v = joined.substr(std::strlen("-arch="));
      }
      changed |= !v.empty();
      rewritten.push_back(v.empty() ? std::string(options[i] ? options[i] : "") : v);
    }
  }
  if (!changed) return next(prog, numOptions, options);
  std::vector<const char*> opts;
  for (const std::string& s : rewritten) opts.push_back(s.c_str());
  const nvrtcResult r = next(prog, numOptions, opts.data());
  if (r == NVRTC_SUCCESS) {
    std::lock_guard lock(g_mu);
    g_as_ptx.insert(prog);
  }
  return r;
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog,
                                                                     size_t* size) {
  return CubinOrPtx<size_t*>(prog, "nvrtcGetCUBINSize", "nvrtcGetPTXSize", size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* out) {
  return CubinOrPtx<char*>(prog, "nvrtcGetCUBIN", "nvrtcGetPTX", out);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  using Fn = nvrtcResult (*)(nvrtcProgram*);
  static const Fn next = Next<Fn>("nvrtcDestroyProgram");
  if (prog != nullptr) {
    std::lock_guard lock(g_mu);
    g_as_ptx.erase(*prog);
  }
  return next ? next(prog) : NVRTC_ERROR_INTERNAL_ERROR;
}

}  // extern "C"
