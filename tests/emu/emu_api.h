// tests/emu/emu_api.h - the emulated libcuda.so.1, loaded with dlopen as the server does.
//
// Api holds one pointer per server/driver.def row (named as cuda.h spells it,
// so api.cuMemAlloc is the cuMemAlloc_v2 export) plus Remora's extensions.
// EmuTest is the fixture: cuInit, primary context retained and current on the
// test thread; released afterwards, which tears the context down.
#pragma once

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace remora::emu::test {

#define EMU_STR_INNER(x) #x
#define EMU_STR(x) EMU_STR_INNER(x)

using PrintfHandler = void (*)(void* user, CUstream stream, const char* text, size_t len);

struct Api {
#define DRIVER_FN(name) decltype(&::name) name = nullptr;
#include "server/driver.def"
  CUresult (*remoraEmuSetPrintfHandler)(PrintfHandler fn, void* user) = nullptr;
  CUresult (*remoraEmuGetStreamBusyTime)(CUstream s, unsigned long long* ns) = nullptr;
  CUresult (*remoraEmuGetProgramCacheStats)(unsigned long long* programs,
                                            unsigned long long* parses) = nullptr;
  CUresult (*remoraEmuCancelStream)(CUstream s) = nullptr;
  CUresult (*remoraEmuSetLaunchHeapOwner)(unsigned long long owner) = nullptr;
  CUresult (*remoraEmuHeapSetLimit)(unsigned long long owner, size_t bytes) = nullptr;
  CUresult (*remoraEmuHeapRelease)(unsigned long long owner) = nullptr;
  void* handle = nullptr;
  std::string missing;  // space-separated rows that dlsym could not find
};

// Resolves every row from `handle`; names the absent ones in Api::missing.
inline Api Resolve(void* handle) {
  Api api;
  api.handle = handle;
  auto sym = [&](const char* name) {
    void* p = dlsym(handle, name);
    if (p == nullptr) api.missing += std::string(name) + " ";
    return p;
  };
#define DRIVER_FN(name) api.name = reinterpret_cast<decltype(api.name)>(sym(EMU_STR(name)));
#include "server/driver.def"
  api.remoraEmuSetPrintfHandler =
      reinterpret_cast<decltype(api.remoraEmuSetPrintfHandler)>(sym("remoraEmuSetPrintfHandler"));
  api.remoraEmuGetStreamBusyTime =
      reinterpret_cast<decltype(api.remoraEmuGetStreamBusyTime)>(sym("remoraEmuGetStreamBusyTime"));
  api.remoraEmuGetProgramCacheStats = reinterpret_cast<decltype(api.remoraEmuGetProgramCacheStats)>(
      sym("remoraEmuGetProgramCacheStats"));
  api.remoraEmuCancelStream =
      reinterpret_cast<decltype(api.remoraEmuCancelStream)>(sym("remoraEmuCancelStream"));
  api.remoraEmuSetLaunchHeapOwner = reinterpret_cast<decltype(api.remoraEmuSetLaunchHeapOwner)>(
      sym("remoraEmuSetLaunchHeapOwner"));
  api.remoraEmuHeapSetLimit =
      reinterpret_cast<decltype(api.remoraEmuHeapSetLimit)>(sym("remoraEmuHeapSetLimit"));
  api.remoraEmuHeapRelease =
      reinterpret_cast<decltype(api.remoraEmuHeapRelease)>(sym("remoraEmuHeapRelease"));
  return api;
}

// The process-wide instance (dlopen of REMORA_EMU_LIB, never closed).
inline const Api& Lib() {
  static const Api api = Resolve(dlopen(REMORA_EMU_LIB, RTLD_NOW | RTLD_LOCAL));
  return api;
}

// A fresh, independent copy of the library (its own globals, never initialised).
// Under ASan, dlmopen(LM_ID_NEWLM) would load a second ASan runtime into the new namespace,
// which aborts ("ASan runtime does not come first") or collides with the first one's shadow
// memory; instead a byte copy of the library under a new name is dlopened: a distinct file,
// so the loader maps it as a new object with its own globals, sharing the one runtime.
inline Api FreshLib() {
#if defined(__SANITIZE_ADDRESS__)
  char path[] = "/tmp/remora_emu_fresh_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return Api{};
  close(fd);
  std::error_code ec;
  std::filesystem::copy_file(REMORA_EMU_LIB, path,
                             std::filesystem::copy_options::overwrite_existing, ec);
  void* handle = ec ? nullptr : dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path);  // the mapping outlives the name
  return Resolve(handle);
#else
  return Resolve(dlmopen(LM_ID_NEWLM, REMORA_EMU_LIB, RTLD_NOW | RTLD_LOCAL));
#endif
}

class EmuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(api.handle, nullptr) << dlerror();
    ASSERT_EQ(api.missing, "");
    ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (ctx == nullptr) return;
    api.cuCtxSetCurrent(nullptr);
    EXPECT_EQ(api.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  }

  const Api& api = Lib();
  CUcontext ctx = nullptr;
};

// The text of `path`; empty if it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

#ifdef REMORA_EMU_DATA
// EmuTest with one module loaded from a PTX file the build made (REMORA_EMU_DATA/`file`).
class EmuModuleTest : public EmuTest {
 protected:
  explicit EmuModuleTest(std::string file) : file_(std::move(file)) {}
  void SetUp() override {
    EmuTest::SetUp();
    ptx_ = ReadFile(std::string(REMORA_EMU_DATA) + "/" + file_);
    ASSERT_FALSE(ptx_.empty()) << file_;
    ASSERT_EQ(api.cuModuleLoadData(&mod_, ptx_.c_str()), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (mod_ != nullptr) api.cuModuleUnload(mod_);
    EmuTest::TearDown();
  }
  CUfunction Fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(api.cuModuleGetFunction(&f, mod_, name), CUDA_SUCCESS) << name;
    return f;
  }

  std::string file_;
  std::string ptx_;
  CUmodule mod_ = nullptr;
};
#endif  // REMORA_EMU_DATA

// PTX text of one empty kernel, `tiny(u32)`.
inline constexpr char kTinyPtx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.visible .entry tiny(.param .u32 tiny_param_0)
{
  ret;
}
)";

// Device memory of `n` T, or holding a copy of a host vector, freed with it.
template <class T>
class Dev {
 public:
  explicit Dev(size_t n) : n_(n) {
    EXPECT_EQ(Lib().cuMemAlloc(&p_, std::max<size_t>(1, n) * sizeof(T)), CUDA_SUCCESS);
  }
  explicit Dev(const std::vector<T>& v) : Dev(v.size()) { Put(v); }
  ~Dev() { Lib().cuMemFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;

  void Put(const std::vector<T>& v) {
    ASSERT_EQ(v.size(), n_);
    ASSERT_EQ(Lib().cuMemcpyHtoD(p_, v.data(), n_ * sizeof(T)), CUDA_SUCCESS);
  }
  // Waits for all work of the context, then copies the contents out.
  std::vector<T> Get() const {
    std::vector<T> v(n_);
    EXPECT_EQ(Lib().cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(Lib().cuMemcpyDtoH(v.data(), p_, n_ * sizeof(T)), CUDA_SUCCESS);
    return v;
  }
  T* get() const { return reinterpret_cast<T*>(p_); }

 private:
  CUdeviceptr p_ = 0;
  size_t n_;
};

}  // namespace remora::emu::test
