// tests/cuda/kernels/device_limits.cu - cudaDeviceSetLimit as programs use it: a heap larger
// than the default for one big device-side malloc, and a stack deep enough for a recursion
// the compiler cannot size. Each result is checked against the host.
// Flags: -seed <n>; -heap <MiB> (default 48) for the heap set and -block <MiB> (default 40) for
// the block malloc'd in it; -keep 1 leaves the block allocated at exit (a leak the server must
// take back with the tenant where it keeps a heap per tenant); -quota 1 instead expects a heap
// of -heap MiB to be refused with cudaErrorMemoryAllocation (run under a smaller memory limit).
#include <vector>

#include "common.h"

// One thread mallocs `bytes` and fills it with its index pattern; null if the heap is too small.
__global__ void FillBlock(unsigned long long bytes, unsigned* seed, unsigned** out) {
  unsigned* p = static_cast<unsigned*>(malloc(bytes));
  *out = p;
  if (p == nullptr) return;
  for (unsigned long long i = 0; i < bytes / 4; i += 4096) p[i] = *seed ^ static_cast<unsigned>(i);
}
// Checks the pattern (counting mismatches), then frees the block unless `keep`.
__global__ void CheckBlock(unsigned long long bytes, const unsigned* seed, unsigned** block,
                           int keep, int* wrong) {
  unsigned* p = *block;
  int bad = 0;
  for (unsigned long long i = 0; i < bytes / 4; i += 4096)
    bad += p[i] != (*seed ^ static_cast<unsigned>(i));
  *wrong = bad;
  if (!keep) free(p);
}

// A recursion whose depth comes from the data: each level keeps a 1 KiB array alive across
// the call below it, so the compiler cannot bound the stack and a thread needs about
// depth KiB of it.
__device__ __noinline__ long long Descend(int depth, unsigned x) {
  volatile unsigned buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = x * 2654435761u + i;
  long long below = depth > 0 ? Descend(depth - 1, buf[x % 256] >> 3) : 0;
  return below + buf[(x >> 5) % 256] % 1000;
}
__global__ void Recurse(const int* depth, const unsigned* x, long long* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Descend(depth[i], x[i]);
}
long long DescendHost(int depth, unsigned x) {
  unsigned buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = x * 2654435761u + i;
  const long long below = depth > 0 ? DescendHost(depth - 1, buf[x % 256] >> 3) : 0;
  return below + buf[(x >> 5) % 256] % 1000;
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 17));
  const size_t heap = static_cast<size_t>(Flag(argc, argv, "heap", 48)) << 20;
  const size_t block = static_cast<size_t>(Flag(argc, argv, "block", 40)) << 20;
  const int keep = static_cast<int>(Flag(argc, argv, "keep", 0));
  int failures = 0;

  size_t v = 0;
  CHECK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
  if (v != (8u << 20)) {
    std::printf("default heap limit %zu, want 8 MiB\n", v);
    ++failures;
  }
  if (Flag(argc, argv, "quota", 0)) {
    EXPECT_CUDA(cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap), cudaErrorMemoryAllocation);
    CHECK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
    if (v != (8u << 20)) {
      std::printf("a refused heap limit changed it to %zu\n", v);
      ++failures;
    }
    return Finish(failures, "device_limits");
  }

  // The heap: a block past the default 8 MiB, in a heap set larger before any kernel used it.
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap));
  CHECK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
  if (v < heap) {
    std::printf("heap limit reads back %zu, want at least %zu\n", v, heap);
    ++failures;
  }
  unsigned seed = static_cast<unsigned>(rng.Int(1, 1 << 30));
  unsigned* d_seed;
  unsigned** d_block;
  int* d_wrong;
  CHECK(cudaMalloc(&d_seed, sizeof seed));
  CHECK(cudaMalloc(&d_block, sizeof(unsigned*)));
  CHECK(cudaMalloc(&d_wrong, sizeof(int)));
  CHECK(cudaMemcpy(d_seed, &seed, sizeof seed, cudaMemcpyHostToDevice));
  FillBlock<<<1, 1>>>(block, d_seed, d_block);
  CHECK(cudaGetLastError());
  unsigned* got = nullptr;
  CHECK(cudaMemcpy(&got, d_block, sizeof got, cudaMemcpyDeviceToHost));
  if (got == nullptr) {
    std::printf("malloc of %zu bytes in a heap of %zu returned null\n", block, heap);
    ++failures;
  } else {
    CheckBlock<<<1, 1>>>(block, d_seed, d_block, keep, d_wrong);
    CHECK(cudaGetLastError());
    int wrong = -1;
    CHECK(cudaMemcpy(&wrong, d_wrong, sizeof wrong, cudaMemcpyDeviceToHost));
    if (wrong != 0) {
      std::printf("heap block: %d words wrong\n", wrong);
      ++failures;
    }
  }

  // The stack: up to 24 levels of 1 KiB each, in a stack raised to 40 KiB.
  const size_t stack = 40 << 10;
  CHECK(cudaDeviceSetLimit(cudaLimitStackSize, stack));
  CHECK(cudaDeviceGetLimit(&v, cudaLimitStackSize));
  if (v < stack) {
    std::printf("stack limit reads back %zu, want at least %zu\n", v, stack);
    ++failures;
  }
  const int n = 64;
  std::vector<int> depth(n);
  std::vector<unsigned> x(n);
  for (int i = 0; i < n; ++i) {
    depth[i] = rng.Int(16, 24);
    x[i] = static_cast<unsigned>(rng.Int(0, 1 << 30));
  }
  int* d_depth;
  unsigned* d_x;
  long long* d_out;
  CHECK(cudaMalloc(&d_depth, n * sizeof(int)));
  CHECK(cudaMalloc(&d_x, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_out, n * sizeof(long long)));
  CHECK(cudaMemcpy(d_depth, depth.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  Recurse<<<2, n / 2>>>(d_depth, d_x, d_out, n);
  CHECK(cudaGetLastError());
  std::vector<long long> out(n);
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(long long), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += out[i] != DescendHost(depth[i], x[i]);
  if (wrong) {
    std::printf("recursion: %d of %d results wrong\n", wrong, n);
    ++failures;
  }
  CHECK(cudaDeviceSynchronize());
  return Finish(failures, "device_limits");
}
