// tests/emu_ptx/kernels/rdc_a.cu - kernel half of a -rdc pair; calls into rdc_b.cu.
extern __device__ int rdcScale;
__device__ int rdcTransform(int x);
extern "C" __global__ void rdcKernel(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = rdcTransform(in[i]) + rdcScale;
}
