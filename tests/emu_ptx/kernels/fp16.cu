// tests/emu_ptx/kernels/fp16.cu - __half / half2 arithmetic (cuda_fp16.h) and __nv_bfloat16
// conversions and arithmetic (cuda_bf16.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void halfArith(const __half* a, const __half* b, const __half* c, __half* out,
                                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = a[i], y = b[i], z = c[i];
  __half* o = out + i * 10;
  o[0] = __hadd(x, y);
  o[1] = __hsub(x, y);
  o[2] = __hmul(x, y);
  o[3] = __hfma(x, y, z);
  o[4] = __hneg(x);
  o[5] = __habs(y);
  o[6] = __hmin(x, y);
  o[7] = __hmax(x, y);
  o[8] = __hgt(x, y) ? x : z;
  o[9] = __float2half(__half2float(x) * 0.3f + __half2float(z));
}

extern "C" __global__ void half2Arith(const __half2* a, const __half2* b, const __half2* c,
                                      __half2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 x = a[i], y = b[i], z = c[i];
  __half2* o = out + i * 6;
  o[0] = __hadd2(x, y);
  o[1] = __hsub2(x, y);
  o[2] = __hmul2(x, y);
  o[3] = __hfma2(x, y, z);
  o[4] = __hneg2(__habs2(x));
  o[5] = __hmax2(__hmin2(x, y), z);
}

extern "C" __global__ void bf16Convert(const float* in, __nv_bfloat16* out_bf, float* out_f,
                                       int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = in[i];
  __nv_bfloat16 rn = __float2bfloat16(v);
  __nv_bfloat16 rz = __float2bfloat16_rz(v);
  __nv_bfloat16 h = __float2bfloat16(v * 0.5f);
  out_bf[i * 3 + 0] = rn;
  out_bf[i * 3 + 1] = rz;
#if __CUDA_ARCH__ >= 800
  out_bf[i * 3 + 2] = __hfma(rn, h, rz);  // fma.rn.bf16: one rounding
#else
  out_bf[i * 3 + 2] =
      __float2bfloat16(fmaf(__bfloat162float(rn), __bfloat162float(h), __bfloat162float(rz)));
#endif
  out_f[i * 3 + 0] = __bfloat162float(rn);
  out_f[i * 3 + 1] = __bfloat162float(__hadd(rn, h)) + __bfloat162float(__hmul(rz, h));
  out_f[i * 3 + 2] = float(__bfloat162int_rz(rn)) + __half2float(__float2half_rz(v));
}
