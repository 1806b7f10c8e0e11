// tests/cuda/kernels/math_float.cu - single-precision math functions within CUDA's documented ULP
// bounds.
//
// Each device result is compared with the host's double-precision libm value
// (exact to well under 0.01 float ULP); the bound is the CUDA Programming
// Guide's maximum ULP error for the function, plus 0.5 ULP of slack.
#include <vector>

#include "common.h"

enum Fn { kSin, kCos, kExp, kLog, kPow, kSqrt, kTanh, kErf, kFnCount };

__global__ void evalFloat(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i];
  float* o = out + i * kFnCount;
  o[kSin] = sinf(a * 10.0f);
  o[kCos] = cosf(a * 10.0f);
  o[kExp] = expf(a);
  o[kLog] = logf(b);
  o[kPow] = powf(b, a / 64.0f);
  o[kSqrt] = sqrtf(b);
  o[kTanh] = tanhf(a / 8.0f);
  o[kErf] = erff(a / 16.0f);
}

double UlpError(float got, double exact) {
  if (static_cast<double>(got) == exact) return 0;  // also equal infinities
  float rounded = static_cast<float>(exact);
  double ulp = std::nextafter(std::fabs(rounded), INFINITY) - std::fabs(rounded);
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 2000));
  Rng rng(Flag(argc, argv, "seed", 10));
  std::vector<float> x(n), y(n), out(n * kFnCount);
  for (int i = 0; i < n; ++i) {
    x[i] = rng.Uniform(-80, 80);
    y[i] = std::ldexp(rng.Uniform(1, 2), rng.Int(-60, 60));
  }
  x[0] = 123456.7f;  // sinf/cosf beyond the fast argument reduction (x10)
  x[1] = -0.0f;

  float *dx, *dy, *dout;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMalloc(&dout, out.size() * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  evalFloat<<<(n + 127) / 128, 128>>>(dx, dy, dout, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost));

  const char* names[kFnCount] = {"sinf", "cosf", "expf", "logf", "powf", "sqrtf", "tanhf", "erff"};
  const double bound[kFnCount] = {2, 2, 2, 1, 4, 0, 2, 2};
  double worst[kFnCount] = {};
  int failures = 0;
  for (int i = 0; i < n; ++i) {
    // Device arguments are computed in float; so are the host's.
    double a10 = static_cast<double>(x[i] * 10.0f), a = x[i], b = y[i];
    double a8 = static_cast<double>(x[i] / 8.0f), a64 = static_cast<double>(x[i] / 64.0f),
           a16 = static_cast<double>(x[i] / 16.0f);
    double exact[kFnCount] = {std::sin(a10),    std::cos(a10), std::exp(a),   std::log(b),
                              std::pow(b, a64), std::sqrt(b),  std::tanh(a8), std::erf(a16)};
    for (int f = 0; f < kFnCount; ++f) {
      double e = UlpError(out[i * kFnCount + f], exact[f]);
      worst[f] = std::max(worst[f], e);
      if (!(e <= bound[f] + 0.5)) {
        if (failures < 8)
          std::printf("%s at x=%.9g y=%.9g: %.9g, exact %.17g (%.2f ulp)\n", names[f], x[i], y[i],
                      out[i * kFnCount + f], exact[f], e);
        ++failures;
      }
    }
  }
  for (int f = 0; f < kFnCount; ++f)
    std::printf("%-6s max %.2f ulp (bound %.0f)\n", names[f], worst[f], bound[f]);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dout));
  return Finish(failures, "math_float");
}
