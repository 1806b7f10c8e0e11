// tests/emu/kernels_test.cc - kernels through the emulated driver: functions, globals and
// parameters from PTX, launch checks, results on random data, device printf, faults that
// break the context, mapped host memory, assert and trap, device new/delete, limits.
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

// A grid as large as the occupancy API says the device holds (blocks of 512 threads), whose
// blocks wait on each other: every block is resident, as on a GPU, and all pass. Past 64Ki
// threads the emulated GPU used to make only that many resident, and the grid hung.
TEST_F(EmuKernels, AGridTheDeviceHoldsIsAllResident) {
  CUfunction f = Fn("gridBarrier");
  int per_sm = 0, sms = 0;
  ASSERT_EQ(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 512, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
            CUDA_SUCCESS);
  const unsigned blocks = unsigned(per_sm * sms);
  ASSERT_GT(blocks * 512u, 65536u);
  CUdeviceptr count, passed;
  ASSERT_EQ(api.cuMemAlloc(&count, 4), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&passed, blocks * 4), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(count, 0, 1), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(passed, 0, blocks), CUDA_SUCCESS);
  void* args[] = {&count, &passed};
  ASSERT_EQ(api.cuLaunchKernel(f, blocks, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<int> got(blocks);
  ASSERT_EQ(api.cuMemcpyDtoH(got.data(), passed, blocks * 4), CUDA_SUCCESS);
  for (unsigned b = 0; b < blocks; ++b) EXPECT_EQ(got[b], 1) << b;
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
  // Inside the device range, far from every allocation's granule.
  CUdeviceptr bad = good + (256ull << 20);
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

// As on a GPU, which maps device memory in 2 MiB pages shared by small allocations, a store a
// little past a small allocation's end lands in memory instead of faulting (public programs rely
// on it unknowingly), while memory in no live allocation's page faults, freed memory included.
TEST_F(EmuKernels, StoresPastAnAllocationFaultOnlyOutsideItsMappedPages) {
  CUdeviceptr small = 0, big = 0;
  ASSERT_EQ(api.cuMemAlloc(&small, 15 * 48), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&big, 64ull << 20), CUDA_SUCCESS);
  int v = 7;
  CUdeviceptr past = small + 512 * 48 - 4;  // the last of 512 threads' states, 15 allocated
  void* args[] = {&past, &v};
  ASSERT_EQ(api.cuLaunchKernel(Fn("poke"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  CUdeviceptr freed = big + (32ull << 20);  // the middle of a freed 64 MiB: no page left there
  ASSERT_EQ(api.cuMemFree(big), CUDA_SUCCESS);
  void* args2[] = {&freed, &v};
  ASSERT_EQ(api.cuLaunchKernel(Fn("poke"), 1, 1, 1, 1, 1, 1, 0, nullptr, args2, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  mod_ = nullptr;
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

unsigned DescendHost(int depth, unsigned x) {
  unsigned buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = x * 2654435761u + i;
  const unsigned below = depth > 0 ? DescendHost(depth - 1, buf[x % 256] >> 3) : 0;
  return below + buf[(x >> 5) % 256] % 1000;
}

// The stack limit sizes the call stack of the launches after it: 24 levels of 1 KiB overflow
// the 16 KiB a thread has at least, and run once the limit is 40 KiB.
TEST_F(EmuKernels, StackLimitSizesTheCallStack) {
  CUdeviceptr out;
  ASSERT_EQ(api.cuMemAlloc(&out, 4), CUDA_SUCCESS);
  int depth = 24;
  unsigned x = 0x2468ace1;
  void* args[] = {&depth, &x, &out};
  EXPECT_EQ(api.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, (512u << 10) + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(api.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 40u << 10), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchKernel(Fn("recurse"), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  unsigned got = 0;
  ASSERT_EQ(api.cuMemcpyDtoH(&got, out, 4), CUDA_SUCCESS);
  EXPECT_EQ(got, DescendHost(depth, x));
  ASSERT_EQ(api.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchKernel(Fn("recurse"), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED) << "the call stack overflows";
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  mod_ = nullptr;  // unloaded by the reset
}

// Heaps kept apart by owner (the server's tenants): each launch draws on the heap its
// enqueuing thread named; one owner's heap full leaves another's free; forgetting an owner's
// heap gives its memory back, blocks never freed included.
TEST_F(EmuKernels, HeapsOfOwnersAreApart) {
  CUdeviceptr out;
  ASSERT_EQ(api.cuMemAlloc(&out, 8), CUDA_SUCCESS);
  size_t total = 0;
  const auto grab = [&](unsigned long long owner, unsigned long long bytes) {
    EXPECT_EQ(api.remoraEmuSetLaunchHeapOwner(owner), CUDA_SUCCESS);
    void* args[] = {&bytes, &out};
    EXPECT_EQ(api.cuLaunchKernel(Fn("heapMalloc"), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(api.remoraEmuSetLaunchHeapOwner(0), CUDA_SUCCESS);
    unsigned long long p = 1;
    EXPECT_EQ(api.cuMemcpyDtoH(&p, out, 8), CUDA_SUCCESS);
    return p;
  };
  ASSERT_EQ(api.remoraEmuHeapSetLimit(1, 1u << 20), CUDA_SUCCESS);
  EXPECT_EQ(grab(1, 2u << 20), 0u) << "past owner 1's heap of 1 MiB";
  const unsigned long long p1 = grab(1, 768u << 10);
  EXPECT_NE(p1, 0u);
  EXPECT_EQ(grab(1, 512u << 10), 0u) << "owner 1's heap is full";
  const unsigned long long p2 = grab(2, 6u << 20);
  EXPECT_NE(p2, 0u) << "owner 2 has a heap of its own, at the default 8 MiB";
  EXPECT_TRUE(p2 + (6u << 20) <= p1 || p1 + (768u << 10) <= p2);
  EXPECT_NE(grab(0, 6u << 20), 0u) << "the context's heap is apart from both";
  EXPECT_EQ(api.remoraEmuHeapSetLimit(1, 2u << 20), CUDA_ERROR_INVALID_VALUE)
      << "a heap in use keeps its size";
  size_t free_held = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free_held, &total), CUDA_SUCCESS);
  ASSERT_EQ(api.remoraEmuHeapRelease(1), CUDA_SUCCESS);
  ASSERT_EQ(api.remoraEmuHeapRelease(2), CUDA_SUCCESS);
  ASSERT_EQ(api.remoraEmuHeapRelease(3), CUDA_SUCCESS) << "one it never had: nothing to do";
  size_t free_after = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
  EXPECT_GE(free_after, free_held + (9u << 20)) << "both owners' heaps went back";
  EXPECT_NE(grab(1, 2u << 20), 0u) << "owner 1 starts afresh with the default heap";
  ASSERT_EQ(api.remoraEmuHeapRelease(1), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);  // the context's heap too
  mod_ = nullptr;
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

}  // namespace
}  // namespace remora::emu::test
