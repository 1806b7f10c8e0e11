// tests/cuda/kernels/device_printf.cu - device printf: integers, floats, strings and widths, in a
// fixed order.
//
// Every line comes from one thread per launch, so the output order is fixed;
// the harness compares stdout with device_printf.expected.
#include "common.h"

__global__ void hello(int launch) {
  printf("launch %d: hello from block %d thread %d\n", launch, blockIdx.x, threadIdx.x);
}

__global__ void formats(int i, float f, double d, long long ll, unsigned u) {
  if (threadIdx.x == 3 && blockIdx.x == 1) {
    printf("int %d neg %d hex %x char %c\n", i, -i, u, 'A' + i % 26);
    printf("float %.3f double %.6f sci %.2e\n", f, d, d * 1e10);
    printf("long %lld string %s padded [%5d] [%-5d]\n", ll, "remora", i, i);
    printf("star [%*d] [%-*d] [%.*f] [%*.*e] next %d\n", 6, i, 5, i, 2, d, 12, 3, d, i + 1);
  }
}

__global__ void sumAndPrint(const int* data, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += data[i];
  printf("sum of %d values = %d\n", n, s);
}

int main() {
  for (int launch = 0; launch < 3; ++launch) {
    hello<<<1, 1>>>(launch);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());  // flushes the device printf buffer in order
  }
  formats<<<2, 8>>>(42, 3.14159f, 2.718281828, -1234567890123ll, 0xbeefu);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  int host[10];
  for (int i = 0; i < 10; ++i) host[i] = i * i;
  int* dev;
  CHECK(cudaMalloc(&dev, sizeof(host)));
  CHECK(cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice));
  sumAndPrint<<<1, 1>>>(dev, 10);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(dev));
  std::fflush(stdout);
  return Finish(0, "device_printf");
}
