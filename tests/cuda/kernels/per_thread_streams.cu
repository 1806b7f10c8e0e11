// tests/cuda/kernels/per_thread_streams.cu - per-thread default streams as a GPU runs them.
//
// Built twice: with `--default-stream per-thread` (then every call without a stream, `<<<>>>`
// included, goes to the calling thread's default stream through the _ptsz/_ptds entry points),
// and without it, where the program names cudaStreamPerThread itself. Checked:
//   - two host threads' default streams run at once: each thread's kernel raises its flag and
//     waits (up to 10 s of the GPU's global timer) for the other's, so each sees the other's
//     flag only if both kernels were on the device together;
//   - a thread's default stream stays ordered with the legacy stream: a kernel on
//     cudaStreamLegacy sees what a slow kernel enqueued before it on the per-thread stream
//     wrote, and a later per-thread kernel sees what the legacy one wrote;
//   - built for per-thread default streams, a synchronous copy is one thread's: it waits for
//     its own thread's default stream, not another's kernel that waits for it;
//   - eight threads each copy in, transform and copy out random data on their own default
//     stream (half of them reading back with a synchronous cudaMemcpy), exit, and their
//     results match the host's.
// Flags: -seed <n>.
#include <thread>
#include <vector>

#include "common.h"

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
constexpr cudaStream_t kOwn = 0;  // the null stream is the thread's own
#else
const cudaStream_t kOwn = cudaStreamPerThread;
#endif

__device__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Raises flags[me], then waits for flags[other]; seen[me] = 1 if it came within the wait.
__global__ void Meet(volatile int* flags, int me, int other, int* seen) {
  flags[me] = 1;
  __threadfence_system();
  const unsigned long long until = GlobalNs() + 10ull * 1000 * 1000 * 1000;
  int got = 0;
  while (!(got = flags[other]) && GlobalNs() < until) {
  }
  seen[me] = got;
}

// Spins `ns` of the global timer, then writes `value`.
__global__ void SlowWrite(int* out, int value, unsigned long long ns) {
  const unsigned long long until = GlobalNs() + ns;
  while (GlobalNs() < until) {
  }
  *out = value;
}

__global__ void Raise(volatile int* flag) {
  *flag = 1;
}

__global__ void CopyPlus(const int* in, int* out, int add) {
  *out = *in + add;
}

__global__ void Transform(const float* x, float* y, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] * x[i] + 1.0f;
}

// Launches on the thread's default stream: with no stream named where it is the null stream.
template <typename... Args, typename... Given>
void LaunchOwn(void (*k)(Args...), dim3 grid, dim3 block, Given... args) {
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  k<<<grid, block>>>(args...);
#else
  k<<<grid, block, 0, cudaStreamPerThread>>>(args...);
#endif
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 23));
  int failures = 0;

  // Two threads' default streams at once.
  int *flags, *seen;
  CHECK(cudaMalloc(&flags, 2 * sizeof(int)));
  CHECK(cudaMalloc(&seen, 2 * sizeof(int)));
  CHECK(cudaMemset(flags, 0, 2 * sizeof(int)));
  CHECK(cudaMemset(seen, 0, 2 * sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  {
    std::vector<std::thread> meet;
    for (int me = 0; me < 2; ++me)
      meet.emplace_back([=] {
        LaunchOwn(Meet, 1, 1, static_cast<volatile int*>(flags), me, 1 - me, seen);
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(kOwn));
      });
    for (std::thread& t : meet) t.join();
  }
  int both[2] = {0, 0};
  CHECK(cudaMemcpy(both, seen, sizeof both, cudaMemcpyDeviceToHost));
  if (!both[0] || !both[1]) {
    std::printf("two threads' default streams did not run at once (saw %d, %d)\n", both[0],
                both[1]);
    ++failures;
  }

  // Ordered with the legacy stream, both ways.
  int *a, *b, *c;
  CHECK(cudaMalloc(&a, sizeof(int)));
  CHECK(cudaMalloc(&b, sizeof(int)));
  CHECK(cudaMalloc(&c, sizeof(int)));
  const int value = rng.Int(1, 1 << 20);
  std::thread([&] {
    LaunchOwn(SlowWrite, 1, 1, a, value, 50ull * 1000 * 1000);
    CHECK(cudaGetLastError());
    CopyPlus<<<1, 1, 0, cudaStreamLegacy>>>(a, b, 1);  // waits for the per-thread stream
    CHECK(cudaGetLastError());
    LaunchOwn(CopyPlus, 1, 1, static_cast<const int*>(b), c, 1);  // waits for the legacy one
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(kOwn));
  }).join();
  int got = 0;
  CHECK(cudaMemcpy(&got, c, sizeof got, cudaMemcpyDeviceToHost));
  if (got != value + 2) {
    std::printf("legacy ordering: got %d, want %d\n", got, value + 2);
    ++failures;
  }

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  // A synchronous copy of one thread does not wait for another thread's default stream: the
  // second thread's kernel waits for the flag the first raises after its copy.
  CHECK(cudaMemset(flags, 0, 2 * sizeof(int)));
  CHECK(cudaMemset(seen, 0, 2 * sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  {
    std::thread waiter([=] {
      LaunchOwn(Meet, 1, 1, static_cast<volatile int*>(flags), 0, 1, seen);
      CHECK(cudaGetLastError());
      CHECK(cudaStreamSynchronize(kOwn));
    });
    std::thread copier([=] {
      int one = 1;
      CHECK(cudaMemcpy(c, &one, sizeof one, cudaMemcpyHostToDevice));  // its own stream's
      LaunchOwn(Raise, 1, 1, static_cast<volatile int*>(flags + 1));
      CHECK(cudaGetLastError());
      CHECK(cudaStreamSynchronize(kOwn));
    });
    waiter.join();
    copier.join();
  }
  CHECK(cudaMemcpy(both, seen, sizeof(int), cudaMemcpyDeviceToHost));
  if (!both[0]) {
    std::printf("a synchronous copy waited for another thread's default stream\n");
    ++failures;
  }
#endif

  // Eight threads, each on its own default stream, then gone.
  constexpr int kThreads = 8, kN = 1 << 14;
  std::vector<std::vector<float>> in(kThreads, std::vector<float>(kN)), out(kThreads);
  std::vector<float> scale(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (float& v : in[t]) v = rng.Uniform(-2, 2);
    scale[t] = rng.Uniform(0.5f, 3);
  }
  {
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t)
      workers.emplace_back([&, t] {
        float *x, *y;
        out[t].resize(kN);
        CHECK(cudaMalloc(&x, kN * sizeof(float)));
        CHECK(cudaMalloc(&y, kN * sizeof(float)));
        CHECK(cudaMemcpyAsync(x, in[t].data(), kN * sizeof(float), cudaMemcpyHostToDevice, kOwn));
        LaunchOwn(Transform, 16, 128, static_cast<const float*>(x), y, kN, scale[t]);
        CHECK(cudaGetLastError());
        if (t % 2) {
          CHECK(cudaMemcpy(out[t].data(), y, kN * sizeof(float), cudaMemcpyDeviceToHost));
        } else {
          CHECK(
              cudaMemcpyAsync(out[t].data(), y, kN * sizeof(float), cudaMemcpyDeviceToHost, kOwn));
          CHECK(cudaStreamSynchronize(kOwn));
        }
        CHECK(cudaFree(x));
        CHECK(cudaFree(y));
      });
    for (std::thread& t : workers) t.join();
  }
  int wrong = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kN; ++i)
      wrong += !Near(out[t][i], scale[t] * in[t][i] * in[t][i] + 1.0f, 1e-5);
  if (wrong) {
    std::printf("threads' transforms: %d values wrong\n", wrong);
    ++failures;
  }
  CHECK(cudaDeviceSynchronize());
  return Finish(failures, "per_thread_streams");
}
