// tests/emu/api_test.cc - exports, initialisation, device queries, contexts, error names.
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {
namespace {

TEST(EmuExports, EveryDriverTableRowResolves) {
  void* h = dlopen(REMORA_EMU_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  int rows = 0;
#define DRIVER_FN(name) \
  ++rows;               \
  EXPECT_NE(dlsym(h, EMU_STR(name)), nullptr) << "missing " EMU_STR(name);
#include "server/driver.def"
  EXPECT_GT(rows, 50);
  EXPECT_NE(dlsym(h, "remoraEmuSetPrintfHandler"), nullptr);
  EXPECT_NE(dlsym(h, "remoraEmuGetStreamBusyTime"), nullptr);
  EXPECT_NE(dlsym(h, "remoraEmuGetProgramCacheStats"), nullptr);
}

TEST(EmuExports, InternalsStayHidden) {
  void* h = dlopen(REMORA_EMU_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  // Internal C++ symbols (remora::emu::Config()) are not visible.
  EXPECT_EQ(dlsym(h, "_ZN6remora3emu6ConfigEv"), nullptr);
  EXPECT_EQ(dlsym(h, "_ZN6remora3emu9TheDriverEv"), nullptr);
}

TEST(EmuInit, EverythingRefusedBeforeCuInit) {
  Api fresh = FreshLib();
  ASSERT_NE(fresh.handle, nullptr) << dlerror();
  ASSERT_EQ(fresh.missing, "");
  int count = -1;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  EXPECT_EQ(fresh.cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(fresh.cuDeviceGet(&dev, 0), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(fresh.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(fresh.cuMemAlloc(&p, 256), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(fresh.cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED);
  // Version and error strings work without cuInit, as on NVIDIA's driver.
  int version = 0;
  EXPECT_EQ(fresh.cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  const char* s = nullptr;
  EXPECT_EQ(fresh.cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_NOT_INITIALIZED");
  EXPECT_EQ(fresh.cuInit(1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fresh.cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(fresh.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
}

TEST(EmuDevice, MemorySizeComesFromTheEnvironment) {
  ASSERT_EQ(setenv("REMORA_EMU_MEMORY", "512Mi", 1), 0);
  Api fresh = FreshLib();  // reads the environment on first use
  ASSERT_NE(fresh.handle, nullptr) << dlerror();
  ASSERT_EQ(fresh.cuInit(0), CUDA_SUCCESS);
  unsetenv("REMORA_EMU_MEMORY");
  size_t total = 0;
  ASSERT_EQ(fresh.cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  EXPECT_EQ(total, size_t{512} << 20);
  CUcontext ctx;
  ASSERT_EQ(fresh.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(fresh.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  size_t free = 0;
  ASSERT_EQ(fresh.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, size_t{512} << 20);
  CUdeviceptr all, more;
  ASSERT_EQ(fresh.cuMemAlloc(&all, free), CUDA_SUCCESS);
  EXPECT_EQ(fresh.cuMemAlloc(&more, 256), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(fresh.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, 0u);
  EXPECT_EQ(fresh.cuMemFree(all), CUDA_SUCCESS);
  EXPECT_EQ(fresh.cuMemAlloc(&more, 256), CUDA_SUCCESS);
  fresh.cuCtxSetCurrent(nullptr);
  EXPECT_EQ(fresh.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

TEST(EmuDevice, IdentityAndAttributes) {
  const Api& api = Lib();
  ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS);
  CUdevice dev = -1;
  ASSERT_EQ(api.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(api.cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  char name[64];
  ASSERT_EQ(api.cuDeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
  EXPECT_STREQ(name, "Remora Emulated GPU");
  char small[7];
  ASSERT_EQ(api.cuDeviceGetName(small, sizeof(small), 0), CUDA_SUCCESS);
  EXPECT_STREQ(small, "Remora");
  EXPECT_EQ(api.cuDeviceGetName(name, sizeof(name), 3), CUDA_ERROR_INVALID_DEVICE);

  // Every attribute below CU_DEVICE_ATTRIBUTE_MAX answers; MAX itself does not.
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int v = 0;
    EXPECT_EQ(api.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), 0), CUDA_SUCCESS)
        << "attribute " << a;
  }
  int v = 0;
  EXPECT_EQ(api.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(0), 0),
            CUDA_ERROR_INVALID_VALUE);
  struct Want {
    CUdevice_attribute attr;
    int value;
  };
  const Want wants[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 163 * 1024},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT},
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
      {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
  };
  for (const Want& w : wants) {
    ASSERT_EQ(api.cuDeviceGetAttribute(&v, w.attr, 0), CUDA_SUCCESS);
    EXPECT_EQ(v, w.value) << "attribute " << w.attr;
  }
  ASSERT_EQ(api.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
            CUDA_SUCCESS);
  EXPECT_GT(v, 0);

  size_t total = 0;
  ASSERT_EQ(api.cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  EXPECT_GT(total, 0u);
  CUuuid a, b;
  ASSERT_EQ(api.cuDeviceGetUuid(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDeviceGetUuid(&b, 0), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(a.bytes, b.bytes, sizeof(a.bytes)), 0);
}

TEST(EmuErrors, NamesAndStringsForEveryCode) {
  const Api& api = Lib();
  struct Want {
    CUresult code;
    const char* name;
    const char* text;
  };
  const Want wants[] = {
      {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
      {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
       "an illegal memory access was encountered"},
      {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
      {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
  };
  for (const Want& w : wants) {
    const char* s = nullptr;
    ASSERT_EQ(api.cuGetErrorName(w.code, &s), CUDA_SUCCESS);
    EXPECT_STREQ(s, w.name);
    ASSERT_EQ(api.cuGetErrorString(w.code, &s), CUDA_SUCCESS);
    EXPECT_STREQ(s, w.text);
  }
  // Every code in 0..999 either has both a name and a text or neither.
  int known = 0;
  for (int c = 0; c <= 999; ++c) {
    const char* name = nullptr;
    const char* text = nullptr;
    const CUresult rn = api.cuGetErrorName(static_cast<CUresult>(c), &name);
    const CUresult rs = api.cuGetErrorString(static_cast<CUresult>(c), &text);
    EXPECT_EQ(rn, rs) << c;
    if (rn == CUDA_SUCCESS) {
      ++known;
      EXPECT_EQ(std::string(name).rfind("CUDA_", 0), 0u) << c;
      EXPECT_GT(std::strlen(text), 0u) << c;
    } else {
      EXPECT_EQ(rn, CUDA_ERROR_INVALID_VALUE);
      EXPECT_EQ(name, nullptr);
    }
  }
  EXPECT_EQ(known, 101);  // every CUresult enumerator of CUDA 13.0
}

TEST(EmuContext, CallsNeedACurrentContext) {
  const Api& api = Lib();
  ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  CUdeviceptr p;
  CUstream s;
  size_t free = 0, total = 0;
  EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api.cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api.cuMemGetInfo(&free, &total), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext cur = reinterpret_cast<CUcontext>(0x1);
  ASSERT_EQ(api.cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, nullptr);
  // A context handle that is not the primary context is refused.
  EXPECT_EQ(api.cuCtxSetCurrent(reinterpret_cast<CUcontext>(&cur)), CUDA_ERROR_INVALID_CONTEXT);
  // Releasing a primary context that nobody retained is an error.
  EXPECT_EQ(api.cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(EmuTest, CurrentContextIsPerThread) {
  CUcontext cur = nullptr;
  ASSERT_EQ(api.cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, ctx);
  CUcontext other = reinterpret_cast<CUcontext>(0x1);
  CUresult alloc_on_other = CUDA_SUCCESS;
  std::thread t([&] {
    api.cuCtxGetCurrent(&other);
    CUdeviceptr p;
    alloc_on_other = api.cuMemAlloc(&p, 256);
  });
  t.join();
  EXPECT_EQ(other, nullptr);
  EXPECT_EQ(alloc_on_other, CUDA_ERROR_INVALID_CONTEXT);
  int least = 1, greatest = 1;
  ASSERT_EQ(api.cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
  EXPECT_EQ(least, 0);
  EXPECT_LT(greatest, least);
}

TEST_F(EmuTest, ReleasedContextIsDestroyedUntilRetained) {
  CUcontext again = nullptr;
  ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
  EXPECT_EQ(again, ctx);  // one primary context per device
  ASSERT_EQ(api.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  CUdeviceptr p;
  EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_SUCCESS);
}

}  // namespace
}  // namespace remora::emu::test
