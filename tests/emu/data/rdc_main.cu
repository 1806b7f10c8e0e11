// tests/emu/data/rdc_main.cu - a kernel calling a device function from rdc_lib.cu.
extern __device__ int twicePlusOffset(int v);

extern "C" __global__ void applyTwice(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = twicePlusOffset(x[i]);
}
