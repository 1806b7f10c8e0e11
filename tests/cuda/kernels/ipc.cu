// tests/cuda/kernels/ipc.cu - CUDA IPC between two processes of one program, as PyTorch's
// multiprocessing shares tensors: the parent exports an allocation (cudaIpcGetMemHandle) and
// starts a child of itself with the handle; the child opens it (cudaIpcOpenMemHandle), checks
// the parent's data, transforms it in place with a kernel and closes it; the parent checks the
// result against the CPU. Under Remora the two processes are two sessions of one tenant.
//
// Usage: ipc                  (the parent; it runs `ipc -child HEX-HANDLE N SEED` itself)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common.h"

extern char** environ;

__global__ void Square(float* v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    v[i] = v[i] * v[i];
}

static std::vector<float> Data(int n, long seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.Uniform(-3, 3);
  return v;
}

static std::string Hex(const cudaIpcMemHandle_t& h) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : h.reserved) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

static cudaIpcMemHandle_t FromHex(const char* s) {
  cudaIpcMemHandle_t h{};
  REQUIRE(std::strlen(s) == 2 * sizeof h.reserved);
  for (size_t i = 0; i < sizeof h.reserved; ++i)
    h.reserved[i] = static_cast<char>(std::stoi(std::string(s + 2 * i, 2), nullptr, 16));
  return h;
}

static int Child(const char* hex, int n, long seed) {
  const std::vector<float> want = Data(n, seed);
  float* d = nullptr;
  CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&d), FromHex(hex),
                             cudaIpcMemLazyEnablePeerAccess));
  std::vector<float> got(n);
  CHECK(cudaMemcpy(got.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  int failures = 0;
  for (int i = 0; i < n; ++i) failures += got[i] != want[i];
  Square<<<32, 128>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaIpcMemHandle_t bogus{};
  std::memset(bogus.reserved, 0x5a, sizeof bogus.reserved);
  void* nothing = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&nothing, bogus, cudaIpcMemLazyEnablePeerAccess);
  REQUIRE(e != cudaSuccess);  // a handle that names nothing
  if (UnderRemora("the error for a handle that names nothing"))
    REQUIRE(e == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  CHECK(cudaIpcCloseMemHandle(d));
  return Finish(failures, "ipc child");
}

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "-child") == 0)
    return Child(argv[2], std::atoi(argv[3]), std::atol(argv[4]));
  const int n = static_cast<int>(Flag(argc, argv, "n", 100000));
  const long seed = Flag(argc, argv, "seed", 5);
  const std::vector<float> host = Data(n, seed);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaIpcMemHandle_t h;
  CHECK(cudaIpcGetMemHandle(&h, d));
  if (UnderRemora("opening a handle in the process that exported it")) {
    void* self = nullptr;
    EXPECT_CUDA(cudaIpcOpenMemHandle(&self, h, cudaIpcMemLazyEnablePeerAccess),
                cudaErrorDeviceUninitialized);
    (void)cudaGetLastError();
  }

  const std::string hex = Hex(h), count = std::to_string(n), seed_text = std::to_string(seed);
  char self_path[4096] = {};
  REQUIRE(readlink("/proc/self/exe", self_path, sizeof self_path - 1) > 0);
  char* child_argv[] = {self_path,
                        const_cast<char*>("-child"),
                        const_cast<char*>(hex.c_str()),
                        const_cast<char*>(count.c_str()),
                        const_cast<char*>(seed_text.c_str()),
                        nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, self_path, nullptr, nullptr, child_argv, environ) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  std::vector<float> got(n);
  CHECK(cudaMemcpy(got.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  int failures = 0;
  for (int i = 0; i < n; ++i) failures += !Near(got[i], host[i] * host[i], 1e-6);
  CHECK(cudaFree(d));
  return Finish(failures, "ipc");
}
