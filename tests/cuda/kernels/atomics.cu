// tests/cuda/kernels/atomics.cu - float, double and 64-bit atomics: add, CAS loops, min/max, exch,
// inc; and 16-bit ones: atomicAdd on __half, __half2, __nv_bfloat16, __nv_bfloat162 and
// atomicCAS on unsigned short, in global and shared memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

struct HalfResults {
  __half h;
  unsigned short ticket;  // atomicCAS loop: one increment per thread, wrapping
  __half2 h2;
  __nv_bfloat16 b;
  unsigned short pad;
  __nv_bfloat162 b2;
};

// Adds of -1, 0 or 1: every partial sum, in any order, is an integer below 2048 (f16, the first
// 2048 threads) or 256 (bf16, one thread in eight of the first 1024), so exact.
__global__ void halfAtomics(const int* v, int n, HalfResults* r, float* block_sums,
                            unsigned* block_tickets) {
  __shared__ __half sum;
  __shared__ unsigned short ticket;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) {
    sum = __float2half(0.0f);
    ticket = 0;
  }
  __syncthreads();
  if (i < n) {
    int t = v[i] % 2;
    __half h = __int2half_rn(t);
    if (i < 2048) {
      atomicAdd(&r->h, h);
      atomicAdd(&r->h2, __halves2half2(h, __hneg(h)));
    }
    if (i < 1024 && i % 8 == 0) atomicAdd(&r->b, __int2bfloat16_rn(t));
    if (i < 1024 && i % 8 == 4)
      atomicAdd(&r->b2, __halves2bfloat162(__int2bfloat16_rn(t), __int2bfloat16_rn(-t)));
    unsigned short old = r->ticket, seen;
    while ((seen = atomicCAS(&r->ticket, old, static_cast<unsigned short>(old + 1))) != old)
      old = seen;
    atomicAdd(&sum, h);
    old = ticket;
    while ((seen = atomicCAS(&ticket, old, static_cast<unsigned short>(old + 1))) != old)
      old = seen;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    block_sums[blockIdx.x] = __half2float(sum);
    block_tickets[blockIdx.x] = ticket;
  }
}

// Runs halfAtomics over v; returns the number of mismatches.
int CheckHalfAtomics(const std::vector<int>& v, const int* dv) {
  const int n = static_cast<int>(v.size()), threads = 128, blocks = (n + threads - 1) / threads;
  HalfResults init{};
  init.ticket = 65000;
  HalfResults* dr;
  float* dsums;
  unsigned* dtickets;
  CHECK(cudaMalloc(&dr, sizeof(HalfResults)));
  CHECK(cudaMalloc(&dsums, blocks * sizeof(float)));
  CHECK(cudaMalloc(&dtickets, blocks * sizeof(unsigned)));
  CHECK(cudaMemcpy(dr, &init, sizeof(HalfResults), cudaMemcpyHostToDevice));
  halfAtomics<<<blocks, threads>>>(dv, n, dr, dsums, dtickets);
  CHECK(cudaGetLastError());
  HalfResults r;
  std::vector<float> sums(blocks);
  std::vector<unsigned> tickets(blocks);
  CHECK(cudaMemcpy(&r, dr, sizeof(HalfResults), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sums.data(), dsums, blocks * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(tickets.data(), dtickets, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int h = 0, b = 0, b2 = 0;
  std::vector<int> block_sum(blocks, 0), block_count(blocks, 0);
  for (int i = 0; i < n; ++i) {
    int t = v[i] % 2;
    if (i < 2048) h += t;
    if (i < 1024 && i % 8 == 0) b += t;
    if (i < 1024 && i % 8 == 4) b2 += t;
    block_sum[i / threads] += t;
    ++block_count[i / threads];
  }
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::printf("mismatch: %s\n", what);
    failures += !ok;
  };
  expect(__half2float(r.h) == h, "__half atomicAdd");
  expect(__low2float(r.h2) == h && __high2float(r.h2) == -h, "__half2 atomicAdd");
  expect(__bfloat162float(r.b) == b, "__nv_bfloat16 atomicAdd");
  expect(__low2float(r.b2) == b2 && __high2float(r.b2) == -b2, "__nv_bfloat162 atomicAdd");
  expect(r.ticket == static_cast<unsigned short>(65000 + n), "unsigned short atomicCAS");
  for (int k = 0; k < blocks; ++k) {
    expect(sums[k] == block_sum[k], "shared __half atomicAdd");
    expect(tickets[k] == static_cast<unsigned>(block_count[k]), "shared unsigned short atomicCAS");
  }
  CHECK(cudaFree(dr));
  CHECK(cudaFree(dsums));
  CHECK(cudaFree(dtickets));
  return failures;
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
  failures += CheckHalfAtomics(v, dv);
  CHECK(cudaFree(df));
  CHECK(cudaFree(dd));
  CHECK(cudaFree(dv));
  CHECK(cudaFree(du));
  CHECK(cudaFree(dr));
  return Finish(failures, "atomics");
}
