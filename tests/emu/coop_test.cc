// tests/emu/coop_test.cc - cooperative launches: grid.sync() across every block of a grid.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {
namespace {

#if defined(REMORA_EMU_HAS_PTX) && defined(REMORA_EMU_HAS_NVCC)

// Loads coop.ptx (tests/emu/data/coop.cu, compute_80).
class EmuCoop : public EmuModuleTest {
 protected:
  EmuCoop() : EmuModuleTest("coop.ptx") {}
  CUdeviceptr Alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(api.cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    return p;
  }
};

// 64 blocks of 128 threads (more blocks than the host has cores): each block's total is only
// right if it read every other block's partial after grid.sync.
TEST_F(EmuCoop, GridSumSeesEveryBlocksPartialAfterGridSync) {
  const int n = 100000, blocks = 64, threads = 128;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-1000000, 1000000);
  std::vector<int> in(n);
  long long want = 0;
  for (int& v : in) want += (v = dist(rng));
  CUdeviceptr din = Alloc(n * sizeof(int)), partial = Alloc(blocks * 8), out = Alloc(blocks * 8);
  ASSERT_EQ(api.cuMemcpyHtoD(din, in.data(), n * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(partial, 0xffffffffu, blocks * 2), CUDA_SUCCESS);
  int nn = n;
  void* args[] = {&din, &partial, &out, &nn};
  ASSERT_EQ(
      api.cuLaunchCooperativeKernel(Fn("gridSum"), blocks, 1, 1, threads, 1, 1, 0, nullptr, args),
      CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<long long> got(blocks);
  ASSERT_EQ(api.cuMemcpyDtoH(got.data(), out, blocks * 8), CUDA_SUCCESS);
  for (int b = 0; b < blocks; ++b) EXPECT_EQ(got[b], want) << "block " << b;
  for (CUdeviceptr p : {din, partial, out}) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

// Ten grid.syncs in a loop: each step reads the neighbours other blocks wrote in the last one.
TEST_F(EmuCoop, IteratedStencilMatchesTheHostAfterEveryStep) {
  const int n = 5000, steps = 10, blocks = 24, threads = 96;  // grid-stride: blocks cover 2304
  std::mt19937 rng(11);
  std::vector<uint32_t> a(n);
  for (uint32_t& v : a) v = uint32_t(rng());
  std::vector<uint32_t> ref = a, tmp(n);
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < n; ++i)
      tmp[i] = (i == 0 || i == n - 1) ? ref[i]
                                      : ref[i - 1] + 2u * ref[i] + 3u * ref[i + 1] + uint32_t(s);
    ref.swap(tmp);
  }
  CUdeviceptr da = Alloc(n * 4), db = Alloc(n * 4);
  ASSERT_EQ(api.cuMemcpyHtoD(da, a.data(), n * 4), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(db, 0, n), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);  // st does not wait for the legacy stream
  int nn = n, ss = steps;
  void* args[] = {&da, &db, &nn, &ss};
  CUstream st;
  ASSERT_EQ(api.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuLaunchCooperativeKernel(Fn("stencil"), blocks, 1, 1, threads, 1, 1, 0, st, args),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(st), CUDA_SUCCESS);
  std::vector<uint32_t> got(n);
  ASSERT_EQ(api.cuMemcpyDtoH(got.data(), steps % 2 == 0 ? da : db, n * 4), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], ref[i]) << i;
  EXPECT_EQ(api.cuStreamDestroy(st), CUDA_SUCCESS);
  for (CUdeviceptr p : {da, db}) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

// NVIDIA refuses a grid that cannot be resident at once: occupancy times the SM count.
TEST_F(EmuCoop, GridLargerThanResidentIsRefused) {
  CUfunction f = Fn("gridSum");
  int per_sm = 0, sms = 0;
  ASSERT_EQ(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 128, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
            CUDA_SUCCESS);
  int coop = 0;
  ASSERT_EQ(api.cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(coop, 1);
  ASSERT_GT(per_sm, 0);
  CUdeviceptr p = Alloc(256);
  int n = 0;
  void* args[] = {&p, &p, &p, &n};
  const unsigned too_many = unsigned(per_sm * sms + 1);
  EXPECT_EQ(api.cuLaunchCooperativeKernel(f, too_many, 1, 1, 128, 1, 1, 0, nullptr, args),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  EXPECT_EQ(api.cuLaunchCooperativeKernel(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, args),
            CUDA_ERROR_INVALID_VALUE);
  // The refusals left the context healthy.
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

// Without a cooperative launch there is no grid workspace: grid.sync traps, as on a GPU.
TEST_F(EmuCoop, GridSyncInAnOrdinaryLaunchTraps) {
  const int blocks = 4;
  CUdeviceptr din = Alloc(256), partial = Alloc(blocks * 8), out = Alloc(blocks * 8);
  int n = 0;
  void* args[] = {&din, &partial, &out, &n};
  ASSERT_EQ(api.cuLaunchKernel(Fn("gridSum"), blocks, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  mod_ = nullptr;  // unloaded by the reset
}

// Blocks that wait on another block's flag with a barrier in the loop park at that barrier
// every few instructions, never running out a warp's slice: the block's slice still ends, so
// the block that raises the flag runs, in a cooperative launch (every block resident) and in an
// ordinary one of more blocks than the host has cores.
TEST_F(EmuCoop, BlocksWaitingWithBarriersLetTheBlockTheyWaitForRun) {
  CUdeviceptr flag = Alloc(4), done = Alloc(4);
  for (const bool cooperative : {true, false}) {
    for (const unsigned blocks : {4u, 24u}) {
      ASSERT_EQ(api.cuMemsetD32(flag, 0, 1), CUDA_SUCCESS);
      ASSERT_EQ(api.cuMemsetD32(done, 0, 1), CUDA_SUCCESS);
      void* args[] = {&flag, &done};
      const unsigned threads = 64;
      ASSERT_EQ(cooperative ? api.cuLaunchCooperativeKernel(Fn("waitWithBarriers"), blocks, 1, 1,
                                                            threads, 1, 1, 0, nullptr, args)
                            : api.cuLaunchKernel(Fn("waitWithBarriers"), blocks, 1, 1, threads, 1,
                                                 1, 0, nullptr, args, nullptr),
                CUDA_SUCCESS);
      ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
      uint32_t n = 0;
      ASSERT_EQ(api.cuMemcpyDtoH(&n, done, 4), CUDA_SUCCESS);
      EXPECT_EQ(n, blocks - 1) << (cooperative ? "cooperative, " : "ordinary, ") << blocks;
    }
  }
  for (CUdeviceptr p : {flag, done}) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

// Every block of a cooperative grid that syncs forever is resident; cancelling the stream
// stops them all and leaves the context healthy.
TEST_F(EmuCoop, CancelStopsACooperativeGridSpinningInGridSync) {
  const unsigned blocks = 16, threads = 64;
  CUdeviceptr started = Alloc(4), stop = Alloc(4);
  ASSERT_EQ(api.cuMemsetD32(started, 0, 1), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(stop, 0, 1), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);  // s does not wait for the legacy stream
  CUstream s;
  ASSERT_EQ(api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  void* args[] = {&started, &stop};
  ASSERT_EQ(
      api.cuLaunchCooperativeKernel(Fn("syncForever"), blocks, 1, 1, threads, 1, 1, 0, s, args),
      CUDA_SUCCESS);
  uint32_t n = 0;
  while (n < blocks * threads) {  // with pauses: the device runs at the least priority
    ASSERT_EQ(api.cuMemcpyDtoH(&n, started, 4), CUDA_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(n, blocks * threads);  // all resident at once
  EXPECT_EQ(api.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(api.remoraEmuCancelStream(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
  for (CUdeviceptr p : {started, stop}) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

// cuLaunchKernelEx: the cooperative attribute runs gridSum as cuLaunchCooperativeKernel does,
// beside a cluster of one block (no cluster) and a hint; a cluster of two is refused as this
// device has no clusters (CLUSTER_LAUNCH 0), as are cluster occupancy queries; an id CUDA does
// not define is invalid.
TEST_F(EmuCoop, LaunchKernelExServesCooperativeAndRefusesClusters) {
  int has_clusters = -1;
  ASSERT_EQ(api.cuDeviceGetAttribute(&has_clusters, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(has_clusters, 0);
  const int n = 20000, blocks = 16, threads = 64;
  std::vector<int> in(n);
  std::mt19937 rng(5);
  long long want = 0;
  for (int& v : in) want += (v = int(rng() % 2001) - 1000);
  CUdeviceptr din = Alloc(n * sizeof(int)), partial = Alloc(blocks * 8), out = Alloc(blocks * 8);
  ASSERT_EQ(api.cuMemcpyHtoD(din, in.data(), n * sizeof(int)), CUDA_SUCCESS);
  int nn = n;
  void* args[] = {&din, &partial, &out, &nn};
  CUlaunchAttribute attrs[3] = {};
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attrs[0].value.cooperative = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[1].value.clusterDim.x = attrs[1].value.clusterDim.y = attrs[1].value.clusterDim.z = 1;
  attrs[2].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  CUlaunchConfig cfg = {};
  cfg.gridDimX = blocks, cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = threads, cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.attrs = attrs;
  cfg.numAttrs = 3;
  ASSERT_EQ(api.cuLaunchKernelEx(&cfg, Fn("gridSum"), args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<long long> got(blocks);
  ASSERT_EQ(api.cuMemcpyDtoH(got.data(), out, blocks * 8), CUDA_SUCCESS);
  for (int b = 0; b < blocks; ++b) EXPECT_EQ(got[b], want) << "block " << b;

  attrs[1].value.clusterDim.x = 2;
  EXPECT_EQ(api.cuLaunchKernelEx(&cfg, Fn("gridSum"), args, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  int v = 0;
  EXPECT_EQ(api.cuOccupancyMaxActiveClusters(&v, Fn("gridSum"), &cfg), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.cuOccupancyMaxPotentialClusterSize(&v, Fn("gridSum"), &cfg),
            CUDA_ERROR_NOT_SUPPORTED);
  attrs[1].value.clusterDim.x = 0;
  EXPECT_EQ(api.cuLaunchKernelEx(&cfg, Fn("gridSum"), args, nullptr),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  attrs[1].id = static_cast<CUlaunchAttributeID>(15);  // not a CUDA 13 attribute
  EXPECT_EQ(api.cuLaunchKernelEx(&cfg, Fn("gridSum"), args, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);  // the refusals left nothing behind
  for (CUdeviceptr p : {din, partial, out}) EXPECT_EQ(api.cuMemFree(p), CUDA_SUCCESS);
}

#endif  // REMORA_EMU_HAS_PTX && REMORA_EMU_HAS_NVCC

}  // namespace
}  // namespace remora::emu::test
