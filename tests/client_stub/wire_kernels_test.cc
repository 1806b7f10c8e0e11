// tests/client_stub/wire_kernels_test.cc - the stub against a fake server (wire_harness.h): fat
// binaries registered lazily and sent once by hash, launches with packed parameters, mapped and
// managed memory, small local answers, and (last: it never clears) a sticky error.
#include "tests/client_stub/wire_harness.h"

namespace remora::client_stub {
namespace {

using namespace wire;
using namespace std::chrono_literals;

// What __cudaRegisterFatBinary receives: a v1 wrapper around one fat binary.
struct FatbinWrapper {
  uint32_t magic = 0x466243B1, version = 1;
  const void* data;
  const void* extra = nullptr;
};

// A registered "module": an empty fat binary behind a v1 wrapper.
struct FakeFatbin {
  alignas(8) uint32_t fatbin[4] = {0xBA55ED50, 0x00100001, 0, 0};  // magic, v1, header 16, 0 bytes
  FatbinWrapper wrapper{.data = fatbin};
};

void FakeKernel(int64_t, int) {}

// What nvcc's constructor does for one kernel of a module.
void RegisterKernel(void** module, void (*host_stub)(int64_t, int), const char* name) {
  __cudaRegisterFunction(module, reinterpret_cast<const char*>(host_stub), nullptr, name, -1,
                         nullptr, nullptr, nullptr, nullptr, nullptr);
}
int g_device_var_shadow;

TEST_F(Wire, KernelsRegisterLazilyAndLaunchWithPackedParams) {
  static FakeFatbin fb;
  size_t registers = server_->Count(CallId::kRegisterModule);
  void** h = __cudaRegisterFatBinary(&fb.wrapper);
  RegisterKernel(h, &FakeKernel, "_Z4fakeli");
  __cudaRegisterVar(h, reinterpret_cast<char*>(&g_device_var_shadow), nullptr, "dvar", 0,
                    sizeof(int), 0, 0);
  __cudaRegisterFatBinaryEnd(h);
  EXPECT_EQ(server_->Count(CallId::kRegisterModule), registers);  // nothing sent yet

  cudaKernel_t k = nullptr;
  ASSERT_EQ(__cudaGetKernel(&k, reinterpret_cast<const void*>(&FakeKernel)), cudaSuccess);
  cudaKernel_t again = nullptr;
  ASSERT_EQ(__cudaGetKernel(&again, reinterpret_cast<const void*>(&FakeKernel)), cudaSuccess);
  EXPECT_EQ(k, again);

  EXPECT_EQ(__cudaPushCallConfiguration(dim3(3, 2), dim3(128), 64, nullptr), 0u);
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
  ASSERT_EQ(__cudaPopCallConfiguration(&grid, &block, &shmem, &stream), cudaSuccess);
  EXPECT_EQ(grid.y, 2u);
  EXPECT_EQ(block.x, 128u);

  int64_t a = 0x0102030405060708;
  int b = 99;
  void* args[] = {&a, &b};
  ASSERT_EQ(__cudaLaunchKernel(k, grid, block, args, shmem, stream), cudaSuccess);
  // Dedup: the hash alone, then (the server lacking it) again with the images.
  EXPECT_EQ(server_->Count(CallId::kRegisterModule), registers + 2);
  {
    auto log = server_->Log();
    std::vector<v1::RegisterModuleRequest> regs;
    for (const Logged& l : log)
      if (l.call == static_cast<uint32_t>(CallId::kRegisterModule))
        DecodeRequest(l, regs.emplace_back());
    ASSERT_GE(regs.size(), 2u);
    const auto& first = regs[regs.size() - 2];
    const auto& second = regs.back();
    EXPECT_EQ(first.images_size(), 0);
    EXPECT_EQ(second.images_size(), 1);
    EXPECT_EQ(first.hash(), second.hash());
    EXPECT_EQ(first.kernels_size(), 1);
  }
  auto reg = server_->Last<v1::RegisterModuleRequest>(CallId::kRegisterModule);
  EXPECT_EQ(reg.kernels_size(), 1);
  EXPECT_EQ(reg.variables(0), "dvar");
  EXPECT_EQ(reg.hash().size(), 32u);
  EXPECT_FALSE(reg.rdc());
  ASSERT_TRUE(Eventually([&] { return server_->Count(CallId::kLaunchKernel) > 0; }));
  auto launch = server_->Last<v1::LaunchRequest>(CallId::kLaunchKernel);
  EXPECT_EQ(launch.kernel(), 500u);
  EXPECT_EQ(launch.grid_x(), 3u);
  EXPECT_EQ(launch.block_x(), 128u);
  EXPECT_EQ(launch.shared_bytes(), 64u);
  ASSERT_EQ(launch.params().size(), 16u);
  EXPECT_EQ(std::memcmp(launch.params().data(), &a, 8), 0);
  EXPECT_EQ(std::memcmp(launch.params().data() + 8, &b, 4), 0);

  // Bad configurations fail locally and land in cudaGetLastError.
  (void)__cudaLaunchKernel(k, dim3(1), dim3(2048), args, 0, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  (void)__cudaLaunchKernel(k, dim3(0), dim3(1), args, 0, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&Wire::SetUpTestSuite), dim3(1), dim3(1),
                             args, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();

  // Symbols resolve to the server's addresses.
  int value = 1234;
  ASSERT_EQ(cudaMemcpyToSymbol(&g_device_var_shadow, &value, sizeof value), cudaSuccess);
  void* dvar = nullptr;
  ASSERT_EQ(cudaGetSymbolAddress(&dvar, &g_device_var_shadow), cudaSuccess);
  size_t size = 0;
  ASSERT_EQ(cudaGetSymbolSize(&size, &g_device_var_shadow), cudaSuccess);
  EXPECT_EQ(size, sizeof(int));
  int read = 0;
  ASSERT_EQ(cudaMemcpyFromSymbol(&read, &g_device_var_shadow, sizeof read), cudaSuccess);
  EXPECT_EQ(read, 1234);
  EXPECT_EQ(cudaMemcpyToSymbol(&g_device_var_shadow, &value, sizeof value, 4),
            cudaErrorInvalidValue);
  static int not_a_symbol = 0;  // a host variable no module registered
  EXPECT_EQ(cudaMemcpyToSymbol(&not_a_symbol, &value, sizeof value), cudaErrorInvalidSymbol);
  (void)cudaGetLastError();

  __cudaUnregisterFatBinary(h);
  ASSERT_TRUE(Eventually([&] { return server_->Count(CallId::kUnregisterModule) > 0; }));
  EXPECT_EQ(server_->Last<v1::UnregisterModuleRequest>(CallId::kUnregisterModule).module(), 42u);
  EXPECT_EQ(__cudaGetKernel(&k, reinterpret_cast<const void*>(&FakeKernel)),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
}

void OtherFakeKernel(int64_t, int) {}
void MissingFakeKernel(int64_t, int) {}

// A fat binary of several MiB (nine architectures, many kernels) registers
// whole, whatever the transport's frame limit; a kernel the server found no
// code for is never launched: the launch fails with the GPU's error.
TEST_F(Wire, LargeFatBinariesRegisterAndMissingKernelsNeverLaunch) {
  struct Big {
    std::vector<uint64_t> words = std::vector<uint64_t>(3 << 17);  // 3 MiB
    FatbinWrapper wrapper{.data = nullptr};
  };
  static Big big;
  const uint32_t header[4] = {0xBA55ED50, 0x00100001, static_cast<uint32_t>((3 << 20) - 16), 0};
  std::memcpy(big.words.data(), header, sizeof header);
  for (size_t i = 2; i < big.words.size(); ++i) big.words[i] = i * 0x9E3779B97F4A7C15ull;
  big.wrapper.data = big.words.data();
  void** h = __cudaRegisterFatBinary(&big.wrapper);
  RegisterKernel(h, &FakeKernel, "_Z4fakeli");
  RegisterKernel(h, &MissingFakeKernel, "_Z7missingli");
  __cudaRegisterFatBinaryEnd(h);
  int64_t x = 1;
  int y = 2;
  void* args[] = {&x, &y};
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&FakeKernel), dim3(1), dim3(1), args, 0,
                             nullptr),
            cudaSuccess);
  auto reg = server_->Last<v1::RegisterModuleRequest>(CallId::kRegisterModule);
  ASSERT_EQ(reg.images_size(), 1);
  ASSERT_EQ(reg.images(0).size(), size_t{3} << 20);
  EXPECT_EQ(std::memcmp(reg.images(0).data(), big.words.data(), size_t{3} << 20), 0);

  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the server has logged the launch
  size_t launches = server_->Count(CallId::kLaunchKernel);
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&MissingFakeKernel), dim3(1), dim3(1),
                             args, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
  cudaFuncAttributes attr;
  EXPECT_EQ(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&MissingFakeKernel)),
            cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kLaunchKernel), launches) << "nothing was sent";
  __cudaUnregisterFatBinary(h);
}

// A second module with the same fat binary (another run of the program, as far
// as the server knows): only the hash travels.
TEST_F(Wire, KnownFatBinariesAreSentOnce) {
  static FakeFatbin a, b;
  void** ha = __cudaRegisterFatBinary(&a.wrapper);
  RegisterKernel(ha, &FakeKernel, "_Z4fakeli");
  __cudaRegisterFatBinaryEnd(ha);
  void** hb = __cudaRegisterFatBinary(&b.wrapper);
  RegisterKernel(hb, &OtherFakeKernel, "_Z4fakeli");
  __cudaRegisterFatBinaryEnd(hb);
  int64_t x = 1;
  int y = 2;
  void* args[] = {&x, &y};
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&FakeKernel), dim3(1), dim3(1), args, 0,
                             nullptr),
            cudaSuccess);
  size_t before = server_->Count(CallId::kRegisterModule);
  ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&OtherFakeKernel), dim3(1), dim3(1),
                             args, 0, nullptr),
            cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kRegisterModule), before + 1);
  EXPECT_EQ(server_->Last<v1::RegisterModuleRequest>(CallId::kRegisterModule).images_size(), 0);
  const char* name = nullptr;
  ASSERT_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(&OtherFakeKernel)), cudaSuccess);
  EXPECT_STREQ(name, "_Z4fakeli");
  size_t off = 0, size = 0;
  ASSERT_EQ(cudaFuncGetParamInfo(reinterpret_cast<const void*>(&FakeKernel), 1, &off, &size),
            cudaSuccess);
  EXPECT_EQ(off, 8u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(cudaFuncGetName(&name, &x), cudaErrorInvalidDeviceFunction);
  (void)cudaGetLastError();

  // A cudaKernel_t from cudaGetKernel launches and describes its kernel.
  cudaKernel_t handle = nullptr;
  ASSERT_EQ(cudaGetKernel(&handle, reinterpret_cast<const void*>(&OtherFakeKernel)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // earlier launches are logged
  size_t launches_before = server_->Count(CallId::kLaunchKernel);
  ASSERT_EQ(
      cudaLaunchKernel(reinterpret_cast<const void*>(handle), dim3(2), dim3(3), args, 0, nullptr),
      cudaSuccess);
  ASSERT_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(handle)), cudaSuccess);
  EXPECT_STREQ(name, "_Z4fakeli");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kLaunchKernel), launches_before + 1);
  EXPECT_EQ(server_->Last<v1::LaunchRequest>(CallId::kLaunchKernel).block_x(), 3u);
  __cudaUnregisterFatBinary(ha);
  __cudaUnregisterFatBinary(hb);
}

// Without a device-mapped same-address arena (gRPC; or this in-process fake,
// whose arena mapping cannot share the stub's address), managed and mapped memory are
// mirrored (mirror.h): device memory on the server and host pages at the same address, or for
// other page-locked memory a device copy at another address.
TEST_F(Wire, ManagedAndMappedMemoryAreMirroredWithoutAZeroCopySession) {
  int v = -1;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrManagedMemory, 0), cudaSuccess);
  EXPECT_EQ(v, 1);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrCanMapHostMemory, 0), cudaSuccess);
  EXPECT_EQ(v, 1);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrConcurrentManagedAccess, 0), cudaSuccess);
  EXPECT_EQ(v, 0);
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_EQ(p.managedMemory, 1);
  EXPECT_EQ(p.canMapHostMemory, 1);

  void* m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, 3 * 4096 + 5), cudaSuccess);
  ASSERT_NE(m, nullptr);
  auto* bytes = static_cast<unsigned char*>(m);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[3 * 4096 + 4], 0);
  bytes[3 * 4096 + 4] = 7;  // the host pages are the tenant's own, at the device address
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, bytes + 100), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeManaged);
  EXPECT_EQ(a.devicePointer, bytes + 100);
  EXPECT_EQ(a.hostPointer, bytes + 100);
  EXPECT_EQ(cudaFree(m), cudaSuccess);
  EXPECT_EQ(cudaFree(m), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaMallocManaged(&m, 0), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  void* h = nullptr;
  ASSERT_EQ(cudaHostAlloc(&h, 4096, cudaHostAllocMapped), cudaSuccess);
  void* hd = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&hd, static_cast<char*>(h) + 8, 0), cudaSuccess);
  EXPECT_EQ(hd, static_cast<char*>(h) + 8);  // one address, as under unified addressing
  unsigned mapped_flags = 0;
  ASSERT_EQ(cudaHostGetFlags(&mapped_flags, h), cudaSuccess);
  EXPECT_EQ(mapped_flags, unsigned{cudaHostAllocMapped});
  ASSERT_EQ(cudaPointerGetAttributes(&a, h), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  EXPECT_EQ(a.devicePointer, h);
  ASSERT_EQ(cudaFreeHost(h), cudaSuccess);

  // Flags are recorded per allocation, for any pointer inside it.
  ASSERT_EQ(cudaHostAlloc(&h, 3 * 4096, cudaHostAllocPortable | cudaHostAllocWriteCombined),
            cudaSuccess);
  unsigned flags = 99;
  ASSERT_EQ(cudaHostGetFlags(&flags, static_cast<char*>(h) + 5000), cudaSuccess);
  EXPECT_EQ(flags, unsigned{cudaHostAllocPortable | cudaHostAllocWriteCombined});
  void* plain = nullptr;
  ASSERT_EQ(cudaMallocHost(&plain, 100), cudaSuccess);
  ASSERT_EQ(cudaHostGetFlags(&flags, plain), cudaSuccess);
  EXPECT_EQ(flags, 0u);
  int stack = 0;
  EXPECT_EQ(cudaHostGetFlags(&flags, &stack), cudaErrorInvalidValue);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  EXPECT_EQ(cudaHostGetFlags(&flags, d), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, h), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  EXPECT_EQ(attr.hostPointer, h);
  EXPECT_EQ(attr.devicePointer, nullptr);  // not asked for yet
  void* dev_of_h = nullptr;                // a device copy elsewhere, made when asked
  ASSERT_EQ(cudaHostGetDevicePointer(&dev_of_h, static_cast<char*>(h) + 4100, 0), cudaSuccess);
  ASSERT_NE(dev_of_h, nullptr);
  EXPECT_NE(dev_of_h, static_cast<char*>(h) + 4100);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, static_cast<char*>(h) + 4100), cudaSuccess);
  EXPECT_EQ(attr.devicePointer, dev_of_h);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, d), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.hostPointer, nullptr);
  ASSERT_EQ(cudaFreeHost(h), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(plain), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

// A kernel given page-locked memory that reaches it through a device copy (no zero-copy
// session) is told once on stderr that the host and it meet there only at launches and
// synchronisations: a kernel waiting on the host through it would wait for ever, saying nothing.
TEST_F(Wire, AKernelReachingPinnedMemoryThroughACopyIsToldOnce) {
  static FakeFatbin fb;
  void** h = __cudaRegisterFatBinary(&fb.wrapper);
  RegisterKernel(h, &FakeKernel, "_Z4fakeli");
  __cudaRegisterFatBinaryEnd(h);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 4096, cudaHostAllocMapped), cudaSuccess);
  int64_t a = static_cast<int64_t>(reinterpret_cast<uintptr_t>(pinned));
  int b = 1;
  void* args[] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    testing::internal::CaptureStderr();
    ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&FakeKernel), dim3(1), dim3(1), args,
                               0, nullptr),
              cudaSuccess);
    const std::string err = testing::internal::GetCapturedStderr();
    if (i == 0) {
      EXPECT_NE(err.find("kernel _Z4fakeli reaches page-locked host memory"), std::string::npos)
          << err;
      EXPECT_NE(err.find("not while it runs"), std::string::npos) << err;
    } else {
      EXPECT_EQ(err, "");  // once per kernel
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// The mirror sends only the 4 KiB pieces the host changed, before device work, and fetches the
// device's copy only after a wait that covered work which may have written it.
TEST_F(Wire, MirroredMemorySendsChangedPiecesAndFetchesAfterWaits) {
  void* raw = nullptr;
  ASSERT_EQ(cudaMallocManaged(&raw, 10 * 4096), cudaSuccess);
  char* m = static_cast<char*>(raw);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto sent = [] { return server_->Count(CallId::kMemcpyHtoDAsync); };
  auto fetched = [] { return server_->Count(CallId::kMirrorFetch); };
  const size_t sent0 = sent(), fetched0 = fetched();
  m[2 * 4096 + 7] = 1;  // pieces 2 and 9
  m[9 * 4096] = 2;
  ASSERT_EQ(cudaMemsetAsync(d, 0, 4096, nullptr), cudaSuccess);  // device work elsewhere
  EXPECT_EQ(sent(), sent0 + 2);
  auto last = server_->Last<v1::MemcpyHtoDRequest>(CallId::kMemcpyHtoDAsync);
  EXPECT_EQ(last.dst(), reinterpret_cast<uintptr_t>(m) + 9 * 4096);
  EXPECT_EQ(last.size(), 4096u);
  ASSERT_EQ(cudaMemsetAsync(d, 1, 4096, nullptr), cudaSuccess);  // nothing changed since
  EXPECT_EQ(sent(), sent0 + 2);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(fetched(), fetched0);  // the memsets wrote no mirrored memory

  ASSERT_EQ(cudaMemsetAsync(m + 4096, 3, 100, nullptr), cudaSuccess);
  EXPECT_EQ(m[4096], 0);  // not waited for yet
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(fetched(), fetched0 + 1);  // the block's ten pieces in one round trip
  EXPECT_EQ(server_->Last<v1::MirrorFetchRequest>(CallId::kMirrorFetch).ranges(0).size(),
            10u * 4096);
  EXPECT_EQ(m[4096], 3);
  EXPECT_EQ(m[4096 + 99], 3);
  EXPECT_EQ(m[4096 + 100], 0);
  EXPECT_EQ(m[2 * 4096 + 7], 1);  // what the host sent came back unchanged
  EXPECT_EQ(m[9 * 4096], 2);
  const size_t fetched1 = fetched();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // nothing new to wait for
  EXPECT_EQ(fetched(), fetched1);
  ASSERT_EQ(cudaFree(m), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Wire, SmallLocalAnswers) {
  size_t before = server_->LogSize();
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(nullptr, &cs), cudaSuccess);
  EXPECT_EQ(cs, cudaStreamCaptureStatusNone);
  // The legacy default stream cannot be captured, as on NVIDIA's runtime.
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g;
  EXPECT_EQ(cudaStreamEndCapture(nullptr, &g), cudaErrorIllegalState);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  void* fn = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, 0, nullptr),
            cudaErrorNotSupported);
  EXPECT_EQ(fn, nullptr);
  ASSERT_EQ(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared), cudaSuccess);
  cudaFuncCache cache;
  ASSERT_EQ(cudaDeviceGetCacheConfig(&cache), cudaSuccess);
  EXPECT_EQ(cache, cudaFuncCachePreferShared);
  size_t limit = 0;
  ASSERT_EQ(cudaDeviceGetLimit(&limit, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(limit, 1024u);
  unsigned dflags = 0;
  ASSERT_EQ(cudaGetDeviceFlags(&dflags), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  EXPECT_EQ(server_->LogSize(), before);  // all answered locally

  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 64), cudaSuccess);
  EXPECT_EQ(cudaMemcpyPeer(b, 0, a, 1, 64), cudaErrorInvalidDevice);
  size_t dtod = server_->Count(CallId::kMemcpyDtoD);
  ASSERT_EQ(cudaMemcpyPeer(b, 0, a, 0, 64), cudaSuccess);
  EXPECT_EQ(server_->Count(CallId::kMemcpyDtoD), dtod + 1);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaFree(a), cudaSuccess);
  ASSERT_EQ(cudaFree(b), cudaSuccess);
}

// Last: a sticky error never clears.
TEST_F(Wire, ZStickyErrorPoisonsEveryLaterCall) {
  server_->Defer(cudaErrorIllegalAddress);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  size_t before = server_->LogSize();
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, 16), cudaErrorIllegalAddress);
  EXPECT_EQ(server_->LogSize(), before);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
}

}  // namespace
}  // namespace remora::client_stub
