// tests/cuda/kernels/graph_params.cu - the generic node-parameter calls (cudaGraphNodeSetParams,
// cudaGraphExecNodeSetParams) on kernel and host nodes, an array's memory requirements and the
// 1-D linear texture width limit, against host references.
#include <vector>

#include "common.h"

__global__ void Fill(int* out, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

namespace {
int g_first = 0, g_second = 0;
void Count(void* p) {
  ++*static_cast<int*>(p);
}
}  // namespace

int main() {
  const int n = 1000;
  int* d;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  std::vector<int> out(n);
  int failures = 0;

  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  int value = 7, count = n;
  void* args[] = {&d, &value, &count};
  cudaGraphNodeParams kp{};
  kp.type = cudaGraphNodeTypeKernel;
  kp.kernel.func = reinterpret_cast<void*>(Fill);
  kp.kernel.gridDim = dim3((n + 255) / 256);
  kp.kernel.blockDim = dim3(256);
  kp.kernel.kernelParams = args;
  cudaGraphNode_t fill, host;
  CHECK(cudaGraphAddNode(&fill, g, nullptr, nullptr, 0, &kp));
  cudaGraphNodeParams hp{};
  hp.type = cudaGraphNodeTypeHost;
  hp.host.fn = Count;
  hp.host.userData = &g_first;
  CHECK(cudaGraphAddNode(&host, g, &fill, nullptr, 1, &hp));

  // In the graph: the kernel writes 9 instead of 7.
  value = 9;
  CHECK(cudaGraphNodeSetParams(fill, &kp));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  CHECK(cudaGraphLaunch(exec, nullptr));
  CHECK(cudaMemcpy(out.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int v : out) failures += v != 9;
  REQUIRE(g_first == 1 && g_second == 0);

  // In the executable: 11, and the host node counts elsewhere.
  value = 11;
  CHECK(cudaGraphExecNodeSetParams(exec, fill, &kp));
  hp.host.userData = &g_second;
  CHECK(cudaGraphExecNodeSetParams(exec, host, &hp));
  CHECK(cudaGraphLaunch(exec, nullptr));
  CHECK(cudaMemcpy(out.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int v : out) failures += v != 11;
  REQUIRE(g_first == 1 && g_second == 1);
  hp.type = cudaGraphNodeTypeMemset;  // not the node's kind
  EXPECT_CUDA(cudaGraphNodeSetParams(host, &hp), cudaErrorInvalidValue);
  (void)cudaGetLastError();

  // A 64 x 16 array of float4 needs at least its 16 KiB.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float4>();
  cudaArray_t a;
  CHECK(cudaMallocArray(&a, &desc, 64, 16));
  cudaArrayMemoryRequirements req{};
  CHECK(cudaArrayGetMemoryRequirements(&req, a, 0));
  REQUIRE(req.size >= 64 * 16 * sizeof(float4) && req.alignment > 0);
  CHECK(cudaFreeArray(a));
  size_t width = 0;
  CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&width, &desc, 0));
  REQUIRE(width > 0);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(d));
  return Finish(failures, "graph_params");
}
