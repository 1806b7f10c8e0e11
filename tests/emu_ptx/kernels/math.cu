// tests/emu_ptx/kernels/math.cu - libdevice math functions and conversions.
#include <cuda_fp16.h>
extern "C" __global__ void mathF(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float* o = out + i * 8;
  o[0] = sinf(v);
  o[1] = cosf(v);
  o[2] = expf(v * 0.1f);
  o[3] = logf(fabsf(v) + 1.0f);
  o[4] = powf(fabsf(v) + 0.5f, 1.3f);
  o[5] = sqrtf(fabsf(v));
  o[6] = tanhf(v * 0.1f);
  o[7] = v / (x[(i + 1) % n] + 100.0f);
}

extern "C" __global__ void mathD(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  double* o = out + i * 4;
  o[0] = sqrt(fabs(v));
  o[1] = v / (x[(i + 1) % n] + 100.0);
  o[2] = fma(v, 1.5, -2.25);
  o[3] = exp(v * 0.01);
}

extern "C" __global__ void convert(const float* x, int* oi, unsigned* ou, long long* ol,
                                  unsigned short* oh, float* of, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  oi[i] = __float2int_rn(v) + (int)v;
  ou[i] = (unsigned)fabsf(v) + __float2uint_rd(fabsf(v));
  ol[i] = (long long)(v * 1e6f) + llrintf(v);
  oh[i] = __half_as_ushort(__float2half_rn(v));
  of[i] = __half2float(__float2half_rn(v)) + rintf(v) + floorf(v) + ceilf(v) + truncf(v) + (float)(double)v + (float)(long long)oi[i];
}
