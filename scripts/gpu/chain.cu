// scripts/gpu/chain.cu - the saturating kernel of the green-context probe, built as a cubin.
extern "C" __global__ void Chain(const unsigned* seeds, unsigned* out, int iters) {
  unsigned x = seeds[blockIdx.x * blockDim.x + threadIdx.x];
  for (int i = 0; i < iters; ++i) x = x * 1664525u + 1013904223u;
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}
