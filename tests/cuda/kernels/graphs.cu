// tests/cuda/kernels/graphs.cu - CUDA graphs, against host references on random data:
//  1. built node by node: memset, two independent kernels, a joining kernel, a copy back and
//     a host node, in a diamond; launched three times, the effect accumulates each time;
//  2. captured from two streams forked and joined by events (copy in, kernels on both
//     streams, copy out), then launched twice;
//  3. an executable's kernel node given new parameters, and an update from a graph of the same
//     shape; a child graph node;
//  4. a synchronous call on a capturing stream is refused and invalidates the capture;
//  5. a kernel node's parameters read back, a node disabled in an executable, the edges, a
//     user object released with its graph, a capture with stream-ordered allocation, graph
//     memory pooled as a GPU pools it, a capture into an existing graph, and a DOT picture.
#include <unistd.h>

#include <string>
#include <vector>

#include "common.h"

__global__ void Axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

__global__ void Mul(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= x[i];
}

namespace {

int g_host_calls = 0;
int g_destroyed = 0;
void Destroyed(void* p) {
  ++*static_cast<int*>(p);
}
void CountCall(void* p) {
  ++*static_cast<int*>(p);
}

int Compare(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!Near(got[i], want[i], 1e-5)) {
      if (bad++ < 3) std::printf("%s[%zu] = %g, want %g\n", what, i, got[i], want[i]);
    }
  return bad;
}

cudaKernelNodeParams AxpyParams(void** args, int n) {
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(Axpy);
  p.gridDim = dim3((n + 127) / 128);
  p.blockDim = dim3(128);
  p.kernelParams = args;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 5000));
  Rng rng(Flag(argc, argv, "seed", 7));
  std::vector<float> x(n), z(n);
  for (float& v : x) v = rng.Uniform(-4, 4);
  for (float& v : z) v = rng.Uniform(-4, 4);
  const size_t bytes = n * sizeof(float);
  float *dx, *dy, *dz;
  CHECK(cudaMalloc(&dx, bytes));
  CHECK(cudaMalloc(&dy, bytes));
  CHECK(cudaMalloc(&dz, bytes));
  CHECK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dz, z.data(), bytes, cudaMemcpyHostToDevice));
  int failures = 0;
  std::vector<float> out(n), want(n);

  // 1. A diamond built node by node: y = 0; then y += 2x and z += 3x (independent); then
  //    y *= z; copy y back; a host node counts the runs.
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t zero, left, right, join, back, host;
  cudaMemsetParams ms{};
  ms.dst = dy;
  ms.value = 0;
  ms.elementSize = 4;
  ms.width = n;
  ms.height = 1;
  CHECK(cudaGraphAddMemsetNode(&zero, g, nullptr, 0, &ms));
  float two = 2, three = 3;
  void* left_args[] = {&dy, &dx, &two, const_cast<int*>(&n)};
  void* right_args[] = {&dz, &dx, &three, const_cast<int*>(&n)};
  cudaKernelNodeParams lp = AxpyParams(left_args, n), rp = AxpyParams(right_args, n);
  CHECK(cudaGraphAddKernelNode(&left, g, &zero, 1, &lp));
  CHECK(cudaGraphAddKernelNode(&right, g, nullptr, 0, &rp));
  cudaKernelNodeParams jp = lp;
  void* join_args[] = {&dy, &dz, const_cast<int*>(&n)};
  jp.func = reinterpret_cast<void*>(Mul);
  jp.kernelParams = join_args;
  cudaGraphNode_t both[] = {left, right};
  CHECK(cudaGraphAddKernelNode(&join, g, both, 2, &jp));
  CHECK(
      cudaGraphAddMemcpyNode1D(&back, g, &join, 1, out.data(), dy, bytes, cudaMemcpyDeviceToHost));
  cudaHostNodeParams hp{CountCall, &g_host_calls};
  CHECK(cudaGraphAddHostNode(&host, g, &back, 1, &hp));
  size_t count = 0, roots = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &count));
  CHECK(cudaGraphGetRootNodes(g, nullptr, &roots));
  REQUIRE(count == 6 && roots == 2);
  cudaGraphNodeType type;
  CHECK(cudaGraphNodeGetType(join, &type));
  REQUIRE(type == cudaGraphNodeTypeKernel);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<float> zr = z;
  for (int run = 1; run <= 3; ++run) {
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) {
      zr[i] += 3 * x[i];
      want[i] = (2 * x[i]) * zr[i];
    }
    failures += Compare(out, want, "diamond");
  }
  REQUIRE(g_host_calls == 3);

  // 3a. New parameters for the executable's left kernel: y += 5x before the join.
  float five = 5;
  void* five_args[] = {&dy, &dx, &five, const_cast<int*>(&n)};
  cudaKernelNodeParams fp = AxpyParams(five_args, n);
  CHECK(cudaGraphExecKernelNodeSetParams(exec, left, &fp));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < n; ++i) {
    zr[i] += 3 * x[i];
    want[i] = (5 * x[i]) * zr[i];
  }
  failures += Compare(out, want, "exec_set_params");

  // 3b. An update from a clone of the graph whose right kernel adds 1x instead of 3x.
  cudaGraph_t g2;
  CHECK(cudaGraphClone(&g2, g));
  cudaGraphNode_t right2;
  CHECK(cudaGraphNodeFindInClone(&right2, right, g2));
  float one = 1;
  void* one_args[] = {&dz, &dx, &one, const_cast<int*>(&n)};
  cudaKernelNodeParams op = AxpyParams(one_args, n);
  CHECK(cudaGraphKernelNodeSetParams(right2, &op));
  cudaGraphExecUpdateResultInfo info;
  CHECK(cudaGraphExecUpdate(exec, g2, &info));
  REQUIRE(info.result == cudaGraphExecUpdateSuccess);
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < n; ++i) {
    zr[i] += 1 * x[i];
    want[i] = (2 * x[i]) * zr[i];
  }
  failures += Compare(out, want, "exec_update");

  // 3c. The first graph as a child of another, after a memset of z to 0.
  cudaGraph_t parent;
  CHECK(cudaGraphCreate(&parent, 0));
  cudaGraphNode_t clear, child;
  ms.dst = dz;
  CHECK(cudaGraphAddMemsetNode(&clear, parent, nullptr, 0, &ms));
  CHECK(cudaGraphAddChildGraphNode(&child, parent, &clear, 1, g));
  cudaGraphExec_t parent_exec;
  CHECK(cudaGraphInstantiate(&parent_exec, parent, 0));
  CHECK(cudaGraphLaunch(parent_exec, s));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < n; ++i) {
    zr[i] = 3 * x[i];
    want[i] = (2 * x[i]) * zr[i];
  }
  failures += Compare(out, want, "child_graph");

  // 2. Captured from two streams: copy x in, y = x on s; fork: z = 0 + 4x on s2; join; y *= z;
  //    copy out.
  std::vector<float> x2(n);
  for (float& v : x2) v = rng.Uniform(-2, 2);
  cudaStream_t s2;
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, joined;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status;
  CHECK(cudaStreamIsCapturing(s, &status));
  REQUIRE(status == cudaStreamCaptureStatusActive);
  CHECK(cudaMemcpyAsync(dx, x2.data(), bytes, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(dy, dx, bytes, cudaMemcpyDeviceToDevice, s));
  CHECK(cudaEventRecord(fork, s));
  CHECK(cudaStreamWaitEvent(s2, fork, 0));
  CHECK(cudaMemsetAsync(dz, 0, bytes, s2));
  float four = 4;
  Axpy<<<(n + 127) / 128, 128, 0, s2>>>(dz, dx, four, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(joined, s2));
  CHECK(cudaStreamWaitEvent(s, joined, 0));
  Mul<<<(n + 127) / 128, 128, 0, s>>>(dy, dz, n);
  CHECK(cudaMemcpyAsync(out.data(), dy, bytes, cudaMemcpyDeviceToHost, s));
  cudaGraph_t captured;
  CHECK(cudaStreamEndCapture(s, &captured));
  CHECK(cudaStreamIsCapturing(s, &status));
  REQUIRE(status == cudaStreamCaptureStatusNone);
  CHECK(cudaGraphGetNodes(captured, nullptr, &count));
  REQUIRE(count >= 6);
  cudaGraphExec_t cexec;
  CHECK(cudaGraphInstantiate(&cexec, captured, 0));
  for (int run = 0; run < 2; ++run) {
    std::fill(out.begin(), out.end(), 0.0f);
    CHECK(cudaGraphLaunch(cexec, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) want[i] = x2[i] * (4 * x2[i]);
    failures += Compare(out, want, "captured");
  }

  // 4. Synchronizing a capturing stream is refused and invalidates the capture.
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  CHECK(cudaMemsetAsync(dz, 0, bytes, s));
  EXPECT_CUDA(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t invalid = nullptr;
  EXPECT_CUDA(cudaStreamEndCapture(s, &invalid), cudaErrorStreamCaptureInvalidated);
  REQUIRE(invalid == nullptr);
  (void)cudaGetLastError();

  // 5a. Parameters read back; the edges of the diamond.
  cudaKernelNodeParams got{};
  CHECK(cudaGraphKernelNodeGetParams(join, &got));
  REQUIRE(got.func == reinterpret_cast<void*>(Mul) && got.gridDim.x == jp.gridDim.x &&
          got.blockDim.x == 128 && got.kernelParams != nullptr &&
          *static_cast<int*>(got.kernelParams[2]) == n);
  size_t edges = 0;
  CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
  REQUIRE(edges == 5);
  // 5b. The left kernel disabled: y stays 0, so the join gives 0.
  CHECK(cudaGraphNodeSetEnabled(exec, left, 0));
  unsigned enabled = 1;
  CHECK(cudaGraphNodeGetEnabled(exec, left, &enabled));
  REQUIRE(enabled == 0);
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  failures += Compare(out, std::vector<float>(n, 0.0f), "disabled_node");
  CHECK(cudaGraphNodeSetEnabled(exec, left, 1));
  // 5c. A user object the graph owns is destroyed with the graph.
  cudaUserObject_t obj;
  CHECK(cudaUserObjectCreate(&obj, &g_destroyed, Destroyed, 1, cudaUserObjectNoDestructorSync));
  CHECK(cudaGraphRetainUserObject(g2, obj, 1, cudaGraphUserObjectMove));
  // 5d. Captured with stream-ordered allocation: tmp = x; y = 0 + 3 tmp; free tmp. Two such
  // graphs, each destroyed once instantiated, as graphMemoryNodes does: the executables keep
  // their memory, each its own address.
  cudaGraphExec_t aexec[2];
  float* tmp[2] = {nullptr, nullptr};
  for (int k = 0; k < 2; ++k) {
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMallocAsync(reinterpret_cast<void**>(&tmp[k]), bytes, s));
    CHECK(cudaMemcpyAsync(tmp[k], dx, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaMemsetAsync(dy, 0, bytes, s));
    Axpy<<<(n + 127) / 128, 128, 0, s>>>(dy, tmp[k], three, n);
    CHECK(cudaFreeAsync(tmp[k], s));
    CHECK(cudaMemcpyAsync(out.data(), dy, bytes, cudaMemcpyDeviceToHost, s));
    cudaGraph_t with_alloc;
    CHECK(cudaStreamEndCapture(s, &with_alloc));
    CHECK(cudaGraphInstantiate(&aexec[k], with_alloc, 0));
    CHECK(cudaGraphDestroy(with_alloc));
  }
  REQUIRE(tmp[0] != tmp[1]);
  for (int run = 0; run < 4; ++run) {
    CHECK(cudaGraphLaunch(aexec[run % 2], s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) want[i] = 3 * x2[i];
    failures += Compare(out, want, "captured_alloc");
  }
  uint64_t high = 0, reset = 0;
  CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high));
  REQUIRE(high >= bytes);
  CHECK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &reset));
  for (cudaGraphExec_t e : aexec) CHECK(cudaGraphExecDestroy(e));
  // 5d'. An explicit allocation node the program frees after a launch (cudaFree, then
  // cudaFreeAsync), as graphMemoryNodes does: the next launch has the memory again, at its
  // address, and the graph's copies through it land.
  {
    cudaGraph_t g3;
    CHECK(cudaGraphCreate(&g3, 0));
    cudaMemAllocNodeParams ap{};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location = {cudaMemLocationTypeDevice, 0};
    ap.bytesize = bytes;
    cudaGraphNode_t alloc_node, in_node, out_node;
    CHECK(cudaGraphAddMemAllocNode(&alloc_node, g3, nullptr, 0, &ap));
    CHECK(cudaGraphAddMemcpyNode1D(&in_node, g3, &alloc_node, 1, ap.dptr, dx, bytes,
                                   cudaMemcpyDeviceToDevice));
    CHECK(cudaGraphAddMemcpyNode1D(&out_node, g3, &in_node, 1, out.data(), ap.dptr, bytes,
                                   cudaMemcpyDeviceToHost));
    cudaGraphExec_t e3;
    CHECK(cudaGraphInstantiate(&e3, g3, 0));
    CHECK(cudaGraphDestroy(g3));
    for (int run = 0; run < 2; ++run) {
      std::fill(out.begin(), out.end(), -1.0f);
      CHECK(cudaGraphLaunch(e3, s));
      CHECK(cudaStreamSynchronize(s));
      failures += Compare(out, x2, "alloc_freed_by_program");
      if (run == 0)
        CHECK(cudaFree(ap.dptr));
      else
        CHECK(cudaFreeAsync(ap.dptr, s));
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(e3));
  }
  // 5d''. Graph memory as a GPU pools it: nothing is mapped until a launch; a graph launched
  // in the stream after another freed its allocation reuses that memory, at its own address;
  // two allocations of one graph share an address when the second comes after the first's
  // free; an allocation left unfreed keeps its memory, and its graph cannot be launched again
  // until it is freed (unless instantiated to free it on launch); the pool keeps what it has
  // until trimmed.
  {
    auto used = [] {
      uint64_t v = 0;
      CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &v));
      return v;
    };
    const size_t big = size_t{32} << 20;
    cudaMemAllocNodeParams ap{};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location = {cudaMemLocationTypeDevice, 0};
    ap.bytesize = big;
    // tmp = 0; tmp += 2x; out = tmp; then free tmp if `frees`.
    auto make = [&](bool frees, unsigned long long flags, float** tmp) {
      cudaGraph_t gm;
      CHECK(cudaGraphCreate(&gm, 0));
      cudaGraphNode_t a, z, k, c, f;
      CHECK(cudaGraphAddMemAllocNode(&a, gm, nullptr, 0, &ap));
      *tmp = static_cast<float*>(ap.dptr);
      cudaMemsetParams zp{};
      zp.dst = *tmp;
      zp.elementSize = 4;
      zp.width = n;
      zp.height = 1;
      CHECK(cudaGraphAddMemsetNode(&z, gm, &a, 1, &zp));
      void* args[] = {tmp, &dx, &two, const_cast<int*>(&n)};
      cudaKernelNodeParams kp = AxpyParams(args, n);
      CHECK(cudaGraphAddKernelNode(&k, gm, &z, 1, &kp));
      CHECK(
          cudaGraphAddMemcpyNode1D(&c, gm, &k, 1, out.data(), *tmp, bytes, cudaMemcpyDeviceToHost));
      if (frees) CHECK(cudaGraphAddMemFreeNode(&f, gm, &c, 1, *tmp));
      cudaGraphExec_t e;
      CHECK(cudaGraphInstantiateWithFlags(&e, gm, flags));
      CHECK(cudaGraphDestroy(gm));
      return e;
    };
    for (int i = 0; i < n; ++i) want[i] = 2 * x2[i];
    auto run = [&](cudaGraphExec_t e, const char* what) {
      std::fill(out.begin(), out.end(), -1.0f);
      CHECK(cudaGraphLaunch(e, s));
      CHECK(cudaStreamSynchronize(s));
      failures += Compare(out, want, what);
    };
    CHECK(cudaDeviceGraphMemTrim(0));
    const uint64_t base = used();
    float *p1, *p2, *p3, *p4;
    cudaGraphExec_t e1 = make(true, 0, &p1), e2 = make(true, 0, &p2);
    REQUIRE(p1 != p2 && used() == base);
    run(e1, "pooled_first");
    const uint64_t one = used();
    REQUIRE(one >= base + big);
    run(e2, "pooled_reused");
    run(e1, "pooled_again");
    REQUIRE(used() == one);
    {  // alloc a; free a; alloc b after the free: b takes a's address
      cudaGraph_t gv;
      CHECK(cudaGraphCreate(&gv, 0));
      cudaGraphNode_t a, fa, b, fb;
      CHECK(cudaGraphAddMemAllocNode(&a, gv, nullptr, 0, &ap));
      void* pa = ap.dptr;
      CHECK(cudaGraphAddMemFreeNode(&fa, gv, &a, 1, pa));
      CHECK(cudaGraphAddMemAllocNode(&b, gv, &fa, 1, &ap));
      REQUIRE(ap.dptr == pa);
      CHECK(cudaGraphAddMemFreeNode(&fb, gv, &b, 1, ap.dptr));
      cudaGraphExec_t ev;
      CHECK(cudaGraphInstantiate(&ev, gv, 0));
      CHECK(cudaGraphDestroy(gv));
      CHECK(cudaGraphLaunch(ev, s));
      CHECK(cudaStreamSynchronize(s));
      REQUIRE(used() == one);
      CHECK(cudaGraphExecDestroy(ev));
    }
    cudaGraphExec_t e3 = make(false, 0, &p3);
    run(e3, "unfreed");  // takes the pooled memory, and keeps it
    REQUIRE(cudaGraphLaunch(e3, s) == cudaErrorInvalidValue);
    REQUIRE(cudaGetLastError() == cudaErrorInvalidValue);
    run(e1, "beside_unfreed");  // needs memory of its own now
    const uint64_t two_chunks = used();
    REQUIRE(two_chunks >= one + big);
    CHECK(cudaDeviceGraphMemTrim(0));  // the unfreed allocation keeps its memory
    REQUIRE(used() >= base + big);
    CHECK(cudaFree(p3));
    run(e3, "freed_by_program");
    CHECK(cudaFree(p3));
    cudaGraphExec_t e4 = make(false, cudaGraphInstantiateFlagAutoFreeOnLaunch, &p4);
    unsigned long long got_flags = 0;
    CHECK(cudaGraphExecGetFlags(e4, &got_flags));
    REQUIRE(got_flags == cudaGraphInstantiateFlagAutoFreeOnLaunch);
    run(e4, "auto_free_first");
    run(e4, "auto_free_again");
    CHECK(cudaFree(p4));
    for (cudaGraphExec_t e : {e1, e2, e3, e4}) CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaDeviceGraphMemTrim(0));
    REQUIRE(used() == base);
  }
  // 5e. A capture into an existing graph, after its node.
  cudaGraph_t into;
  CHECK(cudaGraphCreate(&into, 0));
  cudaGraphNode_t first;
  CHECK(cudaGraphAddEmptyNode(&first, into, nullptr, 0));
  CHECK(cudaStreamBeginCaptureToGraph(s, into, &first, nullptr, 1, cudaStreamCaptureModeRelaxed));
  CHECK(cudaMemsetAsync(dz, 0, bytes, s));
  cudaGraph_t same = nullptr;
  CHECK(cudaStreamEndCapture(s, &same));
  REQUIRE(same == into);
  CHECK(cudaGraphGetNodes(into, nullptr, &count));
  REQUIRE(count == 2);
  // One file per process: the test's runs over each transport may run at once.
  const std::string path = "/tmp/remora-graphs-test-" + std::to_string(getpid()) + ".dot";
  const char* dot = path.c_str();
  CHECK(cudaGraphDebugDotPrint(g, dot, 0));
  FILE* f = std::fopen(dot, "r");
  char head[16] = {};
  REQUIRE(f != nullptr && std::fread(head, 1, 7, f) == 7 && std::strncmp(head, "digraph", 7) == 0);
  std::fclose(f);
  std::remove(dot);
  CHECK(cudaGraphDestroy(into));

  CHECK(cudaGraphExecDestroy(cexec));
  CHECK(cudaGraphExecDestroy(parent_exec));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(captured));
  CHECK(cudaGraphDestroy(parent));
  CHECK(cudaGraphDestroy(g2));
  REQUIRE(g_destroyed == 1);  // the user object went with the graph (and its executable)
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaEventDestroy(fork));
  CHECK(cudaEventDestroy(joined));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dz));
  return Finish(failures, "graphs");
}
