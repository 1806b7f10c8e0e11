// tests/emu_ptx/kernels/warp.cu - shuffles, votes, block scan, barriers.
extern "C" __global__ void warpReduce(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  __shared__ int partial[32];
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    int w = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0;
    for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffff, w, o);
    if (threadIdx.x == 0) out[blockIdx.x] = w;
  }
}

extern "C" __global__ void blockScan(const int* in, int* out, int n) {
  extern __shared__ int buf[];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  buf[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = t >= off ? buf[t - off] : 0;
    __syncthreads();
    buf[t] += v;
    __syncthreads();
  }
  if (i < n) out[i] = buf[t];
}

extern "C" __global__ void shuffles(const int* in, int* out) {
  int t = threadIdx.x;
  int v = in[blockIdx.x * blockDim.x + t];
  int* o = out + (blockIdx.x * blockDim.x + t) * 6;
  o[0] = __shfl_up_sync(0xffffffff, v, 3);
  o[1] = __shfl_sync(0xffffffff, v, (t * 7) & 31);
  o[2] = __shfl_down_sync(0xffffffff, v, 5, 16);
  o[3] = __shfl_xor_sync(0xffffffff, v, 9);
  unsigned m = __ballot_sync(0xffffffff, v & 1);
  o[4] = (int)m;
  o[5] = __all_sync(0xffffffff, v > 0) * 4 + __any_sync(0xffffffff, v > 1000) * 2 + (__activemask() == 0xffffffffu);
}

extern "C" __global__ void divergentBallot(const int* in, int* out) {
  int t = threadIdx.x;
  int v = in[t];
  int r;
  if (v & 1) {
    r = __ballot_sync(__activemask(), v & 2);
  } else {
    r = -(int)__popc(__activemask());
  }
  out[t] = r;
}

// Every thread takes a lock in shared memory (or global, `lock`'s target) in turn, adding its
// value to a sum under it: lanes of one warp spin while another lane of theirs holds the lock,
// which a GPU's independent thread scheduling (sm_70 on) lets progress.
extern "C" __global__ void laneLock(const int* in, int* out, int* global_lock, int iters) {
  __shared__ int shared_lock, sum;
  if (threadIdx.x == 0) shared_lock = sum = 0;
  __syncthreads();
  int* lock = blockIdx.x == 0 ? &shared_lock : global_lock + blockIdx.x;
  for (int i = 0; i < iters; ++i) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    volatile int* s = &sum;
    *s = *s + in[threadIdx.x] + i;
    __threadfence();
    atomicExch(lock, 0);
  }
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}
