// tests/cuda/kernels/driver_versions.cpp - driver entry points taken by cuGetProcAddress for
// the CUDA version a runtime or framework was built against, as NVIDIA's runtime and
// frameworks take them. Each is called with the arguments that version gave it
// (cudaTypedefs.h's PFN_<name>_v<version>) and must do what it did then: a CUDA 12 runtime
// over a CUDA 13 driver calls cuCtxGetDevice with one argument, cuMemAdvise with a device
// number, cuGraphAddKernelNode with the older node structure. Results are checked against the
// CPU on random data.
//
// Usage: driver_versions [FATBIN]   (driver_kernels.cu built with nvcc -fatbin; by default the
// copy linked into the program)
#include <cuda.h>
#include <cudaProfiler.h>
#include <cudaTypedefs.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cu_check.h"
#include "driver_kernels_files.h"

namespace {

// cudaTypedefs.h declares these two only for NVIDIA's own build (__CUDA_API_VERSION_INTERNAL).
using PFN_cuStreamBeginCapture_v10000 = CUresult (*)(CUstream);
using PFN_cuGraphInstantiate_v11000 = CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*,
                                                   size_t);

[[noreturn]] void Fail(const char* what) {
  std::printf("FAIL: %s\n", what);
  std::exit(1);
}

// The entry point `name` as CUDA `version` defined it.
template <class Fn>
Fn Get(const char* name, int version) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CU_CHECK(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  if (fn == nullptr || status != CU_GET_PROC_ADDRESS_SUCCESS) {
    std::printf("FAIL: cuGetProcAddress(%s, %d): status %d\n", name, version, int(status));
    std::exit(1);
  }
  return reinterpret_cast<Fn>(fn);
}

std::string ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot read the fat binary");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Device buffers of n floats, x and y, with random contents, and y = a*x + y on the CPU.
struct Saxpy {
  int n;
  float a;
  std::vector<float> x, y;
  CUdeviceptr dx = 0, dy = 0;

  Saxpy(int n_, std::mt19937& rng) : n(n_), x(n_), y(n_) {
    std::uniform_real_distribution<float> dist(-1, 1);
    a = dist(rng);
    for (int i = 0; i < n; ++i) {
      x[i] = dist(rng);
      y[i] = dist(rng);
    }
    CU_CHECK(cuMemAlloc(&dx, n * sizeof(float)));
    CU_CHECK(cuMemAlloc(&dy, n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
  }
  ~Saxpy() {
    cuMemFree(dx);
    cuMemFree(dy);
  }
  // y on the device after `times` applications of y = a*x + y.
  void Check(int times, const char* what) {
    std::vector<float> got(n);
    CU_CHECK(cuMemcpyDtoH(got.data(), dy, n * sizeof(float)));
    for (int i = 0; i < n; ++i) {
      float want = y[i];
      for (int t = 0; t < times; ++t) want = a * x[i] + want;
      if (std::fabs(got[i] - want) > 1e-4f) {
        std::printf("FAIL: %s: y[%d] = %f, expected %f\n", what, i, got[i], want);
        std::exit(1);
      }
    }
    CU_CHECK(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2) Fail("usage: driver_versions [FATBIN]");
  const DriverKernelFiles files = DriverKernelPaths(argc, argv);
  CU_CHECK(cuInit(0));
  CUdevice dev = 0;
  CU_CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_CHECK(cuCtxSetCurrent(ctx));
  const std::string image = ReadFile(files.fatbin.c_str());
  CUmodule module = nullptr;
  CU_CHECK(cuModuleLoadData(&module, image.data()));
  CUfunction saxpy = nullptr;
  CU_CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CUstream stream = nullptr;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::mt19937 rng(20261129);

  // What a lookup answers for a version before the entry point existed, and for a name no
  // version has.
  {
    void* fn = &fn;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CU_CHECK(cuGetProcAddress("cuMemAllocAsync", &fn, 11000, 0, &status));
    if (fn != nullptr || status != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
      Fail("cuMemAllocAsync at CUDA 11.0: not VERSION_NOT_SUFFICIENT");
    fn = &fn;
    CU_CHECK(cuGetProcAddress("cuNoSuchEntryPoint", &fn, 13000, 0, &status));
    if (fn != nullptr || status != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
      Fail("an unknown name: not SYMBOL_NOT_FOUND");
  }

  // Contexts and devices: CUDA 12's cuCtxGetDevice takes one argument, CUDA 13's two.
  {
    CUdevice got = -1;
    CU_CHECK(Get<PFN_cuCtxGetDevice_v2000>("cuCtxGetDevice", 12080)(&got));
    if (got != dev) Fail("cuCtxGetDevice (CUDA 2.0 ABI): not the current device");
    got = -1;
    CU_CHECK(Get<PFN_cuCtxGetDevice_v13000>("cuCtxGetDevice", 13000)(&got, ctx));
    if (got != dev) Fail("cuCtxGetDevice (CUDA 13.0 ABI): not the context's device");
    CU_CHECK(Get<PFN_cuCtxSynchronize_v2000>("cuCtxSynchronize", 12000)());
    CUuuid old_uuid{}, uuid{};
    CU_CHECK(Get<PFN_cuDeviceGetUuid_v9020>("cuDeviceGetUuid", 11000)(&old_uuid, dev));
    CU_CHECK(Get<PFN_cuDeviceGetUuid_v11040>("cuDeviceGetUuid", 12000)(&uuid, dev));
    if (std::memcmp(&old_uuid, &uuid, sizeof uuid) != 0)
      Fail("cuDeviceGetUuid: the CUDA 9.2 and 11.4 ABIs disagree outside MIG");
    // CUDA 2.0's device queries, deprecated ever since, agree with the attributes.
    int major = 0, minor = 0, want_major = -1, want_minor = -1, threads = 0, warp = 0;
    CUdevprop prop{};
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CU_CHECK(cuDeviceComputeCapability(&major, &minor, dev));
    CU_CHECK(cuDeviceGetProperties(&prop, dev));
#pragma GCC diagnostic pop
    CU_CHECK(cuDeviceGetAttribute(&want_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU_CHECK(cuDeviceGetAttribute(&want_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CU_CHECK(cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
    CU_CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    if (major != want_major || minor != want_minor || prop.maxThreadsPerBlock != threads ||
        prop.SIMDWidth != warp || prop.maxGridSize[0] <= 0)
      Fail("the CUDA 2.0 device queries disagree with the device's attributes");
    CU_CHECK(cuProfilerStart());  // no profiler attached: nothing to do, and no error
    CU_CHECK(cuProfilerStop());
  }

  // Managed memory: before CUDA 12.2 advice and prefetches name a device by its number.
  {
    const int n = 4096;
    CUdeviceptr m = 0;
    const CUresult managed = cuMemAllocManaged(&m, n * sizeof(float), CU_MEM_ATTACH_GLOBAL);
    // Remora serves managed memory to local (shm) sessions only; a remote one is refused.
    const char* server = std::getenv("REMORA_SERVER");
    if (managed == CUDA_ERROR_NOT_SUPPORTED && server && std::strncmp(server, "unix:", 5) != 0) {
      std::printf("managed memory: not supported over %s\n", server);
    } else {
      CU_CHECK(managed);
      auto* host = reinterpret_cast<float*>(m);
      std::uniform_real_distribution<float> dist(-1, 1);
      std::vector<float> x(n), y(n);
      for (int i = 0; i < n; ++i) host[i] = y[i] = dist(rng);
      auto advise = Get<PFN_cuMemAdvise_v8000>("cuMemAdvise", 12010);
      CU_CHECK(advise(m, n * sizeof(float), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
      CU_CHECK(advise(m, n * sizeof(float), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev));
      CU_CHECK(Get<PFN_cuMemPrefetchAsync_v8000>("cuMemPrefetchAsync", 12010)(m, n * sizeof(float),
                                                                              dev, stream));
      CUdeviceptr dx = 0;
      CU_CHECK(cuMemAlloc(&dx, n * sizeof(float)));
      for (int i = 0; i < n; ++i) x[i] = dist(rng);
      CU_CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
      int count = n;
      float a = 0.5f;
      void* params[] = {&count, &a, &dx, &m};
      CU_CHECK(cuLaunchKernel(saxpy, 8, 1, 1, 128, 1, 1, 0, stream, params, nullptr));
      CU_CHECK(cuStreamSynchronize(stream));
      for (int i = 0; i < n; ++i)
        if (std::fabs(host[i] - (a * x[i] + y[i])) > 1e-5f)
          Fail("saxpy over advised managed memory");
      CU_CHECK(cuMemFree(dx));
      CU_CHECK(cuMemFree(m));
    }
  }

  // Stream capture as CUDA 10 and 11 asked about it: no mode, no graph, no edge data.
  {
    Saxpy s(1000, rng);
    CU_CHECK(Get<PFN_cuStreamBeginCapture_v10000>("cuStreamBeginCapture", 10000)(stream));
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CU_CHECK(Get<PFN_cuStreamGetCaptureInfo_v10010>("cuStreamGetCaptureInfo", 11000)(stream,
                                                                                     &status, &id));
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) Fail("capture info (CUDA 10.1): not active");
    void* params[] = {&s.n, &s.a, &s.dx, &s.dy};
    CU_CHECK(cuLaunchKernel(saxpy, 4, 1, 1, 128, 1, 1, 0, stream, params, nullptr));
    CUgraph captured = nullptr;
    const CUgraphNode* deps = nullptr;
    size_t ndeps = 99;
    cuuint64_t id2 = 0;
    CU_CHECK(Get<PFN_cuStreamGetCaptureInfo_v11030>("cuStreamGetCaptureInfo", 12000)(
        stream, &status, &id2, &captured, &deps, &ndeps));
    if (id2 != id || captured == nullptr || ndeps != 1 || deps == nullptr)
      Fail("capture info (CUDA 11.3): not the capture with one kernel at its end");
    CUgraphNode after_kernel[] = {deps[0]};
    CU_CHECK(Get<PFN_cuStreamUpdateCaptureDependencies_v11030>(
        "cuStreamUpdateCaptureDependencies", 12000)(stream, after_kernel, 1,
                                                    CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    CU_CHECK(cuLaunchKernel(saxpy, 4, 1, 1, 128, 1, 1, 0, stream, params, nullptr));
    CUgraph graph = nullptr;
    CU_CHECK(cuStreamEndCapture(stream, &graph));
    size_t edges = 0;
    CU_CHECK(
        Get<PFN_cuGraphGetEdges_v10000>("cuGraphGetEdges", 12000)(graph, nullptr, nullptr, &edges));
    if (edges != 1) Fail("the captured graph: not one edge between its two kernels");
    CUgraphExec exec = nullptr;
    CU_CHECK(
        Get<PFN_cuGraphInstantiateWithFlags_v11040>("cuGraphInstantiate", 12000)(&exec, graph, 0));
    CU_CHECK(cuGraphLaunch(exec, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    s.Check(2, "a graph captured with the CUDA 10 ABIs");
    CU_CHECK(cuGraphExecDestroy(exec));
    CU_CHECK(cuGraphDestroy(graph));
  }

  // Graphs built with CUDA 10's kernel node structure and instantiated with CUDA 11's
  // arguments; a node's parameters changed in place and in the executable graph.
  {
    Saxpy s(2000, rng);
    CUgraph graph = nullptr;
    CU_CHECK(cuGraphCreate(&graph, 0));
    void* params[] = {&s.n, &s.a, &s.dx, &s.dy};
    CUDA_KERNEL_NODE_PARAMS_v1 p{};
    p.func = saxpy;
    p.gridDimX = 8;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 128;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = params;
    auto add = Get<PFN_cuGraphAddKernelNode_v10000>("cuGraphAddKernelNode", 11000);
    CUgraphNode first = nullptr, second = nullptr;
    CU_CHECK(add(&first, graph, nullptr, 0, &p));
    CU_CHECK(add(&second, graph, &first, 1, &p));
    CUgraphNode dep = nullptr;
    size_t ndeps = 1;
    CU_CHECK(Get<PFN_cuGraphNodeGetDependencies_v10000>("cuGraphNodeGetDependencies", 12000)(
        second, &dep, &ndeps));
    if (ndeps != 1 || dep != first) Fail("the second node does not depend on the first");
    CUgraphNode dependent = nullptr;
    size_t ndependent = 1;
    CU_CHECK(Get<PFN_cuGraphNodeGetDependentNodes_v10000>("cuGraphNodeGetDependentNodes", 12000)(
        first, &dependent, &ndependent));
    if (ndependent != 1 || dependent != second)
      Fail("the first node's dependent is not the second");
    CUgraphNodeParams empty{};
    empty.type = CU_GRAPH_NODE_TYPE_EMPTY;
    CUgraphNode last = nullptr;
    CU_CHECK(
        Get<PFN_cuGraphAddNode_v12020>("cuGraphAddNode", 12020)(&last, graph, &second, 1, &empty));
    size_t edges = 0;
    CU_CHECK(cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
    if (edges != 2) Fail("cuGraphAddNode (CUDA 12.2 ABI): not a node after the second");
    CUDA_KERNEL_NODE_PARAMS_v1 back{};
    CU_CHECK(Get<PFN_cuGraphKernelNodeGetParams_v10000>("cuGraphKernelNodeGetParams", 11000)(
        first, &back));
    if (back.func != saxpy || back.gridDimX != 8 || back.blockDimX != 128)
      Fail("a kernel node's parameters (CUDA 10 ABI) are not those it was given");
    CUgraphExec exec = nullptr;
    CUgraphNode error_node = first;
    char log[64] = "unwritten";
    CU_CHECK(Get<PFN_cuGraphInstantiate_v11000>("cuGraphInstantiate", 11000)(
        &exec, graph, &error_node, log, sizeof log));
    CU_CHECK(cuGraphLaunch(exec, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    s.Check(2, "two kernel nodes added with the CUDA 10 ABI");

    // A doubled `a` in the executable graph's first node: y + 2a*x + a*x.
    float twice = 2 * s.a;
    void* twice_params[] = {&s.n, &twice, &s.dx, &s.dy};
    CUDA_KERNEL_NODE_PARAMS_v1 q = p;
    q.kernelParams = twice_params;
    CU_CHECK(Get<PFN_cuGraphExecKernelNodeSetParams_v10010>("cuGraphExecKernelNodeSetParams",
                                                            11000)(exec, first, &q));
    CU_CHECK(cuGraphLaunch(exec, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    s.Check(3, "an executable graph's node set with the CUDA 10 ABI");

    // The graph itself changed the same way, then the executable graph updated from it.
    CU_CHECK(Get<PFN_cuGraphKernelNodeSetParams_v10000>("cuGraphKernelNodeSetParams", 11000)(second,
                                                                                             &q));
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
    CU_CHECK(Get<PFN_cuGraphExecUpdate_v10020>("cuGraphExecUpdate", 11000)(exec, graph, &error_node,
                                                                           &result));
    if (result != CU_GRAPH_EXEC_UPDATE_SUCCESS) Fail("cuGraphExecUpdate (CUDA 10.2): not updated");
    CU_CHECK(cuGraphLaunch(exec, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    s.Check(3, "a graph updated with the CUDA 10.2 ABI");  // a*x + 2a*x
    CU_CHECK(cuGraphExecDestroy(exec));
    CU_CHECK(cuGraphDestroy(graph));
  }

  // Events timed with CUDA 2.0's ABI; batched copies with CUDA 12.8's.
  {
    CUevent start = nullptr, end = nullptr;
    CU_CHECK(cuEventCreate(&start, 0));
    CU_CHECK(cuEventCreate(&end, 0));
    Saxpy s(1 << 16, rng);
    CU_CHECK(cuEventRecord(start, stream));
    void* params[] = {&s.n, &s.a, &s.dx, &s.dy};
    CU_CHECK(cuLaunchKernel(saxpy, 64, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
    CU_CHECK(cuEventRecord(end, stream));
    CU_CHECK(cuEventSynchronize(end));
    float ms = -1;
    CU_CHECK(Get<PFN_cuEventElapsedTime_v2000>("cuEventElapsedTime", 12000)(&ms, start, end));
    if (!(ms >= 0)) Fail("cuEventElapsedTime (CUDA 2.0 ABI): no time");
    s.Check(1, "saxpy between two events");
    CU_CHECK(cuEventDestroy(start));
    CU_CHECK(cuEventDestroy(end));

    CUdeviceptr copy = 0;
    CU_CHECK(cuMemAlloc(&copy, s.n * sizeof(float)));
    CUdeviceptr dsts[] = {copy, copy + s.n / 2 * sizeof(float)};
    CUdeviceptr srcs[] = {s.dx, s.dx + s.n / 2 * sizeof(float)};
    size_t sizes[] = {s.n / 2 * sizeof(float), s.n / 2 * sizeof(float)};
    CUmemcpyAttributes attrs{};
    attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attrs.srcLocHint.type = attrs.dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
    attrs.srcLocHint.id = attrs.dstLocHint.id = dev;
    size_t attr_idx = 0, fail_idx = 7;
    CU_CHECK(Get<PFN_cuMemcpyBatchAsync_v12080>("cuMemcpyBatchAsync", 12080)(
        dsts, srcs, sizes, 2, &attrs, &attr_idx, 1, &fail_idx, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    std::vector<float> got(s.n);
    CU_CHECK(cuMemcpyDtoH(got.data(), copy, s.n * sizeof(float)));
    if (got != s.x) Fail("cuMemcpyBatchAsync (CUDA 12.8 ABI): the copies differ from the source");
    CU_CHECK(cuMemFree(copy));
  }

  // The execution control API of CUDA 1.0 to 3.2, as the driver-API samples of the time
  // used it: parameters set one by one at their offsets, then their size, the block shape and
  // the grid.
  {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    Saxpy s(3000, rng);
    int offset = 0;
    CU_CHECK(cuParamSeti(saxpy, offset, static_cast<unsigned>(s.n)));
    offset += sizeof(int);
    CU_CHECK(cuParamSetf(saxpy, offset, s.a));
    offset += sizeof(float);
    CU_CHECK(cuParamSetv(saxpy, offset, &s.dx, sizeof s.dx));
    offset += sizeof s.dx;
    CU_CHECK(cuParamSetv(saxpy, offset, &s.dy, sizeof s.dy));
    offset += sizeof s.dy;
    CU_CHECK(cuParamSetSize(saxpy, offset));
    CU_CHECK(cuFuncSetBlockShape(saxpy, 128, 1, 1));
    CU_CHECK(cuFuncSetSharedSize(saxpy, 0));
    CU_CHECK(cuLaunchGrid(saxpy, 6, 1));
    CU_CHECK(cuCtxSynchronize());  // `stream` does not wait for the legacy stream
    CU_CHECK(cuLaunchGridAsync(saxpy, 6, 1, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    s.Check(2, "saxpy launched twice with the execution control API");
    CU_CHECK(cuLaunch(saxpy));  // one block of 128 threads
    CU_CHECK(cuCtxSynchronize());
    std::vector<float> got(s.n);
    CU_CHECK(cuMemcpyDtoH(got.data(), s.dy, s.n * sizeof(float)));
    for (int i = 0; i < s.n; ++i)
      if (std::fabs(got[i] - (s.a * s.x[i] + s.y[i])) > 1e-4f) Fail("cuLaunch: not one saxpy");
#pragma GCC diagnostic pop
  }

  // Contexts made with CUDA 3.2's and 11.4's arguments. Execution affinity needs MPS: where the
  // device has none, a context asking for it is refused.
  {
    int affinity = 1;
    CU_CHECK(cuDeviceGetExecAffinitySupport(&affinity, CU_EXEC_AFFINITY_TYPE_SM_COUNT, dev));
    if (affinity == 0) {
      CUexecAffinityParam sms{};
      sms.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
      sms.param.smCount.val = 1;
      CUcontext refused = nullptr;
      CU_EXPECT(Get<PFN_cuCtxCreate_v11040>("cuCtxCreate", 12000)(&refused, &sms, 1, 0, dev),
                CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY);
    }
    CUcontext made = nullptr;
    CU_CHECK(Get<PFN_cuCtxCreate_v3020>("cuCtxCreate", 11000)(&made, 0, dev));
    CUcontext current = nullptr;
    CU_CHECK(cuCtxGetCurrent(&current));
    if (made == nullptr || current != made) Fail("a context made (CUDA 3.2 ABI) is not current");
    CU_CHECK(cuCtxSynchronize());
    CU_CHECK(cuCtxDestroy(made));
    CU_CHECK(cuCtxSetCurrent(ctx));
  }

  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  std::printf("PASS\n");
  return 0;
}
