// tests/cuda/kernels/driver_kernels.cu - kernels a driver-API program loads by name at run time
// (built with nvcc -fatbin and nvcc -ptx, never linked into a program).
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

// One block's sum of 64-bit values in shared memory, added to *out.
extern "C" __global__ void sum64(const long long* v, int n, unsigned long long* out) {
  extern __shared__ long long partial[];
  long long s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, static_cast<unsigned long long>(partial[0]));
}

// A variable the host sets with cuModuleGetGlobal and a copy.
__device__ float offset_by;

extern "C" __global__ void add_offset(int n, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] += offset_by;
}

// out[i] = the texel at (x[i], y[i]) of a 2-D texture object, point sampled.
extern "C" __global__ void sample2d(unsigned long long tex, const float2* at, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(tex, at[i].x, at[i].y);
}
