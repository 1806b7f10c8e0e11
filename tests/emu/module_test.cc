// tests/emu/module_test.cc - module images, the linker, and the program cache (one parse per image,
// globals per module).
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
  newer.replace(newer.find("sm_75"), 5, "sm_90");
  // A GPU refuses PTX for a newer architecture; the emulated GPU runs compute_90's (what it
  // lacks is refused at launch), so programs built only for sm_90 run.
  ASSERT_EQ(api.cuModuleLoadData(&m, newer.c_str()), CUDA_SUCCESS);
  int ptx_version = 0;
  CUfunction tiny;
  ASSERT_EQ(api.cuModuleGetFunction(&tiny, m, "tiny"), CUDA_SUCCESS);
  EXPECT_EQ(api.cuFuncGetAttribute(&ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION, tiny),
            CUDA_SUCCESS);
  EXPECT_EQ(ptx_version, 90);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
  // Up to compute_121's, as NVIDIA's libraries carry it; not newer.
  std::string libraries = kTinyPtx;
  libraries.replace(libraries.find("sm_75"), 5, "sm_121");
  ASSERT_EQ(api.cuModuleLoadData(&m, libraries.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
  std::string newest = kTinyPtx;
  newest.replace(newest.find("sm_75"), 5, "sm_130");
  EXPECT_EQ(api.cuModuleLoadData(&m, newest.c_str()), CUDA_ERROR_INVALID_PTX);
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

// A module's kernels listed, in its order, and not its device functions; a buffer shorter than
// the list gets its first entries.
TEST_F(EmuModule, EnumeratesTheModulesKernels) {
  const char ptx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.func (.param .b32 func_retval0) helper(.param .b32 helper_param_0)
{
  .reg .b32 %r<2>;
  ld.param.b32 %r1, [helper_param_0];
  st.param.b32 [func_retval0], %r1;
  ret;
}
.visible .entry first(.param .u32 p)
{
  ret;
}
.visible .entry second()
{
  ret;
}
)";
  CUmodule m;
  ASSERT_EQ(api.cuModuleLoadData(&m, ptx), CUDA_SUCCESS);
  unsigned count = 0;
  ASSERT_EQ(api.cuModuleGetFunctionCount(&count, m), CUDA_SUCCESS);
  ASSERT_EQ(count, 2u);
  CUfunction fns[3] = {};
  ASSERT_EQ(api.cuModuleEnumerateFunctions(fns, 3, m), CUDA_SUCCESS);
  EXPECT_EQ(fns[2], nullptr);
  const char* name = nullptr;
  ASSERT_EQ(api.cuFuncGetName(&name, fns[0]), CUDA_SUCCESS);
  EXPECT_STREQ(name, "first");
  ASSERT_EQ(api.cuFuncGetName(&name, fns[1]), CUDA_SUCCESS);
  EXPECT_STREQ(name, "second");
  CUfunction by_name = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&by_name, m, "second"), CUDA_SUCCESS);
  EXPECT_EQ(by_name, fns[1]);
  CUfunction one[1] = {};
  ASSERT_EQ(api.cuModuleEnumerateFunctions(one, 1, m), CUDA_SUCCESS);
  EXPECT_EQ(one[0], fns[0]);
  EXPECT_EQ(api.cuModuleGetFunctionCount(&count, reinterpret_cast<CUmodule>(&count)),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
}

// A kernel that reaches, directly or through a device function, an instruction form the
// interpreter does not implement is refused at launch with CUDA_ERROR_NOT_SUPPORTED, before it
// runs: the context stays healthy and the module's other kernels run. (Failing when reached
// would break the context of every tenant sharing it.)
TEST_F(EmuModule, AKernelTheEmulatorCannotRunIsRefusedAtLaunch) {
  const char ptx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.func (.param .b32 r) deep(.param .b32 a)
{
  .reg .b32 %r<4>;
  ld.param.b32 %r1, [a];
  mad.hi.sat.s32 %r2, %r1, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
.func (.param .b32 r) middle(.param .b32 a)
{
  .reg .b32 %r<4>;
  ld.param.b32 %r1, [a];
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 r0;
  call.uni (r0), deep, (p0);
  ld.param.b32 %r2, [r0];
  }
  st.param.b32 [r], %r2;
  ret;
}
.visible .entry through_calls(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  .reg .pred %p<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 999;
  @%p1 bra DONE;
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 r0;
  call.uni (r0), middle, (p0);
  ld.param.b32 %r2, [r0];
  }
DONE:
  ret;
}
.visible .entry plain(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  CUmodule m;
  ASSERT_EQ(api.cuModuleLoadData(&m, ptx), CUDA_SUCCESS);
  CUfunction bad, plain;
  ASSERT_EQ(api.cuModuleGetFunction(&bad, m, "through_calls"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetFunction(&plain, m, "plain"), CUDA_SUCCESS);
  Dev<uint32_t> out(std::vector<uint32_t>{0});
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(out.get());
  void* args[] = {&p};
  EXPECT_EQ(api.cuLaunchKernel(bad, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);  // nothing ran, nothing broke
  ASSERT_EQ(api.cuLaunchKernel(plain, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(out.Get(), std::vector<uint32_t>{7});
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
}

// A kernel built with __cluster_dims__ (.reqnctapercluster, .explicitcluster) loads with its
// module and reports its cluster shape; one of more than a block is refused at launch (this
// device launches no clusters), saying so, and the module's other kernels run.
TEST_F(EmuModule, AKernelRequiringClustersLoadsAndIsRefusedAtLaunch) {
  const char ptx[] = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry paired(.param .u64 out) .explicitcluster .reqnctapercluster 2, 1, 1
{
  ret;
}
.visible .entry single(.param .u64 out) .reqnctapercluster 1
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 9;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  CUmodule m;
  ASSERT_EQ(api.cuModuleLoadData(&m, ptx), CUDA_SUCCESS);
  CUfunction paired, single;
  ASSERT_EQ(api.cuModuleGetFunction(&paired, m, "paired"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetFunction(&single, m, "single"), CUDA_SUCCESS);
  int v = 0;
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, paired),
            CUDA_SUCCESS);
  EXPECT_EQ(v, 2);
  ASSERT_EQ(api.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, paired),
            CUDA_SUCCESS);
  EXPECT_EQ(v, 1);
  Dev<uint32_t> out(std::vector<uint32_t>{0});
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(out.get());
  void* args[] = {&p};
  testing::internal::CaptureStderr();
  EXPECT_EQ(api.cuLaunchKernel(paired, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("requires clusters of 2x1x1 blocks"), std::string::npos) << err;
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchKernel(single, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(out.Get(), std::vector<uint32_t>{9});
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
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

// A module of one source past kLazyModuleBytes (a library's, of hundreds of kernels) is parsed a
// kernel at a time, each when first used: loading parses its declarations alone, a kernel asked
// for parses what it reaches once, its variables are the module's, and a kernel never asked for
// is never parsed (its fault shows when it is asked for, not at load).
TEST_F(EmuModule, ALargeModuleLoadsAKernelAtATime) {
  std::string ptx = R"(.version 7.5
.target sm_75
.address_size 64
.global .align 4 .u32 counter = 3;
.global .align 8 .u64 counter_at = generic(counter);
.func (.param .b32 func_retval0) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [func_retval0], %r2;
  ret;
}
.visible .entry bump(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u64 %rd3, [counter_at];
  atom.add.u32 %r1, [%rd3], 1;
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 r0;
  call.uni (r0), twice, (p0);
  ld.param.b32 %r2, [r0];
  }
  st.global.u32 [%rd2], %r2;
  ret;
}
.visible .entry broken()
{
  not.an.instruction %r1;
}
)";
  for (int k = 0; ptx.size() < (size_t{1} << 20) + 4096; ++k) {
    ptx +=
        ".visible .entry filler" + std::to_string(k) + "(.param .u64 p)\n{\n  .reg .b32 %r<2>;\n";
    for (int i = 0; i < 100; ++i) ptx += "  add.s32 %r1, %r1, " + std::to_string(i) + ";\n";
    ptx += "  ret;\n}\n";
  }
  const CacheStats before = Stats(api);
  CUmodule m;
  ASSERT_EQ(api.cuModuleLoadData(&m, ptx.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).parses, before.parses + 1);  // the declarations
  unsigned count = 0;
  ASSERT_EQ(api.cuModuleGetFunctionCount(&count, m), CUDA_SUCCESS);
  EXPECT_GT(count, 100u);
  std::vector<CUfunction> listed(count);
  ASSERT_EQ(api.cuModuleEnumerateFunctions(listed.data(), count, m), CUDA_SUCCESS);
  const char* name = nullptr;
  ASSERT_EQ(api.cuFuncGetName(&name, listed[0]), CUDA_SUCCESS);
  EXPECT_STREQ(name, "bump");
  EXPECT_EQ(Stats(api).parses, before.parses + 1);  // names need no parse

  CUdeviceptr counter, out;
  ASSERT_EQ(api.cuModuleGetGlobal(&counter, nullptr, m, "counter"), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&out, sizeof(int)), CUDA_SUCCESS);
  CUfunction bump;
  ASSERT_EQ(api.cuModuleGetFunction(&bump, m, "bump"), CUDA_SUCCESS);
  EXPECT_EQ(bump, listed[0]);
  EXPECT_EQ(Stats(api).parses, before.parses + 2);
  void* args[] = {&out};
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(api.cuLaunchKernel(bump, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(ReadInt(api, out), 2 * (3 + i));  // the module's counter, through its pointer
  }
  EXPECT_EQ(ReadInt(api, counter), 5);
  ASSERT_EQ(api.cuModuleGetFunction(&bump, m, "bump"), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).parses, before.parses + 2);  // parsed once

  // A handle only listed loads at its first use.
  int threads = 0;
  ASSERT_EQ(
      api.cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, listed[count - 1]),
      CUDA_SUCCESS);
  EXPECT_GT(threads, 0);
  EXPECT_EQ(Stats(api).parses, before.parses + 3);
  CUfunction f;
  EXPECT_EQ(api.cuModuleGetFunction(&f, m, "broken"), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(api.cuModuleGetFunction(&f, m, "twice"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(api.cuModuleGetFunction(&f, m, "missing"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(api.cuMemFree(out), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_EQ(Stats(api).programs, before.programs);
}

#endif  // REMORA_EMU_HAS_PTX && REMORA_EMU_HAS_NVCC

}  // namespace
}  // namespace remora::emu::test
