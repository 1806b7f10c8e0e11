// tests/cuda/kernels/warp_vote.cu - ballot/any/all votes and shuffle variants (idx, up, down, xor,
// width).
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
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return Finish(failures, "warp_vote");
}
