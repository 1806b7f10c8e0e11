// tests/emu_ptx/kernels/atomics.cu - shared histogram and global atomics of every width.
extern "C" __global__ void histogram(const unsigned char* in, unsigned* bins, int n) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

extern "C" __global__ void globalAtomics(const int* in, int n, float* fsum, double* dsum,
                                         unsigned long long* u64sum, int* imin, int* imax,
                                         unsigned* ored, unsigned* counter, int* casSum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  atomicAdd(fsum, (float)(v & 1023));
  atomicAdd(dsum, (double)v * 0.5);
  atomicAdd(u64sum, (unsigned long long)(unsigned)v * 3ull);
  atomicMin(imin, v);
  atomicMax(imax, v);
  atomicOr(ored, 1u << (v & 31));
  atomicInc(counter, 1000000u);
  int old = *casSum, assumed;
  do {
    assumed = old;
    old = atomicCAS(casSum, assumed, assumed + (v & 7));
  } while (old != assumed);
}
