// tests/emu_ptx/kernels/virtual_rdc.cu - the other half of the -rdc build of virtual.cu: Circle's
// virtual functions and vtable, and a function whose address virtual.cu's module takes. The
// whole-program build of virtual.cu includes this file.
#include "virtual.h"

__device__ Circle::~Circle() {
  atomicAdd(&g_destroyed[3], 1);
}
__device__ float Circle::area() const {
  return 3.0f * r * r;
}
__device__ int Circle::kind() const {
  return 3;
}

extern "C" __device__ float remoteHypot(float a, float b) {
  return sqrtf(a * a + b * b);
}
