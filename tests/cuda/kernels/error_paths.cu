// tests/cuda/kernels/error_paths.cu - the runtime's answers to common mistakes, and error strings.
#include "common.h"

// mad.hi.sat.s32: a form valid PTX that the emulated GPU does not implement.
__global__ void mad_hi_sat(int* out, int a, int b, int c) {
  int d;
  asm("mad.hi.sat.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  *out = d;
}

__global__ void store(int* out, int v) {
  *out = v;
}

// 80 values live at once, each multiplied with every later one: ptxas gives each thread about
// 90 registers (sm_75 to sm_90), so a block of 1024 threads would need more than the 64 Ki
// registers a block may hold.
__global__ void manyRegisters(const float* in, float* out) {
  float a[80];
#pragma unroll
  for (int i = 0; i < 80; ++i) a[i] = in[(threadIdx.x + i * 7) & 1023];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 80; ++i)
#pragma unroll
    for (int j = i; j < 80; ++j) s += a[i] * a[j];
  out[threadIdx.x] = s;
}

int main() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::printf("mismatch: %s\n", what);
    failures += !ok;
  };

  // Destroyed and never-recorded handles.
  cudaEvent_t ev, never;
  CHECK(cudaEventCreate(&ev));
  CHECK(cudaEventCreate(&never));
  CHECK(cudaEventRecord(ev, 0));
  CHECK(cudaEventSynchronize(ev));
  float ms = 0;
  EXPECT_CUDA(cudaEventElapsedTime(&ms, ev, never), cudaErrorInvalidResourceHandle);
  CHECK(cudaEventDestroy(never));
  CHECK(cudaEventDestroy(ev));
  EXPECT_CUDA(cudaEventQuery(ev), cudaErrorInvalidResourceHandle);
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaStreamDestroy(s));
  EXPECT_CUDA(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);

  // Bad frees.
  char* p;
  CHECK(cudaMalloc(&p, 1024));
  EXPECT_CUDA(cudaFree(p + 16), cudaErrorInvalidValue);  // not the start of an allocation
  int on_stack = 0;
  EXPECT_CUDA(cudaFree(&on_stack), cudaErrorInvalidValue);
  CHECK(cudaFree(p));
  EXPECT_CUDA(cudaFree(p), cudaErrorInvalidValue);  // double free

  // Copies that leave their allocation, or use a bad direction.
  char host[4096] = {};
  CHECK(cudaMalloc(&p, 1024));
  EXPECT_CUDA(cudaMemcpy(p, host, 4096, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaMemcpy(host, p + 512, 1024, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaMemset(p, 0, 2048), cudaErrorInvalidValue);
  EXPECT_CUDA(cudaMemcpy(p, host, 16, static_cast<cudaMemcpyKind>(77)),
              cudaErrorInvalidMemcpyDirection);
  CHECK(cudaMemcpy(p, host, 1024, cudaMemcpyHostToDevice));  // in range: still fine
  CHECK(cudaFree(p));

  // Impossible allocations and bad arguments.
  void* huge = nullptr;
  EXPECT_CUDA(cudaMalloc(&huge, ~static_cast<size_t>(0)), cudaErrorMemoryAllocation);
  expect(huge == nullptr, "failed cudaMalloc leaves the pointer null");
  EXPECT_CUDA(cudaSetDevice(1 << 20), cudaErrorInvalidDevice);

  // Non-sticky errors: cudaGetLastError returns the latest once, then success.
  EXPECT_CUDA(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_CUDA(cudaGetLastError(), cudaSuccess);
  EXPECT_CUDA(cudaPeekAtLastError(), cudaSuccess);
  CHECK(cudaDeviceSynchronize());  // the context is healthy

  // A kernel the device cannot run. A GPU runs this one; the emulated GPU refuses it at launch
  // with cudaErrorNotSupported (a Remora-only answer) and, as for any launch refused before it
  // runs, the error is not sticky: the context, and everyone sharing it, goes on.
  int* d;
  CHECK(cudaMalloc(&d, sizeof(int)));
  const int a = 0x7fffffff, b = 0x7fffffff, c = 0x7fffffff;
  mad_hi_sat<<<1, 1>>>(d, a, b, c);
  cudaError_t ran = cudaGetLastError();
  if (ran == cudaSuccess) ran = cudaDeviceSynchronize();
  if (ran == cudaSuccess) {
    int got = 0;
    CHECK(cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost));
    const long long sum = ((static_cast<long long>(a) * b) >> 32) + c;
    expect(got == static_cast<int>(std::min<long long>(sum, INT_MAX)), "mad.hi.sat.s32");
  } else {
    expect(ran == cudaErrorNotSupported, "a kernel the device cannot run: cudaErrorNotSupported");
    (void)cudaGetLastError();
  }
  store<<<1, 1>>>(d, 42);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int stored = 0;
  CHECK(cudaMemcpy(&stored, d, sizeof stored, cudaMemcpyDeviceToHost));
  expect(stored == 42, "the next kernel runs");

  // A shape past the device's limits: more threads than a block holds, a grid too tall.
  store<<<1, 1025>>>(d, 7);
  EXPECT_CUDA(cudaGetLastError(), cudaErrorInvalidConfiguration);
  store<<<dim3(1, 65536), 1>>>(d, 7);
  EXPECT_CUDA(cudaGetLastError(), cudaErrorInvalidConfiguration);

  // More dynamic shared memory than the kernel's limit (48 KiB until cudaFuncSetAttribute
  // raises it) fails the launch itself; nothing is left for a later synchronization to report.
  store<<<1, 32, 64 << 10>>>(d, 7);
  EXPECT_CUDA(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK(cudaDeviceSynchronize());
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.sharedMemPerBlockOptin >= (64 << 10)) {
    CHECK(cudaFuncSetAttribute(store, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    store<<<1, 32, 64 << 10>>>(d, 7);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(&stored, d, sizeof stored, cudaMemcpyDeviceToHost));
    expect(stored == 7, "a launch within a raised shared memory limit runs");
  }

  // A kernel's maxThreadsPerBlock counts its registers (a warp's allocated 256 at a time); a
  // launch past it is out of resources at the launch call, and one within it runs.
  cudaFuncAttributes fa;
  CHECK(cudaFuncGetAttributes(&fa, manyRegisters));
  const int warp_registers = (fa.numRegs * 32 + 255) / 256 * 256;
  expect(fa.numRegs > 64, "80 live values take more than 64 registers");
  expect(fa.maxThreadsPerBlock == std::min(1024, prop.regsPerBlock / warp_registers * 32),
         "maxThreadsPerBlock is what the kernel's registers allow");
  float* fin;
  CHECK(cudaMalloc(&fin, 2048 * sizeof(float)));
  CHECK(cudaMemset(fin, 0, 2048 * sizeof(float)));
  manyRegisters<<<1, 1024>>>(fin, fin + 1024);
  EXPECT_CUDA(cudaGetLastError(), cudaErrorLaunchOutOfResources);
  manyRegisters<<<1, fa.maxThreadsPerBlock>>>(fin, fin + 1024);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(fin));
  CHECK(cudaFree(d));

  struct {
    cudaError_t code;
    const char* name;
    const char* text;
  } const strings[] = {
      {cudaSuccess, "cudaSuccess", "no error"},
      {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
      {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
      {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
      {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
      {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
       "an illegal memory access was encountered"},
      {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
  };
  for (const auto& e : strings) {
    const char* name = cudaGetErrorName(e.code);
    const char* text = cudaGetErrorString(e.code);
    bool ok = name && text && std::strcmp(name, e.name) == 0 && std::strcmp(text, e.text) == 0;
    if (!ok)
      std::printf("%d: name '%s' text '%s'\n", e.code, name ? name : "(null)",
                  text ? text : "(null)");
    expect(ok, "error name and string");
  }
  return Finish(failures, "error_paths");
}
