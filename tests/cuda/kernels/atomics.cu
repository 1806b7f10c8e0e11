// tests/cuda/kernels/atomics.cu - float, double and 64-bit atomics: add, CAS loops, min/max, exch,
// inc.
#include <vector>

#include "common.h"

struct Results {
  float fsum;
  double dsum;
  unsigned long long usum;
  int imax, imin;
  unsigned long long umax, umin;
  double dprod;  // product through an atomicCAS loop
  unsigned long long xor_all;
  int exch_winner;   // atomicExch: ends holding one of the written ids
  unsigned counter;  // atomicInc with wrap
};

__device__ double atomicMulDouble(double* addr, double factor) {
  unsigned long long* p = reinterpret_cast<unsigned long long*>(addr);
  unsigned long long old = *p, assumed;
  do {
    assumed = old;
    old = atomicCAS(p, assumed, __double_as_longlong(__longlong_as_double(assumed) * factor));
  } while (assumed != old);
  return __longlong_as_double(old);
}

__global__ void atomics(const float* f, const double* d, const int* v, const unsigned long long* u,
                        int n, Results* r) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&r->fsum, f[i]);
  atomicAdd(&r->dsum, d[i]);
  atomicAdd(&r->usum, u[i]);
  atomicMax(&r->imax, v[i]);
  atomicMin(&r->imin, v[i]);
  atomicMax(&r->umax, u[i]);
  atomicMin(&r->umin, u[i]);
  atomicXor(&r->xor_all, u[i]);
  atomicExch(&r->exch_winner, i);
  atomicInc(&r->counter, 999u);  // wraps to 0 after 999
  if (i < 20) atomicMulDouble(&r->dprod, 1.0 + d[i] / 8);
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 4000));
  Rng rng(Flag(argc, argv, "seed", 8));
  std::vector<float> f(n);
  std::vector<double> d(n);
  std::vector<int> v(n);
  std::vector<unsigned long long> u(n);
  for (int i = 0; i < n; ++i) {
    f[i] = rng.Uniform(0, 1);
    d[i] = rng.UniformD(-1, 1);
    v[i] = rng.Int(-1000000, 1000000);
    u[i] = rng.Next() >> 8;
  }
  Results init{};
  init.imax = INT_MIN;
  init.imin = INT_MAX;
  init.umax = 0;
  init.umin = ~0ull;
  init.dprod = 1.0;
  init.exch_winner = -1;

  float* df;
  double* dd;
  int* dv;
  unsigned long long* du;
  Results* dr;
  CHECK(cudaMalloc(&df, n * sizeof(float)));
  CHECK(cudaMalloc(&dd, n * sizeof(double)));
  CHECK(cudaMalloc(&dv, n * sizeof(int)));
  CHECK(cudaMalloc(&du, n * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&dr, sizeof(Results)));
  CHECK(cudaMemcpy(df, f.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dd, d.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dv, v.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(du, u.data(), n * sizeof(unsigned long long), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dr, &init, sizeof(Results), cudaMemcpyHostToDevice));
  atomics<<<(n + 127) / 128, 128>>>(df, dd, dv, du, n, dr);
  CHECK(cudaGetLastError());
  Results r;
  CHECK(cudaMemcpy(&r, dr, sizeof(Results), cudaMemcpyDeviceToHost));

  Results ref = init;
  double fsum = 0;
  for (int i = 0; i < n; ++i) {
    fsum += f[i];
    ref.dsum += d[i];
    ref.usum += u[i];
    ref.imax = std::max(ref.imax, v[i]);
    ref.imin = std::min(ref.imin, v[i]);
    ref.umax = std::max(ref.umax, u[i]);
    ref.umin = std::min(ref.umin, u[i]);
    ref.xor_all ^= u[i];
    if (i < 20) ref.dprod *= 1.0 + d[i] / 8;
  }
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::printf("mismatch: %s\n", what);
    failures += !ok;
  };
  expect(Near(r.fsum, fsum, 1e-4), "float atomicAdd");
  expect(Near(r.dsum, ref.dsum, 1e-9), "double atomicAdd");
  expect(r.usum == ref.usum, "u64 atomicAdd");
  expect(r.imax == ref.imax && r.imin == ref.imin, "int atomicMax/Min");
  expect(r.umax == ref.umax && r.umin == ref.umin, "u64 atomicMax/Min");
  expect(r.xor_all == ref.xor_all, "u64 atomicXor");
  expect(Near(r.dprod, ref.dprod, 1e-12), "double atomicCAS loop");
  expect(r.exch_winner >= 0 && r.exch_winner < n, "atomicExch");
  expect(r.counter == static_cast<unsigned>(n % 1000), "atomicInc wrap");
  CHECK(cudaFree(df));
  CHECK(cudaFree(dd));
  CHECK(cudaFree(dv));
  CHECK(cudaFree(du));
  CHECK(cudaFree(dr));
  return Finish(failures, "atomics");
}
