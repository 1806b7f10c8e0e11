// tests/cuda/kernels/pdl.cu - programmatic dependent launch (compute capability 9.0): a
// producer signals its dependents may start (cudaTriggerProgrammaticLaunchCompletion), and a
// consumer launched with cudaLaunchAttributeProgrammaticStreamSerialization does independent
// work, then waits for the producer (cudaGridDependencySynchronize) before reading what it
// wrote. A chain of such pairs on one stream, checked against the host: a wait that let the
// consumer read early would show as stale values.
//
// Built as `nvcc -arch=sm_90` builds (sm_90 machine code and compute_90 PTX), so the emulated
// GPU runs the compute_90 PTX with its griddepcontrol instructions. Flags: -seed <n>.
#include <vector>

#include "common.h"

namespace {

__global__ void Produce(float* data, int n, int step) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 0.5f + float(step);
  cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void Consume(const float* data, float* out, const float* bias, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float b = i < n ? bias[i] : 0.0f;  // independent of the producer: may run before it ends
  cudaGridDependencySynchronize();
  if (i < n) out[i] += data[i] + b;
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 6)));
  const int n = 40000, steps = 12, threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<float> data(n), bias(n), out(n, 0.0f);
  for (float& v : data) v = rng.Uniform(-1, 1);
  for (float& v : bias) v = rng.Uniform(-1, 1);
  float *d_data, *d_bias, *d_out;
  CHECK(cudaMalloc(&d_data, n * sizeof(float)));
  CHECK(cudaMalloc(&d_bias, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_data, data.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_bias, bias.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_out, 0, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.stream = s;
  config.attrs = &attr;
  config.numAttrs = 1;
  for (int step = 0; step < steps; ++step) {
    config.attrs = step == 0 ? nullptr : &attr;  // the first producer follows the copies
    config.numAttrs = step == 0 ? 0 : 1;
    CHECK(cudaLaunchKernelEx(&config, Produce, d_data, n, step));
    config.attrs = &attr;
    config.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&config, Consume, static_cast<const float*>(d_data), d_out,
                             static_cast<const float*>(d_bias), n));
  }
  CHECK(cudaStreamSynchronize(s));
  std::vector<float> got(n);
  CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int step = 0; step < steps; ++step)
    for (int i = 0; i < n; ++i) {
      data[i] = data[i] * 0.5f + float(step);
      out[i] += data[i] + bias[i];
    }
  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (!Near(got[i], out[i], 1e-5) && bad++ < 3)
      std::printf("  out[%d] = %.7g, want %.7g\n", i, got[i], out[i]);
  if (bad) std::printf("FAIL pdl: %d of %d wrong\n", bad, n);
  CHECK(cudaStreamDestroy(s));
  for (float* p : {d_data, d_bias, d_out}) CHECK(cudaFree(p));
  return Finish(bad ? 1 : 0, "pdl");
}
