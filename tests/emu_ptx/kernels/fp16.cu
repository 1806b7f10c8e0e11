// tests/emu_ptx/kernels/fp16.cu - __half / half2 arithmetic (cuda_fp16.h) and __nv_bfloat16
// conversions and arithmetic (cuda_bf16.h), and 8-bit float conversions (cuda_fp8.h: the
// arithmetic's own code before sm_89, cvt's .e4m3x2 and .e5m2x2 forms from sm_89).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

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

// cuda_fp16.h / cuda_bf16.h math: their inline assembly computes in f32 (ex2/lg2.approx) and
// corrects chosen inputs with set.eq.f16.f16 and fma.rn.f16; tanh.approx on 16-bit types.
// 16 outputs per element of each format.
extern "C" __global__ void halfMath(const __half* a, const __nv_bfloat16* b, __half* oh,
                                    __nv_bfloat16* ob, short* os, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = a[i], y = __habs(x);
  __half* h = oh + i * 16;
  h[0] = hexp(x);
  h[1] = hexp2(x);
  h[2] = hexp10(x);
  h[3] = hlog(y);
  h[4] = hlog2(y);
  h[5] = hlog10(y);
  h[6] = hsqrt(y);
  h[7] = hrsqrt(y);
  h[8] = hrcp(x);
  h[9] = hsin(x);
  h[10] = hcos(x);
  h[11] = htanh_approx(x);
  __half2 p = h2exp(__halves2half2(x, __hneg(x)));
  h[12] = __low2half(p);
  h[13] = __high2half(p);
  p = h2log(__halves2half2(y, y));
  h[14] = __high2half(p);
  h[15] = __low2half(h2tanh_approx(__halves2half2(x, x)));
  __nv_bfloat16 u = b[i], v = __habs(u);
  __nv_bfloat16* g = ob + i * 16;
  g[0] = hexp(u);
  g[1] = hexp2(u);
  g[2] = hexp10(u);
  g[3] = hlog(v);
  g[4] = hlog2(v);
  g[5] = hlog10(v);
  g[6] = hsqrt(v);
  g[7] = hrsqrt(v);
  g[8] = hrcp(u);
  g[9] = hsin(u);
  g[10] = hcos(u);
  g[11] = htanh_approx(u);
  __nv_bfloat162 q = h2exp(__halves2bfloat162(u, __hneg(u)));
  g[12] = __low2bfloat16(q);
  g[13] = __high2bfloat16(q);
  g[14] = __low2bfloat16(h2log(__halves2bfloat162(v, v)));
  g[15] = __high2bfloat16(h2exp10(__halves2bfloat162(u, u)));
  short* s = os + i * 3;
  s[0] = __bfloat162short_rn(u);
  s[1] = __bfloat162short_rd(u);
  s[2] = short(__bfloat162ushort_rn(v));
}

// atomicAdd on __half, __half2, __nv_bfloat16 and __nv_bfloat162 and atomicCAS on unsigned short
// from every thread to one address each (global), and per block in shared memory.
extern "C" __global__ void halfAtomics(const __half* a, const __nv_bfloat16* b, __half* acc_h,
                                       __nv_bfloat16* acc_b, unsigned short* counter,
                                       __half* block_h, int n) {
  __shared__ __half sh;
  __shared__ unsigned short sc;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) {
    sh = __float2half(0.0f);
    sc = 0;
  }
  __syncthreads();
  if (i < n) {
    atomicAdd(acc_h, a[i]);
    atomicAdd(reinterpret_cast<__half2*>(acc_h + 2), __halves2half2(a[i], __hneg(a[i])));
    atomicAdd(acc_b, b[i]);
    atomicAdd(reinterpret_cast<__nv_bfloat162*>(acc_b + 2), __halves2bfloat162(b[i], b[i]));
    unsigned short old = *counter, seen;
    while ((seen = atomicCAS(counter, old, (unsigned short)(old + 1))) != old) old = seen;
    atomicAdd(&sh, a[i]);
    old = sc;
    while ((seen = atomicCAS(&sc, old, (unsigned short)(old + 1))) != old) old = seen;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    block_h[blockIdx.x * 2] = sh;
    block_h[blockIdx.x * 2 + 1] = __ushort_as_half(sc);
  }
}

// Pair i of `in` and of `hin` to E4M3 and E5M2 pairs (out8[4i..4i+3]) and each of those back to
// a half pair (outh[8i..8i+7]).
extern "C" __global__ void fp8Convert(const float2* in, const __half2_raw* hin,
                                      __nv_fp8x2_storage_t* out8, __half2_raw* outh, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_fp8x2_storage_t* o = out8 + i * 4;
  o[0] = __nv_cvt_float2_to_fp8x2(in[i], __NV_SATFINITE, __NV_E4M3);
  o[1] = __nv_cvt_float2_to_fp8x2(in[i], __NV_SATFINITE, __NV_E5M2);
  o[2] = __nv_cvt_halfraw2_to_fp8x2(hin[i], __NV_SATFINITE, __NV_E4M3);
  o[3] = __nv_cvt_halfraw2_to_fp8x2(hin[i], __NV_SATFINITE, __NV_E5M2);
  for (int k = 0; k < 4; ++k)
    outh[i * 4 + k] = __nv_cvt_fp8x2_to_halfraw2(o[k], k % 2 ? __NV_E5M2 : __NV_E4M3);
}
