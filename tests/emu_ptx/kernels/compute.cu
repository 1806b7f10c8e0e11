// tests/emu_ptx/kernels/compute.cu - n-body (float4 loads, rsqrtf), an sgemm with 2D register
// tiling and float4 loads/stores, a 7-point 3D stencil.

// nbody: body i accumulates softened gravity from all n bodies, tiled through shared memory.
extern "C" __global__ void nbodyForces(const float4* pos, float4* acc, int n, float softening2) {
  extern __shared__ float4 tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 me = pos[i < n ? i : 0];
  float3 a = {0.f, 0.f, 0.f};
  for (int base = 0; base < n; base += blockDim.x) {
    int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < blockDim.x; ++k) {
      float4 o = tile[k];
      float dx = o.x - me.x, dy = o.y - me.y, dz = o.z - me.z;
      float d2 = dx * dx + dy * dy + dz * dz + softening2;
      float inv = rsqrtf(d2);
      float s = o.w * inv * inv * inv;
      a.x += dx * s;
      a.y += dy * s;
      a.z += dz * s;
    }
    __syncthreads();
  }
  if (i < n) acc[i] = make_float4(a.x, a.y, a.z, 0.f);
}

// sgemm: C = alpha*A*B + beta*C, row-major, M,N,K multiples of 64. Block 16x16 threads computes a
// 64x64 tile; each thread a 4x4 register tile; A and B tiles loaded with float4.
#define BM 64
#define BN 64
#define BK 16
extern "C" __global__ void sgemm4x4(int M, int N, int K, float alpha, const float* A,
                                    const float* B, float beta, float* C) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    // A tile: 64 rows x 16 cols = 256 float4, one per thread (stored transposed).
    {
      int r = tid / 4, c = (tid % 4) * 4;
      float4 v = *reinterpret_cast<const float4*>(&A[(row0 + r) * K + k0 + c]);
      As[c + 0][r] = v.x;
      As[c + 1][r] = v.y;
      As[c + 2][r] = v.z;
      As[c + 3][r] = v.w;
    }
    // B tile: 16 rows x 64 cols = 256 float4.
    {
      int r = tid / 16, c = (tid % 16) * 4;
      *reinterpret_cast<float4*>(&Bs[r][c]) =
          *reinterpret_cast<const float4*>(&B[(k0 + r) * N + col0 + c]);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float4 a = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
      float4 b = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float4* p = reinterpret_cast<float4*>(&C[(row0 + ty * 4 + i) * N + col0 + tx * 4]);
    float4 c = *p;
    c.x = alpha * acc[i][0] + beta * c.x;
    c.y = alpha * acc[i][1] + beta * c.y;
    c.z = alpha * acc[i][2] + beta * c.z;
    c.w = alpha * acc[i][3] + beta * c.w;
    *p = c;
  }
}

// stencil3d: out = c0*in + c1*(6 neighbours) on the interior of an nx*ny*nz grid; 2D blocks march
// along z.
extern "C" __global__ void stencil3d(const float* in, float* out, int nx, int ny, int nz, float c0,
                                     float c1) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
  size_t plane = size_t(nx) * ny;
  for (int z = 1; z < nz - 1; ++z) {
    size_t i = z * plane + size_t(y) * nx + x;
    out[i] = c0 * in[i] +
             c1 * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] + in[i - plane] + in[i + plane]);
  }
}
