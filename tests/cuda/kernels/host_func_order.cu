// tests/cuda/kernels/host_func_order.cu - a copy from page-locked memory reads it when its stream
// reaches the copy, after the host functions before it ran: over gRPC too, where the bytes
// travel with the request. Checked on random data:
//   - cudaLaunchHostFunc fills a cudaMallocHost buffer behind a slow kernel, and the
//     cudaMemcpyAsync queued after it uploads what the function wrote;
//   - the same from memory the program page-locked itself (cudaHostRegister);
//   - a graph (host node -> upload node -> kernel), launched three times, each launch uploading
//     what its own host node wrote.
// Flags: -seed <n>.
#include <vector>

#include "common.h"

struct Fill {
  int* buf;
  int n;
  int base;
};

void CUDART_CB FillBuffer(void* p) {
  const Fill* f = static_cast<const Fill*>(p);
  for (int i = 0; i < f->n; ++i) f->buf[i] = f->base + 3 * i;
}

__global__ void Spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

__global__ void AddOne(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1;
}

int Check(const int* dev, int n, int base, int add, const char* what) {
  std::vector<int> back(n);
  CHECK(cudaMemcpy(back.data(), dev, n * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += back[i] != base + 3 * i + add;
  if (wrong)
    std::printf("%s: %d of %d wrong (first %d, want %d)\n", what, wrong, n, back[0], base + add);
  return wrong != 0;
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 29));
  constexpr int kN = 1 << 12;
  int failures = 0;
  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, kN * sizeof(int)));
  CHECK(cudaMalloc(&d_out, kN * sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));

  // A host function writes page-locked memory; the upload behind it sees the writes.
  int* pinned;
  CHECK(cudaMallocHost(&pinned, kN * sizeof(int)));
  std::vector<int> own(kN + 1024);
  int* registered = own.data();
  CHECK(cudaHostRegister(registered, kN * sizeof(int), cudaHostRegisterDefault));
  for (int* buf : {pinned, registered}) {
    std::memset(buf, 0, kN * sizeof(int));
    Fill fill{buf, kN, rng.Int(1, 1 << 20)};
    Spin<<<1, 1, 0, s>>>(20ull * 1000 * 1000);
    CHECK(cudaLaunchHostFunc(s, FillBuffer, &fill));
    CHECK(cudaMemcpyAsync(d_in, buf, kN * sizeof(int), cudaMemcpyHostToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    failures += Check(d_in, kN, fill.base, 0, buf == pinned ? "cudaMallocHost" : "registered");
  }

  // A graph: host node, then the upload of what it wrote, then a kernel.
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  Fill fill{pinned, kN, 0};
  cudaHostNodeParams hp{};
  hp.fn = FillBuffer;
  hp.userData = &fill;
  cudaGraphNode_t host, copy, kernel;
  CHECK(cudaGraphAddHostNode(&host, g, nullptr, 0, &hp));
  CHECK(cudaGraphAddMemcpyNode1D(&copy, g, &host, 1, d_in, pinned, kN * sizeof(int),
                                 cudaMemcpyHostToDevice));
  int n = kN;
  void* args[] = {&d_in, &d_out, &n};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(AddOne);
  kp.gridDim = dim3((kN + 127) / 128);
  kp.blockDim = dim3(128);
  kp.kernelParams = args;
  CHECK(cudaGraphAddKernelNode(&kernel, g, &copy, 1, &kp));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  for (int launch = 0; launch < 3; ++launch) {
    fill.base = rng.Int(1, 1 << 20);
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    failures += Check(d_out, kN, fill.base, 1, "graph launch");
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaHostUnregister(registered));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaStreamDestroy(s));
  return Finish(failures, "host_func_order");
}
