// tests/emu/module_test.cc - module images, functions, globals, the linker, launches.
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {
namespace {

constexpr char kTinyPtx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.visible .entry tiny(.param .u32 tiny_param_0)
{
  ret;
}
)";

using EmuModule = EmuTest;

TEST_F(EmuModule, BadImagesAreRefused) {
  CUmodule m;
  EXPECT_EQ(api.cuModuleLoadData(&m, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuModuleLoadData(nullptr, kTinyPtx), CUDA_ERROR_INVALID_VALUE);
  const char elf[] =
      "\x7f"
      "ELF\x02\x01\x01";
  EXPECT_EQ(api.cuModuleLoadData(&m, elf), CUDA_ERROR_NO_BINARY_FOR_GPU);
  std::string newer = kTinyPtx;
  newer.replace(newer.find("sm_75"), 5, "sm_86");
  EXPECT_EQ(api.cuModuleLoadData(&m, newer.c_str()), CUDA_ERROR_INVALID_PTX);
  std::string future = kTinyPtx;
  future.replace(future.find("7.5"), 3, "9.9");
  EXPECT_EQ(api.cuModuleLoadData(&m, future.c_str()), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  EXPECT_EQ(api.cuModuleLoadData(&m, "this is not ptx"), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(api.cuModuleUnload(reinterpret_cast<CUmodule>(&m)), CUDA_ERROR_INVALID_HANDLE);
  CUfunction f;
  EXPECT_EQ(api.cuModuleGetFunction(&f, reinterpret_cast<CUmodule>(&m), "tiny"),
            CUDA_ERROR_INVALID_HANDLE);
  const char* name;
  EXPECT_EQ(api.cuFuncGetName(&name, reinterpret_cast<CUfunction>(&m)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuLaunchKernel(reinterpret_cast<CUfunction>(&m), 1, 1, 1, 1, 1, 1, 0, nullptr,
                               nullptr, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
}

// cudaFuncAttributes::ptxVersion is the arch the PTX was compiled for (CUB
// chooses its tuning from it), not the device's.
TEST_F(EmuModule, PtxVersionIsTheModulesTarget) {
  std::string older = kTinyPtx;
  older.replace(older.find("sm_75"), 5, "sm_60");
  CUmodule m;
  ASSERT_EQ(api.cuModuleLoadData(&m, older.c_str()), CUDA_SUCCESS);
  CUfunction f;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "tiny"), CUDA_SUCCESS);
  int v = 0;
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION, f), CUDA_SUCCESS);
  EXPECT_EQ(v, 60);
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f), CUDA_SUCCESS);
  EXPECT_EQ(v, 80);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
}

TEST_F(EmuModule, LinkerValidatesItsInputs) {
  CUlinkState l;
  EXPECT_EQ(api.cuLinkCreate(0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuLinkCreate(0, nullptr, nullptr, &l), CUDA_SUCCESS);
  void* out = nullptr;
  size_t size = 0;
  EXPECT_EQ(api.cuLinkComplete(l, &out, &size), CUDA_ERROR_INVALID_VALUE);  // nothing added
  char cubin[16] =
      "\x7f"
      "ELF";
  EXPECT_EQ(
      api.cuLinkAddData(l, CU_JIT_INPUT_CUBIN, cubin, sizeof(cubin), "x", 0, nullptr, nullptr),
      CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(api.cuLinkAddData(l, CU_JIT_INPUT_PTX, nullptr, 10, "x", 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  auto bogus = reinterpret_cast<CUlinkState>(&size);
  EXPECT_EQ(api.cuLinkAddData(bogus, CU_JIT_INPUT_PTX, cubin, 4, "x", 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuLinkDestroy(l), CUDA_SUCCESS);
  EXPECT_EQ(api.cuLinkDestroy(l), CUDA_ERROR_INVALID_HANDLE);
}

#if defined(REMORA_EMU_HAS_PTX) && defined(REMORA_EMU_HAS_NVCC)

class EmuKernels : public EmuModuleTest {
 protected:
  EmuKernels() : EmuModuleTest("kernels.ptx") {}
};

TEST_F(EmuKernels, FunctionsAndGlobalsFromPtxText) {
  CUfunction f;
  EXPECT_EQ(api.cuModuleGetFunction(&f, mod_, "noSuchKernel"), CUDA_ERROR_NOT_FOUND);
  f = Fn("vecAdd");
  const char* name = nullptr;
  ASSERT_EQ(api.cuFuncGetName(&name, f), CUDA_SUCCESS);
  EXPECT_STREQ(name, "vecAdd");

  CUdeviceptr p = 0;
  size_t bytes = 0;
  ASSERT_EQ(api.cuModuleGetGlobal(&p, &bytes, mod_, "counter"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 4u);
  EXPECT_EQ(p % 4, 0u);
  int counter = 0;
  ASSERT_EQ(api.cuMemcpyDtoH(&counter, p, 4), CUDA_SUCCESS);
  EXPECT_EQ(counter, 7);
  ASSERT_EQ(api.cuModuleGetGlobal(&p, &bytes, mod_, "scale"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 16u);
  float scale[4] = {};
  ASSERT_EQ(api.cuMemcpyDtoH(scale, p, sizeof(scale)), CUDA_SUCCESS);
  EXPECT_EQ(scale[0], 1.0f);
  EXPECT_EQ(scale[3], 4.0f);
  ASSERT_EQ(api.cuModuleGetGlobal(nullptr, &bytes, mod_, "counter"), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleGetGlobal(&p, &bytes, mod_, "nothing"), CUDA_ERROR_NOT_FOUND);
}

TEST_F(EmuKernels, ParamInfoFollowsTheEntrySignature) {
  struct Want {
    const char* kernel;
    std::vector<std::pair<size_t, size_t>> params;  // offset, size
  };
  const Want wants[] = {
      {"vecAdd", {{0, 8}, {8, 8}, {16, 8}, {24, 4}}},
      {"hello", {{0, 4}}},
      {"mixedParams", {{0, 1}, {8, 24}, {32, 8}, {40, 8}}},
  };
  for (const Want& w : wants) {
    CUfunction f = Fn(w.kernel);
    for (size_t i = 0; i < w.params.size(); ++i) {
      size_t offset = 99, size = 99;
      ASSERT_EQ(api.cuFuncGetParamInfo(f, i, &offset, &size), CUDA_SUCCESS) << w.kernel << i;
      EXPECT_EQ(offset, w.params[i].first) << w.kernel << " param " << i;
      EXPECT_EQ(size, w.params[i].second) << w.kernel << " param " << i;
    }
    size_t offset, size;
    EXPECT_EQ(api.cuFuncGetParamInfo(f, w.params.size(), &offset, &size), CUDA_ERROR_INVALID_VALUE);
  }
}

TEST_F(EmuKernels, FunctionAttributes) {
  CUfunction f = Fn("vecAdd");
  int v = 0;
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION, f), CUDA_SUCCESS);
  EXPECT_EQ(v, 75);
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f), CUDA_SUCCESS);
  EXPECT_EQ(v, 80);
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), CUDA_SUCCESS);
  EXPECT_EQ(v, 1024);
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), CUDA_SUCCESS);
  EXPECT_EQ(v, 0);
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f),
            CUDA_SUCCESS);
  EXPECT_EQ(v, 48 * 1024);
  EXPECT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, f), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f),
            CUDA_SUCCESS);
  EXPECT_EQ(v, 64 * 1024);
  EXPECT_EQ(
      api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 163 * 1024 + 1),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_SHARED), CUDA_SUCCESS);
  EXPECT_EQ(api.cuFuncSetCacheConfig(f, static_cast<CUfunc_cache>(9)), CUDA_ERROR_INVALID_VALUE);
  int blocks = -1;
  ASSERT_EQ(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0), CUDA_SUCCESS);
  EXPECT_GT(blocks, 0);
  EXPECT_LE(blocks, 8);  // 2048 threads per SM / 256
  ASSERT_EQ(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 2048, 0), CUDA_SUCCESS);
  EXPECT_EQ(blocks, 0);
}

TEST_F(EmuKernels, UnloadInvalidatesFunctions) {
  CUfunction f = Fn("vecAdd");
  ASSERT_EQ(api.cuModuleUnload(mod_), CUDA_SUCCESS);
  mod_ = nullptr;
  const char* name;
  EXPECT_EQ(api.cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(EmuKernels, FatBinaryAndLinkedImagesLoad) {
  const std::string fatbin = ReadFile(REMORA_EMU_DATA "/kernels.fatbin");
  ASSERT_GT(fatbin.size(), 16u);
  CUmodule m;
  ASSERT_EQ(api.cuModuleLoadData(&m, fatbin.data()), CUDA_SUCCESS);
  CUfunction f;
  EXPECT_EQ(api.cuModuleGetFunction(&f, m, "vecAdd"), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);

  CUlinkState l;
  ASSERT_EQ(api.cuLinkCreate(0, nullptr, nullptr, &l), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLinkAddData(l, CU_JIT_INPUT_FATBINARY, const_cast<char*>(fatbin.data()),
                              fatbin.size(), "kernels", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuLinkAddData(l, CU_JIT_INPUT_PTX, const_cast<char*>(kTinyPtx), sizeof(kTinyPtx),
                              "tiny", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  void* image = nullptr;
  size_t size = 0;
  ASSERT_EQ(api.cuLinkComplete(l, &image, &size), CUDA_SUCCESS);
  EXPECT_GT(size, 0u);
  ASSERT_EQ(api.cuModuleLoadData(&m, image), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleGetFunction(&f, m, "vecAdd"), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleGetFunction(&f, m, "tiny"), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_EQ(api.cuLinkDestroy(l), CUDA_SUCCESS);
}

TEST_F(EmuKernels, LaunchConfigurationIsValidated) {
  CUfunction f = Fn("hello");
  int tag = 1;
  void* args[] = {&tag};
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 65536, 1, 1, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 48 * 1024 + 1, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  void* extra[] = {CU_LAUNCH_PARAM_END};
  EXPECT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, extra),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(&tag), args, nullptr),
      CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(EmuKernels, VecAddOnRandomData) {
  const int n = 3000;  // not a multiple of the block size
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-100, 100);
  std::vector<float> a(n), b(n), c(n, 0);
  for (int i = 0; i < n; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
  }
  const size_t bytes = n * sizeof(float);
  CUdeviceptr da, db, dc;
  ASSERT_EQ(api.cuMemAlloc(&da, bytes), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&db, bytes), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&dc, bytes), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoD(da, a.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoD(db, b.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(dc, 0, n), CUDA_SUCCESS);
  CUfunction f = Fn("vecAdd");
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  void* args[] = {&da, &db, &dc, const_cast<int*>(&n)};
  // Only the first half through kernelParams...
  const int half = n / 2;
  void* half_args[] = {&da, &db, &dc, const_cast<int*>(&half)};
  ASSERT_EQ(api.cuLaunchKernel(f, (half + 255) / 256, 1, 1, 256, 1, 1, 0, s, half_args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(c.data(), dc, bytes), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], i < half ? a[i] + b[i] : 0.0f) << i;
  // ...then all of it through `extra`, a packed buffer.
  struct {
    CUdeviceptr a, b, c;
    int n;
  } packed{da, db, dc, n};
  size_t packed_size = sizeof(packed);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &packed_size, CU_LAUNCH_PARAM_END};
  (void)args;
  ASSERT_EQ(api.cuLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, nullptr, extra),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(c.data(), dc, bytes), CUDA_SUCCESS);  // legacy waits for s
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  for (CUdeviceptr p : {da, db, dc}) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(EmuKernels, KernelsUpdateModuleGlobals) {
  const int n = 100;
  std::vector<float> x(n, 2.0f);
  CUdeviceptr dx;
  ASSERT_EQ(api.cuMemAlloc(&dx, n * sizeof(float)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoD(dx, x.data(), n * sizeof(float)), CUDA_SUCCESS);
  int k = 2;
  void* args[] = {&dx, const_cast<int*>(&n), &k};
  ASSERT_EQ(api.cuLaunchKernel(Fn("scaleAndCount"), 4, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(x.data(), dx, n * sizeof(float)), CUDA_SUCCESS);
  for (float v : x) ASSERT_EQ(v, 6.0f);
  CUdeviceptr counter;
  ASSERT_EQ(api.cuModuleGetGlobal(&counter, nullptr, mod_, "counter"), CUDA_SUCCESS);
  int c = 0;
  ASSERT_EQ(api.cuMemcpyDtoH(&c, counter, sizeof(c)), CUDA_SUCCESS);
  EXPECT_EQ(c, 7 + n);
  EXPECT_EQ(api.cuMemFree(dx), CUDA_SUCCESS);
}

struct Printed {
  std::mutex mu;
  std::string text;
  CUstream stream = nullptr;
  static void Handler(void* user, CUstream stream, const char* text, size_t len) {
    auto* p = static_cast<Printed*>(user);
    std::lock_guard lock(p->mu);
    p->text.append(text, len);
    p->stream = stream;
  }
};

TEST_F(EmuKernels, DevicePrintfReachesTheHandlerBeforeTheStreamCompletes) {
  Printed printed;
  ASSERT_EQ(api.remoraEmuSetPrintfHandler(Printed::Handler, &printed), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  int tag = 5;
  void* args[] = {&tag};
  ASSERT_EQ(api.cuLaunchKernel(Fn("hello"), 1, 1, 1, 2, 1, 1, 0, s, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  ASSERT_EQ(api.remoraEmuSetPrintfHandler(nullptr, nullptr), CUDA_SUCCESS);
  std::lock_guard lock(printed.mu);
  EXPECT_NE(printed.text.find("hello 5 from 0\n"), std::string::npos) << printed.text;
  EXPECT_NE(printed.text.find("hello 5 from 1\n"), std::string::npos) << printed.text;
  EXPECT_EQ(printed.stream, s);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuKernels, IllegalAddressBreaksTheContextUntilReset) {
  CUdeviceptr good;
  ASSERT_EQ(api.cuMemAlloc(&good, 256), CUDA_SUCCESS);
  CUdeviceptr bad = good + 4096 * 16;  // inside the device range, in no allocation
  int v = 1;
  void* args[] = {&bad, &v};
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchKernel(Fn("poke"), 1, 1, 1, 1, 1, 1, 0, s, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr p;
  EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(api.cuMemcpyHtoD(good, &v, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  mod_ = nullptr;  // the reset unloaded it
  EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
}

// Host memory registered with DEVICEMAP is reachable by kernels at its host
// address; the same memory registered without it, or after unregistering, is not.
TEST_F(EmuKernels, DeviceMappedHostMemoryIsKernelAccessible) {
  std::vector<int> host(1024, 0);
  CUdeviceptr dev = 0;
  EXPECT_EQ(api.cuMemHostGetDevicePointer(&dev, host.data(), 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(
      api.cuMemHostRegister(host.data(), host.size() * sizeof(int), CU_MEMHOSTREGISTER_DEVICEMAP),
      CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostGetDevicePointer(&dev, host.data() + 10, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuMemHostGetDevicePointer(&dev, host.data() + 10, 0), CUDA_SUCCESS);
  EXPECT_EQ(dev, reinterpret_cast<CUdeviceptr>(host.data() + 10));  // unified addressing
  int v = 77;
  void* args[] = {&dev, &v};
  ASSERT_EQ(api.cuLaunchKernel(Fn("poke"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(host[10], 77);
  // Copies still take device allocations only.
  EXPECT_EQ(api.cuMemsetD8(dev, 0, 4), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr base = 0;
  EXPECT_EQ(api.cuMemGetAddressRange(&base, nullptr, dev), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(api.cuMemHostUnregister(host.data()), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostGetDevicePointer(&dev, host.data(), 0), CUDA_ERROR_INVALID_VALUE);

  std::vector<int> plain(64, 0);
  ASSERT_EQ(api.cuMemHostRegister(plain.data(), plain.size() * sizeof(int), 0), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostGetDevicePointer(&dev, plain.data(), 0), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr unmapped = reinterpret_cast<CUdeviceptr>(plain.data());
  void* args2[] = {&unmapped, &v};
  ASSERT_EQ(api.cuLaunchKernel(Fn("poke"), 1, 1, 1, 1, 1, 1, 0, nullptr, args2, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(plain[0], 0);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  mod_ = nullptr;
}

// A device fault breaks the context with the CUresult NVIDIA's driver uses; a
// launch that does not fault leaves it healthy.
TEST_F(EmuKernels, DeviceAssertAndTrapAreStickyWithTheirOwnCodes) {
  struct Case {
    const char* kernel;
    int arg;
    CUresult want;
  };
  const Case cases[] = {
      {"checkPositive", 5, CUDA_SUCCESS},
      {"checkPositive", -5, CUDA_ERROR_ASSERT},
      {"trapIf", 0, CUDA_SUCCESS},
      {"trapIf", 1, CUDA_ERROR_LAUNCH_FAILED},
  };
  for (const Case& c : cases) {
    CUmodule m;
    ASSERT_EQ(api.cuModuleLoadData(&m, ptx_.c_str()), CUDA_SUCCESS);
    CUfunction f;
    ASSERT_EQ(api.cuModuleGetFunction(&f, m, c.kernel), CUDA_SUCCESS);
    int arg = c.arg;
    void* args[] = {&arg};
    ASSERT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(api.cuCtxSynchronize(), c.want) << c.kernel << "(" << c.arg << ")";
    CUdeviceptr p;
    EXPECT_EQ(api.cuMemAlloc(&p, 256), c.want) << c.kernel << "(" << c.arg << ")";
    ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  }
  mod_ = nullptr;  // unloaded by the resets
}

TEST_F(EmuKernels, DeviceNewAndDeleteServeEveryThreadAndBlocksOutliveTheirKernel) {
  constexpr int kBlocks = 8, kThreads = 64, kN = 100;
  CUdeviceptr sums, ptrs;
  ASSERT_EQ(api.cuMemAlloc(&sums, kBlocks * kThreads * 8), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&ptrs, kBlocks * kThreads * 8), CUDA_SUCCESS);
  int n = kN;
  void* args[] = {&n, &sums, &ptrs};
  // Twice: what the first launch deleted is there for the second.
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(api.cuLaunchKernel(Fn("heapNeighbours"), kBlocks, 1, 1, kThreads, 1, 1, 0, nullptr,
                                 args, nullptr),
              CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
    std::vector<long long> got(kBlocks * kThreads);
    ASSERT_EQ(api.cuMemcpyDtoH(got.data(), sums, got.size() * 8), CUDA_SUCCESS);
    for (int t = 0; t < kBlocks * kThreads; ++t) {
      const long long other = t / kThreads * kThreads + (t % kThreads + 1) % kThreads;
      ASSERT_EQ(got[t], kN * other + kN * (kN - 1) / 2) << "thread " << t << " round " << round;
    }
  }
  // A block malloc'd by one kernel is freed by another; a request past the heap gets null.
  CUdeviceptr out;
  ASSERT_EQ(api.cuMemAlloc(&out, 8), CUDA_SUCCESS);
  size_t heap = 0;
  ASSERT_EQ(api.cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(heap, 8u << 20);  // CUDA's default
  EXPECT_EQ(api.cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16u << 20), CUDA_ERROR_INVALID_VALUE)
      << "the heap is in use: its size is fixed";
  for (unsigned long long bytes : {9ull << 20, 1000ull}) {
    void* margs[] = {&bytes, &out};
    ASSERT_EQ(api.cuLaunchKernel(Fn("heapMalloc"), 1, 1, 1, 1, 1, 1, 0, nullptr, margs, nullptr),
              CUDA_SUCCESS);
    unsigned long long p = 1;
    ASSERT_EQ(api.cuMemcpyDtoH(&p, out, 8), CUDA_SUCCESS);
    if (bytes > heap) {
      EXPECT_EQ(p, 0u) << "past the heap: null, as CUDA's malloc";
      continue;
    }
    EXPECT_NE(p, 0u);
    EXPECT_EQ(p % 16, 0u);
    void* fargs[] = {&p};
    ASSERT_EQ(api.cuLaunchKernel(Fn("heapFree"), 1, 1, 1, 1, 1, 1, 0, nullptr, fargs, nullptr),
              CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
    // Freeing it again is not a block of the heap: a launch failure, as a GPU's trap.
    ASSERT_EQ(api.cuLaunchKernel(Fn("heapFree"), 1, 1, 1, 1, 1, 1, 0, nullptr, fargs, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
    ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
    mod_ = nullptr;  // unloaded by the reset
    return;
  }
}

TEST_F(EmuKernels, LimitsReadBackWithAGpusDefaults) {
  size_t v = 0;
  ASSERT_EQ(api.cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(v, 1024u);
  ASSERT_EQ(api.cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 4u << 20), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxGetLimit(&v, CU_LIMIT_PRINTF_FIFO_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(v, 4u << 20);
  EXPECT_EQ(api.cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuCtxSetLimit(CU_LIMIT_SHMEM_SIZE, 1), CUDA_ERROR_UNSUPPORTED_LIMIT);
  EXPECT_EQ(api.cuCtxGetLimit(&v, CU_LIMIT_MAX), CUDA_ERROR_UNSUPPORTED_LIMIT);
  EXPECT_EQ(api.cuCtxGetLimit(nullptr, CU_LIMIT_STACK_SIZE), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(EmuModule, LinkerResolvesExternsAcrossRdcUnits) {
  const std::string lib = ReadFile(REMORA_EMU_DATA "/rdc_lib.ptx");
  const std::string main = ReadFile(REMORA_EMU_DATA "/rdc_main.ptx");
  ASSERT_FALSE(lib.empty());
  ASSERT_FALSE(main.empty());
  // Alone, the kernel's unit has an unresolved extern function.
  CUmodule m = nullptr;
  EXPECT_NE(api.cuModuleLoadData(&m, main.c_str()), CUDA_SUCCESS);
  CUlinkState l;
  ASSERT_EQ(api.cuLinkCreate(0, nullptr, nullptr, &l), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLinkAddData(l, CU_JIT_INPUT_PTX, const_cast<char*>(main.c_str()), main.size() + 1,
                              "rdc_main", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  void* image = nullptr;
  size_t size = 0;
  EXPECT_NE(api.cuLinkComplete(l, &image, &size), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLinkAddData(l, CU_JIT_INPUT_PTX, const_cast<char*>(lib.c_str()), lib.size() + 1,
                              "rdc_lib", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuLinkComplete(l, &image, &size), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleLoadData(&m, image), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLinkDestroy(l), CUDA_SUCCESS);  // the module no longer needs the image

  CUfunction f;
  ASSERT_EQ(api.cuModuleGetFunction(&f, m, "applyTwice"), CUDA_SUCCESS);
  CUdeviceptr offset;
  size_t bytes = 0;
  ASSERT_EQ(api.cuModuleGetGlobal(&offset, &bytes, m, "offset"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 4u);
  const int n = 77;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = i * 3 - 50;
  CUdeviceptr dx;
  ASSERT_EQ(api.cuMemAlloc(&dx, n * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoD(dx, x.data(), n * sizeof(int)), CUDA_SUCCESS);
  void* args[] = {&dx, const_cast<int*>(&n)};
  ASSERT_EQ(api.cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  std::vector<int> out(n);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), dx, n * sizeof(int)), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], 2 * x[i] + 1000) << i;
  EXPECT_EQ(api.cuMemFree(dx), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
}

// --- the program cache: one parse per distinct image, globals per module ---------------------

struct CacheStats {
  unsigned long long programs = 0, parses = 0;
};

CacheStats Stats(const Api& api) {
  CacheStats s;
  EXPECT_EQ(api.remoraEmuGetProgramCacheStats(&s.programs, &s.parses), CUDA_SUCCESS);
  return s;
}

int ReadInt(const Api& api, CUdeviceptr p) {
  int v = -1;
  EXPECT_EQ(api.cuMemcpyDtoH(&v, p, sizeof(v)), CUDA_SUCCESS);
  return v;
}

TEST_F(EmuModule, SameImageParsesOnceButEachModuleHasItsOwnGlobals) {
  const std::string fatbin = ReadFile(REMORA_EMU_DATA "/kernels.fatbin");
  ASSERT_GT(fatbin.size(), 16u);
  const std::string copy = fatbin;  // same bytes elsewhere: the key is the content
  const CacheStats before = Stats(api);
  CUmodule m1, m2;
  ASSERT_EQ(api.cuModuleLoadData(&m1, fatbin.data()), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleLoadData(&m2, copy.data()), CUDA_SUCCESS);
  ASSERT_NE(m1, m2);
  CacheStats loaded = Stats(api);
  EXPECT_EQ(loaded.parses, before.parses + 1);
  EXPECT_EQ(loaded.programs, before.programs + 1);

  // __device__ and __constant__ variables are per module.
  CUdeviceptr c1, c2, s1, s2;
  size_t bytes = 0;
  ASSERT_EQ(api.cuModuleGetGlobal(&c1, nullptr, m1, "counter"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetGlobal(&c2, &bytes, m2, "counter"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, sizeof(int));
  ASSERT_EQ(api.cuModuleGetGlobal(&s1, nullptr, m1, "scale"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetGlobal(&s2, nullptr, m2, "scale"), CUDA_SUCCESS);
  EXPECT_NE(c1, c2);
  EXPECT_NE(s1, s2);
  EXPECT_EQ(ReadInt(api, c1), 7);
  EXPECT_EQ(ReadInt(api, c2), 7);
  const int written = 42;
  ASSERT_EQ(api.cuMemcpyHtoD(c1, &written, sizeof(written)), CUDA_SUCCESS);
  EXPECT_EQ(ReadInt(api, c1), 42);
  EXPECT_EQ(ReadInt(api, c2), 7);

  // A kernel of one module updates that module's variable only.
  const int n = 50;
  CUdeviceptr dx;
  ASSERT_EQ(api.cuMemAlloc(&dx, n * sizeof(float)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(dx, 0, n), CUDA_SUCCESS);
  int k = 0;
  void* args[] = {&dx, const_cast<int*>(&n), &k};
  CUfunction f1, f2;
  ASSERT_EQ(api.cuModuleGetFunction(&f1, m1, "scaleAndCount"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetFunction(&f2, m2, "scaleAndCount"), CUDA_SUCCESS);
  EXPECT_NE(f1, f2);
  ASSERT_EQ(api.cuLaunchKernel(f2, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(ReadInt(api, c1), 42);
  EXPECT_EQ(ReadInt(api, c2), 7 + n);
  ASSERT_EQ(api.cuLaunchKernel(f1, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(ReadInt(api, c1), 42 + n);
  EXPECT_EQ(ReadInt(api, c2), 7 + n);
  EXPECT_EQ(api.cuMemFree(dx), CUDA_SUCCESS);

  // The entry lives while either module does, and goes with the last.
  EXPECT_EQ(api.cuModuleUnload(m1), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).programs, before.programs + 1);
  EXPECT_EQ(ReadInt(api, c2), 7 + n);
  EXPECT_EQ(api.cuModuleUnload(m2), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).programs, before.programs);
  // Loaded again after eviction: parsed again, fresh initial values.
  ASSERT_EQ(api.cuModuleLoadData(&m1, fatbin.data()), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).parses, before.parses + 2);
  ASSERT_EQ(api.cuModuleGetGlobal(&c1, nullptr, m1, "counter"), CUDA_SUCCESS);
  EXPECT_EQ(ReadInt(api, c1), 7);
  EXPECT_EQ(api.cuModuleUnload(m1), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).programs, before.programs);
}

// A pointer-valued initialiser points at its own module's variable, from load on.
constexpr char kPointerPtx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.global .align 4 .u32 target_var = 5;
.global .align 8 .u64 ptr_var = generic(target_var);
.visible .entry readThrough(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u64 %rd3, [ptr_var];
  ld.u32 %r1, [%rd3];
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

TEST_F(EmuModule, PointerInitialisersPointIntoTheirOwnModule) {
  const CacheStats before = Stats(api);
  CUmodule m[2];
  CUdeviceptr target[2], ptr[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(api.cuModuleLoadData(&m[i], kPointerPtx), CUDA_SUCCESS);
    ASSERT_EQ(api.cuModuleGetGlobal(&target[i], nullptr, m[i], "target_var"), CUDA_SUCCESS);
    ASSERT_EQ(api.cuModuleGetGlobal(&ptr[i], nullptr, m[i], "ptr_var"), CUDA_SUCCESS);
  }
  EXPECT_EQ(Stats(api).parses, before.parses + 1);
  for (int i = 0; i < 2; ++i) {
    uint64_t v = 0;
    ASSERT_EQ(api.cuMemcpyDtoH(&v, ptr[i], sizeof(v)), CUDA_SUCCESS);
    EXPECT_EQ(v, target[i]) << i;  // before any launch
  }
  const int values[2] = {11, 22};
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(api.cuMemcpyHtoD(target[i], &values[i], sizeof(int)), CUDA_SUCCESS);
  }
  CUdeviceptr out;
  ASSERT_EQ(api.cuMemAlloc(&out, sizeof(int)), CUDA_SUCCESS);
  // Alternating launches of the shared program each read their own module's variable.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 2; ++i) {
      CUfunction f;
      ASSERT_EQ(api.cuModuleGetFunction(&f, m[i], "readThrough"), CUDA_SUCCESS);
      void* args[] = {&out};
      ASSERT_EQ(api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
      EXPECT_EQ(ReadInt(api, out), values[i]) << round << " " << i;
    }
  }
  EXPECT_EQ(api.cuMemFree(out), CUDA_SUCCESS);
  for (CUmodule mod : m) EXPECT_EQ(api.cuModuleUnload(mod), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).programs, before.programs);
}

TEST_F(EmuModule, LinkedImageLoadsWithoutASecondParse) {
  const std::string lib = ReadFile(REMORA_EMU_DATA "/rdc_lib.ptx");
  const std::string main = ReadFile(REMORA_EMU_DATA "/rdc_main.ptx");
  ASSERT_FALSE(lib.empty());
  ASSERT_FALSE(main.empty());
  const CacheStats before = Stats(api);
  CUmodule mods[2];
  for (CUmodule& m : mods) {  // e.g. two tenants linking the same -rdc program
    CUlinkState l;
    ASSERT_EQ(api.cuLinkCreate(0, nullptr, nullptr, &l), CUDA_SUCCESS);
    for (const std::string* src : {&main, &lib}) {
      ASSERT_EQ(api.cuLinkAddData(l, CU_JIT_INPUT_PTX, const_cast<char*>(src->c_str()),
                                  src->size() + 1, "rdc", 0, nullptr, nullptr),
                CUDA_SUCCESS);
    }
    void* image = nullptr;
    size_t size = 0;
    ASSERT_EQ(api.cuLinkComplete(l, &image, &size), CUDA_SUCCESS);
    ASSERT_EQ(api.cuModuleLoadData(&m, image), CUDA_SUCCESS);
    ASSERT_EQ(api.cuLinkDestroy(l), CUDA_SUCCESS);
  }
  CacheStats s = Stats(api);
  EXPECT_EQ(s.parses, before.parses + 1);
  EXPECT_EQ(s.programs, before.programs + 1);
  CUdeviceptr o1, o2;
  ASSERT_EQ(api.cuModuleGetGlobal(&o1, nullptr, mods[0], "offset"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetGlobal(&o2, nullptr, mods[1], "offset"), CUDA_SUCCESS);
  EXPECT_NE(o1, o2);
  for (CUmodule m : mods) EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).programs, before.programs);
}

TEST_F(EmuModule, ConcurrentLoadsOfOneImageParseOnce) {
  const std::string fatbin = ReadFile(REMORA_EMU_DATA "/kernels.fatbin");
  ASSERT_GT(fatbin.size(), 16u);
  const CacheStats before = Stats(api);
  constexpr int kThreads = 8;
  std::vector<CUmodule> mods(kThreads, nullptr);
  std::vector<CUresult> results(kThreads, CUDA_ERROR_UNKNOWN);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      if (api.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return;
      results[i] = api.cuModuleLoadData(&mods[i], fatbin.data());
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) ASSERT_EQ(results[i], CUDA_SUCCESS) << i;
  CacheStats s = Stats(api);
  EXPECT_EQ(s.parses, before.parses + 1);
  EXPECT_EQ(s.programs, before.programs + 1);
  for (CUmodule m : mods) EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).programs, before.programs);
}

#endif  // REMORA_EMU_HAS_PTX && REMORA_EMU_HAS_NVCC

}  // namespace
}  // namespace remora::emu::test
