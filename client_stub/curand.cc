// client_stub/curand.cc - libcurand.so.10: NVIDIA's cuRAND, its device generators served on
// the host on the emulated GPU.
//
// NVIDIA's libcurand carries its kernels as machine code for GPUs and compute_121 PTX. The
// emulated GPU runs that PTX in its interpreter; NVIDIA's host generators make the same kind
// of sequences at the host's native speed. This library stands in the stub directory for
// NVIDIA's and opens NVIDIA's own (found beside the program's other CUDA libraries or in the
// toolkit). On a GPU every call goes to it unchanged. On the emulated GPU a device generator is
// one of NVIDIA's host generators of the same type: each generation fills a host buffer, then
// copies it to the device on the generator's stream, so stream order holds as for a
// generator's kernel. Host generators, distributions, direction vectors and versions are
// NVIDIA's.
#pragma GCC visibility push(default)
#include <curand.h>
#pragma GCC visibility pop

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "client_stub/no_destructor.h"
#include "client_stub/nvidia_library.h"

namespace remora::client_stub {
namespace {

// NVIDIA's libcurand.so.10, opened once; null if none, said once.
void* Nvidia() {
  static void* const lib =
      OpenNvidiaLibrary("libcurand.so.10", "REMORA_NVIDIA_CURAND", "nvidia/curand/lib",
                        reinterpret_cast<void*>(&Nvidia),
                        "cuRAND's calls fail with CURAND_STATUS_INITIALIZATION_FAILED");
  return lib;
}

// Calls NVIDIA's `name` with the arguments that follow.
#define REMORA_NVIDIA(name, ...)                                                               \
  REMORA_CALL_NVIDIA(::remora::client_stub::Nvidia, CURAND_STATUS_INITIALIZATION_FAILED, name, \
                     __VA_ARGS__)

// A device generator served on the host: the curandGenerator_t handed out points at it.
struct HostServed {
  curandGenerator_t host = nullptr;  // NVIDIA's host generator
  cudaStream_t stream = nullptr;
};

// The live ones; any other handle is NVIDIA's own and goes to NVIDIA's library as it is.
class Registry {
 public:
  curandGenerator_t Add(curandGenerator_t host) {
    auto g = std::make_unique<HostServed>();
    g->host = host;
    auto* handle = reinterpret_cast<curandGenerator_t>(g.get());
    std::lock_guard lock(mu_);
    live_.emplace(handle, std::move(g));
    return handle;
  }
  // The generator behind `handle`, or null if it is NVIDIA's. The pointer stays valid until
  // Remove: a generator is not used while it is destroyed.
  HostServed* Find(curandGenerator_t handle) {
    std::lock_guard lock(mu_);
    auto it = live_.find(handle);
    return it == live_.end() ? nullptr : it->second.get();
  }
  std::unique_ptr<HostServed> Remove(curandGenerator_t handle) {
    std::lock_guard lock(mu_);
    auto node = live_.extract(handle);
    return node ? std::move(node.mapped()) : nullptr;
  }

 private:
  std::mutex mu_;
  std::unordered_map<curandGenerator_t, std::unique_ptr<HostServed>> live_;
};

Registry& Generators() {
  static NoDestructor<Registry> r;  // generators may be used during static teardown
  return *r;
}

// The handle to give NVIDIA's library for `g`: its host generator if served here.
curandGenerator_t Real(curandGenerator_t g) {
  HostServed* s = Generators().Find(g);
  return s ? s->host : g;
}

// Generates `n` values into device memory `out` through host generator `s->host` (`generate`
// fills a host buffer), then copies them on the generator's stream. A destination the copy
// refuses (not device memory of this process) is a failed launch, as for cuRAND's kernel.
template <class T, class Generate>
curandStatus_t FillOnHost(HostServed* s, T* out, size_t n, Generate&& generate) {
  std::vector<T> buffer(n);
  if (curandStatus_t st = generate(s->host, buffer.data())) return st;
  if (n == 0) return CURAND_STATUS_SUCCESS;
  // A copy from pageable memory has read its source when it returns.
  if (cudaMemcpyAsync(out, buffer.data(), n * sizeof(T), cudaMemcpyHostToDevice, s->stream) !=
      cudaSuccess) {
    (void)cudaGetLastError();  // cuRAND's own runtime would have kept it from the program
    return CURAND_STATUS_LAUNCH_FAILURE;
  }
  return CURAND_STATUS_SUCCESS;
}

}  // namespace
}  // namespace remora::client_stub

namespace cs = remora::client_stub;
using cs::HostServed;

// One generation entry point: on the host for a generator served here, else NVIDIA's.
#define REMORA_GENERATE(name, T, ...)                                      \
  if (HostServed* s = cs::Generators().Find(g))                            \
    return cs::FillOnHost(s, out, n, [&](curandGenerator_t host, T* buf) { \
      return REMORA_NVIDIA(name, host, buf, n __VA_OPT__(, ) __VA_ARGS__); \
    });                                                                    \
  return REMORA_NVIDIA(name, g, out, n __VA_OPT__(, ) __VA_ARGS__)

extern "C" {

curandStatus_t curandCreateGenerator(curandGenerator_t* generator, curandRngType_t type) {
  if (generator == nullptr) return CURAND_STATUS_NOT_INITIALIZED;
  if (!cs::OnEmulatedGpu()) return REMORA_NVIDIA(curandCreateGenerator, generator, type);
  curandGenerator_t host = nullptr;
  if (curandStatus_t st = REMORA_NVIDIA(curandCreateGeneratorHost, &host, type)) return st;
  *generator = cs::Generators().Add(host);
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandCreateGeneratorHost(curandGenerator_t* generator, curandRngType_t type) {
  return REMORA_NVIDIA(curandCreateGeneratorHost, generator, type);
}
curandStatus_t curandDestroyGenerator(curandGenerator_t g) {
  if (std::unique_ptr<HostServed> s = cs::Generators().Remove(g))
    return REMORA_NVIDIA(curandDestroyGenerator, s->host);
  return REMORA_NVIDIA(curandDestroyGenerator, g);
}
curandStatus_t curandGetVersion(int* version) {
  return REMORA_NVIDIA(curandGetVersion, version);
}
curandStatus_t curandGetProperty(libraryPropertyType type, int* value) {
  return REMORA_NVIDIA(curandGetProperty, type, value);
}
curandStatus_t curandSetStream(curandGenerator_t g, cudaStream_t stream) {
  if (HostServed* s = cs::Generators().Find(g)) {
    s->stream = stream;
    return CURAND_STATUS_SUCCESS;
  }
  return REMORA_NVIDIA(curandSetStream, g, stream);
}
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t g, unsigned long long seed) {
  return REMORA_NVIDIA(curandSetPseudoRandomGeneratorSeed, cs::Real(g), seed);
}
curandStatus_t curandSetGeneratorOffset(curandGenerator_t g, unsigned long long offset) {
  return REMORA_NVIDIA(curandSetGeneratorOffset, cs::Real(g), offset);
}
curandStatus_t curandSetGeneratorOrdering(curandGenerator_t g, curandOrdering_t order) {
  return REMORA_NVIDIA(curandSetGeneratorOrdering, cs::Real(g), order);
}
curandStatus_t curandSetQuasiRandomGeneratorDimensions(curandGenerator_t g, unsigned int dims) {
  return REMORA_NVIDIA(curandSetQuasiRandomGeneratorDimensions, cs::Real(g), dims);
}
curandStatus_t curandGenerateSeeds(curandGenerator_t g) {
  return REMORA_NVIDIA(curandGenerateSeeds, cs::Real(g));
}
curandStatus_t curandGenerate(curandGenerator_t g, unsigned int* out, size_t n) {
  REMORA_GENERATE(curandGenerate, unsigned int);
}
curandStatus_t curandGenerateLongLong(curandGenerator_t g, unsigned long long* out, size_t n) {
  REMORA_GENERATE(curandGenerateLongLong, unsigned long long);
}
curandStatus_t curandGenerateUniform(curandGenerator_t g, float* out, size_t n) {
  REMORA_GENERATE(curandGenerateUniform, float);
}
curandStatus_t curandGenerateUniformDouble(curandGenerator_t g, double* out, size_t n) {
  REMORA_GENERATE(curandGenerateUniformDouble, double);
}
curandStatus_t curandGenerateNormal(curandGenerator_t g, float* out, size_t n, float mean,
                                    float stddev) {
  REMORA_GENERATE(curandGenerateNormal, float, mean, stddev);
}
curandStatus_t curandGenerateNormalDouble(curandGenerator_t g, double* out, size_t n, double mean,
                                          double stddev) {
  REMORA_GENERATE(curandGenerateNormalDouble, double, mean, stddev);
}
curandStatus_t curandGenerateLogNormal(curandGenerator_t g, float* out, size_t n, float mean,
                                       float stddev) {
  REMORA_GENERATE(curandGenerateLogNormal, float, mean, stddev);
}
curandStatus_t curandGenerateLogNormalDouble(curandGenerator_t g, double* out, size_t n,
                                             double mean, double stddev) {
  REMORA_GENERATE(curandGenerateLogNormalDouble, double, mean, stddev);
}
curandStatus_t curandGeneratePoisson(curandGenerator_t g, unsigned int* out, size_t n,
                                     double lambda) {
  REMORA_GENERATE(curandGeneratePoisson, unsigned int, lambda);
}
curandStatus_t curandGeneratePoissonMethod(curandGenerator_t g, unsigned int* out, size_t n,
                                           double lambda, curandMethod_t method) {
  REMORA_GENERATE(curandGeneratePoissonMethod, unsigned int, lambda, method);
}
curandStatus_t curandCreatePoissonDistribution(double lambda,
                                               curandDiscreteDistribution_t* distribution) {
  return REMORA_NVIDIA(curandCreatePoissonDistribution, lambda, distribution);
}
curandStatus_t curandDestroyDistribution(curandDiscreteDistribution_t distribution) {
  return REMORA_NVIDIA(curandDestroyDistribution, distribution);
}
curandStatus_t curandGetDirectionVectors32(curandDirectionVectors32_t* vectors[],
                                           curandDirectionVectorSet_t set) {
  return REMORA_NVIDIA(curandGetDirectionVectors32, vectors, set);
}
curandStatus_t curandGetDirectionVectors64(curandDirectionVectors64_t* vectors[],
                                           curandDirectionVectorSet_t set) {
  return REMORA_NVIDIA(curandGetDirectionVectors64, vectors, set);
}
curandStatus_t curandGetScrambleConstants32(unsigned int** constants) {
  return REMORA_NVIDIA(curandGetScrambleConstants32, constants);
}
curandStatus_t curandGetScrambleConstants64(unsigned long long** constants) {
  return REMORA_NVIDIA(curandGetScrambleConstants64, constants);
}

}  // extern "C"
