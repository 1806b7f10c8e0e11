// tests/emu/memory_test.cc - allocation, accounting, copies, memsets, host registration.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

using EmuMemory = EmuTest;

TEST_F(EmuMemory, AllocationsAreAlignedAndAccounted) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  size_t dev_total = 0;
  ASSERT_EQ(api.cuDeviceTotalMem(&dev_total, 0), CUDA_SUCCESS);
  EXPECT_EQ(total, dev_total);
  EXPECT_LE(free0, total);

  std::vector<CUdeviceptr> ptrs;
  for (size_t n : {1, 255, 256, 257, 4096, 100000}) {
    CUdeviceptr p = 0;
    ASSERT_EQ(api.cuMemAlloc(&p, n), CUDA_SUCCESS);
    EXPECT_EQ(p % 512, 0u) << n;  // a GPU's texture alignment: a texture over it is accepted
    CUdeviceptr base = 0;
    size_t size = 0;
    ASSERT_EQ(api.cuMemGetAddressRange(&base, &size, p + n - 1), CUDA_SUCCESS);
    EXPECT_EQ(base, p);
    EXPECT_EQ(size, n);
    ptrs.push_back(p);
  }
  size_t free1 = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
  EXPECT_GE(free0 - free1, 1u + 255 + 256 + 257 + 4096 + 100000);
  // Distinct allocations never overlap.
  std::sort(ptrs.begin(), ptrs.end());
  for (size_t i = 1; i < ptrs.size(); ++i) EXPECT_GE(ptrs[i] - ptrs[i - 1], 256u);
  for (CUdeviceptr p : ptrs) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
  size_t free2 = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free2, &total), CUDA_SUCCESS);
  EXPECT_EQ(free2, free0);
}

// A pitched 2-D texture or surface is refused, as a GPU refuses it (seen on an H200 for a CUDA
// array's 180-byte rows), unless its base is a multiple of the texture alignment and its pitch
// of the texture pitch alignment.
TEST_F(EmuMemory, PitchedTexturesNeedTheDevicesAlignments) {
  int base_align = 0, pitch_align = 0;
  ASSERT_EQ(api.cuDeviceGetAttribute(&base_align, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuDeviceGetAttribute(&pitch_align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(base_align, 512);
  EXPECT_EQ(pitch_align, 32);
  CUdeviceptr p = 0;
  ASSERT_EQ(api.cuMemAlloc(&p, 64 << 10), CUDA_SUCCESS);
  auto pitched = [&](CUdeviceptr base, size_t width, size_t pitch) {
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_PITCH2D;
    res.res.pitch2D.devPtr = base;
    res.res.pitch2D.format = CU_AD_FORMAT_UNSIGNED_INT8;
    res.res.pitch2D.numChannels = 4;
    res.res.pitch2D.width = width;
    res.res.pitch2D.height = 19;
    res.res.pitch2D.pitchInBytes = pitch;
    return res;
  };
  CUDA_TEXTURE_DESC tex{};
  tex.addressMode[0] = tex.addressMode[1] = CU_TR_ADDRESS_MODE_BORDER;
  tex.filterMode = CU_TR_FILTER_MODE_POINT;
  CUtexObject t = 0;
  CUsurfObject s = 0;
  // 45 uchar4 texels: rows of 180 bytes, packed (the refusal seen) or padded to 192.
  CUDA_RESOURCE_DESC res = pitched(p, 45, 180);
  EXPECT_EQ(api.cuTexObjectCreate(&t, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuSurfObjectCreate(&s, &res), CUDA_ERROR_INVALID_VALUE);
  res = pitched(p + 256, 45, 192);  // a pitch that is fine, a base that is not
  EXPECT_EQ(api.cuTexObjectCreate(&t, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuSurfObjectCreate(&s, &res), CUDA_ERROR_INVALID_VALUE);
  for (CUdeviceptr base : {p, p + 512}) {
    res = pitched(base, 45, 192);
    ASSERT_EQ(api.cuTexObjectCreate(&t, &res, &tex, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(api.cuTexObjectDestroy(t), CUDA_SUCCESS);
    ASSERT_EQ(api.cuSurfObjectCreate(&s, &res), CUDA_SUCCESS);
    EXPECT_EQ(api.cuSurfObjectDestroy(s), CUDA_SUCCESS);
  }
  EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(EmuMemory, FreeListCoalescesSoALargeBlockFitsAgain) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  // Fill nearly all memory with three blocks, free them in a scrambled order,
  // then ask for one block as big as the three: only coalescing makes it fit.
  const size_t third = free0 / 3 / 256 * 256;
  CUdeviceptr a, b, c;
  ASSERT_EQ(api.cuMemAlloc(&a, third), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&b, third), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&c, third), CUDA_SUCCESS);
  CUdeviceptr big;
  EXPECT_EQ(api.cuMemAlloc(&big, 2 * third), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemFree(c), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemFree(b), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&big, 3 * third), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(big), CUDA_SUCCESS);
}

// As on a GPU, whose allocations are mapped pages: free memory split by a live
// allocation still serves one allocation as large as all of it, and no more.
TEST_F(EmuMemory, FreeMemoryOnBothSidesOfALiveBlockServesOneLargeBlock) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  const size_t third = free0 / 3 / 256 * 256;
  CUdeviceptr a, pin, c;
  ASSERT_EQ(api.cuMemAlloc(&a, third), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&pin, 4096), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&c, third), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemFree(c), CUDA_SUCCESS);
  size_t free1 = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
  CUdeviceptr big;
  ASSERT_EQ(api.cuMemAlloc(&big, free1 / 256 * 256), CUDA_SUCCESS)
      << "free memory split around a live block must still serve one block";
  CUdeviceptr more;
  EXPECT_EQ(api.cuMemAlloc(&more, 256), CUDA_ERROR_OUT_OF_MEMORY);  // past the total
  EXPECT_EQ(api.cuMemFree(big), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(pin), CUDA_SUCCESS);
}

// As in CUDA's pools: memory freed earlier on a stream serves a later
// allocation on that stream, even while the free has not run yet.
TEST_F(EmuMemory, AStreamOrderedAllocationReusesTheStreamsFrees) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  CUstream s = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const size_t most = free0 / 4 * 3;
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(api.cuMemAllocAsync(&a, most, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemFreeAsync(a, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAllocAsync(&b, most, s), CUDA_SUCCESS);
  CUdeviceptr c = 0;
  EXPECT_EQ(api.cuMemAllocAsync(&c, most, s), CUDA_ERROR_OUT_OF_MEMORY);  // truly short
  ASSERT_EQ(api.cuMemFreeAsync(b, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmuMemory, BadAllocationsAndFrees) {
  CUdeviceptr p = 0;
  EXPECT_EQ(api.cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemAlloc(nullptr, 256), CUDA_ERROR_INVALID_VALUE);
  size_t free = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemAlloc(&p, total + 1), CUDA_ERROR_OUT_OF_MEMORY);

  ASSERT_EQ(api.cuMemAlloc(&p, 1024), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(p + 256), CUDA_ERROR_INVALID_VALUE);     // interior
  EXPECT_EQ(api.cuMemFree(0xdead0000), CUDA_ERROR_INVALID_VALUE);  // unknown
  EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(p), CUDA_ERROR_INVALID_VALUE);  // double free
  CUdeviceptr base;
  size_t size;
  EXPECT_EQ(api.cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
}

TEST_F(EmuMemory, CopiesRoundTripRandomData) {
  const size_t n = 1 << 20;
  auto src = RandomBytes(n, 1);
  CUdeviceptr a, b;
  ASSERT_EQ(api.cuMemAlloc(&a, n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&b, n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoD(a, src.data(), n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoD(b, a, n), CUDA_SUCCESS);
  std::vector<uint8_t> out(n);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), b, n), CUDA_SUCCESS);
  EXPECT_EQ(out, src);

  // Async copies on a stream, at offsets, then a sync on the stream.
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto src2 = RandomBytes(n, 2);
  ASSERT_EQ(api.cuMemcpyHtoDAsync(a + 4096, src2.data() + 4096, n - 8192, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoDAsync(b, a, n, s), CUDA_SUCCESS);
  std::vector<uint8_t> out2(n);
  ASSERT_EQ(api.cuMemcpyDtoHAsync(out2.data(), b, n, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  std::vector<uint8_t> want = src;
  std::copy(src2.begin() + 4096, src2.end() - 4096, want.begin() + 4096);
  EXPECT_EQ(out2, want);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(b), CUDA_SUCCESS);
}

TEST_F(EmuMemory, PageableSourceIsCapturedAtTheCall) {
  const size_t n = 4096;
  CUdeviceptr a;
  ASSERT_EQ(api.cuMemAlloc(&a, n), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  // Hold the stream behind a host function so the copy cannot run yet.
  std::atomic<bool> release{false};
  auto gate = [](void* p) {
    while (!static_cast<std::atomic<bool>*>(p)->load()) std::this_thread::yield();
  };
  ASSERT_EQ(api.cuLaunchHostFunc(s, gate, &release), CUDA_SUCCESS);
  std::vector<uint8_t> src(n, 0x11);
  ASSERT_EQ(api.cuMemcpyHtoDAsync(a, src.data(), n, s), CUDA_SUCCESS);
  std::fill(src.begin(), src.end(), 0x22);  // pageable: the copy already took 0x11
  release = true;
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  std::vector<uint8_t> out(n);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), a, n), CUDA_SUCCESS);
  EXPECT_EQ(out, std::vector<uint8_t>(n, 0x11));
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
}

TEST_F(EmuMemory, OutOfRangeCopiesAreRefused) {
  const size_t n = 1000;
  CUdeviceptr a, b;
  ASSERT_EQ(api.cuMemAlloc(&a, n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemAlloc(&b, n), CUDA_SUCCESS);
  std::vector<uint8_t> host(2 * n);
  EXPECT_EQ(api.cuMemcpyHtoD(a, host.data(), n + 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyHtoD(a + 1, host.data(), n), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyDtoH(host.data(), a + n, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyDtoD(b, a, n + 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyDtoD(0x1000, a, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemcpyHtoDAsync(a, host.data(), 2 * n, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD8(a, 0, n + 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD32(a, 0, n / 4 + 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD32(a + 2, 0, 4), CUDA_ERROR_INVALID_VALUE);  // misaligned
  // A copy spanning two allocations is refused even if both are live.
  CUdeviceptr lo = std::min(a, b);
  EXPECT_EQ(api.cuMemcpyHtoD(lo, host.data(), 2 * n), CUDA_ERROR_INVALID_VALUE);
  // Freed memory is out of range too.
  ASSERT_EQ(api.cuMemFree(b), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemcpyHtoD(b, host.data(), 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
}

TEST_F(EmuMemory, MemsetsFillExactlyTheirRange) {
  const size_t n = 4096;
  CUdeviceptr a;
  ASSERT_EQ(api.cuMemAlloc(&a, n), CUDA_SUCCESS);
  auto src = RandomBytes(n, 3);
  ASSERT_EQ(api.cuMemcpyHtoD(a, src.data(), n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8(a + 100, 0xAB, 300), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32Async(a + 1024, 0xDEADBEEF, 256, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8Async(a + 3000, 0x5A, 7, s), CUDA_SUCCESS);
  std::vector<uint8_t> out(n);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), a, n), CUDA_SUCCESS);  // legacy: waits for s
  std::vector<uint8_t> want = src;
  std::fill(want.begin() + 100, want.begin() + 400, 0xAB);
  for (size_t i = 0; i < 256; ++i) {
    const uint32_t v = 0xDEADBEEF;
    std::memcpy(want.data() + 1024 + 4 * i, &v, 4);
  }
  std::fill(want.begin() + 3000, want.begin() + 3007, 0x5A);
  EXPECT_EQ(out, want);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
}

TEST_F(EmuMemory, HostRegistrationBookkeeping) {
  std::vector<uint8_t> buf(8192);
  EXPECT_EQ(api.cuMemHostRegister(nullptr, 64, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemHostRegister(buf.data(), 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemHostRegister(buf.data(), 64, 0x100), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuMemHostRegister(buf.data(), 4096, 0), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostRegister(buf.data() + 100, 64, 0),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  ASSERT_EQ(api.cuMemHostRegister(buf.data() + 4096, 4096, CU_MEMHOSTREGISTER_PORTABLE),
            CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostUnregister(buf.data() + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(api.cuMemHostUnregister(buf.data()), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostUnregister(buf.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(api.cuMemHostUnregister(buf.data() + 4096), CUDA_SUCCESS);
}

TEST_F(EmuMemory, PinnedDestinationIsWrittenInStreamOrder) {
  const size_t n = 4096;
  std::vector<uint8_t> host(n, 0);
  ASSERT_EQ(api.cuMemHostRegister(host.data(), n, 0), CUDA_SUCCESS);
  CUdeviceptr a;
  ASSERT_EQ(api.cuMemAlloc(&a, n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8(a, 0x7F, n), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoHAsync(host.data(), a, n, s), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(host, std::vector<uint8_t>(n, 0x7F));
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemHostUnregister(host.data()), CUDA_SUCCESS);
}

TEST_F(EmuMemory, PrimaryContextResetFreesEverything) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  CUdeviceptr p;
  ASSERT_EQ(api.cuMemAlloc(&p, 1 << 20), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  // The context stays retained and current, but holds nothing.
  size_t free1 = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
  EXPECT_EQ(free1, free0);
  EXPECT_EQ(api.cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuMemAlloc(&p, 256), CUDA_SUCCESS);
}

}  // namespace
}  // namespace remora::emu::test

namespace remora::emu::test {
namespace {

// Several server threads share the context: each allocates, copies through its
// own stream, checks and frees, concurrently with the others.
TEST_F(EmuMemory, ConcurrentThreadsKeepTheirDataApart) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (api.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        ++failures;
        return;
      }
      CUstream s;
      if (api.cuStreamCreate(&s, t % 2 == 0 ? 0 : CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        ++failures;
        return;
      }
      for (int r = 0; r < kRounds; ++r) {
        const size_t n = 1000 + 977 * static_cast<size_t>(t * kRounds + r);
        auto src = RandomBytes(n, static_cast<uint32_t>(t * 1000 + r));
        std::vector<uint8_t> out(n);
        CUdeviceptr a, b;
        bool ok = api.cuMemAlloc(&a, n) == CUDA_SUCCESS && api.cuMemAlloc(&b, n) == CUDA_SUCCESS &&
                  api.cuMemcpyHtoDAsync(a, src.data(), n, s) == CUDA_SUCCESS &&
                  api.cuMemcpyDtoDAsync(b, a, n, s) == CUDA_SUCCESS &&
                  api.cuMemsetD8Async(a, 0, n, s) == CUDA_SUCCESS &&
                  api.cuMemcpyDtoHAsync(out.data(), b, n, s) == CUDA_SUCCESS &&
                  api.cuStreamSynchronize(s) == CUDA_SUCCESS && out == src &&
                  api.cuMemFree(a) == CUDA_SUCCESS && api.cuMemFree(b) == CUDA_SUCCESS;
        if (!ok) ++failures;
      }
      if (api.cuStreamDestroy(s) != CUDA_SUCCESS) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  size_t free = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, total);
}

}  // namespace
}  // namespace remora::emu::test

namespace remora::emu::test {
namespace {

// Virtual memory management as PyTorch's expandable segments use it: one large reservation,
// physical chunks mapped into it one after another, access set, tensors spanning chunks.
class EmuVmm : public EmuTest {
 protected:
  static constexpr size_t kChunk = 2u << 20;
  CUmemAllocationProp Prop() const {
    CUmemAllocationProp p{};
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
  }
  CUresult Access(CUdeviceptr p, size_t n, CUmemAccess_flags flags) {
    CUmemAccessDesc d{};
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = flags;
    return api.cuMemSetAccess(p, n, &d, 1);
  }
  size_t Free() {
    size_t free = 0, total = 0;
    EXPECT_EQ(api.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    return free;
  }
};

// Adds 1 to each of n words at p, one thread per word.
constexpr char kIncrementPtx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.visible .entry inc(.param .u64 p, .param .u32 n)
{
  .reg .pred %q;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %q, %r5, %r1;
  @%q bra DONE;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r2, [%rd3];
  add.u32 %r2, %r2, 1;
  st.global.u32 [%rd3], %r2;
DONE:
  ret;
}
)";

TEST_F(EmuVmm, ChunksMappedIntoOneReservationServeCopiesAndKernelsAcrossThem) {
  const CUmemAllocationProp prop = Prop();
  size_t gran = 0;
  ASSERT_EQ(api.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            CUDA_SUCCESS);
  ASSERT_EQ(gran, kChunk);
  const size_t free0 = Free();
  CUdeviceptr va = 0;
  ASSERT_EQ(api.cuMemAddressReserve(&va, 32 * kChunk, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % kChunk, 0u);
  EXPECT_EQ(Free(), free0) << "a reservation holds no memory";
  CUmemGenericAllocationHandle h[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(api.cuMemCreate(&h[i], kChunk, &prop, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemMap(va + i * kChunk, kChunk, 0, h[i], 0), CUDA_SUCCESS);
  }
  EXPECT_EQ(Free(), free0 - 3 * kChunk);
  const size_t n = 3 * kChunk;
  std::vector<uint8_t> data = RandomBytes(n, 7), back(n);
  // Mapped but not yet accessible.
  EXPECT_EQ(api.cuMemcpyHtoD(va, data.data(), 16), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(Access(va, n, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), CUDA_SUCCESS);
  unsigned long long flags = 0;
  CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  ASSERT_EQ(api.cuMemGetAccess(&flags, &loc, va + kChunk), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  // One copy over all three chunks, and a kernel over them.
  ASSERT_EQ(api.cuMemcpyHtoD(va, data.data(), n), CUDA_SUCCESS);
  CUmodule mod = nullptr;
  CUfunction inc = nullptr;
  ASSERT_EQ(api.cuModuleLoadData(&mod, kIncrementPtx), CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetFunction(&inc, mod, "inc"), CUDA_SUCCESS);
  unsigned words = static_cast<unsigned>(n / 4);
  void* args[] = {&va, &words};
  ASSERT_EQ(api.cuLaunchKernel(inc, words / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(back.data(), va, n), CUDA_SUCCESS);
  for (size_t w = 0; w < words; ++w) {
    uint32_t want = 0, got = 0;
    std::memcpy(&want, data.data() + 4 * w, 4);
    std::memcpy(&got, back.data() + 4 * w, 4);
    ASSERT_EQ(got, want + 1) << "word " << w;
  }
  api.cuModuleUnload(mod);
  // A second mapping of chunk 1 shows the same bytes.
  ASSERT_EQ(api.cuMemMap(va + 10 * kChunk, kChunk, 0, h[1], 0), CUDA_SUCCESS);
  ASSERT_EQ(Access(va + 10 * kChunk, kChunk, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), CUDA_SUCCESS);
  std::vector<uint8_t> alias(kChunk);
  ASSERT_EQ(api.cuMemcpyDtoH(alias.data(), va + 10 * kChunk, kChunk), CUDA_SUCCESS);
  EXPECT_TRUE(std::equal(alias.begin(), alias.end(), back.begin() + kChunk));
  // The handle behind an address.
  CUmemGenericAllocationHandle again = 0;
  ASSERT_EQ(api.cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(va + kChunk + 100)),
            CUDA_SUCCESS);
  EXPECT_EQ(again, h[1]);
  EXPECT_EQ(api.cuMemRelease(again), CUDA_SUCCESS);
  CUmemAllocationProp got{};
  ASSERT_EQ(api.cuMemGetAllocationPropertiesFromHandle(&got, h[2]), CUDA_SUCCESS);
  EXPECT_EQ(got.type, CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(got.location.type, CU_MEM_LOCATION_TYPE_DEVICE);

  // Mapping over a mapping, or outside a reservation, is refused; so is freeing a reservation
  // with mappings in it, and unmapping part of a mapping.
  EXPECT_EQ(api.cuMemMap(va, kChunk, 0, h[2], 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemMap(va + 32 * kChunk, kChunk, 0, h[2], 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemAddressFree(va, 32 * kChunk), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemUnmap(va + 3 * kChunk, kChunk), CUDA_ERROR_INVALID_VALUE);
  // Released handles keep their memory while mapped; unmapped, it goes back.
  for (CUmemGenericAllocationHandle x : h) EXPECT_EQ(api.cuMemRelease(x), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemRelease(h[0]), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Free(), free0 - 3 * kChunk);
  ASSERT_EQ(api.cuMemUnmap(va, 2 * kChunk), CUDA_SUCCESS);  // two whole mappings at once
  EXPECT_EQ(api.cuMemcpyHtoD(va, data.data(), 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Free(), free0 - 2 * kChunk) << "chunk 1 is still mapped at +10";
  ASSERT_EQ(api.cuMemUnmap(va + 2 * kChunk, kChunk), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemUnmap(va + 10 * kChunk, kChunk), CUDA_SUCCESS);
  EXPECT_EQ(Free(), free0);
  EXPECT_EQ(api.cuMemAddressFree(va, 32 * kChunk), CUDA_SUCCESS);
}

TEST_F(EmuVmm, WhatTheEmulatedDeviceLacksIsRefused) {
  CUmemAllocationProp prop = Prop();
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(api.cuMemCreate(&h, kChunk + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  size_t free = 0, total = 0;
  ASSERT_EQ(api.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemCreate(&h, (total / kChunk + 1) * kChunk, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  EXPECT_EQ(api.cuMemCreate(&h, kChunk, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  prop = Prop();
  prop.location.id = 3;
  EXPECT_EQ(api.cuMemCreate(&h, kChunk, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
  prop = Prop();
  CUdeviceptr va = 0;
  ASSERT_EQ(api.cuMemAddressReserve(&va, kChunk, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemCreate(&h, kChunk, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemMap(va, kChunk, 0, h, 0), CUDA_SUCCESS);
  EXPECT_EQ(Access(va, kChunk, CU_MEM_ACCESS_FLAGS_PROT_READ), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.cuMemUnmap(va, kChunk), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemAddressFree(va, kChunk), CUDA_SUCCESS);
}

// A context reset unmaps and frees everything: the memory is back.
TEST_F(EmuVmm, AResetFreesMappingsAndAllocations) {
  const CUmemAllocationProp prop = Prop();
  const size_t free0 = Free();
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle h = 0;
  ASSERT_EQ(api.cuMemAddressReserve(&va, 4 * kChunk, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemCreate(&h, 2 * kChunk, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemMap(va, 2 * kChunk, 0, h, 0), CUDA_SUCCESS);
  ASSERT_EQ(Access(va, 2 * kChunk, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), CUDA_SUCCESS);
  EXPECT_EQ(Free(), free0 - 2 * kChunk);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  EXPECT_EQ(Free(), free0);
  EXPECT_EQ(api.cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace remora::emu::test
