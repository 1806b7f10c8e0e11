// Dynamic parallelism (kernels launching kernels, CUDA 12's CDP2), built as the public samples
// build it (-rdc=true -lcudadevrt): a launch tree counted level by level, a quicksort that
// recurses on the device through streams of its own, and a block's stream of a memset, a
// kernel and a copy followed by a tail launch that reads their result; each against the CPU.
#include <algorithm>
#include <vector>

#include "common.h"

namespace {

constexpr int kTreeDepth = 6;
constexpr int kTreeThreads = 64;

// Each block counts itself and its threads at its depth, then (one thread) launches two blocks
// one level down.
__global__ void Tree(int depth, unsigned* blocks, unsigned* threads) {
  atomicAdd(&threads[depth], 1u);
  if (threadIdx.x != 0) return;
  atomicAdd(&blocks[depth], 1u);
  if (depth + 1 < kTreeDepth) {
    Tree<<<2, blockDim.x>>>(depth + 1, blocks, threads);
    if (cudaGetLastError() != cudaSuccess) atomicAdd(&blocks[kTreeDepth], 1u);
  }
}

constexpr int kSortMaxDepth = 16;
constexpr int kSortInsertion = 32;

__device__ void SelectionSort(unsigned* data, int left, int right) {
  for (int i = left; i <= right; ++i) {
    unsigned min_val = data[i];
    int min_idx = i;
    for (int j = i + 1; j <= right; ++j)
      if (data[j] < min_val) {
        min_idx = j;
        min_val = data[j];
      }
    if (i != min_idx) {
      data[min_idx] = data[i];
      data[i] = min_val;
    }
  }
}

// One thread: partitions [left, right] around its middle value, then sorts each side in a
// launch of its own, on a stream of its own.
__global__ void Quicksort(unsigned* data, int left, int right, int depth, unsigned* failures) {
  if (depth >= kSortMaxDepth || right - left <= kSortInsertion) {
    SelectionSort(data, left, right);
    return;
  }
  unsigned* lptr = data + left;
  unsigned* rptr = data + right;
  const unsigned pivot = data[(left + right) / 2];
  while (lptr <= rptr) {
    unsigned lval = *lptr, rval = *rptr;
    while (lval < pivot) lval = *++lptr;
    while (rval > pivot) rval = *--rptr;
    if (lptr <= rptr) {
      *lptr++ = rval;
      *rptr-- = lval;
    }
  }
  const int nright = int(rptr - data), nleft = int(lptr - data);
  if (left < nright) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    Quicksort<<<1, 1, 0, s>>>(data, left, nright, depth + 1, failures);
    if (cudaGetLastError() != cudaSuccess) atomicAdd(failures, 1u);
    cudaStreamDestroy(s);
  }
  if (nleft < right) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    Quicksort<<<1, 1, 0, s>>>(data, nleft, right, depth + 1, failures);
    if (cudaGetLastError() != cudaSuccess) atomicAdd(failures, 1u);
    cudaStreamDestroy(s);
  }
}

__global__ void Fill(int* a, int n, int salt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    a[i] = i * 3 + salt;
}

// Sums b into *sum (one block).
__global__ void SumTail(const int* b, int n, long long* sum) {
  long long mine = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) mine += b[i];
  atomicAdd(reinterpret_cast<unsigned long long*>(sum), static_cast<unsigned long long>(mine));
}

// Block k: on its own stream (the block's NULL stream) clears b's k-th part, fills a's with a
// kernel, copies it over b's; then a tail launch sums b's part, after all of that has run.
__global__ void Staged(int* a, int* b, int part, long long* sums, int* status) {
  if (threadIdx.x != 0) return;
  int* pa = a + blockIdx.x * part;
  int* pb = b + blockIdx.x * part;
  cudaError_t e = cudaMemsetAsync(pb, 0xff, part * sizeof(int), 0);
  Fill<<<2, 64>>>(pa, part, int(blockIdx.x));
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(pb, pa, part * sizeof(int), cudaMemcpyDeviceToDevice, 0);
  SumTail<<<1, 128, 0, cudaStreamTailLaunch>>>(pb, part, &sums[blockIdx.x]);
  if (e == cudaSuccess) e = cudaGetLastError();
  int device = -1;
  if (e == cudaSuccess) e = cudaGetDevice(&device);
  // The device runtime's words for an error, as the host runtime's.
  const char* text = cudaGetErrorString(cudaErrorInvalidValue);
  const char* name = cudaGetErrorName(cudaErrorInvalidValue);
  const bool words = text[0] == 'i' && text[7] == ' ' && name[4] == 'E' && name[9] == 'I';
  status[blockIdx.x] = e == cudaSuccess && device >= 0 && words ? 1 : -int(e) - 1;
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(uint64_t(Flag(argc, argv, "seed", 7)));

  // A launch tree: 2 blocks at the top, each launching 2 blocks a level, kTreeDepth levels.
  unsigned* d_counts = nullptr;
  CHECK(cudaMalloc(&d_counts, 2 * (kTreeDepth + 1) * sizeof(unsigned)));
  CHECK(cudaMemset(d_counts, 0, 2 * (kTreeDepth + 1) * sizeof(unsigned)));
  Tree<<<2, kTreeThreads>>>(0, d_counts, d_counts + kTreeDepth + 1);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> counts(2 * (kTreeDepth + 1));
  CHECK(cudaMemcpy(counts.data(), d_counts, counts.size() * sizeof(unsigned),
                   cudaMemcpyDeviceToHost));
  REQUIRE(counts[kTreeDepth] == 0);  // no device-side launch failed
  for (int d = 0; d < kTreeDepth; ++d) {
    const unsigned blocks = 2u << d;  // 2 * 2^d
    if (counts[d] != blocks || counts[kTreeDepth + 1 + d] != blocks * kTreeThreads) {
      std::printf("FAIL: tree depth %d: %u blocks, %u threads; want %u, %u\n", d, counts[d],
                  counts[kTreeDepth + 1 + d], blocks, blocks * kTreeThreads);
      return 1;
    }
  }
  CHECK(cudaFree(d_counts));

  // Quicksort of random keys on the device, against std::sort.
  const int n = int(Flag(argc, argv, "n", 4096));
  std::vector<unsigned> keys(n);
  for (unsigned& k : keys) k = unsigned(rng.Next() % 100000);
  unsigned *d_keys = nullptr, *d_fail = nullptr;
  CHECK(cudaMalloc(&d_keys, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_fail, sizeof(unsigned)));
  CHECK(cudaMemset(d_fail, 0, sizeof(unsigned)));
  CHECK(cudaMemcpy(d_keys, keys.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  Quicksort<<<1, 1>>>(d_keys, 0, n - 1, 0, d_fail);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> sorted(n);
  unsigned fail = 0;
  CHECK(cudaMemcpy(sorted.data(), d_keys, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&fail, d_fail, sizeof fail, cudaMemcpyDeviceToHost));
  std::sort(keys.begin(), keys.end());
  REQUIRE(fail == 0);
  REQUIRE(sorted == keys);
  CHECK(cudaFree(d_keys));
  CHECK(cudaFree(d_fail));

  // Device-side memset, launch, copy and tail launch, in each block's stream order.
  constexpr int kBlocks = 4, kPart = 1000;
  int *d_a = nullptr, *d_b = nullptr, *d_status = nullptr;
  long long* d_sums = nullptr;
  CHECK(cudaMalloc(&d_a, kBlocks * kPart * sizeof(int)));
  CHECK(cudaMalloc(&d_b, kBlocks * kPart * sizeof(int)));
  CHECK(cudaMalloc(&d_sums, kBlocks * sizeof(long long)));
  CHECK(cudaMalloc(&d_status, kBlocks * sizeof(int)));
  CHECK(cudaMemset(d_sums, 0, kBlocks * sizeof(long long)));
  Staged<<<kBlocks, 32>>>(d_a, d_b, kPart, d_sums, d_status);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<int> b(kBlocks * kPart), status(kBlocks);
  std::vector<long long> sums(kBlocks);
  CHECK(cudaMemcpy(b.data(), d_b, b.size() * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sums.data(), d_sums, sums.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(status.data(), d_status, status.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int k = 0; k < kBlocks; ++k) {
    long long want = 0;
    for (int i = 0; i < kPart; ++i) {
      REQUIRE(b[k * kPart + i] == i * 3 + k);
      want += i * 3 + k;
    }
    if (status[k] != 1 || sums[k] != want) {
      std::printf("FAIL: block %d: status %d, tail sum %lld, want %lld\n", k, status[k], sums[k],
                  want);
      return 1;
    }
  }
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_sums));
  CHECK(cudaFree(d_status));
  std::printf("PASS\n");
  return 0;
}
