// tests/emu/blaslt_test.cc - emu/blas's libcublasLt.so.13, dlopened as the server loads it.
//
// The library pulls in the emulated libcuda.so.1 (the same instance the
// fixture drives). Every server/blaslt.def row is exported; matmuls made the
// way the server makes them (descriptors from the table, algo null) are
// checked against a double-precision loop here: FP32, FP16 and BF16, transposes,
// each epilogue, strided batches, device scalars, stream order; and bad
// arguments get NVIDIA's statuses.
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/emu/emu_api.h"

namespace remora::emu::test {
namespace {

void* LtLib() {
  static void* const handle = dlopen(REMORA_EMU_BLASLT_LIB, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

// The library's export `name`, typed as cublasLt.h declares it.
#define LT(name) (reinterpret_cast<decltype(&::name)>(dlsym(LtLib(), #name)))

double ToD(float v) {
  return v;
}
double ToD(__half v) {
  return __half2float(v);
}
double ToD(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
T FromD(double v) {
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(v);
  if constexpr (std::is_same_v<T, __half>) return __float2half(static_cast<float>(v));
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16(static_cast<float>(v));
}
template <class T>
cudaDataType TypeOf() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, __half>) return CUDA_R_16F;
  return CUDA_R_16BF;
}

class BlasLtTest : public EmuTest {
 protected:
  void SetUp() override {
    EmuTest::SetUp();
    ASSERT_NE(LtLib(), nullptr) << dlerror();
    ASSERT_EQ(LT(cublasLtCreate)(&h), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (h != nullptr) {
      EXPECT_EQ(LT(cublasLtDestroy)(h), CUBLAS_STATUS_SUCCESS);
    }
    EmuTest::TearDown();
  }
  template <class T>
  std::vector<T> Random(size_t n) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<T> v(n);
    for (T& x : v) x = FromD<T>(u(rng));
    return v;
  }
  cublasLtMatrixLayout_t Layout(cudaDataType t, int rows, int cols, int ld, int batch,
                                int64_t stride) {
    cublasLtMatrixLayout_t l = nullptr;
    EXPECT_EQ(LT(cublasLtMatrixLayoutCreate)(&l, t, rows, cols, ld), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(LT(cublasLtMatrixLayoutSetAttribute)(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                   sizeof batch),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(LT(cublasLtMatrixLayoutSetAttribute)(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                   &stride, sizeof stride),
              CUBLAS_STATUS_SUCCESS);
    return l;
  }

  // One matmul of T data into D of type TD, checked against doubles.
  template <class T, class TD>
  void Check(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int batch,
             uint32_t epilogue, bool device_scalars, double tol) {
    const int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    const int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    const int lda = ar + 1, ldb = br + 2, ldc = m + 3;
    const int64_t sa = int64_t{lda} * ac, sb = int64_t{ldb} * bc, sc = int64_t{ldc} * n;
    const std::vector<T> a = Random<T>(sa * batch), b = Random<T>(sb * batch);
    const std::vector<TD> c = Random<TD>(sc * batch), bias = Random<TD>(m * batch);
    Dev<T> A(a), B(b);
    Dev<TD> C(c), D(std::vector<TD>(sc * batch)), Bias(bias);
    const float host_scalars[2] = {0.5f, -1.25f};
    Dev<float> scalars(std::vector<float>(host_scalars, host_scalars + 2));
    cublasLtMatmulDesc_t desc = nullptr;
    ASSERT_EQ(LT(cublasLtMatmulDescCreate)(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
              CUBLAS_STATUS_SUCCESS);
    auto set = [&](cublasLtMatmulDescAttributes_t attr, const auto& v) {
      EXPECT_EQ(LT(cublasLtMatmulDescSetAttribute)(desc, attr, &v, sizeof v),
                CUBLAS_STATUS_SUCCESS);
    };
    set(CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(ta));
    set(CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(tb));
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(Bias.get()));
    set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, static_cast<int64_t>(m));
    set(CUBLASLT_MATMUL_DESC_POINTER_MODE,
        static_cast<int32_t>(device_scalars ? CUBLASLT_POINTER_MODE_DEVICE
                                            : CUBLASLT_POINTER_MODE_HOST));
    cublasLtMatrixLayout_t la = Layout(TypeOf<T>(), ar, ac, lda, batch, sa);
    cublasLtMatrixLayout_t lb = Layout(TypeOf<T>(), br, bc, ldb, batch, sb);
    cublasLtMatrixLayout_t lc = Layout(TypeOf<TD>(), m, n, ldc, batch, sc);
    const void* alpha = device_scalars ? static_cast<const void*>(scalars.get()) : host_scalars;
    const void* beta =
        device_scalars ? static_cast<const void*>(scalars.get() + 1) : host_scalars + 1;
    ASSERT_EQ(LT(cublasLtMatmul)(h, desc, alpha, A.get(), la, B.get(), lb, beta, C.get(), lc,
                                 D.get(), lc, nullptr, nullptr, 0, nullptr),
              CUBLAS_STATUS_SUCCESS);
    const std::vector<TD> got = D.Get();
    for (int q = 0; q < batch; ++q)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          double s = 0;
          for (int p = 0; p < k; ++p)
            s += ToD(a[q * sa + (ta == CUBLAS_OP_N ? i + p * lda : p + i * lda)]) *
                 ToD(b[q * sb + (tb == CUBLAS_OP_N ? p + j * ldb : j + p * ldb)]);
          double v = 0.5 * s - 1.25 * ToD(c[q * sc + i + j * ldc]);
          if (epilogue & CUBLASLT_EPILOGUE_BIAS) v += ToD(bias[q * m + i]);
          if (epilogue & CUBLASLT_EPILOGUE_RELU) v = std::max(v, 0.0);
          if (epilogue & CUBLASLT_EPILOGUE_GELU)
            v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
          ASSERT_NEAR(ToD(got[q * sc + i + j * ldc]), v, tol * std::max(1.0, std::fabs(v)))
              << "batch " << q << " (" << i << "," << j << ")";
        }
    for (cublasLtMatrixLayout_t l : {la, lb, lc})
      EXPECT_EQ(LT(cublasLtMatrixLayoutDestroy)(l), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(LT(cublasLtMatmulDescDestroy)(desc), CUBLAS_STATUS_SUCCESS);
  }

  cublasLtHandle_t h = nullptr;
  std::mt19937_64 rng{7};
};

TEST_F(BlasLtTest, ExportsEveryServerRow) {
#define BLASLT_FN(name) EXPECT_NE(dlsym(LtLib(), #name), nullptr) << #name;
#include "server/blaslt.def"
  EXPECT_GE(LT(cublasLtGetVersion)(), 130000u);
  EXPECT_STREQ(LT(cublasLtGetStatusName)(CUBLAS_STATUS_NOT_SUPPORTED),
               "CUBLAS_STATUS_NOT_SUPPORTED");
}

TEST_F(BlasLtTest, Fp32) {
  Check<float, float>(CUBLAS_OP_N, CUBLAS_OP_N, 7, 5, 6, 1, CUBLASLT_EPILOGUE_DEFAULT, false, 1e-5);
  Check<float, float>(CUBLAS_OP_T, CUBLAS_OP_T, 33, 17, 40, 1, CUBLASLT_EPILOGUE_DEFAULT, true,
                      1e-5);
  Check<float, float>(CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 0, 1, CUBLASLT_EPILOGUE_DEFAULT, false, 1e-6);
}

TEST_F(BlasLtTest, HalfAndBfloat16) {
  Check<__half, __half>(CUBLAS_OP_T, CUBLAS_OP_N, 9, 8, 7, 1, CUBLASLT_EPILOGUE_DEFAULT, false,
                        4e-3);
  Check<__half, float>(CUBLAS_OP_N, CUBLAS_OP_T, 9, 8, 7, 1, CUBLASLT_EPILOGUE_DEFAULT, false,
                       1e-5);
  Check<__nv_bfloat16, __nv_bfloat16>(CUBLAS_OP_N, CUBLAS_OP_N, 9, 8, 7, 1,
                                      CUBLASLT_EPILOGUE_DEFAULT, false, 3e-2);
}

TEST_F(BlasLtTest, EpiloguesAndBatches) {
  for (uint32_t e : {CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS,
                     CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_BIAS}) {
    SCOPED_TRACE(e);
    Check<float, float>(CUBLAS_OP_N, CUBLAS_OP_T, 6, 5, 4, 3, e, false, 1e-5);
    Check<__half, __half>(CUBLAS_OP_T, CUBLAS_OP_N, 6, 5, 4, 2, e, true, 4e-3);
  }
}

TEST_F(BlasLtTest, BadArguments) {
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(LT(cublasLtMatmulDescCreate)(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t l = nullptr, bad = nullptr;
  ASSERT_EQ(LT(cublasLtMatrixLayoutCreate)(&l, CUDA_R_32F, 4, 4, 4), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(LT(cublasLtMatrixLayoutCreate)(&bad, CUDA_R_32F, 4, 4, 3), CUBLAS_STATUS_SUCCESS);
  Dev<float> d(std::vector<float>(16));
  const float one = 1;
  auto mm = [&](cublasLtHandle_t hh, cublasLtMatrixLayout_t a) {
    return LT(cublasLtMatmul)(hh, desc, &one, d.get(), a, d.get(), l, &one, d.get(), l, d.get(), l,
                              nullptr, nullptr, 0, nullptr);
  };
  EXPECT_EQ(mm(h, bad), CUBLAS_STATUS_INVALID_VALUE);
  cublasLtHandle_t gone = nullptr;
  ASSERT_EQ(LT(cublasLtCreate)(&gone), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(LT(cublasLtDestroy)(gone), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm(gone, l), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(LT(cublasLtDestroy)(gone), CUBLAS_STATUS_NOT_INITIALIZED);
  const uint32_t drelu = CUBLASLT_EPILOGUE_DRELU;
  ASSERT_EQ(
      LT(cublasLtMatmulDescSetAttribute)(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &drelu, sizeof drelu),
      CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm(h, l), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(LT(cublasLtMatmulDescSetAttribute)(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &drelu, 2),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(LT(cublasLtMatrixLayoutDestroy)(l), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(LT(cublasLtMatrixLayoutDestroy)(bad), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(LT(cublasLtMatmulDescDestroy)(desc), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
}  // namespace remora::emu::test
