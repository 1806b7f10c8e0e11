// tests/cuda/kernels/driver_by_path.cpp - a program that finds the CUDA driver itself, as
// frameworks do (Triton asks `ldconfig -p`), and opens it by its full path. Under `remora run`
// that path must still give Remora's driver: this opens the toolkit's own libcuda.so (NVIDIA's
// link stub, which fails every call natively) and checks that the driver it got initializes,
// sees a device and lives in Remora's stub directory (REMORA_STUB_DIR). Remora-only behaviour.
//
// With the argument "alias", it opens the same library through a symbolic link of another
// name: that is not a name to redirect, so Remora must stop the process before it runs
// anything (the test expects exit code 70 and the message naming the library).
#include <cuda.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  const char* toolkit = std::getenv("REMORA_TEST_TOOLKIT_LIBCUDA");
  const char* stub_dir = std::getenv("REMORA_STUB_DIR");
  if (!toolkit || !stub_dir) {
    std::printf("FAIL: REMORA_TEST_TOOLKIT_LIBCUDA and REMORA_STUB_DIR must be set\n");
    return 1;
  }
  std::string path = toolkit;
  if (argc > 1 && std::strcmp(argv[1], "alias") == 0) {
    path = "/tmp/remora-alias-" + std::to_string(getpid()) + ".so";
    unlink(path.c_str());
    if (symlink(toolkit, path.c_str()) != 0) {
      std::printf("FAIL: symlink %s\n", path.c_str());
      return 1;
    }
    // A child opens it, and is stopped; this process removes the link and exits as it did.
    std::fflush(stdout);
    const pid_t child = fork();
    if (child < 0) {
      std::printf("FAIL: fork\n");
      unlink(path.c_str());
      return 1;
    }
    if (child > 0) {
      int status = 0;
      const bool waited = waitpid(child, &status, 0) == child;
      unlink(path.c_str());
      return waited && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
  }
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (argc > 1) unlink(path.c_str());
  if (lib == nullptr) {
    std::printf("FAIL: dlopen(%s): %s\n", path.c_str(), dlerror());
    return 1;
  }
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CUresult (*)(int*)>(dlsym(lib, "cuDeviceGetCount"));
  if (!init || !count) {
    std::printf("FAIL: no cuInit/cuDeviceGetCount\n");
    return 1;
  }
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(init), &info) ||
      std::strncmp(info.dli_fname, stub_dir, std::strlen(stub_dir)) != 0) {
    std::printf("FAIL: cuInit comes from %s, not Remora's %s\n", info.dli_fname, stub_dir);
    return 1;
  }
  int n = 0;
  CUresult r = init(0);
  if (r == CUDA_SUCCESS) r = count(&n);
  if (r != CUDA_SUCCESS || n < 1) {
    std::printf("FAIL: cuInit/cuDeviceGetCount -> %d, %d devices\n", int(r), n);
    return 1;
  }
  std::printf("PASS driver_by_path (%s gave Remora's driver, %d device)\n", path.c_str(), n);
  return 0;
}
