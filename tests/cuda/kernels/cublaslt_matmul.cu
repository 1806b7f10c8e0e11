// tests/cuda/kernels/cublaslt_matmul.cu - cublasLtMatmul on random data, every forwarded form.
//
// Built as users build cuBLASLt programs (nvcc -cudart shared ... -lcublasLt) and
// run unmodified against the stub libcublasLt.so.13. Each matmul goes through the
// usual sequence (descriptors, layouts, preference, heuristic, matmul with the
// heuristic's algorithm and a workspace) and is checked against a double-precision
// loop on the host: FP32, FP16 and BF16 data with FP32 compute, transposes, leading
// dimensions larger than the matrix, C apart from D, every forwarded epilogue (a bias
// of D's type, given or by default), strided batches, host and device scalars, a non-default
// stream. The heuristic is told the matrices' real alignment, as frameworks tell it. Bad calls
// get the status codes NVIDIA's cuBLASLt documents; under remora run, also those only Remora
// checks (pointers outside the tenant's memory, what it does not forward).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <utility>
#include <vector>

#include "common.h"

namespace {

int failures = 0;

#define LT_OK(call) STATUS_OK(call, CUBLAS_STATUS_SUCCESS, cublasLtGetStatusName)
#define EXPECT_LT(call, expected) EXPECT_STATUS(call, expected, cublasLtGetStatusName)

template <typename T>
struct Type;
template <>
struct Type<float> {
  static constexpr cudaDataType kType = CUDA_R_32F;
  static float From(double v) { return static_cast<float>(v); }
  static double To(float v) { return v; }
  static constexpr double kTol = 1e-4;
};
template <>
struct Type<__half> {
  static constexpr cudaDataType kType = CUDA_R_16F;
  static __half From(double v) { return __float2half(static_cast<float>(v)); }
  static double To(__half v) { return __half2float(v); }
  static constexpr double kTol = 4e-3;
};
template <>
struct Type<__nv_bfloat16> {
  static constexpr cudaDataType kType = CUDA_R_16BF;
  static __nv_bfloat16 From(double v) { return __float2bfloat16(static_cast<float>(v)); }
  static double To(__nv_bfloat16 v) { return __bfloat162float(v); }
  static constexpr double kTol = 3e-2;
};

// Host values (as the device type holds them) with a device copy.
template <typename T>
struct Buf {
  std::vector<T> h;
  T* d = nullptr;
  Buf(size_t n, Rng& rng) : h(n) {
    for (T& v : h) v = Type<T>::From(rng.UniformD(-1, 1));
    CHECK(cudaMalloc(&d, n * sizeof(T) + 1));
    CHECK(cudaMemcpy(d, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~Buf() { cudaFree(d); }
  double At(size_t i) const { return Type<T>::To(h[i]); }
  std::vector<T> Down() const {
    CHECK(cudaDeviceSynchronize());
    std::vector<T> out(h.size());
    CHECK(cudaMemcpy(out.data(), d, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
};

double Gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

struct Case {
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int m = 13, n = 11, k = 9;
  int batch = 1;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool bias_fp32 = false;  // the bias type set to FP32 (valid only for FP32 D)
  bool device_scalars = false;
  bool c_is_d = false;
  float alpha = 0.75f, beta = -0.5f;
};

struct Lt {
  cublasLtHandle_t h;
  cudaStream_t stream;
  void* workspace;
  size_t workspace_bytes;
};

cublasLtMatrixLayout_t Layout(cudaDataType t, int rows, int cols, int ld, int batch,
                              long long stride) {
  cublasLtMatrixLayout_t l;
  LT_OK(cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld));
  if (batch != 1) {
    LT_OK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                           sizeof batch));
    LT_OK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                           sizeof stride));
  }
  return l;
}

// The largest power of two, up to 256, dividing the address of each of `batch` matrices
// `stride` elements apart from `p`.
template <typename T>
uint32_t Alignment(const T* p, long long stride, int batch) {
  uint32_t a = 256;
  for (int b = 0; b < batch; ++b) {
    const auto at = reinterpret_cast<uintptr_t>(p + b * stride);
    while (a > 1 && at % a != 0) a /= 2;
  }
  return a;
}

// D = epilogue(alpha op(A) op(B) + beta C [+ bias]) for D of type TD (A, B: T).
template <typename T, typename TD>
void Run(const Lt& lt, const Case& c, Rng& rng, const char* what) {
  const cudaDataType at = Type<T>::kType, dt = Type<TD>::kType;
  const int ar = c.ta == CUBLAS_OP_N ? c.m : c.k, ac = c.ta == CUBLAS_OP_N ? c.k : c.m;
  const int br = c.tb == CUBLAS_OP_N ? c.k : c.n, bc = c.tb == CUBLAS_OP_N ? c.n : c.k;
  const int lda = ar + 3, ldb = br + 1, ldc = c.m + 2, ldd = c.c_is_d ? ldc : c.m + 5;
  const long long sa = static_cast<long long>(lda) * ac + 7, sb = static_cast<long long>(ldb) * bc;
  const long long sc = static_cast<long long>(ldc) * c.n + 1,
                  sd = static_cast<long long>(ldd) * c.n;
  Buf<T> A(sa * c.batch, rng), B(sb * c.batch, rng);
  Buf<TD> C(sc * c.batch, rng), D(sd * c.batch, rng);
  const bool bias = (c.epilogue & CUBLASLT_EPILOGUE_BIAS) != 0;
  const long long bias_stride = c.m + 1;
  Buf<float> bias32(bias_stride * c.batch, rng);
  Buf<TD> biasd(bias_stride * c.batch, rng);

  cublasLtMatmulDesc_t desc;
  LT_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &c.ta, sizeof c.ta));
  LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &c.tb, sizeof c.tb));
  LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epilogue,
                                       sizeof c.epilogue));
  if (bias) {
    const void* bp = c.bias_fp32 ? static_cast<const void*>(bias32.d) : biasd.d;
    LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    if (c.bias_fp32) {
      const int32_t f32 = CUDA_R_32F;
      LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &f32,
                                           sizeof f32));
    }
    if (c.batch > 1)
      LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                           &bias_stride, sizeof bias_stride));
  }
  float* scalars = nullptr;
  if (c.device_scalars) {
    const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_DEVICE;
    LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode,
                                         sizeof mode));
    const float host[2] = {c.alpha, c.beta};
    CHECK(cudaMalloc(&scalars, sizeof host));
    CHECK(cudaMemcpy(scalars, host, sizeof host, cudaMemcpyHostToDevice));
  }
  cublasLtMatrixLayout_t la = Layout(at, ar, ac, lda, c.batch, sa);
  cublasLtMatrixLayout_t lb = Layout(at, br, bc, ldb, c.batch, sb);
  cublasLtMatrixLayout_t lc = Layout(dt, c.m, c.n, ldc, c.batch, sc);
  cublasLtMatrixLayout_t ld = c.c_is_d ? lc : Layout(dt, c.m, c.n, ldd, c.batch, sd);
  cublasLtMatmulPreference_t pref;
  LT_OK(cublasLtMatmulPreferenceCreate(&pref));
  LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &lt.workspace_bytes, sizeof lt.workspace_bytes));
  // The alignment every batch's matrix really has, as frameworks tell the heuristic (it
  // assumes 256 bytes otherwise, and the odd batch strides here have less).
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, Alignment(A.d, sa, c.batch)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, Alignment(B.d, sb, c.batch)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, Alignment(C.d, sc, c.batch)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
       c.c_is_d ? Alignment(C.d, sc, c.batch) : Alignment(D.d, sd, c.batch)}};
  for (const auto& [attr, bytes] : aligns)
    LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof bytes));
  cublasLtMatmulHeuristicResult_t heur[4] = {};
  int found = 0;
  LT_OK(cublasLtMatmulAlgoGetHeuristic(lt.h, desc, la, lb, lc, ld, pref, 4, heur, &found));
  REQUIRE(found >= 1 && heur[0].state == CUBLAS_STATUS_SUCCESS);
  REQUIRE(heur[0].workspaceSize <= lt.workspace_bytes);
  const void* alpha = c.device_scalars ? static_cast<const void*>(scalars) : &c.alpha;
  const void* beta = c.device_scalars ? static_cast<const void*>(scalars + 1) : &c.beta;
  TD* dptr = c.c_is_d ? C.d : D.d;
  LT_OK(cublasLtMatmul(lt.h, desc, alpha, A.d, la, B.d, lb, beta, C.d, lc, dptr, ld, &heur[0].algo,
                       lt.workspace, lt.workspace_bytes, lt.stream));
  std::vector<TD> got = c.c_is_d ? C.Down() : D.Down();

  // The reference, in double from the values as the device holds them.
  int bad = 0;
  const long long s_out = c.c_is_d ? sc : sd;
  const int ld_out = c.c_is_d ? ldc : ldd;
  for (int b = 0; b < c.batch; ++b)
    for (int j = 0; j < c.n; ++j)
      for (int i = 0; i < c.m; ++i) {
        double acc = 0;
        for (int p = 0; p < c.k; ++p) {
          const double x =
              c.ta == CUBLAS_OP_N ? A.At(b * sa + i + p * lda) : A.At(b * sa + p + i * lda);
          const double y =
              c.tb == CUBLAS_OP_N ? B.At(b * sb + p + j * ldb) : B.At(b * sb + j + p * ldb);
          acc += x * y;
        }
        double v = c.alpha * acc + c.beta * C.At(b * sc + i + j * ldc);
        if (bias) v += c.bias_fp32 ? bias32.At(b * bias_stride + i) : biasd.At(b * bias_stride + i);
        if (c.epilogue & CUBLASLT_EPILOGUE_RELU) v = v > 0 ? v : 0;
        if (c.epilogue & CUBLASLT_EPILOGUE_GELU) v = Gelu(v);
        const double g = Type<TD>::To(got[b * s_out + i + j * ld_out]);
        if (!Near(g, v, Type<TD>::kTol * (c.k > 8 ? 2 : 1)) && bad++ < 3)
          std::printf("FAIL: %s batch %d (%d,%d): got %.6g, want %.6g\n", what, b, i, j, g, v);
      }
  // Nothing outside D was written: C's gaps and D's padding are as uploaded.
  if (!c.c_is_d) {
    const std::vector<TD> c_after = C.Down();
    for (size_t i = 0; i < c_after.size(); ++i)
      if (Type<TD>::To(c_after[i]) != C.At(i) && bad++ < 3)
        std::printf("FAIL: %s: C changed at %zu\n", what, i);
  }
  if (bad) ++failures;
  std::printf("%s %s\n", bad ? "FAIL" : "ok  ", what);
  LT_OK(cublasLtMatmulPreferenceDestroy(pref));
  if (!c.c_is_d) LT_OK(cublasLtMatrixLayoutDestroy(ld));
  LT_OK(cublasLtMatrixLayoutDestroy(lc));
  LT_OK(cublasLtMatrixLayoutDestroy(lb));
  LT_OK(cublasLtMatrixLayoutDestroy(la));
  LT_OK(cublasLtMatmulDescDestroy(desc));
  if (scalars) CHECK(cudaFree(scalars));
}

void Matmuls(const Lt& lt, Rng& rng) {
  Run<float, float>(lt, Case{}, rng, "fp32 NN");
  Run<float, float>(lt, Case{.ta = CUBLAS_OP_T}, rng, "fp32 TN");
  Run<float, float>(lt, Case{.tb = CUBLAS_OP_T}, rng, "fp32 NT");
  Run<float, float>(lt, Case{.ta = CUBLAS_OP_T, .tb = CUBLAS_OP_T, .m = 64, .n = 48, .k = 80}, rng,
                    "fp32 TT 64x48x80");
  Run<float, float>(lt, Case{.c_is_d = true}, rng, "fp32 in place (C == D)");
  Run<float, float>(lt, Case{.beta = 0}, rng, "fp32 beta 0");
  Run<float, float>(lt, Case{.device_scalars = true}, rng, "fp32 device scalars");
  Run<__half, __half>(lt, Case{.ta = CUBLAS_OP_T}, rng, "fp16 TN");
  Run<__half, float>(lt, Case{}, rng, "fp16 in, fp32 out");
  Run<__nv_bfloat16, __nv_bfloat16>(lt, Case{.tb = CUBLAS_OP_T}, rng, "bf16 NT");
  Run<__nv_bfloat16, float>(lt, Case{}, rng, "bf16 in, fp32 out");
  // Epilogues.
  Run<float, float>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_RELU}, rng, "fp32 RELU");
  Run<float, float>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_BIAS}, rng, "fp32 BIAS");
  Run<float, float>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS}, rng, "fp32 RELU_BIAS");
  Run<float, float>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_GELU}, rng, "fp32 GELU");
  Run<float, float>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS}, rng, "fp32 GELU_BIAS");
  Run<__half, __half>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS}, rng,
                      "fp16 RELU_BIAS (fp16 bias)");
  // A bias is of D's type (NVIDIA's cuBLASLt refuses an FP32 one for FP16 D: BadCalls).
  Run<__half, __half>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS}, rng,
                      "fp16 GELU_BIAS (fp16 bias)");
  Run<float, float>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS, .bias_fp32 = true}, rng,
                    "fp32 GELU_BIAS (bias type set to fp32)");
  Run<__nv_bfloat16, __nv_bfloat16>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_BIAS}, rng,
                                    "bf16 BIAS (bf16 bias)");
  // Strided batches, with a bias per batch entry.
  Run<float, float>(lt, Case{.ta = CUBLAS_OP_T, .batch = 3}, rng, "fp32 batched x3");
  Run<__half, __half>(lt, Case{.tb = CUBLAS_OP_T, .batch = 4, .epilogue = CUBLASLT_EPILOGUE_BIAS},
                      rng, "fp16 batched x4 BIAS");
  Run<__nv_bfloat16, float>(lt, Case{.batch = 2, .device_scalars = true}, rng,
                            "bf16 batched x2 device scalars");
}

// Wrong calls get NVIDIA's statuses, and nothing runs: first those NVIDIA's cuBLASLt documents,
// then what only Remora checks.
void BadCalls(const Lt& lt) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 64 * sizeof(float)));
  cublasLtMatmulDesc_t desc;
  LT_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t l;  // 4x4 FP32: 64 bytes
  LT_OK(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 4, 4, 4));
  const float one = 1, zero = 0;
  auto mm = [&](cublasLtHandle_t h, cublasLtMatmulDesc_t md, cublasLtMatrixLayout_t a,
                const void* A, void* D) {
    return cublasLtMatmul(h, md, &one, A, a, d, l, &zero, d, l, D, l, nullptr, nullptr, 0,
                          lt.stream);
  };
  // A wrong attribute size.
  const int32_t row = CUBLASLT_ORDER_ROW;
  EXPECT_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &row, sizeof row),
            CUBLAS_STATUS_INVALID_VALUE);
  // A heuristic asked for no algorithm.
  cublasLtMatmulHeuristicResult_t r;
  int n = 0;
  EXPECT_LT(cublasLtMatmulAlgoGetHeuristic(lt.h, desc, l, l, l, l, nullptr, 0, &r, &n),
            CUBLAS_STATUS_INVALID_VALUE);
  // A bias of another type than D's: cuBLASLt takes one only for IMMA and FP8 matmuls, and an
  // FP32 bias for FP16 D is invalid (NVIDIA's answer on an H200, cuBLASLt 13.0).
  {
    cublasLtMatmulDesc_t gelu;
    LT_OK(cublasLtMatmulDescCreate(&gelu, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasLtEpilogue_t gelu_bias = CUBLASLT_EPILOGUE_GELU_BIAS;
    LT_OK(cublasLtMatmulDescSetAttribute(gelu, CUBLASLT_MATMUL_DESC_EPILOGUE, &gelu_bias,
                                         sizeof gelu_bias));
    const void* bp = d;
    LT_OK(cublasLtMatmulDescSetAttribute(gelu, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    const int32_t f32 = CUDA_R_32F;
    LT_OK(cublasLtMatmulDescSetAttribute(gelu, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &f32,
                                         sizeof f32));
    cublasLtMatrixLayout_t h16;  // 4x4 FP16
    LT_OK(cublasLtMatrixLayoutCreate(&h16, CUDA_R_16F, 4, 4, 4));
    cublasLtMatmulPreference_t pref;
    LT_OK(cublasLtMatmulPreferenceCreate(&pref));
    LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &lt.workspace_bytes, sizeof lt.workspace_bytes));
    cublasLtMatmulHeuristicResult_t got[1] = {};
    EXPECT_LT(cublasLtMatmulAlgoGetHeuristic(lt.h, gelu, h16, h16, h16, h16, pref, 1, got, &n),
              CUBLAS_STATUS_INVALID_VALUE);
    LT_OK(cublasLtMatmulPreferenceDestroy(pref));
    LT_OK(cublasLtMatrixLayoutDestroy(h16));
    LT_OK(cublasLtMatmulDescDestroy(gelu));
  }
  if (UnderRemora("cuBLASLt bad layouts, pointers, handles and what is not forwarded")) {
    // A handle destroyed.
    cublasLtHandle_t gone;
    LT_OK(cublasLtCreate(&gone));
    LT_OK(cublasLtDestroy(gone));
    EXPECT_LT(mm(gone, desc, l, d, d), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_LT(cublasLtDestroy(gone), CUBLAS_STATUS_NOT_INITIALIZED);
    // Bad layouts: leading dimension below the rows, shapes that do not multiply.
    cublasLtMatrixLayout_t bad;
    LT_OK(cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, 4, 4, 2));
    EXPECT_LT(mm(lt.h, desc, bad, d, d), CUBLAS_STATUS_INVALID_VALUE);
    LT_OK(cublasLtMatrixLayoutDestroy(bad));
    LT_OK(cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, 4, 3, 4));
    EXPECT_LT(mm(lt.h, desc, bad, d, d), CUBLAS_STATUS_INVALID_VALUE);
    // Row-major order, a planar-complex offset: not forwarded.
    LT_OK(cublasLtMatrixLayoutSetAttribute(bad, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
    const uint64_t cols = 4;
    LT_OK(cublasLtMatrixLayoutSetAttribute(bad, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols));
    EXPECT_LT(mm(lt.h, desc, bad, d, d), CUBLAS_STATUS_NOT_SUPPORTED);
    LT_OK(cublasLtMatrixLayoutDestroy(bad));
    // Pointers outside the tenant's memory: past the end, or host memory.
    EXPECT_LT(mm(lt.h, desc, l, d + 60, d), CUBLAS_STATUS_INVALID_VALUE);
    float host[16] = {};
    EXPECT_LT(mm(lt.h, desc, l, d, host), CUBLAS_STATUS_INVALID_VALUE);
    // Types, compute types and epilogues not forwarded.
    cublasLtMatmulDesc_t d64;
    LT_OK(cublasLtMatmulDescCreate(&d64, CUBLAS_COMPUTE_64F, CUDA_R_64F));
    EXPECT_LT(mm(lt.h, d64, l, d, d), CUBLAS_STATUS_NOT_SUPPORTED);
    // ... for which the heuristic finds no algorithm, so a caller can fall back to cuBLAS.
    cublasLtMatmulHeuristicResult_t none[1] = {};
    n = -1;
    LT_OK(cublasLtMatmulAlgoGetHeuristic(lt.h, d64, l, l, l, l, nullptr, 1, none, &n));
    REQUIRE(n == 0);
    LT_OK(cublasLtMatmulDescDestroy(d64));
    const cublasLtEpilogue_t drelu = CUBLASLT_EPILOGUE_DRELU;
    LT_OK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &drelu, sizeof drelu));
    EXPECT_LT(mm(lt.h, desc, l, d, d), CUBLAS_STATUS_NOT_SUPPORTED);
    // A bias epilogue with its bias outside the tenant's memory.
    const cublasLtEpilogue_t bias = CUBLASLT_EPILOGUE_BIAS;
    LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias, sizeof bias));
    const float* outside = d + 62;
    LT_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &outside,
                                         sizeof outside));
    EXPECT_LT(mm(lt.h, desc, l, d, d), CUBLAS_STATUS_INVALID_VALUE);
  }
  LT_OK(cublasLtMatrixLayoutDestroy(l));
  LT_OK(cublasLtMatmulDescDestroy(desc));
  // Nothing ran: the sticky state of the session is clean.
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  std::printf("ok   bad calls\n");
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  REQUIRE(cublasLtGetVersion() >= 130000);
  REQUIRE(std::strcmp(cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
                      "CUBLAS_STATUS_NOT_SUPPORTED") == 0);
  Lt lt{};
  LT_OK(cublasLtCreate(&lt.h));
  CHECK(cudaStreamCreateWithFlags(&lt.stream, cudaStreamNonBlocking));
  lt.workspace_bytes = 1 << 20;
  CHECK(cudaMalloc(&lt.workspace, lt.workspace_bytes));
  Matmuls(lt, rng);
  // NVIDIA's cuBLASLt takes a cuBLAS handle as its own (PyTorch's matmuls pass theirs).
  {
    cublasHandle_t blas;
    LT_OK(cublasCreate(&blas));
    Lt cast = lt;
    cast.h = reinterpret_cast<cublasLtHandle_t>(blas);
    Run<float, float>(cast, Case{.epilogue = CUBLASLT_EPILOGUE_BIAS}, rng,
                      "fp32 BIAS on a cuBLAS handle");
    Run<__nv_bfloat16, __nv_bfloat16>(cast, Case{.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS}, rng,
                                      "bf16 GELU_BIAS on a cuBLAS handle");
    LT_OK(cublasDestroy(blas));
  }
  // The default stream too.
  lt.stream = nullptr;
  Run<float, float>(lt, Case{.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS}, rng,
                    "fp32 RELU_BIAS default stream");
  BadCalls(lt);
  LT_OK(cublasLtDestroy(lt.h));
  CHECK(cudaFree(lt.workspace));
  return Finish(failures, "cublaslt_matmul");
}
