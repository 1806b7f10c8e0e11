// tests/cuda/kernels/clusters.cu - thread-block clusters (compute capability 9.0 and later):
// run where the device has them (cudaDevAttrClusterLaunch), refused where it does not.
//
// ClusterSum sums each block's slice of random data in shared memory; in a cluster, block rank
// 0 adds its peers' sums read through distributed shared memory (cluster.map_shared_rank), so
// out[c] is cluster c's total only if the cluster's blocks really ran together. Launched with
// cudaLaunchKernelEx's cluster attribute at several sizes, captured into a graph, and sized by
// cudaOccupancyMaxPotentialClusterSize/MaxActiveClusters; checked against the host's sums.
// Built with machine code for sm_90 and PTX for compute_75 only, so a device without clusters
// runs the cluster-free path, where a cluster of one block is every launch can ask.
// Flags: -seed <n>.
#include <cooperative_groups.h>

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

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
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
    return Finish(failures, "clusters (refused: the device has none)");
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
  return Finish(failures, "clusters");
}
