// tests/cuda/kernels/cufft_transforms.cu - cuFFT as programs call it (-lcufft): complex, real
// and double transforms in 1, 2 and 3 dimensions, lengths with odd and prime factors, batches,
// in-place transforms with cuFFT's padding, an advanced layout with strides, the Xt API, a plan
// on a stream between two kernels, and cuFFT's errors for a bad size and a destroyed plan. Every
// result is checked against a direct DFT in double precision on the host.
//
// On a GPU it runs NVIDIA's cuFFT; on the emulated GPU the stub libcufft.so.12 transforms on the
// host.
#include <cufft.h>
#include <cufftXt.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include "common.h"

namespace {

int failures = 0;

using Z = std::complex<double>;

#define FFT_OK(call)                                                                    \
  do {                                                                                  \
    cufftResult r_ = (call);                                                            \
    if (r_ != CUFFT_SUCCESS) {                                                          \
      std::printf("FAIL: %s:%d %s -> cufftResult %d\n", __FILE__, __LINE__, #call, r_); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// The unnormalized DFT of a dense row-major array of dims n, along each dimension in turn.
std::vector<Z> Dft(std::vector<Z> x, const std::vector<int>& n, int sign) {
  size_t inner = x.size();
  for (int len : n) {
    inner /= size_t(len);
    std::vector<Z> line(len), out(len);
    for (size_t outer = 0; outer < x.size(); outer += size_t(len) * inner)
      for (size_t i = 0; i < inner; ++i) {
        for (int t = 0; t < len; ++t) line[t] = x[outer + i + t * inner];
        for (int k = 0; k < len; ++k) {
          Z acc = 0;
          for (int t = 0; t < len; ++t)
            acc +=
                line[t] * std::polar(1.0, sign * 2 * M_PI * double((long long)t * k % len) / len);
          out[k] = acc;
        }
        for (int k = 0; k < len; ++k) x[outer + i + k * inner] = out[k];
      }
  }
  return x;
}

void Expect(const char* what, Z got, Z want, double tol, int* bad) {
  if ((Near(got.real(), want.real(), tol) && Near(got.imag(), want.imag(), tol)) || (*bad)++ >= 3)
    return;
  std::printf("  %s: got (%.7g, %.7g), want (%.7g, %.7g)\n", what, got.real(), got.imag(),
              want.real(), want.imag());
}

void Verdict(const char* what, int bad, size_t total) {
  if (bad == 0) return;
  std::printf("FAIL %s: %d of %zu wrong\n", what, bad, total);
  ++failures;
}

std::vector<cufftComplex> RandomComplex(Rng& rng, size_t count) {
  std::vector<cufftComplex> v(count);
  for (auto& c : v) c = {rng.Uniform(-1, 1), rng.Uniform(-1, 1)};
  return v;
}

// Batched 1-D C2C forward out of place, then inverse in place: n times the input.
void ComplexBatches(Rng& rng, int n, int batch) {
  std::vector<cufftComplex> x = RandomComplex(rng, size_t(n) * batch);
  cufftComplex* in = ToDevice(x);
  cufftComplex* out;
  CHECK(cudaMalloc(&out, x.size() * sizeof(cufftComplex)));
  cufftHandle plan;
  FFT_OK(cufftPlan1d(&plan, n, CUFFT_C2C, batch));
  FFT_OK(cufftExecC2C(plan, in, out, CUFFT_FORWARD));
  std::vector<cufftComplex> got = FromDevice(out, x.size());
  int bad = 0;
  for (int b = 0; b < batch; ++b) {
    std::vector<Z> line(n);
    for (int t = 0; t < n; ++t) line[t] = {x[b * n + t].x, x[b * n + t].y};
    std::vector<Z> want = Dft(line, {n}, -1);
    for (int k = 0; k < n; ++k)
      Expect("C2C forward", {got[b * n + k].x, got[b * n + k].y}, want[k], 1e-4, &bad);
  }
  FFT_OK(cufftExecC2C(plan, out, out, CUFFT_INVERSE));
  got = FromDevice(out, x.size());
  for (size_t i = 0; i < x.size(); ++i)
    Expect("C2C round trip", {got[i].x, got[i].y}, Z(x[i].x, x[i].y) * double(n), 1e-4, &bad);
  char what[64];
  std::snprintf(what, sizeof what, "C2C n=%d batch=%d", n, batch);
  Verdict(what, bad, x.size() * 2);
  FFT_OK(cufftDestroy(plan));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
}

// 2-D R2C out of place (the half spectrum), then C2R back: nx*ny times the input.
void RealTwoD(Rng& rng, int nx, int ny) {
  const int half = ny / 2 + 1;
  std::vector<float> x(size_t(nx) * ny);
  for (float& v : x) v = rng.Uniform(-1, 1);
  float* in = ToDevice(x);
  cufftComplex* spec;
  CHECK(cudaMalloc(&spec, size_t(nx) * half * sizeof(cufftComplex)));
  cufftHandle fwd, inv;
  FFT_OK(cufftPlan2d(&fwd, nx, ny, CUFFT_R2C));
  FFT_OK(cufftPlan2d(&inv, nx, ny, CUFFT_C2R));
  FFT_OK(cufftExecR2C(fwd, in, spec));
  std::vector<cufftComplex> got = FromDevice(spec, size_t(nx) * half);
  std::vector<Z> want = Dft(std::vector<Z>(x.begin(), x.end()), {nx, ny}, -1);
  int bad = 0;
  for (int i = 0; i < nx; ++i)
    for (int k = 0; k < half; ++k)
      Expect("R2C", {got[i * half + k].x, got[i * half + k].y}, want[size_t(i) * ny + k], 1e-4,
             &bad);
  float* back;
  CHECK(cudaMalloc(&back, x.size() * sizeof(float)));
  FFT_OK(cufftExecC2R(inv, spec, back));
  std::vector<float> round = FromDevice(back, x.size());
  for (size_t i = 0; i < x.size(); ++i) Expect("C2R", round[i], double(x[i]) * nx * ny, 1e-4, &bad);
  Verdict("R2C/C2R 2-D", bad, got.size() + x.size());
  FFT_OK(cufftDestroy(fwd));
  FFT_OK(cufftDestroy(inv));
  for (void* p : {static_cast<void*>(in), static_cast<void*>(spec), static_cast<void*>(back)})
    CHECK(cudaFree(p));
}

// 1-D R2C in place: each batch's n reals padded to 2*(n/2+1), the spectrum over them.
void RealInPlace(Rng& rng, int n, int batch) {
  const int half = n / 2 + 1, row = 2 * half;
  std::vector<float> x(size_t(row) * batch, 0.0f);
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < n; ++t) x[b * row + t] = rng.Uniform(-1, 1);
  float* d = ToDevice(x);
  cufftHandle plan;
  FFT_OK(cufftPlan1d(&plan, n, CUFFT_R2C, batch));
  FFT_OK(cufftExecR2C(plan, d, reinterpret_cast<cufftComplex*>(d)));
  std::vector<cufftComplex> got =
      FromDevice(reinterpret_cast<cufftComplex*>(d), size_t(half) * batch);
  int bad = 0;
  for (int b = 0; b < batch; ++b) {
    std::vector<Z> line(x.begin() + b * row, x.begin() + b * row + n);
    std::vector<Z> want = Dft(line, {n}, -1);
    for (int k = 0; k < half; ++k)
      Expect("R2C in place", {got[b * half + k].x, got[b * half + k].y}, want[k], 1e-4, &bad);
  }
  Verdict("R2C in place", bad, got.size());
  FFT_OK(cufftDestroy(plan));
  CHECK(cudaFree(d));
}

// 3-D Z2Z in double precision.
void DoubleThreeD(Rng& rng) {
  const std::vector<int> n = {16, 12, 10};
  std::vector<cufftDoubleComplex> x(16 * 12 * 10);
  for (auto& c : x) c = {rng.UniformD(-1, 1), rng.UniformD(-1, 1)};
  cufftDoubleComplex* d = ToDevice(x);
  cufftHandle plan;
  FFT_OK(cufftPlan3d(&plan, n[0], n[1], n[2], CUFFT_Z2Z));
  FFT_OK(cufftExecZ2Z(plan, d, d, CUFFT_INVERSE));
  std::vector<cufftDoubleComplex> got = FromDevice(d, x.size());
  std::vector<Z> in(x.size());
  for (size_t i = 0; i < x.size(); ++i) in[i] = {x[i].x, x[i].y};
  std::vector<Z> want = Dft(in, n, +1);
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) Expect("Z2Z", {got[i].x, got[i].y}, want[i], 1e-9, &bad);
  Verdict("Z2Z 3-D", bad, x.size());
  FFT_OK(cufftDestroy(plan));
  CHECK(cudaFree(d));
}

// D2Z then Z2D of an odd length: n times the input, in double precision.
void DoubleReal(Rng& rng, int n) {
  std::vector<double> x(n);
  for (double& v : x) v = rng.UniformD(-1, 1);
  double* in = ToDevice(x);
  cufftDoubleComplex* spec;
  CHECK(cudaMalloc(&spec, (n / 2 + 1) * sizeof(cufftDoubleComplex)));
  cufftHandle fwd, inv;
  FFT_OK(cufftPlan1d(&fwd, n, CUFFT_D2Z, 1));
  FFT_OK(cufftPlan1d(&inv, n, CUFFT_Z2D, 1));
  FFT_OK(cufftExecD2Z(fwd, in, spec));
  FFT_OK(cufftExecZ2D(inv, spec, in));
  std::vector<double> got = FromDevice(in, x.size());
  int bad = 0;
  for (int i = 0; i < n; ++i) Expect("D2Z/Z2D", got[i], x[i] * n, 1e-9, &bad);
  Verdict("D2Z/Z2D", bad, x.size());
  FFT_OK(cufftDestroy(fwd));
  FFT_OK(cufftDestroy(inv));
  CHECK(cudaFree(in));
  CHECK(cudaFree(spec));
}

// The columns of a rows x cols row-major matrix (stride cols, distance 1), into contiguous rows.
void StridedColumns(Rng& rng) {
  const int rows = 64, cols = 5;
  std::vector<cufftComplex> x = RandomComplex(rng, size_t(rows) * cols);
  cufftComplex* in = ToDevice(x);
  cufftComplex* out;
  CHECK(cudaMalloc(&out, x.size() * sizeof(cufftComplex)));
  int n[] = {rows}, inembed[] = {rows}, onembed[] = {rows};
  cufftHandle plan;
  FFT_OK(cufftPlanMany(&plan, 1, n, inembed, cols, 1, onembed, 1, rows, CUFFT_C2C, cols));
  FFT_OK(cufftExecC2C(plan, in, out, CUFFT_FORWARD));
  std::vector<cufftComplex> got = FromDevice(out, x.size());
  int bad = 0;
  for (int c = 0; c < cols; ++c) {
    std::vector<Z> line(rows);
    for (int r = 0; r < rows; ++r) line[r] = {x[r * cols + c].x, x[r * cols + c].y};
    std::vector<Z> want = Dft(line, {rows}, -1);
    for (int k = 0; k < rows; ++k)
      Expect("strided", {got[c * rows + k].x, got[c * rows + k].y}, want[k], 1e-4, &bad);
  }
  Verdict("advanced layout", bad, x.size());
  FFT_OK(cufftDestroy(plan));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
}

__global__ void Scale(cufftComplex* v, int n, float s) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = {v[i].x * s, v[i].y * s};
}

// A kernel writes the input, the transform runs, a kernel scales the output: all on one
// non-blocking stream, synchronized once, through the Xt API.
void OnAStream(Rng& rng) {
  const int n = 120;
  std::vector<cufftComplex> x = RandomComplex(rng, n);
  cufftComplex* d = ToDevice(x);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cufftHandle plan;
  FFT_OK(cufftCreate(&plan));
  long long len = n;
  size_t work = 0;
  FFT_OK(cufftXtMakePlanMany(plan, 1, &len, nullptr, 1, 0, CUDA_C_32F, nullptr, 1, 0, CUDA_C_32F, 1,
                             &work, CUDA_C_32F));
  FFT_OK(cufftSetStream(plan, s));
  Scale<<<1, 128, 0, s>>>(d, n, 3.0f);
  FFT_OK(cufftXtExec(plan, d, d, CUFFT_FORWARD));
  Scale<<<1, 128, 0, s>>>(d, n, 0.5f);
  CHECK(cudaStreamSynchronize(s));
  std::vector<cufftComplex> got = FromDevice(d, n);
  std::vector<Z> line(n);
  for (int t = 0; t < n; ++t) line[t] = Z(x[t].x, x[t].y) * 3.0;
  std::vector<Z> want = Dft(line, {n}, -1);
  int bad = 0;
  for (int k = 0; k < n; ++k) Expect("stream", {got[k].x, got[k].y}, want[k] * 0.5, 1e-4, &bad);
  Verdict("plan on a stream between kernels", bad, n);
  FFT_OK(cufftDestroy(plan));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
}

// Captured into a graph: NVIDIA's cuFFT captures its kernels; the emulated GPU's transforms run
// on the host, so there an execution in capture is refused by name, not recorded wrongly.
void Captured(Rng& rng) {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const bool emulated = std::strncmp(prop.name, "Remora Emulated", 15) == 0;
  const int n = 64;
  std::vector<cufftComplex> x = RandomComplex(rng, n);
  cufftComplex* d = ToDevice(x);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cufftHandle plan;
  FFT_OK(cufftPlan1d(&plan, n, CUFFT_C2C, 1));
  FFT_OK(cufftSetStream(plan, s));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  const cufftResult r = cufftExecC2C(plan, d, d, CUFFT_FORWARD);
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(s, &graph));
  if (emulated) {
    if (r != CUFFT_NOT_SUPPORTED) {
      std::printf("FAIL captured execution on the emulated GPU -> %d, want CUFFT_NOT_SUPPORTED\n",
                  r);
      ++failures;
    }
  } else {
    FFT_OK(r);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    std::vector<cufftComplex> got = FromDevice(d, n);
    std::vector<Z> line(n);
    for (int t = 0; t < n; ++t) line[t] = {x[t].x, x[t].y};
    std::vector<Z> want = Dft(line, {n}, -1);
    int bad = 0;
    for (int k = 0; k < n; ++k) Expect("graph", {got[k].x, got[k].y}, want[k], 1e-4, &bad);
    Verdict("captured into a graph", bad, n);
    CHECK(cudaGraphExecDestroy(exec));
  }
  if (graph) CHECK(cudaGraphDestroy(graph));
  FFT_OK(cufftDestroy(plan));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
}

void Errors() {
  cufftHandle plan;
  cufftResult r = cufftPlan1d(&plan, 0, CUFFT_C2C, 1);
  if (r != CUFFT_INVALID_SIZE) {
    std::printf("FAIL cufftPlan1d of length 0 -> %d, want CUFFT_INVALID_SIZE\n", r);
    ++failures;
  }
  FFT_OK(cufftPlan1d(&plan, 16, CUFFT_C2C, 1));
  FFT_OK(cufftDestroy(plan));
  cufftComplex* d;
  CHECK(cudaMalloc(&d, 16 * sizeof(cufftComplex)));
  r = cufftExecC2C(plan, d, d, CUFFT_FORWARD);
  if (r != CUFFT_INVALID_PLAN) {
    std::printf("FAIL cufftExecC2C on a destroyed plan -> %d, want CUFFT_INVALID_PLAN\n", r);
    ++failures;
  }
  CHECK(cudaFree(d));
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 3)));
  int version = 0;
  FFT_OK(cufftGetVersion(&version));
  REQUIRE(version >= 11000);
  ComplexBatches(rng, 256, 3);
  ComplexBatches(rng, 210, 2);  // 2 * 3 * 5 * 7
  ComplexBatches(rng, 97, 1);   // prime
  RealTwoD(rng, 24, 30);
  RealInPlace(rng, 100, 2);
  DoubleThreeD(rng);
  DoubleReal(rng, 45);
  StridedColumns(rng);
  OnAStream(rng);
  Captured(rng);
  Errors();
  return Finish(failures, "cufft_transforms");
}
