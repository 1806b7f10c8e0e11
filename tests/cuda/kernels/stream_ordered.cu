// tests/cuda/kernels/stream_ordered.cu - what programs check before their modern paths, and
// those paths: stream-ordered allocation (cudaMallocAsync/cudaFreeAsync on the default memory
// pool, its attributes and usage counters), an L2 access-policy window on a stream, and the
// persisting-L2 limit. Kernels on the allocations are checked against the host.
// Flags: -seed <n>, -n <elements> (default 1 << 20), -rounds <r> (default 20).
#include <algorithm>
#include <vector>

#include "common.h"

__global__ void Saxpy(float a, const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 41));
  const int n = static_cast<int>(Flag(argc, argv, "n", 1 << 20));
  const int rounds = static_cast<int>(Flag(argc, argv, "rounds", 20));
  int failures = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (!prop.memoryPoolsSupported || prop.accessPolicyMaxWindowSize <= 0 ||
      prop.persistingL2CacheMaxSize <= 0) {
    std::printf("FAIL: the device lacks what modern paths check: pools %d, window %d, "
                "persisting L2 %d\n",
                prop.memoryPoolsSupported, prop.accessPolicyMaxWindowSize,
                prop.persistingL2CacheMaxSize);
    return 1;
  }
  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t threshold = UINT64_MAX, got = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got));
  if (got != threshold) {
    std::printf("release threshold read back %llu\n", static_cast<unsigned long long>(got));
    ++failures;
  }

  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = rng.Uniform(-1, 1), y[i] = rng.Uniform(-1, 1);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // A window over x, as the access-policy samples set one.
  size_t persist = std::min<size_t>(prop.persistingL2CacheMaxSize, n * sizeof(float));
  CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, persist));
  std::vector<float> out(n);
  for (int r = 0; r < rounds; ++r) {
    float *dx, *dy;
    CHECK(cudaMallocAsync(&dx, n * sizeof(float), s));
    CHECK(cudaMallocAsync(&dy, n * sizeof(float), s));
    uint64_t used = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    if (used < 2 * n * sizeof(float)) {
      std::printf("round %d: pool reports %llu bytes used, below the %zu allocated\n", r,
                  static_cast<unsigned long long>(used), 2 * n * sizeof(float));
      ++failures;
    }
    if (r == 0) {
      cudaStreamAttrValue v = {};
      v.accessPolicyWindow.base_ptr = dx;
      v.accessPolicyWindow.num_bytes =
          std::min<size_t>(prop.accessPolicyMaxWindowSize, n * sizeof(float));
      v.accessPolicyWindow.hitRatio = 0.6f;
      v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
      v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
      CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
      cudaStreamAttrValue back = {};
      CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &back));
      if (back.accessPolicyWindow.hitRatio != 0.6f ||
          back.accessPolicyWindow.hitProp != cudaAccessPropertyPersisting ||
          back.accessPolicyWindow.num_bytes == 0) {
        std::printf("the access-policy window did not read back\n");
        ++failures;
      }
      v.accessPolicyWindow.hitRatio = 2.0f;  // out of [0, 1]
      if (cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v) !=
          cudaErrorInvalidValue) {
        std::printf("a hit ratio of 2 was accepted\n");
        ++failures;
      }
      (void)cudaGetLastError();
    }
    const float a = static_cast<float>(r % 5) - 2.0f;
    CHECK(cudaMemcpyAsync(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    Saxpy<<<64, 256, 0, s>>>(a, dx, dy, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaFreeAsync(dx, s));
    CHECK(cudaFreeAsync(dy, s));
    CHECK(cudaStreamSynchronize(s));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += out[i] != a * x[i] + y[i];
    if (wrong) {
      std::printf("round %d: %d of %d wrong\n", r, wrong, n);
      ++failures;
    }
    uint64_t after = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &after));
    if (after >= used) {
      std::printf("round %d: pool use did not fall after the frees (%llu -> %llu)\n", r,
                  static_cast<unsigned long long>(used), static_cast<unsigned long long>(after));
      ++failures;
    }
  }
  uint64_t high = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
  if (high < 2 * n * sizeof(float)) {
    std::printf("pool high-water mark %llu below one round's use\n",
                static_cast<unsigned long long>(high));
    ++failures;
  }
  CHECK(cudaCtxResetPersistingL2Cache());
  CHECK(cudaStreamDestroy(s));
  return Finish(failures, "stream_ordered");
}
