// tests/cuda/kernels/video_asm.cu - the scalar video instructions (vadd vsub vabsdiff vmin vmax
// vshl vshr vmad vset) as inline PTX, the way hand-tuned kernels and NVIDIA's libraries (cuSPARSE's
// SpGEMM: vshr.clamp.add) use them: byte and half-word selectors with sign or zero extension,
// .sat, a secondary operation on c, a merge into c, clamped and wrapped shifts, vmad's negations,
// .po and scales. Each thread's results are checked against the PTX ISA's pseudo-code on the host,
// on random words and edge cases.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common.h"

namespace {

constexpr int kForms = 18;

__global__ void Video(const uint32_t* in, uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2];
  uint32_t r[kForms];
  asm("vadd.u32.u32.u32 %0, %1, %2;" : "=r"(r[0]) : "r"(a), "r"(b));
  asm("vadd.s32.s32.s32.sat %0, %1.b1, %2.h0;" : "=r"(r[1]) : "r"(a), "r"(b));
  asm("vsub.s32.u32.s32.sat %0, %1, %2;" : "=r"(r[2]) : "r"(a), "r"(b));
  asm("vabsdiff.u32.u32.u32.add %0, %1.b0, %2.b2, %3;" : "=r"(r[3]) : "r"(a), "r"(b), "r"(c));
  asm("vmin.s32.s32.s32.max %0, %1.h1, %2.h0, %3;" : "=r"(r[4]) : "r"(a), "r"(b), "r"(c));
  asm("vmax.u32.s32.u32.sat %0.b2, %1.b3, %2.b0, %3;" : "=r"(r[5]) : "r"(a), "r"(b), "r"(c));
  asm("vadd.s32.s32.s32.sat %0.h1, %1.h0, %2.h1, %3;" : "=r"(r[6]) : "r"(a), "r"(b), "r"(c));
  asm("vshr.u32.u32.u32.clamp.add %0, %1, %2, %3;" : "=r"(r[7]) : "r"(a), "r"(b), "r"(c));
  asm("vshl.u32.u32.u32.wrap %0, %1, %2;" : "=r"(r[8]) : "r"(a), "r"(b));
  asm("vshr.s32.s32.u32.clamp %0, %1, %2.b0;" : "=r"(r[9]) : "r"(a), "r"(b));
  asm("vshl.u32.u32.u32.sat.clamp %0, %1.h0, %2.b0;" : "=r"(r[10]) : "r"(a), "r"(b));
  asm("vset.u32.s32.lt %0, %1, %2;" : "=r"(r[11]) : "r"(a), "r"(b));
  asm("vset.s32.s32.ge.add %0, %1.b0, %2.b1, %3;" : "=r"(r[12]) : "r"(a), "r"(b), "r"(c));
  asm("vset.u32.u32.eq %0.b3, %1.b1, %2.b1, %3;" : "=r"(r[13]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.u32.u32.u32 %0, %1.h0, %2.h0, %3;" : "=r"(r[14]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.s32.s32.s32.sat %0, -%1, %2.h1, %3;" : "=r"(r[15]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.s32.u32.s32.shr15 %0, %1.h0, %2.b1, -%3;" : "=r"(r[16]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.u32.u32.u32.po.shr7 %0, %1.b0, %2.b3, %3;" : "=r"(r[17]) : "r"(a), "r"(b), "r"(c));
  for (int k = 0; k < kForms; ++k) out[size_t(i) * kForms + k] = r[k];
}

using Wide = __int128;

// partSelectSignExtend: sel 'w' the word, 'b' byte k, 'h' half-word k.
int64_t Part(uint32_t v, char sel, int k, bool sign) {
  const int bits = sel == 'w' ? 32 : sel == 'b' ? 8 : 16;
  const uint64_t u = (uint64_t(v) >> (bits * k)) & ((uint64_t(1) << bits) - 1);
  return sign && (u >> (bits - 1)) ? int64_t(u) - (int64_t(1) << bits) : int64_t(u);
}

Wide Clamp(Wide t, bool sign, int bits) {
  const Wide lo = sign ? -(Wide(1) << (bits - 1)) : 0;
  const Wide hi = sign ? (Wide(1) << (bits - 1)) - 1 : (Wide(1) << bits) - 1;
  return std::clamp(t, lo, hi);
}

uint32_t Low(Wide t) {
  return uint32_t(uint64_t(t));
}

// c with byte or half-word k replaced by t's low bits.
uint32_t Merge(uint32_t c, Wide t, int bits, int k) {
  const uint32_t m = uint32_t((uint64_t(1) << bits) - 1) << (bits * k);
  return (c & ~m) | ((Low(t) << (bits * k)) & m);
}

int Amount(int64_t b, bool clamp) {
  return clamp ? int(std::min<int64_t>(b, 32)) : int(b & 31);
}

// vmad by the ISA's pseudo-code: one negation (of the product, or of c) or .po adds one after
// a ones' complement; scale, then .sat to the signed or unsigned 32-bit range.
uint32_t Vmad(int64_t ta, int64_t tb, uint32_t c, bool sign_in, bool neg_ab, bool neg_c, bool po,
              int shr, bool sat) {
  const bool sign = sign_in || neg_ab || neg_c;
  Wide t = Wide(ta) * tb;
  int lsb = 0;
  if (po) {
    lsb = 1;
  } else if (neg_ab) {
    t = ~t;
    lsb = 1;
  } else if (neg_c) {
    c = ~c;
    lsb = 1;
  }
  t = (t + (sign ? Wide(int32_t(c)) : Wide(c)) + lsb) >> shr;
  const uint64_t r = uint64_t(t);
  if (!sat) return uint32_t(r);
  return sign ? uint32_t(std::clamp<int64_t>(int64_t(r), INT32_MIN, INT32_MAX))
              : uint32_t(std::min<uint64_t>(r, UINT32_MAX));
}

void Want(uint32_t a, uint32_t b, uint32_t c, uint32_t* w) {
  const int32_t sc = int32_t(c);
  w[0] = Low(Wide(a) + b);
  w[1] = Low(Clamp(Wide(Part(a, 'b', 1, true)) + Part(b, 'h', 0, true), true, 32));
  w[2] = Low(Clamp(Wide(a) - int32_t(b), true, 32));
  w[3] = Low(std::abs(Part(a, 'b', 0, false) - Part(b, 'b', 2, false)) + Wide(c));
  w[4] = Low(std::max<Wide>(std::min(Part(a, 'h', 1, true), Part(b, 'h', 0, true)), sc));
  w[5] = Merge(c, Clamp(std::max(Part(a, 'b', 3, true), Part(b, 'b', 0, false)), false, 8), 8, 2);
  w[6] = Merge(c, Clamp(Wide(Part(a, 'h', 0, true)) + Part(b, 'h', 1, true), true, 16), 16, 1);
  w[7] = Low(Wide(b >= 32 ? 0 : a >> b) + c);
  w[8] = a << (b & 31);
  w[9] = Low(int64_t(int32_t(a)) >> Amount(Part(b, 'b', 0, false), true));
  w[10] =
      Low(Clamp(Wide(Part(a, 'h', 0, false)) << Amount(Part(b, 'b', 0, false), true), false, 32));
  w[11] = uint32_t(int64_t(a) < int64_t(int32_t(b)));
  w[12] = uint32_t(Part(a, 'b', 0, true) >= Part(b, 'b', 1, true)) + c;
  w[13] = Merge(c, Part(a, 'b', 1, false) == Part(b, 'b', 1, false), 8, 3);
  w[14] =
      Vmad(Part(a, 'h', 0, false), Part(b, 'h', 0, false), c, false, false, false, false, 0, false);
  w[15] = Vmad(int32_t(a), Part(b, 'h', 1, true), c, true, true, false, false, 0, true);
  w[16] =
      Vmad(Part(a, 'h', 0, false), Part(b, 'b', 1, true), c, true, false, true, false, 15, false);
  w[17] =
      Vmad(Part(a, 'b', 0, false), Part(b, 'b', 3, false), c, false, false, false, true, 7, false);
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  const int n = 4096;
  const uint32_t edges[] = {0,           1,      0x7f,        0x80,        0xff,        0x7fff,
                            0x8000,      0xffff, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0x80ff7f01u,
                            0x00008080u, 31,     32,          33};
  std::vector<uint32_t> in(size_t(n) * 3);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = rng.Int(0, 3) ? uint32_t(rng.Next()) : edges[rng.Int(0, int(std::size(edges)))];
    if (i % 3 == 1 && rng.Int(0, 2)) in[i] = (in[i] & ~0xffu) | uint32_t(rng.Int(0, 40));
  }
  uint32_t *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, in.size() * sizeof(uint32_t)));
  CHECK(cudaMalloc(&d_out, size_t(n) * kForms * sizeof(uint32_t)));
  CHECK(cudaMemcpy(d_in, in.data(), in.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  Video<<<(n + 127) / 128, 128>>>(d_in, d_out, n);
  CHECK(cudaGetLastError());
  std::vector<uint32_t> out(size_t(n) * kForms);
  CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  int failures = 0;
  int wrong[kForms] = {};
  for (int i = 0; i < n; ++i) {
    uint32_t w[kForms];
    Want(in[3 * i], in[3 * i + 1], in[3 * i + 2], w);
    for (int k = 0; k < kForms; ++k)
      if (out[size_t(i) * kForms + k] != w[k] && wrong[k]++ == 0) {
        std::printf("FAIL form %d: a=%08x b=%08x c=%08x: got %08x, want %08x\n", k, in[3 * i],
                    in[3 * i + 1], in[3 * i + 2], out[size_t(i) * kForms + k], w[k]);
        ++failures;
      }
  }
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return Finish(failures, "video_asm");
}
