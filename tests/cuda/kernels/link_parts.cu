// tests/cuda/kernels/link_parts.cu - two separately compiled parts for link.cpp's run-time
// link: built with -rdc as PTX and as a fat binary, one part per macro.
#ifdef LINK_LIBRARY
// y = a * x + b, defined here and called from the kernel part.
extern "C" __device__ float axpb(float a, float x, float b) {
  return a * x + b;
}
#else
extern "C" __device__ float axpb(float a, float x, float b);
extern "C" __global__ void apply(const float* x, float* y, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = axpb(a, x[i], b);
}
#endif
