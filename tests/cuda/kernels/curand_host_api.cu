// tests/cuda/kernels/curand_host_api.cu - cuRAND's host API with device generators, as
// programs use it to fill device memory (-lcurand), on a non-default stream.
//
// Each generation is checked on the device's own results: uniform floats and doubles in (0, 1]
// with the moments of the uniform distribution, normals and log-normals with their mean and
// deviation, Poisson counts with their mean, raw 32-bit words with balanced bits, Sobol points
// all distinct; the same seed gives the same sequence again and another seed another; a kernel
// queued on the generator's stream before a generation sees its buffer as it was, and one after
// sees the numbers. A host generator fills host memory. An odd count of normals is refused as
// cuRAND documents. Statistical bounds are several standard errors wide (the test is seeded).
#include <curand.h>

#include <cmath>
#include <vector>

#include "common.h"

namespace {

int failures = 0;

const char* Name(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS:
      return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE:
      return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_LAUNCH_FAILURE:
      return "CURAND_STATUS_LAUNCH_FAILURE";
    default:
      return "another curandStatus_t";
  }
}
#define RAND_OK(call) STATUS_OK(call, CURAND_STATUS_SUCCESS, Name)
#define EXPECT_RAND(call, expected) EXPECT_STATUS(call, expected, Name)

// Copies `n` values of device memory `dev` to the host, after `stream`'s work.
template <class T>
std::vector<T> Down(const T* dev, size_t n, cudaStream_t stream) {
  std::vector<T> out(n);
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(out.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}

struct Moments {
  double mean = 0, sd = 0;
};
template <class T>
Moments Of(const std::vector<T>& v) {
  Moments m;
  for (T x : v) m.mean += double(x);
  m.mean /= double(v.size());
  for (T x : v) m.sd += (double(x) - m.mean) * (double(x) - m.mean);
  m.sd = std::sqrt(m.sd / double(v.size() - 1));
  return m;
}

void Expect(bool ok, const char* what, double got, double want) {
  if (!ok) {
    std::printf("FAIL %s: %.6g, want %.6g\n", what, got, want);
    ++failures;
  }
}

// out[i] = 2 * in[i] + 1 for every i: a kernel that reads the buffer where it stands in the
// stream.
__global__ void Affine(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}

__global__ void Fill(float* p, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

}  // namespace

int main() {
  int version = 0;
  RAND_OK(curandGetVersion(&version));
  REQUIRE(version >= 10000);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int n = 1 << 16;
  float *f, *g;
  double* d;
  unsigned int* u;
  CHECK(cudaMalloc(&f, n * sizeof(float)));
  CHECK(cudaMalloc(&g, n * sizeof(float)));
  CHECK(cudaMalloc(&d, n * sizeof(double)));
  CHECK(cudaMalloc(&u, n * sizeof(unsigned int)));

  curandGenerator_t gen;
  RAND_OK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT));
  RAND_OK(curandSetStream(gen, stream));
  RAND_OK(curandSetPseudoRandomGeneratorSeed(gen, 1234));

  // Stream order: a kernel before the generation reads the sentinel, one after the numbers.
  Fill<<<n / 256, 256, 0, stream>>>(f, -3.0f, n);
  Affine<<<n / 256, 256, 0, stream>>>(f, g, n);
  RAND_OK(curandGenerateUniform(gen, f, n));
  const std::vector<float> before = Down(g, n, stream);
  Affine<<<n / 256, 256, 0, stream>>>(f, g, n);
  const std::vector<float> uniform = Down(f, n, stream), after = Down(g, n, stream);
  int order_bad = 0, range_bad = 0;
  for (int i = 0; i < n; ++i) {
    order_bad += before[i] != -5.0f || after[i] != 2.0f * uniform[i] + 1.0f;
    range_bad += !(uniform[i] > 0.0f && uniform[i] <= 1.0f);
  }
  Expect(order_bad == 0, "kernels in stream order around the generation", order_bad, 0);
  Expect(range_bad == 0, "uniform floats outside (0, 1]", range_bad, 0);
  const Moments mu = Of(uniform);
  Expect(std::fabs(mu.mean - 0.5) < 0.01, "uniform mean", mu.mean, 0.5);
  Expect(std::fabs(mu.sd - std::sqrt(1.0 / 12)) < 0.01, "uniform deviation", mu.sd,
         std::sqrt(1.0 / 12));

  // The same seed again gives the same sequence; another seed another.
  curandGenerator_t again;
  RAND_OK(curandCreateGenerator(&again, CURAND_RNG_PSEUDO_DEFAULT));
  RAND_OK(curandSetPseudoRandomGeneratorSeed(again, 1234));
  RAND_OK(curandGenerateUniform(again, g, n));
  CHECK(cudaDeviceSynchronize());
  const std::vector<float> same = Down(g, n, nullptr);
  Expect(same == uniform, "the same seed's sequence", same == uniform, 1);
  RAND_OK(curandSetPseudoRandomGeneratorSeed(again, 4321));
  RAND_OK(curandGenerateUniform(again, g, n));
  CHECK(cudaDeviceSynchronize());
  const std::vector<float> other = Down(g, n, nullptr);
  int equal = 0;
  for (int i = 0; i < n; ++i) equal += other[i] == uniform[i];
  Expect(equal < n / 100, "values another seed repeats", equal, 0);
  RAND_OK(curandDestroyGenerator(again));

  // Normals (an even count, as Box-Muller needs), log-normals, doubles, Poisson, raw words.
  EXPECT_RAND(curandGenerateNormal(gen, f, n - 1, 0.0f, 1.0f), CURAND_STATUS_LENGTH_NOT_MULTIPLE);
  RAND_OK(curandGenerateNormal(gen, f, n, 2.0f, 3.0f));
  const Moments mn = Of(Down(f, n, stream));
  Expect(std::fabs(mn.mean - 2.0) < 0.06, "normal mean", mn.mean, 2.0);
  Expect(std::fabs(mn.sd - 3.0) < 0.06, "normal deviation", mn.sd, 3.0);
  RAND_OK(curandGenerateLogNormal(gen, f, n, 0.0f, 0.5f));
  const std::vector<float> logn = Down(f, n, stream);
  std::vector<double> logs(n);
  for (int i = 0; i < n; ++i) logs[i] = std::log(double(logn[i]));
  const Moments ml = Of(logs);
  Expect(std::fabs(ml.mean) < 0.02 && std::fabs(ml.sd - 0.5) < 0.02, "log-normal's logarithm",
         ml.mean, 0.0);
  RAND_OK(curandGenerateUniformDouble(gen, d, n));
  const std::vector<double> ud = Down(d, n, stream);
  const Moments md = Of(ud);
  Expect(std::fabs(md.mean - 0.5) < 0.01, "uniform double mean", md.mean, 0.5);
  RAND_OK(curandGeneratePoisson(gen, u, n, 4.0));
  const Moments mp = Of(Down(u, n, stream));
  Expect(std::fabs(mp.mean - 4.0) < 0.05 && std::fabs(mp.sd - 2.0) < 0.05, "Poisson(4) mean",
         mp.mean, 4.0);
  RAND_OK(curandGenerate(gen, u, n));
  const std::vector<unsigned int> words = Down(u, n, stream);
  for (int bit = 0; bit < 32; ++bit) {
    int ones = 0;
    for (unsigned int w : words) ones += (w >> bit) & 1;
    Expect(std::abs(ones - n / 2) < 1000, "a raw bit's ones", ones, n / 2);
  }
  RAND_OK(curandDestroyGenerator(gen));

  // A quasirandom generator: one dimension of Sobol points, all distinct, evenly spread.
  curandGenerator_t sobol;
  RAND_OK(curandCreateGenerator(&sobol, CURAND_RNG_QUASI_SOBOL32));
  RAND_OK(curandSetQuasiRandomGeneratorDimensions(sobol, 1));
  RAND_OK(curandGenerate(sobol, u, 4096));
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned int> points = Down(u, 4096, nullptr);
  std::vector<int> per_bucket(64, 0);
  for (unsigned int p : points) ++per_bucket[p >> 26];
  int uneven = 0;
  for (int c : per_bucket) uneven += c != 64;
  Expect(uneven == 0, "Sobol points per 1/64 of the range (64 each)", uneven, 0);
  RAND_OK(curandDestroyGenerator(sobol));

  // A host generator fills host memory.
  curandGenerator_t host;
  RAND_OK(curandCreateGeneratorHost(&host, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  RAND_OK(curandSetPseudoRandomGeneratorSeed(host, 99));
  std::vector<float> on_host(4096);
  RAND_OK(curandGenerateUniform(host, on_host.data(), on_host.size()));
  const Moments mh = Of(on_host);
  Expect(std::fabs(mh.mean - 0.5) < 0.03, "host generator's uniform mean", mh.mean, 0.5);
  RAND_OK(curandDestroyGenerator(host));

  for (void* p :
       {static_cast<void*>(f), static_cast<void*>(g), static_cast<void*>(d), static_cast<void*>(u)})
    CHECK(cudaFree(p));
  CHECK(cudaStreamDestroy(stream));
  return Finish(failures, "curand_host_api");
}
