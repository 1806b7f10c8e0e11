// Kernels compiled at run time with NVIDIA's NVRTC, as the public samples' nvrtc_helper.h does
// it: a CUBIN for the device's own architecture (--gpu-architecture=sm_<major><minor>), loaded
// with cuModuleLoadData and launched with cuLaunchKernel; then PTX for the virtual architecture
// ("-arch" "compute_<major><minor>" as two options), loaded the same way. Each kernel's
// result against the CPU's on random data.
#include <cuda.h>
#include <nvrtc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common.h"
#include "cu_check.h"

namespace {

#define NVRTC_CHECK(call)                                                                 \
  do {                                                                                    \
    nvrtcResult r_ = (call);                                                              \
    if (r_ != NVRTC_SUCCESS) {                                                            \
      std::printf("FAIL: line %d: %s -> %s\n", __LINE__, #call, nvrtcGetErrorString(r_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

const char* kSource = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
template <int kStride>
__device__ int Strided(const int* v, int i) { return v[i * kStride]; }
extern "C" __global__ void gather(const int* v, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Strided<3>(v, i) - i;
}
)";

// Compiles kSource with `options`; the CUBIN (cubin = true) or the PTX it made.
std::vector<char> Compile(const std::vector<const char*>& options, bool cubin) {
  nvrtcProgram prog;
  NVRTC_CHECK(nvrtcCreateProgram(&prog, kSource, "runtime.cu", 0, nullptr, nullptr));
  const nvrtcResult compiled = nvrtcCompileProgram(prog, int(options.size()), options.data());
  size_t log_size = 0;
  NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &log_size));
  std::string log(log_size, '\0');
  NVRTC_CHECK(nvrtcGetProgramLog(prog, log.data()));
  if (compiled != NVRTC_SUCCESS) std::printf("compile log:\n%s\n", log.c_str());
  NVRTC_CHECK(compiled);
  size_t size = 0;
  std::vector<char> code;
  if (cubin) {
    NVRTC_CHECK(nvrtcGetCUBINSize(prog, &size));
    code.resize(size);
    NVRTC_CHECK(nvrtcGetCUBIN(prog, code.data()));
  } else {
    NVRTC_CHECK(nvrtcGetPTXSize(prog, &size));
    code.resize(size);
    NVRTC_CHECK(nvrtcGetPTX(prog, code.data()));
  }
  NVRTC_CHECK(nvrtcDestroyProgram(&prog));
  REQUIRE(size > 0);
  return code;
}

// Loads `image` and checks both kernels on random data.
void RunBoth(const std::vector<char>& image, Rng& rng, const char* what) {
  CUmodule mod;
  CU_CHECK(cuModuleLoadData(&mod, image.data()));
  CUfunction saxpy, gather;
  CU_CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));
  CU_CHECK(cuModuleGetFunction(&gather, mod, "gather"));

  const int n = 3000;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(rng.Next() % 2000) / 100.0f - 10.0f;
    y[i] = float(rng.Next() % 2000) / 100.0f - 10.0f;
  }
  std::vector<int> v(3 * n), gathered(n);
  for (int& e : v) e = int(rng.Next() % 100000);
  CUdeviceptr dx, dy, dout, dv, dg;
  CU_CHECK(cuMemAlloc(&dx, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&dy, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&dout, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&dv, v.size() * sizeof(int)));
  CU_CHECK(cuMemAlloc(&dg, n * sizeof(int)));
  CU_CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(dv, v.data(), v.size() * sizeof(int)));
  float a = 2.5f;
  int count = n;
  void* saxpy_args[] = {&a, &dx, &dy, &dout, &count};
  void* gather_args[] = {&dv, &dg, &count};
  const unsigned blocks = (n + 127) / 128;
  CU_CHECK(cuLaunchKernel(saxpy, blocks, 1, 1, 128, 1, 1, 0, nullptr, saxpy_args, nullptr));
  CU_CHECK(cuLaunchKernel(gather, blocks, 1, 1, 128, 1, 1, 0, nullptr, gather_args, nullptr));
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemcpyDtoH(out.data(), dout, n * sizeof(float)));
  CU_CHECK(cuMemcpyDtoH(gathered.data(), dg, n * sizeof(int)));
  for (int i = 0; i < n; ++i) {
    const float want = a * x[i] + y[i];
    if (std::fabs(out[i] - want) > 1e-5f * std::fabs(want) + 1e-5f || gathered[i] != v[3 * i] - i) {
      std::printf("FAIL: %s: element %d: saxpy %g (want %g), gather %d (want %d)\n", what, i,
                  out[i], want, gathered[i], v[3 * i] - i);
      std::exit(1);
    }
  }
  for (CUdeviceptr p : {dx, dy, dout, dv, dg}) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuModuleUnload(mod));
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(uint64_t(Flag(argc, argv, "seed", 11)));
  CU_CHECK(cuInit(0));
  CUdevice dev;
  CU_CHECK(cuDeviceGet(&dev, 0));
  int major = 0, minor = 0;
  CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CUcontext ctx;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_CHECK(cuCtxSetCurrent(ctx));

  const std::string real = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  RunBoth(Compile({real.c_str(), "-default-device"}, true), rng, "CUBIN for the device");

  const std::string virt = "compute_" + std::to_string(major * 10 + minor);
  RunBoth(Compile({"-arch", virt.c_str()}, false), rng, "PTX for its virtual architecture");

  CU_CHECK(cuDevicePrimaryCtxRelease(dev));
  std::printf("PASS\n");
  return 0;
}
