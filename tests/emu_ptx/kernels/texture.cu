// Texture and surface object kernels for texture_test.cc: each thread fetches at its own
// coordinates (from device arrays) and stores what it read, for a CPU reference to check.
#include <cuda_runtime.h>

extern "C" __global__ void fetch1d(cudaTextureObject_t t, const int* idx, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, idx[i]);
}

extern "C" __global__ void fetch1d_int4(cudaTextureObject_t t, const int* idx, int4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int4>(t, idx[i]);
}

extern "C" __global__ void tex1d_f(cudaTextureObject_t t, const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<float>(t, x[i]);
}

extern "C" __global__ void tex2d_f4(cudaTextureObject_t t, const float2* xy, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float4>(t, xy[i].x, xy[i].y);
}

extern "C" __global__ void tex2d_f(cudaTextureObject_t t, const float2* xy, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(t, xy[i].x, xy[i].y);
}

extern "C" __global__ void tex2d_uchar4(cudaTextureObject_t t, const float2* xy, uchar4* out,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<uchar4>(t, xy[i].x, xy[i].y);
}

extern "C" __global__ void tex2d_int(cudaTextureObject_t t, const float2* xy, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<int>(t, xy[i].x, xy[i].y);
}

extern "C" __global__ void tex2d_lod_grad(cudaTextureObject_t t, const float2* xy, float* out,
                                          int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[2 * i] = tex2DLod<float>(t, xy[i].x, xy[i].y, 0.75f * i);
    out[2 * i + 1] =
        tex2DGrad<float>(t, xy[i].x, xy[i].y, make_float2(0.5f, i), make_float2(i, 2.0f));
  }
}

extern "C" __global__ void tex3d_f(cudaTextureObject_t t, const float4* xyz, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex3D<float>(t, xyz[i].x, xyz[i].y, xyz[i].z);
}

extern "C" __global__ void gather(cudaTextureObject_t t, const float2* xy, float4* out, int n,
                                  int comp) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2Dgather<float4>(t, xy[i].x, xy[i].y, comp);
}

extern "C" __global__ void layered(cudaTextureObject_t t, float* out) {
  out[0] = tex2DLayered<float>(t, 0.5f, 0.5f, 1);
}

extern "C" __global__ void query(cudaTextureObject_t t, cudaSurfaceObject_t s, int* out) {
  int w, h, d, sw;
  asm("txq.width.b32 %0, [%1];" : "=r"(w) : "l"(t));
  asm("txq.height.b32 %0, [%1];" : "=r"(h) : "l"(t));
  asm("txq.depth.b32 %0, [%1];" : "=r"(d) : "l"(t));
  asm("suq.width.b32 %0, [%1];" : "=r"(sw) : "l"(s));
  out[0] = w;
  out[1] = h;
  out[2] = d;
  out[3] = sw;
}

// Surfaces: x in bytes. Each thread reads (or writes) the element at its (x, y).
template <cudaSurfaceBoundaryMode M>
__device__ void SurfRead(cudaSurfaceObject_t s, const int2* xy, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = surf2Dread<float>(s, xy[i].x * 4, xy[i].y, M);
}
template <cudaSurfaceBoundaryMode M>
__device__ void SurfWrite(cudaSurfaceObject_t s, const int2* xy, const float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) surf2Dwrite(v[i], s, xy[i].x * 4, xy[i].y, M);
}
template <cudaSurfaceBoundaryMode M>
__device__ void SurfReadU4(cudaSurfaceObject_t s, const int2* xy, uchar4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = surf2Dread<uchar4>(s, xy[i].x * 4, xy[i].y, M);
}
template <cudaSurfaceBoundaryMode M>
__device__ void SurfWriteU4(cudaSurfaceObject_t s, const int2* xy, const uchar4* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) surf2Dwrite(v[i], s, xy[i].x * 4, xy[i].y, M);
}

#define SURF_KERNELS(suffix, mode)                                                         \
  extern "C" __global__ void surf_read_f_##suffix(cudaSurfaceObject_t s, const int2* xy,   \
                                                  float* out, int n) {                     \
    SurfRead<mode>(s, xy, out, n);                                                         \
  }                                                                                        \
  extern "C" __global__ void surf_write_f_##suffix(cudaSurfaceObject_t s, const int2* xy,  \
                                                   const float* v, int n) {                \
    SurfWrite<mode>(s, xy, v, n);                                                          \
  }                                                                                        \
  extern "C" __global__ void surf_read_u4_##suffix(cudaSurfaceObject_t s, const int2* xy,  \
                                                   uchar4* out, int n) {                   \
    SurfReadU4<mode>(s, xy, out, n);                                                       \
  }                                                                                        \
  extern "C" __global__ void surf_write_u4_##suffix(cudaSurfaceObject_t s, const int2* xy, \
                                                    const uchar4* v, int n) {              \
    SurfWriteU4<mode>(s, xy, v, n);                                                        \
  }
SURF_KERNELS(trap, cudaBoundaryModeTrap)
SURF_KERNELS(clamp, cudaBoundaryModeClamp)
SURF_KERNELS(zero, cudaBoundaryModeZero)

extern "C" __global__ void surf1d_write(cudaSurfaceObject_t s, const float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) surf1Dwrite(v[i] * 2.0f, s, i * 4);
}

// A raw byte offset that is not a multiple of the access size.
extern "C" __global__ void surf_misaligned(cudaSurfaceObject_t s, float* out) {
  out[0] = surf2Dread<float>(s, 2, 0);
}
