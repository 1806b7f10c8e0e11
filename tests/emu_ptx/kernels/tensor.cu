// tests/emu_ptx/kernels/tensor.cu - warp-level matrix multiply: nvcuda::wmma for each shape and
// type, and CUTLASS-style inline-asm mma.sync / ldmatrix / movmatrix with fragments built and read
// element by element as the PTX ISA lays them out (9.7.14.5). Compiled for compute_80 and
// compute_90. Matrices in memory are row-major unless a kernel says otherwise: A is M x K, B is
// K x N, C and D are M x N.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

using namespace nvcuda;

// ---- wmma ----

template <class T>
struct Storage {
  using type = T;
};
template <>
struct Storage<wmma::precision::tf32> {
  using type = float;
};

// D = A * B + C for one M x N x K tile per warp (blockIdx.x picks the tile of a batch); C is read
// and D written row- or column-major as c_row / d_row say, with leading dimensions ldc / ldd.
template <int M, int N, int K, class TIn, class TAcc, class LA, class LB>
__device__ void WmmaTile(const typename Storage<TIn>::type* a, int lda,
                         const typename Storage<TIn>::type* b, int ldb, const TAcc* c, int ldc,
                         int c_row, TAcc* d, int ldd, int d_row) {
  wmma::fragment<wmma::matrix_a, M, N, K, TIn, LA> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, TIn, LB> fb;
  wmma::fragment<wmma::accumulator, M, N, K, TAcc> fc;
  wmma::load_matrix_sync(fa, a, lda);
  wmma::load_matrix_sync(fb, b, ldb);
  wmma::load_matrix_sync(fc, c, ldc, c_row ? wmma::mem_row_major : wmma::mem_col_major);
  if constexpr (std::is_same_v<TIn, wmma::precision::tf32>) {
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
  }
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, ldd, d_row ? wmma::mem_row_major : wmma::mem_col_major);
}

#define WMMA_KERNEL(name, M, N, K, TIn, TAcc, LA, LB)                                           \
  extern "C" __global__ void name(const Storage<TIn>::type* a, int lda,                         \
                                  const Storage<TIn>::type* b, int ldb, const TAcc* c, int ldc, \
                                  int c_row, TAcc* d, int ldd, int d_row) {                     \
    WmmaTile<M, N, K, TIn, TAcc, wmma::LA, wmma::LB>(a, lda, b, ldb, c, ldc, c_row, d, ldd,     \
                                                     d_row);                                    \
  }

WMMA_KERNEL(wmma_f16_f32_m16n16k16_rc, 16, 16, 16, half, float, row_major, col_major)
WMMA_KERNEL(wmma_f16_f32_m16n16k16_cr, 16, 16, 16, half, float, col_major, row_major)
WMMA_KERNEL(wmma_f16_f32_m32n8k16_rc, 32, 8, 16, half, float, row_major, col_major)
WMMA_KERNEL(wmma_f16_f32_m32n8k16_cr, 32, 8, 16, half, float, col_major, row_major)
WMMA_KERNEL(wmma_f16_f32_m8n32k16_rc, 8, 32, 16, half, float, row_major, col_major)
WMMA_KERNEL(wmma_f16_f32_m8n32k16_cr, 8, 32, 16, half, float, col_major, row_major)
WMMA_KERNEL(wmma_f16_f16_m16n16k16_rc, 16, 16, 16, half, half, row_major, col_major)
WMMA_KERNEL(wmma_f16_f16_m16n16k16_cr, 16, 16, 16, half, half, col_major, row_major)
WMMA_KERNEL(wmma_f16_f16_m32n8k16_rc, 32, 8, 16, half, half, row_major, col_major)
WMMA_KERNEL(wmma_f16_f16_m32n8k16_cr, 32, 8, 16, half, half, col_major, row_major)
WMMA_KERNEL(wmma_f16_f16_m8n32k16_rc, 8, 32, 16, half, half, row_major, col_major)
WMMA_KERNEL(wmma_f16_f16_m8n32k16_cr, 8, 32, 16, half, half, col_major, row_major)
WMMA_KERNEL(wmma_bf16_f32_m16n16k16_rc, 16, 16, 16, __nv_bfloat16, float, row_major, col_major)
WMMA_KERNEL(wmma_bf16_f32_m16n16k16_cr, 16, 16, 16, __nv_bfloat16, float, col_major, row_major)
WMMA_KERNEL(wmma_bf16_f32_m32n8k16_rc, 32, 8, 16, __nv_bfloat16, float, row_major, col_major)
WMMA_KERNEL(wmma_bf16_f32_m32n8k16_cr, 32, 8, 16, __nv_bfloat16, float, col_major, row_major)
WMMA_KERNEL(wmma_bf16_f32_m8n32k16_rc, 8, 32, 16, __nv_bfloat16, float, row_major, col_major)
WMMA_KERNEL(wmma_bf16_f32_m8n32k16_cr, 8, 32, 16, __nv_bfloat16, float, col_major, row_major)
WMMA_KERNEL(wmma_tf32_f32_m16n16k8_rc, 16, 16, 8, wmma::precision::tf32, float, row_major,
            col_major)
WMMA_KERNEL(wmma_tf32_f32_m16n16k8_cr, 16, 16, 8, wmma::precision::tf32, float, col_major,
            row_major)
WMMA_KERNEL(wmma_f64_f64_m8n8k4_rc, 8, 8, 4, double, double, row_major, col_major)
WMMA_KERNEL(wmma_f64_f64_m8n8k4_cr, 8, 8, 4, double, double, col_major, row_major)
WMMA_KERNEL(wmma_s8_s32_m16n16k16_rc, 16, 16, 16, signed char, int, row_major, col_major)
WMMA_KERNEL(wmma_u8_s32_m32n8k16_cr, 32, 8, 16, unsigned char, int, col_major, row_major)

// fill_fragment and element-wise work on whole fragments: D = 2 * (A * B + 0.5) + 1, row-major
// 16x16 halves from shared memory (A row-major, B column-major, both 16x16).
extern "C" __global__ void wmma_fill_scale_shared(const half* a, const half* b, float* d) {
  __shared__ __align__(32) half sa[16 * 16], sb[16 * 16];
  for (int i = threadIdx.x; i < 256; i += 32) {
    sa[i] = a[i];
    sb[i] = b[i];
  }
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.5f);
  wmma::load_matrix_sync(fa, sa, 16);
  wmma::load_matrix_sync(fb, sb, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = fc.x[i] * 2.0f + 1.0f;
  wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

// A tiled GEMM as CUDA's samples write it: C (m x n, row-major) = A (m x k, row-major) *
// B (k x n, column-major), 16x16 output tiles, one per warp, blockDim.x = 128.
extern "C" __global__ void wmma_gemm(const half* a, const half* b, float* c, int m, int n, int k) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int tiles_n = n / 16;
  int tm = warp / tiles_n, tn = warp % tiles_n;
  if (tm * 16 >= m) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + tm * 16 * k + kk, k);
    wmma::load_matrix_sync(fb, b + tn * 16 * k + kk, k);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tm * 16 * n + tn * 16, acc, n, wmma::mem_row_major);
}

// wmma::__float_to_tf32 (cvt.rna.tf32.f32) of each element.
extern "C" __global__ void tf32_round(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = wmma::__float_to_tf32(in[i]);
}

// ---- mma.sync with fragments as the PTX ISA lays them out ----

struct RC {
  int r, c;
};
__device__ int Gid() {
  return threadIdx.x >> 2;  // groupID
}
__device__ int Tig() {
  return threadIdx.x & 3;  // threadID_in_group
}
// The row and column formulas below are transcribed from the ISA's fragment tables.
// .f16/.bf16 A of m16n8k8 (i < 4) and m16n8k16 (i < 8).
__device__ RC PosA16(int i) {
  return {(i < 2 || (i >= 4 && i < 6)) ? Gid() : Gid() + 8, Tig() * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
// .f16/.bf16 B of m16n8k8 (i < 2) and m16n8k16 (i < 4).
__device__ RC PosB16(int i) {
  return {Tig() * 2 + (i & 1) + (i >= 2 ? 8 : 0), Gid()};
}
// C/D of every m16n8 shape.
__device__ RC PosC(int i) {
  return {i < 2 ? Gid() : Gid() + 8, Tig() * 2 + (i & 1)};
}
__device__ RC PosATf32K4(int i) {
  return {i == 0 ? Gid() : Gid() + 8, Tig()};
}
__device__ RC PosBTf32K4(int) {
  return {Tig(), Gid()};
}
__device__ RC PosATf32K8(int i) {
  return {(i == 0 || i == 2) ? Gid() : Gid() + 8, i < 2 ? Tig() : Tig() + 4};
}
__device__ RC PosBTf32K8(int i) {
  return {i == 0 ? Tig() : Tig() + 4, Gid()};
}
__device__ RC PosAI8K16(int i) {
  return {i < 4 ? Gid() : Gid() + 8, Tig() * 4 + (i & 3)};
}
__device__ RC PosBI8K16(int i) {
  return {Tig() * 4 + i, Gid()};
}
__device__ RC PosAI8K32(int i) {
  return {(i < 4 || (i >= 8 && i < 12)) ? Gid() : Gid() + 8,
          Tig() * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
}
__device__ RC PosBI8K32(int i) {
  return {Tig() * 4 + (i & 3) + (i >= 4 ? 16 : 0), Gid()};
}

// Register r of a fragment packing 32 / bits elements: element j of the register is element
// r * per + j of the fragment, in the low bits first.
template <class T, class Pos>
__device__ uint32_t Pack(const T* m, int ld, Pos pos, int r) {
  constexpr int per = 4 / sizeof(T);
  uint32_t v = 0;
  for (int j = 0; j < per; ++j) {
    RC p = pos(r * per + j);
    uint32_t e = 0;
    memcpy(&e, &m[p.r * ld + p.c], sizeof(T));
    v |= e << (8 * sizeof(T) * j);
  }
  return v;
}

// f16/bf16 inputs (uint16 bits), f32 C/D. K is 8 or 16.
template <int K, bool kBf16>
__device__ void Mma16F32(const uint16_t* A, const uint16_t* B, const float* C, float* D) {
  uint32_t a[4], b[2];
  float c[4], d[4];
  for (int r = 0; r < K / 4; ++r) a[r] = Pack(A, K, PosA16, r);
  for (int r = 0; r < K / 8; ++r) b[r] = Pack(B, 8, PosB16, r);
  for (int i = 0; i < 4; ++i) c[i] = C[PosC(i).r * 8 + PosC(i).c];
  if constexpr (K == 16 && !kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
  } else if constexpr (K == 16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
  } else if constexpr (!kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%7,%8,%9,%10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%7,%8,%9,%10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  }
  for (int i = 0; i < 4; ++i) D[PosC(i).r * 8 + PosC(i).c] = d[i];
}

extern "C" __global__ void mma_f16_m16n8k16_f32(const uint16_t* A, const uint16_t* B,
                                                const float* C, float* D) {
  Mma16F32<16, false>(A, B, C, D);
}
extern "C" __global__ void mma_f16_m16n8k8_f32(const uint16_t* A, const uint16_t* B, const float* C,
                                               float* D) {
  Mma16F32<8, false>(A, B, C, D);
}
extern "C" __global__ void mma_bf16_m16n8k16_f32(const uint16_t* A, const uint16_t* B,
                                                 const float* C, float* D) {
  Mma16F32<16, true>(A, B, C, D);
}
extern "C" __global__ void mma_bf16_m16n8k8_f32(const uint16_t* A, const uint16_t* B,
                                                const float* C, float* D) {
  Mma16F32<8, true>(A, B, C, D);
}

// f16 inputs, f16 C/D (uint16 bits).
template <int K>
__device__ void Mma16F16(const uint16_t* A, const uint16_t* B, const uint16_t* C, uint16_t* D) {
  uint32_t a[4], b[2], c[2], d[2];
  for (int r = 0; r < K / 4; ++r) a[r] = Pack(A, K, PosA16, r);
  for (int r = 0; r < K / 8; ++r) b[r] = Pack(B, 8, PosB16, r);
  for (int r = 0; r < 2; ++r) c[r] = Pack(C, 8, PosC, r);
  if constexpr (K == 16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
        "{%8,%9};"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%5,%6};"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(c[0]), "r"(c[1]));
  }
  for (int i = 0; i < 4; ++i) D[PosC(i).r * 8 + PosC(i).c] = uint16_t(d[i / 2] >> (16 * (i & 1)));
}

extern "C" __global__ void mma_f16_m16n8k16_f16(const uint16_t* A, const uint16_t* B,
                                                const uint16_t* C, uint16_t* D) {
  Mma16F16<16>(A, B, C, D);
}
extern "C" __global__ void mma_f16_m16n8k8_f16(const uint16_t* A, const uint16_t* B,
                                               const uint16_t* C, uint16_t* D) {
  Mma16F16<8>(A, B, C, D);
}

// tf32 inputs (f32 bits, rounded with cvt.rna.tf32.f32 here), f32 C/D.
extern "C" __global__ void mma_tf32_m16n8k4(const float* A, const float* B, const float* C,
                                            float* D) {
  uint32_t a[2], b;
  float c[4], d[4];
  for (int i = 0; i < 2; ++i)
    a[i] = __float_as_uint(wmma::__float_to_tf32(A[PosATf32K4(i).r * 4 + PosATf32K4(i).c]));
  b = __float_as_uint(wmma::__float_to_tf32(B[PosBTf32K4(0).r * 8 + PosBTf32K4(0).c]));
  for (int i = 0; i < 4; ++i) c[i] = C[PosC(i).r * 8 + PosC(i).c];
  asm volatile(
      "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%7,%8,%9,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  for (int i = 0; i < 4; ++i) D[PosC(i).r * 8 + PosC(i).c] = d[i];
}

extern "C" __global__ void mma_tf32_m16n8k8(const float* A, const float* B, const float* C,
                                            float* D) {
  uint32_t a[4], b[2];
  float c[4], d[4];
  for (int i = 0; i < 4; ++i)
    a[i] = __float_as_uint(wmma::__float_to_tf32(A[PosATf32K8(i).r * 8 + PosATf32K8(i).c]));
  for (int i = 0; i < 2; ++i)
    b[i] = __float_as_uint(wmma::__float_to_tf32(B[PosBTf32K8(i).r * 8 + PosBTf32K8(i).c]));
  for (int i = 0; i < 4; ++i) c[i] = C[PosC(i).r * 8 + PosC(i).c];
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
  for (int i = 0; i < 4; ++i) D[PosC(i).r * 8 + PosC(i).c] = d[i];
}

// f64 m8n8k4: A (8x4), B (4x8), C/D (8x8).
extern "C" __global__ void mma_f64_m8n8k4(const double* A, const double* B, const double* C,
                                          double* D) {
  int lane = threadIdx.x;
  double a = A[(lane >> 2) * 4 + lane % 4];
  double b = B[(lane % 4) * 8 + (lane >> 2)];
  double c[2], d[2];
  for (int i = 0; i < 2; ++i) c[i] = C[Gid() * 8 + Tig() * 2 + (i & 1)];
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
               : "=d"(d[0]), "=d"(d[1])
               : "d"(a), "d"(b), "d"(c[0]), "d"(c[1]));
  for (int i = 0; i < 2; ++i) D[Gid() * 8 + Tig() * 2 + (i & 1)] = d[i];
}

// 8-bit integers, s32 C/D. The A and B types and .satfinite are in the kernel's name.
#define MMA_I8_K16(name, types)                                                               \
  extern "C" __global__ void name(const uint8_t* A, const uint8_t* B, const int* C, int* D) { \
    uint32_t a[2], b;                                                                         \
    int c[4], d[4];                                                                           \
    for (int r = 0; r < 2; ++r) a[r] = Pack(A, 16, PosAI8K16, r);                             \
    b = Pack(B, 8, PosBI8K16, 0);                                                             \
    for (int i = 0; i < 4; ++i) c[i] = C[PosC(i).r * 8 + PosC(i).c];                          \
    asm volatile("mma.sync.aligned.m16n8k16.row.col" types                                    \
                 " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"                             \
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])                             \
                 : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])); \
    for (int i = 0; i < 4; ++i) D[PosC(i).r * 8 + PosC(i).c] = d[i];                          \
  }
#define MMA_I8_K32(name, types)                                                                 \
  extern "C" __global__ void name(const uint8_t* A, const uint8_t* B, const int* C, int* D) {   \
    uint32_t a[4], b[2];                                                                        \
    int c[4], d[4];                                                                             \
    for (int r = 0; r < 4; ++r) a[r] = Pack(A, 32, PosAI8K32, r);                               \
    for (int r = 0; r < 2; ++r) b[r] = Pack(B, 8, PosBI8K32, r);                                \
    for (int i = 0; i < 4; ++i) c[i] = C[PosC(i).r * 8 + PosC(i).c];                            \
    asm volatile("mma.sync.aligned.m16n8k32.row.col" types                                      \
                 " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"                   \
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), \
                   "r"(c[1]), "r"(c[2]), "r"(c[3]));                                            \
    for (int i = 0; i < 4; ++i) D[PosC(i).r * 8 + PosC(i).c] = d[i];                            \
  }
MMA_I8_K16(mma_s8_s8_m16n8k16, ".s32.s8.s8.s32")
MMA_I8_K16(mma_u8_u8_m16n8k16_sat, ".satfinite.s32.u8.u8.s32")
MMA_I8_K32(mma_u8_s8_m16n8k32_sat, ".satfinite.s32.u8.s8.s32")
MMA_I8_K32(mma_s8_u8_m16n8k32, ".s32.s8.u8.s32")

// ---- ldmatrix and movmatrix ----

__device__ uint32_t SharedAddr(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

// Four 8x8 matrices of 16-bit values; row r of matrix j is stored at row slot (7 - r) * 4 + j of
// a padded shared array (24 halves per slot), so a lane's address is not a plain stride. Lanes
// that give no address for .x1/.x2 give one past the shared array. out[(lane * 4 + j)] is the
// lane's register j; `mode` picks x1, x2, x4 (shared::cta), x4.trans, x2.trans (generic).
extern "C" __global__ void ldmatrix_forms(const uint16_t* in, uint32_t* out, int mode) {
  __shared__ __align__(16) uint16_t s[32 * 24];
  int lane = threadIdx.x;
  for (int j = 0; j < 4; ++j)
    for (int r = 0; r < 8; ++r)
      if (lane < 8) s[((7 - r) * 4 + j) * 24 + lane] = in[(j * 8 + r) * 8 + lane];
  __syncwarp();
  int j = lane / 8, r = lane % 8;
  const uint16_t* row = &s[((7 - r) * 4 + j) * 24];
  uint32_t addr = SharedAddr(row);
  uint32_t d[4] = {0, 0, 0, 0};
  if (mode == 0) {
    if (lane >= 8) addr = 0xfffff0u;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(d[0]) : "r"(addr));
  } else if (mode == 1) {
    if (lane >= 16) addr = 0xfffff0u;
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(addr));
  } else if (mode == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared::cta.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(addr));
  } else if (mode == 3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(addr));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.b16 {%0,%1}, [%2];"
                 : "=r"(d[0]), "=r"(d[1])
                 : "l"(row));
  }
  for (int k = 0; k < 4; ++k) out[lane * 4 + k] = d[k];
}

// movmatrix: lane l holds elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of an 8x8
// matrix; out[l] is its register after the transpose.
extern "C" __global__ void movmatrix_trans(const uint32_t* in, uint32_t* out) {
  uint32_t a = in[threadIdx.x], d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(a));
  out[threadIdx.x] = d;
}

// CUTLASS-style warp tile: D (16x16, f32) = A (16x32, f16, row-major) * B (32x16, f16,
// row-major), staged in shared memory; A fragments by ldmatrix.x4, B by ldmatrix.x2.trans, two
// k16 steps of two m16n8k16 mma each.
extern "C" __global__ void ldmatrix_mma_gemm(const half* A, const half* B, float* D) {
  __shared__ __align__(16) half sa[16 * 32], sb[32 * 16];
  int lane = threadIdx.x;
  for (int i = lane; i < 16 * 32; i += 32) {
    sa[i] = A[i];
    sb[i] = B[i];
  }
  __syncwarp();
  float acc[2][4] = {};
  for (int ks = 0; ks < 2; ++ks) {
    uint32_t a[4], b[2][2];
    uint32_t pa = SharedAddr(&sa[(lane % 16) * 32 + ks * 16 + (lane / 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(pa));
    for (int nt = 0; nt < 2; ++nt) {
      uint32_t pb = SharedAddr(&sb[(ks * 16 + lane % 16) * 16 + nt * 8]);
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                   : "=r"(b[nt][0]), "=r"(b[nt][1])
                   : "r"(pb));
      float* c = acc[nt];
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[nt][0]), "r"(b[nt][1]));
    }
  }
  for (int nt = 0; nt < 2; ++nt)
    for (int i = 0; i < 4; ++i) D[PosC(i).r * 16 + nt * 8 + PosC(i).c] = acc[nt][i];
}
