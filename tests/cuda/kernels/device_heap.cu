// tests/cuda/kernels/device_heap.cu - device-side new/delete and malloc/free, as programs use
// them: objects that own heap arrays built by one kernel and used and deleted by the next, a
// linked list grown by every thread with malloc, per-thread arrays with new[] handed to
// another thread to delete. Each result is checked against the host.
// Flags: -seed <n>, -n <threads> (default 4096).
#include <vector>

#include "common.h"

// An object that owns a heap array: its constructor new[]s it, its destructor delete[]s it.
struct Poly {
  int degree;
  double* coef;
  __device__ Poly(int d, const double* c) : degree(d), coef(new double[d + 1]) {
    if (coef)
      for (int k = 0; k <= d; ++k) coef[k] = c[k];
  }
  __device__ ~Poly() { delete[] coef; }
  __device__ double Eval(double x) const {
    double y = 0;
    for (int k = degree; k >= 0; --k) y = y * x + coef[k];
    return y;
  }
};

// Thread i news a Poly of degree i % 4 from coef[4i..]; a later kernel evaluates it at x[i]
// and deletes it (-1e300 if new failed).
__global__ void MakePolys(const double* coef, Poly** polys, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) polys[i] = new Poly(i % 4, coef + 4 * i);
}
__global__ void EvalAndDelete(Poly** polys, const double* x, double* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = polys[i] && polys[i]->coef ? polys[i]->Eval(x[i]) : -1e300;
  delete polys[i];
}

// Every thread pushes `k` nodes malloc'd on the device onto one list (atomicExch on the head).
struct Node {
  int value;
  Node* next;
};
__global__ void PushNodes(Node** head, const int* values, int n, int k, int* failed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int j = 0; j < k; ++j) {
    Node* node = static_cast<Node*>(malloc(sizeof(Node)));
    if (node == nullptr) {
      atomicAdd(failed, 1);
      return;
    }
    node->value = values[i] + j;
    node->next = reinterpret_cast<Node*>(
        atomicExch(reinterpret_cast<unsigned long long*>(head),
                   reinterpret_cast<unsigned long long>(node)));
  }
}
// One thread walks the list (sum and count), then frees it.
__global__ void SumAndFreeList(Node** head, long long* sum, int* count) {
  long long s = 0;
  int c = 0;
  for (Node* p = *head; p != nullptr;) {
    s += p->value;
    ++c;
    Node* next = p->next;
    free(p);
    p = next;
  }
  *sum = s;
  *count = c;
  *head = nullptr;
}

// Thread i new[]s an array of len[i] ints (the prefix sums of its seed), and hands it to
// thread i ^ 1 of its warp, which sums it and delete[]s it.
__global__ void ArraysAcrossThreads(const int* len, const int* seed, long long* sums, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  __shared__ int* arrays[256];
  int* mine = nullptr;
  if (i < n) {
    mine = new int[len[i]];
    if (mine)
      for (int j = 0; j < len[i]; ++j) mine[j] = seed[i] + j;
  }
  arrays[threadIdx.x] = mine;
  __syncthreads();
  const int partner = threadIdx.x ^ 1;
  const int pi = blockIdx.x * blockDim.x + partner;
  if (i < n && pi < n) {
    const int* theirs = arrays[partner];
    long long s = -1;
    if (theirs) {
      s = 0;
      for (int j = 0; j < len[pi]; ++j) s += theirs[j];
    }
    sums[i] = s;
  }
  __syncthreads();
  if (i < n && pi < n)
    delete[] arrays[partner];
  else
    delete[] mine;
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 31));
  const int n = static_cast<int>(Flag(argc, argv, "n", 4096));
  const int threads = 256, blocks = (n + threads - 1) / threads;
  int failures = 0;

  std::vector<double> coef(4 * n), x(n);
  for (double& c : coef) c = rng.Int(-40, 40) / 8.0;
  for (double& v : x) v = rng.Int(-16, 16) / 4.0;
  double *d_coef, *d_x, *d_y;
  Poly** d_polys;
  CHECK(cudaMalloc(&d_coef, coef.size() * sizeof(double)));
  CHECK(cudaMalloc(&d_x, n * sizeof(double)));
  CHECK(cudaMalloc(&d_y, n * sizeof(double)));
  CHECK(cudaMalloc(&d_polys, n * sizeof(Poly*)));
  CHECK(cudaMemcpy(d_coef, coef.data(), coef.size() * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  MakePolys<<<blocks, threads>>>(d_coef, d_polys, n);
  CHECK(cudaGetLastError());
  EvalAndDelete<<<blocks, threads>>>(d_polys, d_x, d_y, n);
  CHECK(cudaGetLastError());
  std::vector<double> y(n);
  CHECK(cudaMemcpy(y.data(), d_y, n * sizeof(double), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    double want = 0;  // exact: small dyadic values
    for (int k = i % 4; k >= 0; --k) want = want * x[i] + coef[4 * i + k];
    wrong += y[i] != want;
  }
  if (wrong) std::printf("objects owning heap arrays: %d of %d values wrong\n", wrong, n);
  failures += wrong != 0;

  const int k = 3;
  std::vector<int> values(n);
  long long want_sum = 0;
  for (int i = 0; i < n; ++i) {
    values[i] = rng.Int(-1000, 1000);
    want_sum += 3ll * values[i] + 3;  // + 0 + 1 + 2
  }
  int *d_values, *d_failed, *d_count;
  long long* d_sum;
  Node** d_head;
  CHECK(cudaMalloc(&d_values, n * sizeof(int)));
  CHECK(cudaMalloc(&d_failed, sizeof(int)));
  CHECK(cudaMalloc(&d_count, sizeof(int)));
  CHECK(cudaMalloc(&d_sum, sizeof(long long)));
  CHECK(cudaMalloc(&d_head, sizeof(Node*)));
  CHECK(cudaMemcpy(d_values, values.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_failed, 0, sizeof(int)));
  CHECK(cudaMemset(d_head, 0, sizeof(Node*)));
  PushNodes<<<blocks, threads>>>(d_head, d_values, n, k, d_failed);
  CHECK(cudaGetLastError());
  SumAndFreeList<<<1, 1>>>(d_head, d_sum, d_count);
  CHECK(cudaGetLastError());
  int failed = 0, count = 0;
  long long sum = 0;
  CHECK(cudaMemcpy(&failed, d_failed, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&count, d_count, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&sum, d_sum, sizeof(long long), cudaMemcpyDeviceToHost));
  if (failed || count != n * k || sum != want_sum) {
    std::printf("malloc'd list: %d failed mallocs, %d nodes (want %d), sum %lld (want %lld)\n",
                failed, count, n * k, sum, want_sum);
    ++failures;
  }

  std::vector<int> len(n), seed(n);
  for (int i = 0; i < n; ++i) {
    len[i] = rng.Int(1, 64);
    seed[i] = rng.Int(-500, 500);
  }
  int *d_len, *d_seed;
  long long* d_sums;
  CHECK(cudaMalloc(&d_len, n * sizeof(int)));
  CHECK(cudaMalloc(&d_seed, n * sizeof(int)));
  CHECK(cudaMalloc(&d_sums, n * sizeof(long long)));
  CHECK(cudaMemcpy(d_len, len.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_seed, seed.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  for (int round = 0; round < 3; ++round) {  // what was deleted is there for the next round
    ArraysAcrossThreads<<<blocks, threads>>>(d_len, d_seed, d_sums, n);
    CHECK(cudaGetLastError());
  }
  std::vector<long long> sums(n);
  CHECK(cudaMemcpy(sums.data(), d_sums, n * sizeof(long long), cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int i = 0; i < n; ++i) {
    const int p = i ^ 1;
    if (p >= n) continue;
    const long long want = 1ll * len[p] * seed[p] + 1ll * len[p] * (len[p] - 1) / 2;
    wrong += sums[i] != want;
  }
  if (wrong) std::printf("new[] across threads: %d of %d sums wrong\n", wrong, n);
  failures += wrong != 0;
  CHECK(cudaDeviceSynchronize());
  return Finish(failures, "device_heap");
}
