// tests/cuda/kernels/rdc_link_kernel.cu - the kernel part of link.cpp's run-time link, built
// with -rdc as PTX and as a fat binary: it calls a function only rdc_link_library.cu defines.
extern "C" __device__ float axpb(float a, float x, float b);

extern "C" __global__ void apply(const float* x, float* y, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = axpb(a, x[i], b);
}
