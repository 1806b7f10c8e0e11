// tests/cuda/kernels/streams_host.cu - streams and events without kernels: async copies, host
// callbacks, queries.
#include <atomic>
#include <vector>

#include "common.h"

struct CallbackLog {
  std::atomic<int> next{0};
  int order[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  cudaError_t status = cudaErrorUnknown;
  int checksum = -1;
};

struct HostStep {
  CallbackLog* log;
  int id;
  const unsigned char* data;  // when set, checksum the pinned buffer the stream just filled
  size_t n;
};

void CUDART_CB RecordStep(void* arg) {
  auto* step = static_cast<HostStep*>(arg);
  step->log->order[step->log->next++] = step->id;
  if (step->data != nullptr) {
    int sum = 0;
    for (size_t i = 0; i < step->n; ++i) sum += step->data[i];
    step->log->checksum = sum;
  }
}

void CUDART_CB StreamCallback(cudaStream_t, cudaError_t status, void* arg) {
  auto* step = static_cast<HostStep*>(arg);
  step->log->status = status;
  RecordStep(arg);
}

int main(int argc, char** argv) {
  size_t n = static_cast<size_t>(Flag(argc, argv, "n", 1 << 18));
  Rng rng(Flag(argc, argv, "seed", 19));
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::printf("mismatch: %s\n", what);
    failures += !ok;
  };

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  unsigned int flags = 0;
  CHECK(cudaStreamGetFlags(s2, &flags));
  expect(flags == cudaStreamNonBlocking, "stream flags");

  unsigned char *h_src, *h_dst, *d_a, *d_b;
  CHECK(cudaMallocHost(&h_src, n));
  CHECK(cudaMallocHost(&h_dst, n));
  CHECK(cudaMalloc(&d_a, n));
  CHECK(cudaMalloc(&d_b, n));
  int expected_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    h_src[i] = static_cast<unsigned char>(rng.Next());
    expected_sum += h_src[i];
  }
  std::memset(h_dst, 0, n);

  // s1: H2D, then host function 0; s2 waits for s1 through an event, copies D2D and D2H,
  // then host function 1 checksums the result, then a stream callback.
  CallbackLog log;
  HostStep steps[3] = {{&log, 0, nullptr, 0}, {&log, 1, h_dst, n}, {&log, 2, nullptr, 0}};
  cudaEvent_t copied, done;
  CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  CHECK(cudaEventCreate(&done));
  CHECK(cudaMemcpyAsync(d_a, h_src, n, cudaMemcpyHostToDevice, s1));
  CHECK(cudaLaunchHostFunc(s1, RecordStep, &steps[0]));
  CHECK(cudaEventRecord(copied, s1));
  CHECK(cudaStreamWaitEvent(s2, copied, 0));
  CHECK(cudaMemcpyAsync(d_b, d_a, n, cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaMemsetAsync(d_a, 0, n, s2));
  CHECK(cudaMemcpyAsync(h_dst, d_b, n, cudaMemcpyDeviceToHost, s2));
  CHECK(cudaLaunchHostFunc(s2, RecordStep, &steps[1]));
  CHECK(cudaStreamAddCallback(s2, StreamCallback, &steps[2], 0));
  CHECK(cudaEventRecord(done, s2));

  cudaError_t q = cudaStreamQuery(s2);
  if (q != cudaSuccess && q != cudaErrorNotReady)
    std::printf("cudaStreamQuery: %s\n", cudaGetErrorName(q));
  expect(q == cudaSuccess || q == cudaErrorNotReady, "cudaStreamQuery while busy");
  CHECK(cudaEventSynchronize(done));
  CHECK(cudaStreamSynchronize(s2));
  EXPECT_CUDA(cudaStreamQuery(s2), cudaSuccess);
  EXPECT_CUDA(cudaStreamQuery(s1), cudaSuccess);  // s2 waited on s1's event
  EXPECT_CUDA(cudaEventQuery(done), cudaSuccess);

  expect(log.next == 3, "all three host steps ran");
  expect(log.order[0] == 0 && log.order[1] == 1 && log.order[2] == 2, "host steps in stream order");
  expect(log.status == cudaSuccess, "stream callback status");
  expect(log.checksum == expected_sum, "host function saw the copied data");
  expect(std::memcmp(h_dst, h_src, n) == 0, "async copy chain");

  std::vector<unsigned char> zeros(n);
  CHECK(cudaMemcpy(zeros.data(), d_a, n, cudaMemcpyDeviceToHost));
  bool all_zero = true;
  for (unsigned char z : zeros) all_zero = all_zero && z == 0;
  expect(all_zero, "cudaMemsetAsync on s2");

  // The legacy default stream orders against s1 (a blocking stream).
  CHECK(cudaMemcpyAsync(d_a, h_src, n, cudaMemcpyHostToDevice, 0));
  CHECK(cudaMemcpyAsync(h_dst, d_a, n, cudaMemcpyDeviceToHost, s1));
  CHECK(cudaStreamSynchronize(s1));
  expect(std::memcmp(h_dst, h_src, n) == 0, "default stream then s1");

  CHECK(cudaEventDestroy(copied));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFreeHost(h_src));
  CHECK(cudaFreeHost(h_dst));
  return Finish(failures, "streams_host");
}
