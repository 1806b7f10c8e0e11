// tests/emu_ptx/kernels/basic.cu - vector add, tiled matmul, struct by value, templates.
struct Params {
  float scale;
  int offset;
  double bias;
  const float* src;
  char tag[3];
};

extern "C" __global__ void vecAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define TILE 16
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < n / TILE; ++t) {
    As[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[row * n + col] = acc;
}

extern "C" __global__ void structArg(Params p, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)(p.src[i] * p.scale + p.offset + p.bias) + p.tag[i % 3];
}

template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template __global__ void axpy<float>(float, const float*, float*, int);
template __global__ void axpy<double>(double, const double*, double*, int);
template __global__ void axpy<long long>(long long, const long long*, long long*, int);

extern "C" __global__ void intOps(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i] | 1u;
  int sx = (int)x, sy = (int)y;
  unsigned* o = out + i * 12;
  o[0] = x / y;
  o[1] = x % y;
  o[2] = (unsigned)(sx / sy);
  o[3] = (unsigned)(sx % sy);
  o[4] = __popc(x) + __clz(y);
  o[5] = __brev(x);
  o[6] = __byte_perm(x, y, 0x5140);
  o[7] = __funnelshift_l(x, y, sy & 31);
  o[8] = __umulhi(x, y);
  o[9] = (unsigned)__mulhi(sx, sy);
  o[10] = (x >> (y & 31)) ^ (unsigned)(sx >> (y & 15));
  o[11] = __ffs(x) + __sad(x, y, 7u);
}
