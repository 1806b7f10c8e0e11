// bench/emu_ptx/kernels/parted.cu - a kernel whose warps part at once and stay apart: each
// thread walks the Collatz sequence of its seed (a trip count of its own), looks the step count
// up in a sorted table in shared memory by binary search (a branch per step), then walks the
// table for as many steps as the count's low six bits.
constexpr unsigned kTable = 256;

extern "C" __global__ void collatz(const unsigned* seeds, const unsigned* table,
                                   unsigned* out, unsigned n) {
  __shared__ unsigned t[kTable];
  for (unsigned i = threadIdx.x; i < kTable; i += blockDim.x) t[i] = table[i];
  __syncthreads();
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long x = seeds[i];
  unsigned steps = 0;
  while (x > 1) {
    if (x & 1)
      x = 3 * x + 1;
    else
      x >>= 1;
    ++steps;
  }
  unsigned lo = 0, hi = kTable;
  while (lo < hi) {
    const unsigned mid = (lo + hi) / 2;
    if (t[mid] < steps)
      lo = mid + 1;
    else
      hi = mid;
  }
  // A walk through the table as long as the step count's low bits: a shared load every few
  // instructions while the warps are apart.
  unsigned acc = lo;
  for (unsigned k = 0; k < (steps & 63); ++k) acc += t[(acc + k) % kTable];
  out[i] = steps << 16 | (acc & 0xffff);
}
