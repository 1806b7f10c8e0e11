// tests/cuda/kernels/ipc.cu - CUDA IPC between two processes of one program, as PyTorch's
// multiprocessing shares tensors: the parent exports an allocation (cudaIpcGetMemHandle) and an
// interprocess event it records after a long kernel still running on the allocation, and starts
// a child of itself with both handles; the child opens them, makes its stream wait for the event
// (so it must see the kernel's results, not the data before it), transforms the data in place,
// records the event in turn (the parent's own wait on it then follows the child's record) and
// closes it; the parent checks the result against the CPU. Under Remora the two processes
// are two sessions of one tenant.
//
// The child opens both handles and readies its kernel before the parent launches its own, and
// acts the moment the parent has recorded the event (a byte on a pipe each way), so the child's
// read overlaps the parent's kernel unless the wait holds it back.
//
// Usage: ipc [-n N] [-k STEPS]
//        (the parent; it runs `ipc -child MEM EVENT N SEED K READY_FD GO_FD` itself)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common.h"

extern char** environ;

// A hash chain of k steps per element, which the compiler cannot shorten: the kernel is long.
__host__ __device__ unsigned Chain(unsigned h, int k) {
  for (int j = 0; j < k; ++j) h = h * 1664525u + 1013904223u;
  return h;
}

__global__ void Slow(float* v, int n, int k) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    v[i] = 2 * v[i] + static_cast<float>(Chain(i, k) & 7);
}

__global__ void Copy(float* to, const float* from, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    to[i] = from[i];
}

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

// What the parent's Slow kernel leaves.
static std::vector<float> AfterSlow(int n, long seed, int k) {
  std::vector<float> v = Data(n, seed);
  for (int i = 0; i < n; ++i) v[i] = 2 * v[i] + static_cast<float>(Chain(i, k) & 7);
  return v;
}

template <class Handle>
static std::string Hex(const Handle& h) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : h.reserved) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

template <class Handle>
static Handle FromHex(const char* s) {
  Handle h{};
  REQUIRE(std::strlen(s) == 2 * sizeof h.reserved);
  for (size_t i = 0; i < sizeof h.reserved; ++i)
    h.reserved[i] = static_cast<char>(std::stoi(std::string(s + 2 * i, 2), nullptr, 16));
  return h;
}

static void Signal(int fd) {
  const char byte = 1;
  REQUIRE(write(fd, &byte, 1) == 1);
}

static void Await(int fd) {
  char byte = 0;
  REQUIRE(read(fd, &byte, 1) == 1);
}

static int Child(const char* mem, const char* event, int n, long seed, int k, int ready, int go) {
  const std::vector<float> want = AfterSlow(n, seed, k);
  float* d = nullptr;
  CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&d), FromHex<cudaIpcMemHandle_t>(mem),
                             cudaIpcMemLazyEnablePeerAccess));
  cudaEvent_t done;
  CHECK(cudaIpcOpenEventHandle(&done, FromHex<cudaIpcEventHandle_t>(event)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* mine = nullptr;
  CHECK(cudaMalloc(&mine, n * sizeof(float)));
  Copy<<<1, 128, 0, s>>>(mine, mine, n);  // its module is loaded before the race
  CHECK(cudaStreamSynchronize(s));
  Signal(ready);
  Await(go);
  CHECK(cudaStreamWaitEvent(s, done, 0));  // the parent's kernel is still running
  // A kernel reads it: a kernel, not a copy, so that nothing but the wait orders it after the
  // parent's (on a GPU, or the emulated GPU's shared cores, both could run at once).
  Copy<<<1, 128, 0, s>>>(mine, d, n);  // one block: it reads what every block wrote
  CHECK(cudaGetLastError());
  std::vector<float> got(n);
  CHECK(cudaMemcpyAsync(got.data(), mine, n * sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  int failures = 0;
  for (int i = 0; i < n; ++i) failures += got[i] != want[i];
  if (failures) std::printf("the child read %d values from before the parent's kernel\n", failures);
  CHECK(cudaEventSynchronize(done));
  CHECK(cudaEventQuery(done));
  // The child records the parent's event in turn, after a long kernel of its own and the
  // squaring, and tells the parent: the parent's wait on its own event must follow this record
  // (nothing else orders its read after the squares).
  Slow<<<64, 128, 0, s>>>(mine, n, k);
  Square<<<32, 128, 0, s>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, s));
  Signal(ready);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(mine));
  cudaIpcMemHandle_t bogus{};
  std::memset(bogus.reserved, 0x5a, sizeof bogus.reserved);
  void* nothing = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&nothing, bogus, cudaIpcMemLazyEnablePeerAccess);
  REQUIRE(e != cudaSuccess);  // a handle that names nothing
  if (UnderRemora("the error for a handle that names nothing"))
    REQUIRE(e == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaIpcCloseMemHandle(d));
  return Finish(failures, "ipc child");
}

int main(int argc, char** argv) {
  if (argc == 9 && std::strcmp(argv[1], "-child") == 0)
    return Child(argv[2], argv[3], std::atoi(argv[4]), std::atol(argv[5]), std::atoi(argv[6]),
                 std::atoi(argv[7]), std::atoi(argv[8]));
  const int n = static_cast<int>(Flag(argc, argv, "n", 65536));
  const int k = static_cast<int>(Flag(argc, argv, "k", 400));
  const long seed = Flag(argc, argv, "seed", 5);
  const std::vector<float> host = Data(n, seed);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaDeviceSynchronize());
  cudaIpcMemHandle_t h;
  CHECK(cudaIpcGetMemHandle(&h, d));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t done;
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming | cudaEventInterprocess));
  cudaIpcEventHandle_t eh;
  CHECK(cudaIpcGetEventHandle(&eh, done));
  if (UnderRemora("opening a handle in the process that exported it")) {
    void* self = nullptr;
    EXPECT_CUDA(cudaIpcOpenMemHandle(&self, h, cudaIpcMemLazyEnablePeerAccess),
                cudaErrorDeviceUninitialized);
    (void)cudaGetLastError();
  }

  int ready[2], go[2];
  REQUIRE(pipe(ready) == 0 && pipe(go) == 0);
  const std::string hex = Hex(h), event_hex = Hex(eh), count = std::to_string(n),
                    seed_text = std::to_string(seed), steps = std::to_string(k),
                    ready_fd = std::to_string(ready[1]), go_fd = std::to_string(go[0]);
  char self_path[4096] = {};
  REQUIRE(readlink("/proc/self/exe", self_path, sizeof self_path - 1) > 0);
  char* child_argv[] = {self_path,
                        const_cast<char*>("-child"),
                        const_cast<char*>(hex.c_str()),
                        const_cast<char*>(event_hex.c_str()),
                        const_cast<char*>(count.c_str()),
                        const_cast<char*>(seed_text.c_str()),
                        const_cast<char*>(steps.c_str()),
                        const_cast<char*>(ready_fd.c_str()),
                        const_cast<char*>(go_fd.c_str()),
                        nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, self_path, nullptr, nullptr, child_argv, environ) == 0);
  Await(ready[0]);
  // The long kernel, then the event the child waits for, with no wait here.
  Slow<<<64, 128, 0, s>>>(d, n, k);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, s));
  Signal(go[1]);
  Await(ready[0]);  // the child recorded the event after its squaring
  CHECK(cudaEventSynchronize(done));
  std::vector<float> got(n);
  CHECK(cudaMemcpy(got.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  const std::vector<float> slow = AfterSlow(n, seed, k);
  int failures = 0;
  for (int i = 0; i < n; ++i) failures += !Near(got[i], slow[i] * slow[i], 1e-6);
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
  return Finish(failures, "ipc");
}
