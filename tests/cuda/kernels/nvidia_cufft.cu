// tests/cuda/kernels/nvidia_cufft.cu - NVIDIA's own cuFFT (found through the program's RPATH,
// as a framework finds it) over Remora's driver: a complex-to-complex FFT of random data
// against a host DFT.
//
// On a GPU it must pass. On the emulated GPU cuFFT cannot run (its kernels are machine code,
// and it asks NVIDIA's driver for a private interface Remora's driver does not serve): the
// plan must fail with cuFFT's own error, and the tenant's stderr must say why.
#include <cufft.h>

#include <cmath>
#include <vector>

#include "common.h"

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 256));
  Rng rng(Flag(argc, argv, "seed", 5));
  std::vector<cufftComplex> in(n), out(n);
  for (cufftComplex& v : in) v = {rng.Uniform(-1, 1), rng.Uniform(-1, 1)};
  cufftHandle plan;
  cufftResult r = cufftPlan1d(&plan, n, CUFFT_C2C, 1);
  if (r != CUFFT_SUCCESS) {
    std::printf("FAIL: cufftPlan1d -> %d\n", static_cast<int>(r));
    return 1;
  }
  cufftComplex* d;
  CHECK(cudaMalloc(&d, sizeof(cufftComplex) * n));
  CHECK(cudaMemcpy(d, in.data(), sizeof(cufftComplex) * n, cudaMemcpyHostToDevice));
  REQUIRE(cufftExecC2C(plan, d, d, CUFFT_FORWARD) == CUFFT_SUCCESS);
  CHECK(cudaMemcpy(out.data(), d, sizeof(cufftComplex) * n, cudaMemcpyDeviceToHost));
  int failures = 0;
  for (int k = 0; k < n; ++k) {
    double re = 0, im = 0;
    for (int j = 0; j < n; ++j) {
      const double a = -2 * M_PI * double(j) * k / n;
      re += in[j].x * std::cos(a) - in[j].y * std::sin(a);
      im += in[j].x * std::sin(a) + in[j].y * std::cos(a);
    }
    failures += !Near(out[k].x, re, 1e-4) || !Near(out[k].y, im, 1e-4);
  }
  cufftDestroy(plan);
  CHECK(cudaFree(d));
  return Finish(failures, "nvidia_cufft");
}
