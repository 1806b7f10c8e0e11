// tests/cuda/kernels/rdc_lib.h - what rdc_lib.cu exports to other translation units.
#pragma once

extern __device__ int g_calls;
__device__ float smoothstep(float edge0, float edge1, float x);
__device__ int collatzSteps(unsigned long long v);
__global__ void libKernel(int* out);
