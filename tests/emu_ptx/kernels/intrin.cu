// tests/emu_ptx/kernels/intrin.cu - CUDA integer intrinsics, one output column each.
extern "C" __global__ void intIntrinsics(const unsigned* a, const unsigned* b,
                                         const unsigned long long* c, unsigned long long* out,
                                         int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  unsigned long long z = c[i];
  unsigned long long* o = out + i * 12;
  o[0] = __byte_perm(x, y, y & 0x7777);
  o[1] = __funnelshift_l(x, y, z & 63);
  o[2] = __funnelshift_rc(x, y, z & 63);
  o[3] = __brev(x) ^ ((unsigned long long)__brevll(z) << 1);
  o[4] = __ffs(int(x)) + 100 * __ffsll((long long)z);
  o[5] = __popcll(z) + 100 * __popc(y);
  o[6] = __clzll((long long)(z >> (x & 63))) + 100 * __clz(int(y >> (x & 31)));
  o[7] = (unsigned)__mulhi(int(x), int(y));
  o[8] = __umul64hi(z, (unsigned long long)x * y + 12345);
  o[9] = __sad(int(x), int(y), x & 0xffff) + 7ull * __usad(x, y, 3);
  o[10] = (unsigned long long)__mul64hi((long long)z, (long long)(int)x);
  o[11] = __umulhi(x, y) + (unsigned long long)__mul24(int(x), int(y)) * 3;
}

// SIMD intrinsics: video instructions (vabsdiff4, vabsdiff2.add) at compute_75/80, packed 16-bit
// add/min/max (.u16x2/.s16x2, .relu) at compute_90, plain arithmetic elsewhere.
extern "C" __global__ void simdIntrinsics(const unsigned* a, const unsigned* b, const unsigned* c,
                                          unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i], z = c[i];
  unsigned* o = out + i * 14;
  o[0] = __vabsdiffu4(x, y);
  o[1] = __vabsdiffs4(x, y);
  o[2] = __vabsdiffu2(x, y);
  o[3] = __vabsdiffs2(x, y);
  o[4] = __vsadu4(x, y);
  o[5] = __vsads4(x, y);
  o[6] = __vsadu2(x, y);
  o[7] = __vsads2(x, y);
  o[8] = __vavgu4(x, y);
  o[9] = __vhaddu4(x, y);
  o[10] = __vimax3_u16x2(x, y, z);
  o[11] = __viaddmax_s16x2_relu(x, y, z);
  o[12] = unsigned(__vimin_s32_relu(int(x), int(y)));
  o[13] = __vimin3_s16x2_relu(x, y, z);
}
