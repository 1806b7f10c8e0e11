// tests/cuda/kernels/hopper.cu - compute capability 9.0's thread-block clusters and tensor
// maps: run where the device has them, refused where it does not.
//
// Clusters: ClusterSum sums each block's slice of random data in shared memory; in a cluster,
// block rank 0 adds its peers' sums read through distributed shared memory
// (cluster.map_shared_rank), so out[c] is cluster c's total only if the cluster's blocks really
// ran together. Launched with cudaLaunchKernelEx's cluster attribute at several sizes, captured
// into a graph, and sized by cudaOccupancyMaxPotentialClusterSize/MaxActiveClusters.
// Tensor maps: a 2-D tensor map (cuTensorMapEncodeTiled, reached as frameworks reach it, through
// cudaGetDriverEntryPointByVersion) over a random matrix; TileCopy copies tiles of it into
// shared memory with the tensor memory accelerator, out-of-bounds elements filled with zeros.
// Under Remora, a tensor map over memory that is not the tenant's is refused, and so is moving
// one the server never encoded. Everything is checked against the host.
// Built with machine code for sm_90 and PTX for compute_75 only, so a device without either
// runs the compute_75 path, where a cluster of one block is all a launch can ask.
// Flags: -seed <n>.
#include <cooperative_groups.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cuda/barrier>
#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

constexpr int kBlocks = 48, kThreads = 128, kPerBlock = 1000;

__global__ void ClusterSum(const unsigned* in, unsigned* out, int per_block) {
  __shared__ unsigned sum;
  if (threadIdx.x == 0) sum = 0;
  __syncthreads();
  unsigned v = 0;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) v += in[blockIdx.x * per_block + i];
  atomicAdd(&sum, v);
  __syncthreads();
#if __CUDA_ARCH__ >= 900
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  if (cluster.block_rank() == 0 && threadIdx.x == 0) {
    unsigned total = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(&sum, r);
    out[blockIdx.x / cluster.num_blocks()] = total;
  }
  cluster.sync();  // a peer's shared memory lives until every reader is done
#else
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
#endif
}

constexpr int kTile = 16;
using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;

// Copies the kTile x kTile tile at column x, row y of `map`'s float matrix into shared memory
// with one tensor-memory-accelerator copy, then out to `out` (row-major).
__global__ void TileCopy(const __grid_constant__ CUtensorMap map, float* out, int x, int y) {
#if __CUDA_ARCH__ >= 900
  __shared__ alignas(128) float tile[kTile][kTile];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ BlockBarrier bar;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cuda::device::experimental::fence_proxy_async_shared_cta();
  }
  __syncthreads();
  BlockBarrier::arrival_token token;
  if (threadIdx.x == 0) {
    cuda::device::experimental::cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, x, y, bar);
    token = cuda::device::barrier_arrive_tx(bar, 1, sizeof tile);
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) out[i] = tile[i / kTile][i % kTile];
#else
  if (threadIdx.x == 0 && blockIdx.x == 0) __trap();  // never launched: no tensor maps here
#endif
}

// A launch of ClusterSum over kBlocks blocks in clusters of `size`, on `stream`.
cudaError_t LaunchClusters(unsigned size, const unsigned* in, unsigned* out, cudaStream_t stream) {
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = size;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kBlocks);
  cfg.blockDim = dim3(kThreads);
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, ClusterSum, in, out, kPerBlock);
}

// Failures: clusters of `size` whose totals differ from the host's.
int CheckTotals(unsigned size, const std::vector<unsigned>& data, const unsigned* out,
                const char* how) {
  std::vector<unsigned> got(kBlocks / size);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int failures = 0;
  for (size_t c = 0; c < got.size(); ++c) {
    unsigned want = 0;
    for (size_t i = c * size * kPerBlock; i < (c + 1) * size * kPerBlock; ++i) want += data[i];
    if (got[c] != want && failures++ < 3)
      std::printf("FAIL: %s, clusters of %u: cluster %zu sums to %u, want %u\n", how, size, c,
                  got[c], want);
  }
  return failures;
}

// Failures of the cluster checks.
int Clusters(Rng& rng) {
  std::vector<unsigned> data(size_t{kBlocks} * kPerBlock);
  for (auto& v : data) v = static_cast<unsigned>(rng.Next());
  unsigned *in, *out;
  CHECK(cudaMalloc(&in, data.size() * sizeof(unsigned)));
  CHECK(cudaMalloc(&out, kBlocks * sizeof(unsigned)));
  CHECK(cudaMemcpy(in, data.data(), data.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  int failures = 0;

  // A cluster of one block is no cluster: every device runs it.
  CHECK(cudaMemset(out, 0, kBlocks * sizeof(unsigned)));
  CHECK(LaunchClusters(1, in, out, nullptr));
  failures += CheckTotals(1, data, out, "cudaLaunchKernelEx");
  cudaFuncAttributes fa;
  CHECK(cudaFuncGetAttributes(&fa, ClusterSum));
  REQUIRE(fa.requiredClusterWidth == 0 && fa.clusterDimMustBeSet == 0);

  int has_clusters = 0;
  CHECK(cudaDeviceGetAttribute(&has_clusters, cudaDevAttrClusterLaunch, 0));
  if (!has_clusters) {
    const cudaError_t e = LaunchClusters(2, in, out, nullptr);
    std::printf("no clusters on this device: a cluster launch returns %s\n", cudaGetErrorName(e));
    REQUIRE(e != cudaSuccess);
    (void)cudaGetLastError();
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(kBlocks);
    cfg.blockDim = dim3(kThreads);
    int active = 0;
    const cudaError_t q = cudaOccupancyMaxActiveClusters(&active, ClusterSum, &cfg);
    std::printf("and cudaOccupancyMaxActiveClusters returns %s (%d)\n", cudaGetErrorName(q),
                active);
    REQUIRE(q != cudaSuccess || active == 0);
    (void)cudaGetLastError();
    CHECK(cudaDeviceSynchronize());  // the refusals left nothing behind
    std::printf("clusters: refused, as the device has none\n");
    return failures;
  }

  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 4;
  attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kBlocks);
  cfg.blockDim = dim3(kThreads);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int potential = 0, active = 0;
  CHECK(cudaOccupancyMaxPotentialClusterSize(&potential, ClusterSum, &cfg));
  CHECK(cudaOccupancyMaxActiveClusters(&active, ClusterSum, &cfg));
  std::printf("largest cluster %d blocks; %d clusters of 4 at once\n", potential, active);
  REQUIRE(potential >= 8);  // the portable cluster size
  REQUIRE(active >= 1);

  for (unsigned size : {2u, 4u, 8u}) {
    CHECK(cudaMemset(out, 0, kBlocks * sizeof(unsigned)));
    CHECK(LaunchClusters(size, in, out, nullptr));
    failures += CheckTotals(size, data, out, "cudaLaunchKernelEx");
  }

  // A grid that is not whole clusters is refused at launch.
  REQUIRE(LaunchClusters(5, in, out, nullptr) != cudaSuccess);
  (void)cudaGetLastError();

  // Captured into a graph, the launch keeps its cluster shape.
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemsetAsync(out, 0, kBlocks * sizeof(unsigned), s));
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(LaunchClusters(4, in, out, s));
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  failures += CheckTotals(4, data, out, "a captured graph");
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  std::printf("clusters: %s\n", failures ? "wrong" : "right");
  return failures;
}

// Failures of the tensor map checks.
int TensorMaps(Rng& rng, int major) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &found));
  REQUIRE(found == cudaDriverEntryPointSuccess && fn != nullptr);
  auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  const int w = 100, h = 37;  // not whole tiles: the last ones run past the edge
  std::vector<float> m(size_t{w} * h);
  for (auto& v : m) v = rng.Uniform(-1, 1);
  float *dm, *dout;
  CHECK(cudaMalloc(&dm, m.size() * sizeof(float)));
  CHECK(cudaMalloc(&dout, kTile * kTile * sizeof(float)));
  CHECK(cudaMemcpy(dm, m.data(), m.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUtensorMap map;
  const cuuint64_t dims[2] = {w, h}, strides[1] = {w * sizeof(float)};
  const cuuint32_t box[2] = {kTile, kTile}, element_strides[2] = {1, 1};
  auto encode_at = [&](void* address) {
    return encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, address, dims, strides, box,
                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  int failures = 0;
  const CUresult r = encode_at(dm);
  if (major < 9) {
    std::printf("tensor maps: compute capability %d has none; cuTensorMapEncodeTiled -> %d\n",
                major, static_cast<int>(r));
  } else {
    REQUIRE(r == CUDA_SUCCESS);
    std::vector<float> got(kTile * kTile);
    for (int y : {0, 16, 32})
      for (int x : {0, 48, 96}) {
        TileCopy<<<1, 64>>>(map, dout, x, y);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got.data(), dout, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < kTile * kTile; ++i) {
          const int cx = x + i % kTile, cy = y + i / kTile;
          const float want = cx < w && cy < h ? m[static_cast<size_t>(cy) * w + cx] : 0.0f;
          if (got[i] != want && failures++ < 3)
            std::printf("FAIL: tile (%d,%d) element %d is %g, want %g\n", x, y, i, got[i], want);
        }
      }
    std::printf("tensor maps: %s\n", failures ? "wrong" : "right");
  }
  if (UnderRemora("tensor maps over memory that is not the tenant's")) {
    // Refused by the server (CUDA_ERROR_INVALID_VALUE) before any driver sees them: the matrix
    // one row past the end of its allocation, on the host's stack, and a forged map moved.
    const CUresult past = encode_at(dm + w), host = encode_at(&map);
    void* replace = nullptr;
    CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapReplaceAddress", &replace, 12000,
                                           cudaEnableDefault, &found));
    CUtensorMap forged;
    std::memset(&forged, 0x5a, sizeof forged);
    const CUresult moved =
        reinterpret_cast<PFN_cuTensorMapReplaceAddress_v12000>(replace)(&forged, dm);
    std::printf("tensor maps refused: past the allocation %d, host memory %d, forged %d\n",
                static_cast<int>(past), static_cast<int>(host), static_cast<int>(moved));
    if (past != CUDA_ERROR_INVALID_VALUE || host != CUDA_ERROR_INVALID_VALUE ||
        moved != CUDA_ERROR_INVALID_VALUE) {
      std::printf("FAIL: a tensor map over memory that is not the tenant's was not refused\n");
      ++failures;
    }
  }
  CHECK(cudaFree(dm));
  CHECK(cudaFree(dout));
  return failures;
}

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  int major = 0;
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  const int failures = Clusters(rng) + TensorMaps(rng, major);
  return Finish(failures, "hopper: clusters and tensor maps");
}
