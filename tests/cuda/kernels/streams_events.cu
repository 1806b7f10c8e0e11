// tests/cuda/kernels/streams_events.cu - kernels on several streams, timed and ordered with events
// and by stream priority.
#include <algorithm>
#include <vector>

#include "common.h"

constexpr int kStreams = 3;

// Enough dependent work per element that the kernel takes measurable time.
__global__ void iterate(float* data, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = data[i];
  for (int r = 0; r < rounds; ++r) v = v * 0.5f + 1.0f;
  data[i] = v;
}

__global__ void addOne(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

// Each block takes a ticket as it starts (the order the device dispatched blocks in), then
// holds its multiprocessor for `ns` nanoseconds of the device's clock.
__global__ void ticket(unsigned* order, unsigned* next, long long ns) {
  if (threadIdx.x != 0) return;
  order[blockIdx.x] = atomicAdd(next, 1u);
  long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// Stream priorities order blocks waiting to start: a low-priority grid four times what the
// device holds at once, each block 50 us long, then at once a small high-priority grid. The
// high grid's blocks must all start before the low grid's last (as they would not in order).
int PriorityOrder() {
  int least, greatest;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  if (least == greatest) {
    std::printf("priorities: one level only, nothing to order\n");
    return 0;
  }
  int sms = 0, per_sm = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ticket, 128, 0));
  const int resident = sms * per_sm, low_blocks = 4 * resident, high_blocks = resident / 2 + 1;
  cudaStream_t low, high;
  CHECK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  unsigned *order, *next;
  CHECK(cudaMalloc(&order, sizeof(unsigned) * (low_blocks + high_blocks)));
  CHECK(cudaMalloc(&next, sizeof(unsigned)));
  CHECK(cudaMemset(next, 0, sizeof(unsigned)));
  CHECK(cudaDeviceSynchronize());
  const long long block_ns = 50 * 1000;
  ticket<<<low_blocks, 128, 0, low>>>(order, next, block_ns);
  ticket<<<high_blocks, 128, 0, high>>>(order + low_blocks, next, block_ns);
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> t(low_blocks + high_blocks);
  CHECK(cudaMemcpy(t.data(), order, sizeof(unsigned) * t.size(), cudaMemcpyDeviceToHost));
  const unsigned low_last = *std::max_element(t.begin(), t.begin() + low_blocks);
  const unsigned high_last = *std::max_element(t.begin() + low_blocks, t.end());
  std::printf("priorities %d..%d: %d low blocks, last started %u-th; %d high blocks, last %u-th\n",
              least, greatest, low_blocks, low_last, high_blocks, high_last);
  for (cudaStream_t s : {low, high}) CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(order));
  CHECK(cudaFree(next));
  return high_last < low_last ? 0 : 1;
}

float HostIterate(float v, int rounds) {
  for (int r = 0; r < rounds; ++r) v = v * 0.5f + 1.0f;
  return v;
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 2048));
  int rounds = static_cast<int>(Flag(argc, argv, "rounds", 20));
  Rng rng(Flag(argc, argv, "seed", 17));
  cudaStream_t streams[kStreams];
  cudaEvent_t start[kStreams], stop[kStreams];
  float* dev[kStreams];
  float* host[kStreams];
  std::vector<float> init(n);
  for (float& v : init) v = rng.Uniform(-100, 100);
  for (int s = 0; s < kStreams; ++s) {
    CHECK(cudaStreamCreate(&streams[s]));
    CHECK(cudaEventCreate(&start[s]));
    CHECK(cudaEventCreate(&stop[s]));
    CHECK(cudaMalloc(&dev[s], n * sizeof(float)));
    CHECK(cudaMallocHost(&host[s], n * sizeof(float)));
  }
  int grid = (n + 127) / 128;
  for (int s = 0; s < kStreams; ++s) {
    CHECK(cudaMemcpyAsync(dev[s], init.data(), n * sizeof(float), cudaMemcpyHostToDevice,
                          streams[s]));
    CHECK(cudaEventRecord(start[s], streams[s]));
    iterate<<<grid, 128, 0, streams[s]>>>(dev[s], n, rounds * (s + 1));
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop[s], streams[s]));
  }
  // Stream 2 adds one to stream 0's buffer, but only after stream 0's kernel.
  CHECK(cudaStreamWaitEvent(streams[2], stop[0], 0));
  addOne<<<grid, 128, 0, streams[2]>>>(dev[0], n);
  CHECK(cudaGetLastError());
  cudaEvent_t after_add;
  CHECK(cudaEventCreate(&after_add));
  CHECK(cudaEventRecord(after_add, streams[2]));
  CHECK(cudaStreamWaitEvent(streams[0], after_add, 0));
  for (int s = 0; s < kStreams; ++s)
    CHECK(cudaMemcpyAsync(host[s], dev[s], n * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
  for (int s = 0; s < kStreams; ++s) CHECK(cudaStreamSynchronize(streams[s]));

  int failures = 0;
  for (int s = 0; s < kStreams; ++s) {
    CHECK(cudaEventSynchronize(stop[s]));
    EXPECT_CUDA(cudaEventQuery(stop[s]), cudaSuccess);
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start[s], stop[s]));
    std::printf("stream %d: kernel of %d rounds took %.3f ms\n", s, rounds * (s + 1), ms);
    if (!(ms > 0)) {
      std::printf("elapsed time %f is not positive\n", ms);
      ++failures;
    }
    for (int i = 0; i < n; ++i) {
      float ref = HostIterate(init[i], rounds * (s + 1)) + (s == 0 ? 1.0f : 0.0f);
      failures += !Near(host[s][i], ref, 1e-5);
    }
  }
  // Events on one stream are ordered: start <= stop, and the later span is longer.
  float to_stop = 0, to_add = 0;
  CHECK(cudaEventElapsedTime(&to_stop, start[0], stop[0]));
  CHECK(cudaEventElapsedTime(&to_add, start[0], after_add));
  if (!(to_add >= to_stop)) {
    std::printf("event order: start->after_add %.3f ms < start->stop %.3f ms\n", to_add, to_stop);
    ++failures;
  }

  CHECK(cudaEventDestroy(after_add));
  for (int s = 0; s < kStreams; ++s) {
    CHECK(cudaEventDestroy(start[s]));
    CHECK(cudaEventDestroy(stop[s]));
    CHECK(cudaStreamDestroy(streams[s]));
    CHECK(cudaFree(dev[s]));
    CHECK(cudaFreeHost(host[s]));
  }
  failures += PriorityOrder();
  return Finish(failures, "streams_events");
}
