// tests/cuda/kernels/graph_conditional.cu - conditional graph nodes steered by kernels
// (cudaGraphSetConditional): if/else, a while loop whose handle is reset at each launch, and a
// switch, their bodies built node by node and by capture into the body graph, and a loop added to
// a graph while a stream captures it; each launch's result against a host reference on random
// data.
#include <vector>

#include "common.h"

__global__ void SetAbove(cudaGraphConditionalHandle h, const int* x, int threshold) {
  if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(h, *x > threshold ? 1u : 0u);
}

__global__ void SetTo(cudaGraphConditionalHandle h, const unsigned* value) {
  if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(h, *value);
}

// One iteration of a loop: the counter goes down; the loop goes on while it is positive.
__global__ void CountDown(cudaGraphConditionalHandle h, int* counter) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const int left = --*counter;
    cudaGraphSetConditional(h, left > 0 ? 1u : 0u);
  }
}

__global__ void Add(int* data, int n, int v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += v;
}

namespace {

constexpr int kN = 3000;
constexpr int kBlock = 256;
constexpr int kGrid = (kN + kBlock - 1) / kBlock;

// A kernel node of `f` with `args` in `g` after `deps`.
template <class... A>
cudaGraphNode_t KernelNode(cudaGraph_t g, const cudaGraphNode_t* deps, size_t ndeps,
                           void (*f)(A...), void** args, int grid) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = reinterpret_cast<void*>(f);
  p.kernel.gridDim = dim3(grid);
  p.kernel.blockDim = dim3(kBlock);
  p.kernel.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, g, deps, nullptr, ndeps, &p));
  return node;
}

// A conditional node of `type` with `size` bodies on `h`, after `dep`; its bodies in *bodies.
cudaGraphNode_t ConditionalNode(cudaGraph_t g, cudaGraphNode_t dep, cudaGraphConditionalHandle h,
                                cudaGraphConditionalNodeType type, unsigned size,
                                std::vector<cudaGraph_t>* bodies) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = h;
  p.conditional.type = type;
  p.conditional.size = size;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, g, dep ? &dep : nullptr, nullptr, dep ? 1 : 0, &p));
  REQUIRE(p.conditional.phGraph_out != nullptr);
  bodies->assign(p.conditional.phGraph_out, p.conditional.phGraph_out + size);
  return node;
}

// Runs `exec` on `s` and compares the data with `want`.
int LaunchAndCompare(cudaGraphExec_t exec, cudaStream_t s, int* d, const std::vector<int>& want,
                     const char* what) {
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  std::vector<int> got(kN);
  CHECK(cudaMemcpy(got.data(), d, kN * sizeof(int), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < kN; ++i) bad += got[i] != want[i];
  if (bad)
    std::printf("%s: %d of %d elements differ (first: %d, want %d)\n", what, bad, kN, got[0],
                want[0]);
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 17));
  int failures = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (std::getenv("REMORA_STUB_DIR") != nullptr &&
      std::strcmp(prop.name, "Remora Emulated GPU") != 0) {
    // Remora only: on a GPU, kernels set a handle through NVIDIA's device runtime, which only
    // NVIDIA's own graphs read, so Remora refuses the handle by name.
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    EXPECT_CUDA(cudaGraphConditionalHandleCreate(&h, g, 0, 0), cudaErrorNotSupported);
    CHECK(cudaGraphDestroy(g));
    return Finish(0, "graph_conditional (refused by name on a GPU under Remora)");
  }
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  int *d, *x, *counter;
  unsigned* selector;
  CHECK(cudaMalloc(&d, kN * sizeof(int)));
  CHECK(cudaMalloc(&x, sizeof(int)));
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMalloc(&selector, sizeof(unsigned)));
  std::vector<int> want(kN);
  for (int& v : want) v = rng.Int(-1000, 1000);
  CHECK(cudaMemcpy(d, want.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  int n = kN;

  // if/else: above the threshold one body adds `then`, else the other adds `otherwise`.
  {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    int threshold = rng.Int(-50, 50), then = rng.Int(1, 100), otherwise = -rng.Int(1, 100);
    void* set_args[] = {&h, &x, &threshold};
    cudaGraphNode_t set = KernelNode(g, nullptr, 0, SetAbove, set_args, 1);
    std::vector<cudaGraph_t> bodies;
    ConditionalNode(g, set, h, cudaGraphCondTypeIf, 2, &bodies);
    void* then_args[] = {&d, &n, &then};
    void* else_args[] = {&d, &n, &otherwise};
    KernelNode(bodies[0], nullptr, 0, Add, then_args, kGrid);
    KernelNode(bodies[1], nullptr, 0, Add, else_args, kGrid);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int round = 0; round < 4; ++round) {
      const int value = threshold + (round % 2 ? -rng.Int(0, 20) : rng.Int(1, 20));
      CHECK(cudaMemcpy(x, &value, sizeof value, cudaMemcpyHostToDevice));
      for (int& v : want) v += value > threshold ? then : otherwise;
      failures += LaunchAndCompare(exec, s, d, want, "if/else");
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
  }

  // while: the handle starts each launch at 1 (cudaGraphCondAssignDefault); the body, captured
  // into the body graph, adds `step` and counts down, so a launch adds `step` `counter` times.
  {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    std::vector<cudaGraph_t> bodies;
    ConditionalNode(g, nullptr, h, cudaGraphCondTypeWhile, 1, &bodies);
    int step = rng.Int(1, 50);
    CHECK(cudaStreamBeginCaptureToGraph(s, bodies[0], nullptr, nullptr, 0,
                                        cudaStreamCaptureModeGlobal));
    Add<<<kGrid, kBlock, 0, s>>>(d, n, step);
    CountDown<<<1, 1, 0, s>>>(h, counter);
    cudaGraph_t captured;
    CHECK(cudaStreamEndCapture(s, &captured));
    REQUIRE(captured == bodies[0]);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int round = 0; round < 3; ++round) {
      const int times = rng.Int(1, 12);
      CHECK(cudaMemcpy(counter, &times, sizeof times, cudaMemcpyHostToDevice));
      for (int& v : want) v += times * step;
      failures += LaunchAndCompare(exec, s, d, want, "while");
      int left = -1;
      CHECK(cudaMemcpy(&left, counter, sizeof left, cudaMemcpyDeviceToHost));
      REQUIRE(left == 0);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
  }

  // switch: body k adds k + 1 times `unit`; a value past the bodies runs none.
  {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    void* set_args[] = {&h, &selector};
    cudaGraphNode_t set = KernelNode(g, nullptr, 0, SetTo, set_args, 1);
    std::vector<cudaGraph_t> bodies;
    ConditionalNode(g, set, h, cudaGraphCondTypeSwitch, 3, &bodies);
    const int unit = rng.Int(1, 30);
    int adds[3] = {unit, 2 * unit, 3 * unit};
    void* body_args[3][3] = {{&d, &n, &adds[0]}, {&d, &n, &adds[1]}, {&d, &n, &adds[2]}};
    for (int k = 0; k < 3; ++k) KernelNode(bodies[k], nullptr, 0, Add, body_args[k], kGrid);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (unsigned value : {2u, 0u, 7u, 1u}) {
      CHECK(cudaMemcpy(selector, &value, sizeof value, cudaMemcpyHostToDevice));
      if (value < 3)
        for (int& v : want) v += adds[value];
      failures += LaunchAndCompare(exec, s, d, want, "switch");
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
  }

  // do-while built during a capture, as CUDA's samples build one: the handle and the node join
  // the graph being captured, after what the stream captured so far, and the body is captured
  // from another stream.
  {
    cudaStream_t body_stream;
    CHECK(cudaStreamCreate(&body_stream));
    int before = rng.Int(1, 100), step = rng.Int(1, 50);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    Add<<<kGrid, kBlock, 0, s>>>(d, n, before);
    cudaStreamCaptureStatus status;
    cudaGraph_t g;
    const cudaGraphNode_t* deps = nullptr;
    size_t ndeps = 0;
    CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, &deps, nullptr, &ndeps));
    REQUIRE(status == cudaStreamCaptureStatusActive && ndeps == 1);
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = cudaGraphCondTypeWhile;
    p.conditional.size = 1;
    cudaGraphNode_t loop;
    CHECK(cudaGraphAddNode(&loop, g, deps, nullptr, ndeps, &p));
    CHECK(cudaStreamUpdateCaptureDependencies(s, &loop, nullptr, 1,
                                              cudaStreamSetCaptureDependencies));
    CHECK(cudaStreamBeginCaptureToGraph(body_stream, p.conditional.phGraph_out[0], nullptr, nullptr,
                                        0, cudaStreamCaptureModeRelaxed));
    Add<<<kGrid, kBlock, 0, body_stream>>>(d, n, step);
    CountDown<<<1, 1, 0, body_stream>>>(h, counter);
    // Into the caller's graph: nothing to hand back (the public graphConditionalNodes sample
    // ends such a capture so).
    CHECK(cudaStreamEndCapture(body_stream, nullptr));
    CHECK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int round = 0; round < 2; ++round) {
      const int times = rng.Int(1, 8);
      CHECK(cudaMemcpy(counter, &times, sizeof times, cudaMemcpyHostToDevice));
      for (int& v : want) v += before + times * step;
      failures += LaunchAndCompare(exec, s, d, want, "captured do-while");
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(body_stream));
  }

  CHECK(cudaFree(d));
  CHECK(cudaFree(x));
  CHECK(cudaFree(counter));
  CHECK(cudaFree(selector));
  CHECK(cudaStreamDestroy(s));
  return Finish(failures, "graph_conditional");
}
