// tests/cuda/kernels/rdc_link_library.cu - the function part of link.cpp's run-time link.
extern "C" __device__ float axpb(float a, float x, float b) {
  return a * x + b;
}
