// tests/cuda/kernels/warp_vote.cu - ballot/any/all votes and shuffle variants (idx, up, down, xor,
// width); and votes, sums and matches of groups smaller than a warp, every lane of the warp
// executing together with the mask of its own group (what cooperative groups' tiles do).
#include <vector>

#include "common.h"

constexpr unsigned kFull = 0xffffffffu;
constexpr int kOutputs = 10;

__global__ void warpOps(const int* in, int* out, int threshold) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int v = in[i];
  int* o = out + i * kOutputs;
  unsigned ballot = __ballot_sync(kFull, v > 0);
  o[0] = static_cast<int>(ballot);
  o[1] = __any_sync(kFull, v > threshold) ? 1 : 0;
  o[2] = __all_sync(kFull, v > -threshold) ? 1 : 0;
  o[3] = __shfl_sync(kFull, v, (lane * 7) % 32);
  o[4] = __shfl_up_sync(kFull, v, 3);
  o[5] = __shfl_down_sync(kFull, v, 5);
  o[6] = __shfl_xor_sync(kFull, v, 6);
  o[7] = __shfl_sync(kFull, v, 2, 8);  // lane 2 of each group of 8
  o[8] = __popc(ballot) * 100 + __ffs(ballot);
  o[9] = -1;
  if (lane < 16) o[9] = static_cast<int>(__ballot_sync(0x0000ffffu, (v & 1) != 0));
}

constexpr int kGroupOutputs = 5;

// The mask of the `size`-lane group holding `lane`.
__device__ unsigned GroupMask(int lane, int size) {
  return (size == 32 ? kFull : (1u << size) - 1) << (lane / size * size);
}

__global__ void groupOps(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int v = in[i];
  int* o = out + i * kGroupOutputs;
  const unsigned m4 = GroupMask(lane, 4), m8 = GroupMask(lane, 8), m16 = GroupMask(lane, 16);
  o[0] = static_cast<int>(__ballot_sync(m4, v > 0));
  o[1] = __any_sync(m4, v > 500) ? 1 : 0;
  o[2] = __all_sync(m8, v > -500) ? 1 : 0;
#if __CUDA_ARCH__ >= 800
  o[3] = __reduce_add_sync(m8, v);
#else
  int sum = v;
  for (int d = 4; d > 0; d /= 2) sum += __shfl_xor_sync(m8, sum, d, 8);
  o[3] = sum;
#endif
  o[4] = static_cast<int>(__match_any_sync(m16, v & 3));
}

int main(int argc, char** argv) {
  int warps = static_cast<int>(Flag(argc, argv, "warps", 64));
  int n = warps * 32;
  const int threshold = 900;
  Rng rng(Flag(argc, argv, "seed", 9));
  std::vector<int> in(n), out(n * kOutputs);
  for (int w = 0; w < warps; ++w)
    for (int l = 0; l < 32; ++l) {
      int range = (w % 3 == 0) ? 800 : 1000;  // some warps can never pass the any() threshold
      in[w * 32 + l] = rng.Int(-range, range);
      if (w % 4 == 1) in[w * 32 + l] = 0;  // an empty ballot
    }

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_out, out.size() * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  warpOps<<<(n + 127) / 128, 128>>>(d_in, d_out, threshold);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(int), cudaMemcpyDeviceToHost));

  int failures = 0;
  for (int w = 0; w < warps; ++w) {
    const int* v = &in[w * 32];
    unsigned ballot = 0, odd16 = 0;
    bool any = false, all = true;
    for (int l = 0; l < 32; ++l) {
      if (v[l] > 0) ballot |= 1u << l;
      if (l < 16 && (v[l] & 1)) odd16 |= 1u << l;
      any = any || v[l] > threshold;
      all = all && v[l] > -threshold;
    }
    for (int l = 0; l < 32; ++l) {
      int expect[kOutputs] = {
          static_cast<int>(ballot),
          any,
          all,
          v[(l * 7) % 32],
          l >= 3 ? v[l - 3] : v[l],
          l + 5 < 32 ? v[l + 5] : v[l],
          v[l ^ 6],
          v[(l / 8) * 8 + 2],
          __builtin_popcount(ballot) * 100 + __builtin_ffs(static_cast<int>(ballot)),
          l < 16 ? static_cast<int>(odd16) : -1,
      };
      for (int k = 0; k < kOutputs; ++k) {
        int got = out[(w * 32 + l) * kOutputs + k];
        if (got != expect[k]) {
          if (failures < 8)
            std::printf("warp %d lane %d op %d: %d, expected %d\n", w, l, k, got, expect[k]);
          ++failures;
        }
      }
    }
  }
  std::vector<int> gout(n * kGroupOutputs);
  int* d_gout;
  CHECK(cudaMalloc(&d_gout, gout.size() * sizeof(int)));
  groupOps<<<(n + 127) / 128, 128>>>(d_in, d_gout);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(gout.data(), d_gout, gout.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int w = 0; w < warps; ++w) {
    const int* v = &in[w * 32];
    for (int l = 0; l < 32; ++l) {
      auto group = [&](int size) { return l / size * size; };
      unsigned ballot = 0, match = 0;
      bool any = false, all = true;
      int sum = 0;
      for (int k = group(4); k < group(4) + 4; ++k) {
        if (v[k] > 0) ballot |= 1u << k;
        any = any || v[k] > 500;
      }
      for (int k = group(8); k < group(8) + 8; ++k) {
        all = all && v[k] > -500;
        sum += v[k];
      }
      for (int k = group(16); k < group(16) + 16; ++k)
        if ((v[k] & 3) == (v[l] & 3)) match |= 1u << k;
      const int expect[kGroupOutputs] = {static_cast<int>(ballot), any, all, sum,
                                         static_cast<int>(match)};
      for (int k = 0; k < kGroupOutputs; ++k) {
        int got = gout[(w * 32 + l) * kGroupOutputs + k];
        if (got != expect[k]) {
          if (failures < 16)
            std::printf("groups: warp %d lane %d op %d: %d, expected %d\n", w, l, k, got,
                        expect[k]);
          ++failures;
        }
      }
    }
  }
  CHECK(cudaFree(d_gout));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return Finish(failures, "warp_vote");
}
