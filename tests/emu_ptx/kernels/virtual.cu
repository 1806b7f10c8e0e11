// tests/emu_ptx/kernels/virtual.cu - virtual functions and function pointers in device code:
// objects built with placement new in device memory and called through their vtables by later
// kernels, virtual destructors, a __device__ table of function pointers, and a function pointer
// read from a __device__ variable (as cudaMemcpyFromSymbol would) passed as a kernel argument.
// Built whole-program, and with -rdc -DVIRTUAL_RDC linked with virtual_rdc.cu.
#include <new>

#include "virtual.h"

__device__ int g_destroyed[4];

#ifndef VIRTUAL_RDC
#include "virtual_rdc.cu"  // whole program: the -rdc build's other half, in this unit
#else
extern "C" __device__ float remoteHypot(float a, float b);
#endif

// Builds object i of kind kinds[i] (0 Rect, 1 Square, 2 Circle) in slot i of `storage`.
extern "C" __global__ void buildShapes(char* storage, const int* kinds, const float* a,
                                       const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  void* slot = storage + size_t(i) * kSlot;
  switch (kinds[i]) {
    case 0:
      new (slot) Rect(a[i], b[i]);
      break;
    case 1:
      new (slot) Square(a[i]);
      break;
    default:
      new (slot) Circle(a[i]);
      break;
  }
}

// Calls the virtual functions of the objects buildShapes made (a different launch).
extern "C" __global__ void useShapes(const char* storage, float* area, int* kind, float* scaled,
                                     float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Shape* p = reinterpret_cast<const Shape*>(storage + size_t(i) * kSlot);
  area[i] = p->area();
  kind[i] = p->kind();
  scaled[i] = p->scaled(s);
}

// Destroys them through the base class's virtual destructor.
extern "C" __global__ void destroyShapes(char* storage, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  reinterpret_cast<Shape*>(storage + size_t(i) * kSlot)->~Shape();
}

extern "C" __global__ void readDestroyed(int* out) {
  for (int k = 0; k < 4; ++k) out[k] = g_destroyed[k];
}

// Objects built and used within one kernel, in a local buffer.
extern "C" __global__ void localShapes(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  alignas(16) char buf[kSlot];
  Shape* p;
  if (i % 3 == 0)
    p = new (buf) Rect(a[i], 2.f);
  else if (i % 3 == 1)
    p = new (buf) Square(a[i]);
  else
    p = new (buf) Circle(a[i]);
  out[i] = p->area() + float(p->kind());
  p->~Shape();
}

typedef float (*BinOp)(float, float);
__device__ float addOp(float a, float b) {
  return a + b;
}
__device__ float subOp(float a, float b) {
  return a - b;
}
__device__ float mulOp(float a, float b) {
  return a * b;
}
__device__ __noinline__ float maxOp(float a, float b) {
  return fmaxf(a, b);
}
__device__ BinOp g_ops[5] = {addOp, subOp, mulOp, maxOp, remoteHypot};
__device__ BinOp g_mul = mulOp;
__device__ BinOp g_hypot = remoteHypot;

// Each lane picks its own function from the table: the targets diverge within a warp.
extern "C" __global__ void applyTable(const int* sel, const float* a, const float* b, float* out,
                                      int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = g_ops[sel[i]](a[i], b[i]);
}

// `op` came from the host, read out of g_mul or g_hypot.
extern "C" __global__ void applyArg(BinOp op, const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = op(a[i], b[i]);
}

// A function pointer taken in the kernel itself and stored to memory.
extern "C" __global__ void storeOps(BinOp* out) {
  out[0] = addOp;
  out[1] = maxOp;
  out[2] = remoteHypot;
}
