// tests/cuda/kernels/math_double.cu - double-precision math functions within CUDA's documented ULP
// bounds.
//
// Each device result is compared with the host's long double libm value (64-bit
// mantissa, about 0.001 double ULP); the bound is the CUDA Programming Guide's
// maximum ULP error for the function, plus 0.5 ULP of slack.
#include <vector>

#include "common.h"

enum Fn { kSin, kCos, kExp, kLog, kPow, kSqrt, kTanh, kErf, kFnCount };

__global__ void evalDouble(const double* x, const double* y, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i], b = y[i];
  double* o = out + i * kFnCount;
  o[kSin] = sin(a * 10.0);
  o[kCos] = cos(a * 10.0);
  o[kExp] = exp(a);
  o[kLog] = log(b);
  o[kPow] = pow(b, a / 512.0);
  o[kSqrt] = sqrt(b);
  o[kTanh] = tanh(a / 8.0);
  o[kErf] = erf(a / 16.0);
}

double UlpError(double got, long double exact) {
  if (static_cast<long double>(got) == exact) return 0;  // also equal infinities
  double rounded = static_cast<double>(exact);
  double ulp = std::nextafter(std::fabs(rounded), INFINITY) - std::fabs(rounded);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / ulp);
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 1000));
  Rng rng(Flag(argc, argv, "seed", 11));
  std::vector<double> x(n), y(n), out(n * kFnCount);
  for (int i = 0; i < n; ++i) {
    x[i] = rng.UniformD(-700, 700);
    y[i] = std::ldexp(rng.UniformD(1, 2), rng.Int(-600, 600));
  }
  x[0] = 98765432.1;  // sin/cos with a long argument reduction (x10)
  x[1] = -0.0;

  double *dx, *dy, *dout;
  CHECK(cudaMalloc(&dx, n * sizeof(double)));
  CHECK(cudaMalloc(&dy, n * sizeof(double)));
  CHECK(cudaMalloc(&dout, out.size() * sizeof(double)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  evalDouble<<<(n + 127) / 128, 128>>>(dx, dy, dout, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(double), cudaMemcpyDeviceToHost));

  const char* names[kFnCount] = {"sin", "cos", "exp", "log", "pow", "sqrt", "tanh", "erf"};
  const double bound[kFnCount] = {2, 2, 1, 1, 2, 0, 2, 2};
  double worst[kFnCount] = {};
  int failures = 0;
  for (int i = 0; i < n; ++i) {
    long double a10 = x[i] * 10.0, a = x[i], b = y[i];
    long double a8 = x[i] / 8.0, a512 = x[i] / 512.0, a16 = x[i] / 16.0;
    long double exact[kFnCount] = {sinl(a10),     cosl(a10), expl(a),   logl(b),
                                   powl(b, a512), sqrtl(b),  tanhl(a8), erfl(a16)};
    for (int f = 0; f < kFnCount; ++f) {
      double e = UlpError(out[i * kFnCount + f], exact[f]);
      worst[f] = std::max(worst[f], e);
      if (!(e <= bound[f] + 0.5)) {
        if (failures < 8)
          std::printf("%s at x=%.17g y=%.17g: %.17g, exact %.20Lg (%.2f ulp)\n", names[f], x[i],
                      y[i], out[i * kFnCount + f], exact[f], e);
        ++failures;
      }
    }
  }
  for (int f = 0; f < kFnCount; ++f)
    std::printf("%-4s max %.2f ulp (bound %.0f)\n", names[f], worst[f], bound[f]);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dout));
  return Finish(failures, "math_double");
}
