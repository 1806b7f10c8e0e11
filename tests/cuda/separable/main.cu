// tests/cuda/separable/main.cu - the host side of the separable-compilation test project, and
// one kernel of its own that calls __device__ functions of another translation unit.
//
// Every kernel is checked against a CPU reference on random data; g_launches (bumped by each
// kernel through a function of device_math.cu) must equal the number of launches made, so a
// launch that silently runs nothing fails here. Prints PASS or FAIL; exits non-zero on failure.
// Flags: -seed <n>, -n <elements> (default 100003), -reps <matmul launches> (default 3).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "separable.cuh"

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                       \
      std::printf("FAIL: %s:%d %s -> %s\n", __FILE__, __LINE__, #call,               \
                  cudaGetErrorName(err_));                                           \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("mismatch: %s\n", what);
    ++failures;
  }
}

long flag(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i][0] == '-' && std::strcmp(argv[i] + 1, name) == 0) return std::atol(argv[i + 1]);
  return fallback;
}

struct Rng {  // xorshift64*
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * (next() >> 40) / 16777216.0f; }
  int range(int lo, int hi) { return lo + static_cast<int>(next() % uint64_t(hi - lo)); }
};

// The CPU twin of device_math.cu's mix().
unsigned int hostMix(unsigned int x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x & 0xffffu;
}

}  // namespace

// out[i] = clamp(g_alpha * x[i] + 0.5, -1, 1): both functions and g_alpha live in device_math.cu.
__global__ void clampScale(const float* x, float* out, int n) {
  countLaunch();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = clampf(axpy(g_alpha, x[i], 0.5f), -1.0f, 1.0f);
}

int main(int argc, char** argv) {
  Rng rng(flag(argc, argv, "seed", 7));
  const int n = static_cast<int>(flag(argc, argv, "n", 100003));
  const int reps = static_cast<int>(flag(argc, argv, "reps", 3));
  unsigned int launches = 0;
  unsigned int zero = 0;
  CHECK(cudaMemcpyToSymbol(g_launches, &zero, sizeof(zero)));

  // saxpy twice with two host-set values of g_alpha (extern __device__ data).
  {
    std::vector<float> x(n), y(n), ref(n), got(n);
    for (int i = 0; i < n; ++i) x[i] = rng.uniform(-2, 2), y[i] = rng.uniform(-2, 2);
    ref = y;
    float *dx, *dy;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dy, n * sizeof(float)));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (int round = 0; round < 2; ++round) {
      float alpha = rng.uniform(-3, 3), back = 0;
      CHECK(cudaMemcpyToSymbol(g_alpha, &alpha, sizeof(alpha)));
      CHECK(cudaMemcpyFromSymbol(&back, g_alpha, sizeof(back)));
      expect(back == alpha, "g_alpha read back");
      saxpy<<<(n + 255) / 256, 256>>>(n, dx, dy);
      CHECK(cudaGetLastError());
      ++launches;
      for (int i = 0; i < n; ++i) ref[i] = std::fmaf(alpha, x[i], ref[i]);
    }
    CHECK(cudaMemcpy(got.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += got[i] != ref[i];
    if (bad) std::printf("saxpy: %d of %d wrong (y[0] %g, expected %g)\n", bad, n, got[0], ref[0]);
    expect(bad == 0, "saxpy");

    // clampScale (this unit) with the last alpha.
    float alpha;
    CHECK(cudaMemcpyFromSymbol(&alpha, g_alpha, sizeof(alpha)));
    clampScale<<<(n + 127) / 128, 128>>>(dx, dy, n);
    CHECK(cudaGetLastError());
    ++launches;
    CHECK(cudaMemcpy(got.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < n; ++i)
      bad += got[i] != std::fmin(std::fmax(std::fmaf(alpha, x[i], 0.5f), -1.0f), 1.0f);
    if (bad) std::printf("clampScale: %d of %d wrong\n", bad, n);
    expect(bad == 0, "clampScale");
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
  }

  // Tiled matmul on a non-blocking stream, pinned host memory, timed with events.
  {
    const int M = 101, K = 70, N = 83;
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *hA, *hB, *hC;
    CHECK(cudaMallocHost(&hA, M * K * sizeof(float)));
    CHECK(cudaMallocHost(&hB, K * N * sizeof(float)));
    CHECK(cudaMallocHost(&hC, M * N * sizeof(float)));
    for (int i = 0; i < M * K; ++i) hA[i] = rng.uniform(-1, 1);
    for (int i = 0; i < K * N; ++i) hB[i] = rng.uniform(-1, 1);
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, M * K * sizeof(float)));
    CHECK(cudaMalloc(&dB, K * N * sizeof(float)));
    CHECK(cudaMalloc(&dC, M * N * sizeof(float)));
    CHECK(cudaMemcpyAsync(dA, hA, M * K * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(dB, hB, K * N * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemsetAsync(dC, 0, M * N * sizeof(float), stream));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    dim3 block(kTile, kTile), grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
    CHECK(cudaEventRecord(start, stream));
    for (int r = 0; r < reps; ++r) {
      matmulTiled<<<grid, block, 0, stream>>>(dA, dB, dC, M, K, N);
      CHECK(cudaGetLastError());
      ++launches;
    }
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaMemcpyAsync(hC, dC, M * N * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    expect(ms > 0.0f, "matmul launches took some time");
    int bad = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double ref = 0;
        for (int k = 0; k < K; ++k) ref += double(hA[i * K + k]) * hB[k * N + j];
        if (std::fabs(hC[i * N + j] - ref) > 1e-4 * std::fmax(1.0, std::fabs(ref))) ++bad;
      }
    if (bad) std::printf("matmul: %d of %d wrong (C[0] %g)\n", bad, M * N, hC[0]);
    expect(bad == 0, "matmulTiled");
    std::printf("matmul %dx%dx%d, %d launches: %.3f ms\n", M, K, N, reps, ms);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    CHECK(cudaFreeHost(hA));
    CHECK(cudaFreeHost(hB));
    CHECK(cudaFreeHost(hC));
    CHECK(cudaStreamDestroy(stream));

    // The static shared memory of a kernel of another unit: two float tiles.
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, matmulTiled));
    if (attr.sharedSizeBytes != 2 * kTile * kTile * sizeof(float))
      std::printf("matmulTiled sharedSizeBytes %zu\n", attr.sharedSizeBytes);
    expect(attr.sharedSizeBytes == 2 * kTile * kTile * sizeof(float), "sharedSizeBytes");
  }

  // Reduction with atomics into g_total (extern __device__), reset and read by symbol.
  {
    std::vector<unsigned int> in(n);
    unsigned long long ref = 0;
    for (auto& v : in) v = static_cast<unsigned int>(rng.next()), ref += hostMix(v);
    unsigned int* d;
    CHECK(cudaMalloc(&d, n * sizeof(unsigned int)));
    CHECK(cudaMemcpy(d, in.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));
    unsigned long long total = 0;
    CHECK(cudaMemcpyToSymbol(g_total, &total, sizeof(total)));
    sumMixed<<<40, 256>>>(d, n);
    CHECK(cudaGetLastError());
    ++launches;
    CHECK(cudaMemcpyFromSymbol(&total, g_total, sizeof(total)));
    if (total != ref) std::printf("sumMixed: %llu, expected %llu\n", total, ref);
    expect(total == ref, "sumMixed");
    CHECK(cudaFree(d));
  }

  // A __constant__ table set by the host and read by a kernel of another unit.
  {
    int w[kWeights], back[kWeights];
    for (int& v : w) v = rng.range(-50, 50);
    CHECK(cudaMemcpyToSymbol(c_weights, w, sizeof(w)));
    CHECK(cudaMemcpyFromSymbol(back, c_weights, sizeof(back)));
    expect(std::memcmp(w, back, sizeof(w)) == 0, "c_weights read back");
    std::vector<int> in(n), out(n);
    for (int& v : in) v = rng.range(-1000, 1000);
    int *din, *dout;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    weighted<<<(n + 511) / 512, 512>>>(din, dout, n);
    CHECK(cudaGetLastError());
    ++launches;
    CHECK(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != in[i] * w[i % kWeights];
    if (bad) std::printf("weighted: %d of %d wrong\n", bad, n);
    expect(bad == 0, "weighted");
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
  }

  // Every launch ran its kernel.
  unsigned int counted = 0;
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpyFromSymbol(&counted, g_launches, sizeof(counted)));
  if (counted != launches) std::printf("g_launches %u, launches made %u\n", counted, launches);
  expect(counted == launches, "every launch ran");

  if (failures == 0) {
    std::printf("PASS separable (%u launches)\n", launches);
    return 0;
  }
  std::printf("FAIL separable: %d checks failed\n", failures);
  return 1;
}
