// tests/cuda/separable/separable.cuh - what the translation units of this project share:
// __device__ functions and data defined in device_math.cu and used from kernels.cu and
// main.cu (resolved by nvcc's device link, as in any CUDA_SEPARABLE_COMPILATION project), and
// the kernels defined in kernels.cu that main.cu launches.
#pragma once

#include <cuda_runtime.h>

constexpr int kTile = 32;       // matmul tile edge: a __shared__ kTile x kTile tile per operand
constexpr int kWeights = 16;    // entries of the __constant__ weight table

// device_math.cu: functions.
__device__ float axpy(float a, float x, float y);
__device__ float clampf(float x, float lo, float hi);
__device__ unsigned int mix(unsigned int x);  // an integer hash: the reduction's transform
__device__ void countLaunch();                // block (0,0,0) thread 0 bumps g_launches

// device_math.cu: data.
extern __device__ float g_alpha;                 // saxpy's scale, set by the host
extern __device__ unsigned int g_launches;       // kernels that ran (countLaunch)
extern __device__ unsigned long long g_total;    // sumMixed's result
extern __constant__ int c_weights[kWeights];     // weighted()'s table, set by the host

// kernels.cu.
__global__ void saxpy(int n, const float* x, float* y);
__global__ void matmulTiled(const float* A, const float* B, float* C, int M, int K, int N);
__global__ void sumMixed(const unsigned int* in, int n);
__global__ void weighted(const int* in, int* out, int n);
