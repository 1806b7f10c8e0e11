// tests/cuda/managed/managed_streams.cu - managed memory where work and its waits are spread
// out: many small allocations sharing pages, reached through a table that is itself managed;
// blocking and non-blocking streams waited for by the legacy stream, their own
// synchronization or an event; a host function that reads what a kernel wrote and writes what
// the next kernel reads; a few changed elements in a large array; async memsets and copies on
// a stream; allocations freed and made again. The host touches managed memory only after the
// work that wrote it was waited for, so this is right with or without concurrent managed
// access (an H200 has it; Remora's copies do not).
#include "common.h"

__global__ void AddToEach(int** table, const int* sizes, int count, int delta) {
  for (int a = blockIdx.x; a < count; a += gridDim.x)
    for (int i = threadIdx.x; i < sizes[a]; i += blockDim.x) table[a][i] += delta;
}

__global__ void Scale(float* p, int n, float by) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] *= by;
}

// One thread sums `n` values in order (a result the host can reproduce exactly).
__global__ void Sum(const long long* p, int n, long long* out) {
  long long s = 0;
  for (int i = 0; i < n; ++i) s += p[i];
  *out = s;
}

struct HostStep {
  const float* in;  // written by the kernel before the host function
  float* out;       // read by the kernel after it
  int n;
  double seen;
};

void CUDART_CB HostFunction(void* arg) {
  auto* step = static_cast<HostStep*>(arg);
  double sum = 0;
  for (int i = 0; i < step->n; ++i) {
    sum += step->in[i];
    step->out[i] = step->in[i] + 1.0f;
  }
  step->seen = sum;
}

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 11)));
  int failures = 0;
  auto fail = [&](const char* what, long i, double got, double want) {
    if (failures++ < 10) std::printf("%s [%ld]: %g, expected %g\n", what, i, got, want);
  };

  // 1. Small allocations, several to a page, through a managed table of pointers.
  const int count = 300;
  int** table = nullptr;
  int* sizes = nullptr;
  cudaError_t e = cudaMallocManaged(&table, count * sizeof(int*));
  if (e == cudaErrorNotSupported) Unsupported("cudaMallocManaged", cudaDevAttrManagedMemory);
  CHECK(e);
  CHECK(cudaMallocManaged(&sizes, count * sizeof(int)));
  std::vector<std::vector<int>> want(count);
  for (int a = 0; a < count; ++a) {
    sizes[a] = 1 + static_cast<int>(rng.Uniform(0, 40));
    CHECK(cudaMallocManaged(&table[a], sizes[a] * sizeof(int)));
    for (int i = 0; i < sizes[a]; ++i) {
      table[a][i] = static_cast<int>(rng.Uniform(-1000, 1000));
      want[a].push_back(table[a][i] + 5);
    }
  }
  AddToEach<<<32, 64>>>(table, sizes, count, 5);
  CHECK(cudaDeviceSynchronize());
  for (int a = 0; a < count; ++a)
    for (int i = 0; i < sizes[a]; ++i)
      if (table[a][i] != want[a][i]) fail("small allocation", a * 100 + i, table[a][i], want[a][i]);
  // Every other one freed, the rest still right after another pass.
  for (int a = 0; a < count; a += 2) CHECK(cudaFree(table[a]));
  for (int a = 0; a < count; a += 2) sizes[a] = 0;
  AddToEach<<<32, 64>>>(table, sizes, count, 1);
  CHECK(cudaDeviceSynchronize());
  for (int a = 1; a < count; a += 2)
    for (int i = 0; i < sizes[a]; ++i)
      if (table[a][i] != want[a][i] + 1)
        fail("small allocation, second pass", a * 100 + i, table[a][i], want[a][i] + 1);

  // 2. Two blocking streams, waited for by a synchronous copy on the legacy stream.
  const int n = 1 << 16;
  float *u = nullptr, *w = nullptr, *d = nullptr;
  CHECK(cudaMallocManaged(&u, n * sizeof(float)));
  CHECK(cudaMallocManaged(&w, n * sizeof(float)));
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  std::vector<float> uref(n), wref(n);
  for (int i = 0; i < n; ++i) {
    u[i] = rng.Uniform(-1, 1);
    w[i] = rng.Uniform(-1, 1);
    uref[i] = u[i] * 2.0f;
    wref[i] = w[i] * -3.0f;
  }
  cudaStream_t s1, s2, nb;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  CHECK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  Scale<<<64, 256, 0, s1>>>(u, n, 2.0f);
  Scale<<<64, 256, 0, s2>>>(w, n, -3.0f);
  float probe = 0;
  CHECK(cudaMemcpy(&probe, d, sizeof probe, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (u[i] != uref[i]) fail("stream 1", i, u[i], uref[i]);
    if (w[i] != wref[i]) fail("stream 2", i, w[i], wref[i]);
  }

  // 3. A non-blocking stream, waited for by its own synchronization, then by an event.
  Scale<<<64, 256, 0, nb>>>(u, n, 0.5f);
  CHECK(cudaStreamSynchronize(nb));
  for (int i = 0; i < n; ++i)
    if (u[i] != uref[i] * 0.5f) fail("non-blocking stream", i, u[i], uref[i] * 0.5f);
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  Scale<<<64, 256, 0, nb>>>(w, n, 2.0f);
  CHECK(cudaEventRecord(done, nb));
  CHECK(cudaEventSynchronize(done));
  for (int i = 0; i < n; ++i)
    if (w[i] != wref[i] * 2.0f) fail("event", i, w[i], wref[i] * 2.0f);

  // 4. A host function between two kernels of one stream: it reads what the first wrote and
  // writes what the second reads.
  HostStep step{u, w, n, 0};
  Scale<<<64, 256, 0, s1>>>(u, n, 4.0f);  // u = uref * 2
  CHECK(cudaLaunchHostFunc(s1, HostFunction, &step));
  Scale<<<64, 256, 0, s1>>>(w, n, 10.0f);  // w = (u + 1) * 10
  CHECK(cudaStreamSynchronize(s1));
  double seen = 0;
  for (int i = 0; i < n; ++i) {
    seen += uref[i] * 2.0f;
    const float want_w = (uref[i] * 2.0f + 1.0f) * 10.0f;
    if (w[i] != want_w) fail("after the host function", i, w[i], want_w);
  }
  if (step.seen != seen) fail("the host function's sum", 0, step.seen, seen);

  // 5. A large array of which the host changes three elements between kernels.
  const int big = 4 << 20;  // 32 MiB
  long long *v = nullptr, *sum = nullptr;
  CHECK(cudaMallocManaged(&v, big * sizeof(long long)));
  CHECK(cudaMallocManaged(&sum, sizeof(long long)));
  long long total = 0;
  for (int i = 0; i < big; ++i) total += (v[i] = i % 1000);
  Sum<<<1, 1>>>(v, big, sum);
  CHECK(cudaDeviceSynchronize());
  if (*sum != total) fail("sum", 0, static_cast<double>(*sum), static_cast<double>(total));
  const int at[3] = {7, big / 2 + 3, big - 1};
  for (int i : at) {
    total += 1000000 - v[i];
    v[i] = 1000000;
  }
  Sum<<<1, 1>>>(v, big, sum);
  CHECK(cudaDeviceSynchronize());
  if (*sum != total)
    fail("sum after three changes", 0, static_cast<double>(*sum), static_cast<double>(total));

  // 6. Async memset and copies on a stream, managed memory on either side.
  CHECK(cudaMemsetAsync(u, 0, n * sizeof(float), s2));
  CHECK(cudaMemcpyAsync(d, w, n * sizeof(float), cudaMemcpyDefault, s2));
  Scale<<<64, 256, 0, s2>>>(d, n, 0.5f);
  CHECK(cudaMemcpyAsync(u, d, n * sizeof(float), cudaMemcpyDefault, s2));
  CHECK(cudaStreamSynchronize(s2));
  for (int i = 0; i < n; ++i)
    if (u[i] != w[i] * 0.5f) fail("async copies", i, u[i], w[i] * 0.5f);

  // 7. Freed and made again, the new memory starts as the host writes it.
  for (int round = 0; round < 10; ++round) {
    float* r = nullptr;
    CHECK(cudaMallocManaged(&r, (1000 + round * 4097) * sizeof(float)));
    const int m = 1000 + round * 4097;
    for (int i = 0; i < m; ++i) r[i] = static_cast<float>(i + round);
    Scale<<<16, 128>>>(r, m, 3.0f);
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < m; ++i)
      if (r[i] != static_cast<float>(i + round) * 3.0f)
        fail("round", round * 100000 + i, r[i], (i + round) * 3.0);
    CHECK(cudaFree(r));
  }

  for (int a = 1; a < count; a += 2) CHECK(cudaFree(table[a]));
  CHECK(cudaFree(table));
  CHECK(cudaFree(sizes));
  CHECK(cudaFree(u));
  CHECK(cudaFree(w));
  CHECK(cudaFree(v));
  CHECK(cudaFree(sum));
  CHECK(cudaFree(d));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaStreamDestroy(nb));
  return Finish(failures, "managed memory across streams, events and host functions");
}
