// tests/cuda/kernels/device_assert.cu - assert() in device code: the failing threads' lines
// reach the program's output and the error is cudaErrorAssert, sticky.
//
// The program's stdout and stderr are captured in a file around the launch (a GPU's driver
// prints the lines itself; which stream it uses is not the program's to choose), then checked.
// Exits 0 and prints PASS when two lines name the failing threads and the expression, and
// the synchronisation, cudaGetLastError and a later copy all say cudaErrorAssert.
#include <unistd.h>

#include <cassert>
#include <string>

#include "common.h"

__global__ void checkSmall(const int* v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(v[i] < 100);
}

int main() {
  const int n = 128;
  int h[n];
  for (int i = 0; i < n; ++i) h[i] = i % 50;
  h[64 + 5] = 500;  // block 1, threads 5 and 20: one warp, two lines
  h[64 + 20] = 1000;
  int* dev;
  CHECK(cudaMalloc(&dev, sizeof h));
  CHECK(cudaMemcpy(dev, h, sizeof h, cudaMemcpyHostToDevice));

  std::fflush(stdout);
  std::fflush(stderr);
  char path[] = "/tmp/device_assert_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const int out = dup(1), err = dup(2);
  dup2(fd, 1);
  dup2(fd, 2);
  checkSmall<<<2, 64>>>(dev);
  const cudaError_t sync = cudaDeviceSynchronize();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(out, 1);
  dup2(err, 2);
  close(out);
  close(err);

  std::string text;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(got));
  close(fd);
  unlink(path);
  std::printf("captured:\n%s", text.c_str());

  const cudaError_t last = cudaGetLastError();
  int back = 0;
  const cudaError_t copy = cudaMemcpy(&back, dev, sizeof back, cudaMemcpyDeviceToHost);
  std::printf("sync %s, last %s, copy %s\n", cudaGetErrorName(sync), cudaGetErrorName(last),
              cudaGetErrorName(copy));
  int failures = (sync != cudaErrorAssert) + (last != cudaErrorAssert) + (copy != cudaErrorAssert);
  const char* expr = "Assertion `v[i] < 100` failed.";
  for (const char* where :
       {"block: [1,0,0], thread: [5,0,0]", "block: [1,0,0], thread: [20,0,0]"}) {
    const size_t at = text.find(where);
    if (at == std::string::npos || text.find(expr, at) == std::string::npos) {
      std::printf("FAIL: no line for %s\n", where);
      ++failures;
    }
  }
  if (text.find("device_assert.cu:") == std::string::npos) {
    std::printf("FAIL: the lines do not name the file\n");
    ++failures;
  }
  return Finish(failures, "device_assert");
}
