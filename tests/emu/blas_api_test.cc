// tests/emu/blas_api_test.cc - emu/blas's libcublas.so.13 beyond its routines: batched LU, the
// library's exports, handle settings, argument checks, stream order and busy time.
#include "tests/emu/blas_harness.h"

namespace remora::emu::test {
namespace {

template <class T>
void LuBatched(cublasHandle_t h) {
  const double tol = std::is_same_v<T, float> ? 1e-3 : 1e-9;
  const int n = 24, lda = 27, batch = 3, nrhs = 5, ldb = 30;
  std::vector<T> A = Random<T>(static_cast<size_t>(lda) * n * batch, 70);
  // Diagonally dominant, so the unpivoted LU is stable too.
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < n; ++i) {
      T& d = A[b * lda * n + i + i * lda];
      d = FromD<T>(ToD(d) + 8.0);
    }
  }
  const std::vector<double> Ad = ToDouble(A);
  const std::vector<T> Bv = Random<T>(static_cast<size_t>(ldb) * nrhs * batch, 71);
  auto ptrs = [&](T* base, size_t per) {
    std::vector<T*> p(batch);
    for (int b = 0; b < batch; ++b) p[b] = base + b * per;
    return p;
  };
  const size_t per_a = static_cast<size_t>(lda) * n, per_b = static_cast<size_t>(ldb) * nrhs;
  for (bool pivot : {true, false}) {
    SCOPED_TRACE(pivot ? "pivoting" : "no pivoting");
    Dev<T> dLU(A), dB(Bv), dInv(static_cast<size_t>(lda) * n * batch);
    Dev<T*> pLU(ptrs(dLU.get(), per_a)), pB(ptrs(dB.get(), per_b)), pInv(ptrs(dInv.get(), per_a));
    Dev<int> piv(static_cast<size_t>(n) * batch), info(batch);
    int* P = pivot ? piv.get() : nullptr;
    ASSERT_EQ(Fn<T>::getrfBatched()(h, n, pLU.get(), lda, P, info.get(), batch),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(info.Get(), std::vector<int>(batch, 0));
    int hinfo = -99;
    ASSERT_EQ(Fn<T>::getrsBatched()(h, CUBLAS_OP_N, n, nrhs, pLU.get(), lda, P, pB.get(), ldb,
                                    &hinfo, batch),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(hinfo, 0);
    ASSERT_EQ(Fn<T>::getriBatched()(h, n, pLU.get(), lda, P, pInv.get(), lda, info.get(), batch),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(info.Get(), std::vector<int>(batch, 0));
    const std::vector<T> X = dB.Get(), inv = dInv.Get();
    for (int b = 0; b < batch; ++b) {
      // A X == B
      std::vector<double> ax(per_b), bb(per_b);
      std::vector<T> axT(per_b);
      for (int j = 0; j < nrhs; ++j) {
        for (int i = 0; i < n; ++i) {
          double s = 0;
          for (int l = 0; l < n; ++l)
            s += Ad[b * per_a + i + l * lda] * ToD(X[b * per_b + l + j * ldb]);
          axT[i + j * ldb] = FromD<T>(s);
          bb[i + j * ldb] = ToD(Bv[b * per_b + i + j * ldb]);
        }
      }
      EXPECT_LT(RelErr(bb, axT), tol) << "getrs batch " << b;
      // A inv == I
      std::vector<double> eye(static_cast<size_t>(n) * n, 0.0);
      std::vector<T> prod(static_cast<size_t>(n) * n);
      for (int j = 0; j < n; ++j) {
        eye[j + j * n] = 1;
        for (int i = 0; i < n; ++i) {
          double s = 0;
          for (int l = 0; l < n; ++l)
            s += Ad[b * per_a + i + l * lda] * ToD(inv[b * per_a + l + j * lda]);
          prod[i + j * n] = FromD<T>(s);
        }
      }
      EXPECT_LT(RelErr(eye, prod), tol) << "getri batch " << b;
    }
  }
  {  // matinv leaves A alone; a singular matrix reports its zero pivot.
    const int mn = 8;
    std::vector<T> M = Random<T>(static_cast<size_t>(mn) * mn * 2, 72);
    for (int i = 0; i < mn; ++i) M[i + i * mn] = FromD<T>(ToD(M[i + i * mn]) + 4.0);
    for (int i = 0; i < mn * mn; ++i) M[mn * mn + i] = FromD<T>(0.0);  // batch 1: all zero
    Dev<T> dM(M), dI(M.size());
    Dev<T*> pM(ptrs(dM.get(), static_cast<size_t>(mn) * mn)),
        pI(ptrs(dI.get(), static_cast<size_t>(mn) * mn));
    Dev<int> info(2);
    ASSERT_EQ(Fn<T>::matinvBatched()(h, mn, pM.get(), mn, pI.get(), mn, info.get(), 2),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(info.Get(), (std::vector<int>{0, 1}));
    EXPECT_EQ(RelErr(ToDouble(M), dM.Get()), 0);
    const std::vector<T> inv = dI.Get();
    std::vector<double> eye(static_cast<size_t>(mn) * mn, 0.0);
    std::vector<T> prod(static_cast<size_t>(mn) * mn);
    for (int j = 0; j < mn; ++j) {
      eye[j + j * mn] = 1;
      for (int i = 0; i < mn; ++i) {
        double s = 0;
        for (int l = 0; l < mn; ++l) s += ToD(M[i + l * mn]) * ToD(inv[l + j * mn]);
        prod[i + j * mn] = FromD<T>(s);
      }
    }
    EXPECT_LT(RelErr(eye, prod), tol) << "matinv";
    EXPECT_EQ(Fn<T>::matinvBatched()(h, 33, pM.get(), 33, pI.get(), 33, info.get(), 1),
              CUBLAS_STATUS_INVALID_VALUE);
    // getrf of the singular matrix: info is LAPACK's (first zero pivot, 1-based).
    Dev<int> piv(mn);
    ASSERT_EQ(Fn<T>::getrfBatched()(h, mn, pM.get() + 1, mn, piv.get(), info.get(), 1),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(info.Get()[0], 1);
  }
  // getrs checks its arguments into the host info.
  int hinfo = 0;
  EXPECT_EQ(
      Fn<T>::getrsBatched()(h, CUBLAS_OP_N, -1, 1, nullptr, 1, nullptr, nullptr, 1, &hinfo, 1),
      CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(hinfo, -2);
  EXPECT_EQ(Fn<T>::getrsBatched()(h, CUBLAS_OP_N, 4, 1, nullptr, 3, nullptr, nullptr, 4, &hinfo, 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(hinfo, -5);
  EXPECT_EQ(Fn<T>::getrfBatched()(h, 4, nullptr, 4, nullptr, nullptr, -1),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(BlasTest, LuBatched) {
  UseStream();
  LuBatched<float>(h);
  LuBatched<double>(h);
}

TEST(BlasLibrary, ExportsEveryRowOfBlasDef) {
  ASSERT_NE(BlasLib(), nullptr) << dlerror();
  std::string missing;
  int rows = 0;
#define BLAS_FN(name) \
  ++rows;             \
  if (Sym(EMU_STR(name)) == nullptr) missing += EMU_STR(name) " ";
#include "server/blas.def"
  EXPECT_EQ(missing, "");
  EXPECT_GT(rows, 70);
}

TEST(BlasLibrary, SharesTheLoadedDriver) {
  ASSERT_NE(BlasLib(), nullptr) << dlerror();
  ASSERT_NE(Lib().handle, nullptr);
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_EQ(cuda, Lib().handle);
  if (cuda != nullptr) dlclose(cuda);
}

TEST(BlasLibrary, StatusNamesAndVersion) {
  ASSERT_NE(BlasLib(), nullptr) << dlerror();
  EXPECT_STREQ(BLAS(cublasGetStatusName)(CUBLAS_STATUS_INVALID_VALUE),
               "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STREQ(BLAS(cublasGetStatusName)(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(BLAS(cublasGetStatusName)(CUBLAS_STATUS_NOT_SUPPORTED),
               "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_NE(std::string(BLAS(cublasGetStatusString)(CUBLAS_STATUS_EXECUTION_FAILED)), "");
  EXPECT_NE(std::string(BLAS(cublasGetStatusString)(static_cast<cublasStatus_t>(12345))), "");
  int version = 0;
  EXPECT_EQ(BLAS(cublasGetVersion)(nullptr, &version), CUBLAS_STATUS_SUCCESS);
  EXPECT_GE(version, 130000);
  EXPECT_LT(version, 140000);
}

TEST_F(BlasTest, HandleSettings) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(1);
  EXPECT_EQ(BLAS(cublasGetStream)(h, &s), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(s, nullptr);
  UseStream();
  EXPECT_EQ(BLAS(cublasGetStream)(h, &s), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(s, reinterpret_cast<cudaStream_t>(stream));
  cublasPointerMode_t pm;
  EXPECT_EQ(BLAS(cublasGetPointerMode)(h, &pm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_HOST);
  EXPECT_EQ(BLAS(cublasSetPointerMode)(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(BLAS(cublasGetPointerMode)(h, &pm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_DEVICE);
  EXPECT_EQ(BLAS(cublasSetPointerMode)(h, static_cast<cublasPointerMode_t>(7)),
            CUBLAS_STATUS_INVALID_VALUE);
  cublasMath_t mm;
  EXPECT_EQ(BLAS(cublasGetMathMode)(h, &mm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm, CUBLAS_DEFAULT_MATH);
  const auto tf32 = static_cast<cublasMath_t>(CUBLAS_TF32_TENSOR_OP_MATH |
                                              CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  EXPECT_EQ(BLAS(cublasSetMathMode)(h, tf32), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(BLAS(cublasGetMathMode)(h, &mm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm, tf32);
  EXPECT_EQ(BLAS(cublasSetMathMode)(h, static_cast<cublasMath_t>(5)), CUBLAS_STATUS_INVALID_VALUE);
  Dev<std::byte> ws(1 << 16);
  EXPECT_EQ(BLAS(cublasSetWorkspace)(h, ws.get(), 1 << 16), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(BLAS(cublasSetWorkspace)(h, nullptr, 0), CUBLAS_STATUS_SUCCESS);
  int version = 0;
  EXPECT_EQ(BLAS(cublasGetVersion)(h, &version), CUBLAS_STATUS_SUCCESS);
  EXPECT_GE(version, 130000);
}

TEST_F(BlasTest, HandlesNeedAContext) {
  // A thread with no current context cannot create a handle.
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  cublasHandle_t other = nullptr;
  std::thread([&] { st = BLAS(cublasCreate)(&other); }).join();
  EXPECT_EQ(st, CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(BLAS(cublasCreate)(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  // Null and destroyed handles.
  float r = 0;
  EXPECT_EQ(BLAS(cublasSetStream)(nullptr, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(BLAS(cublasSnrm2)(nullptr, 0, nullptr, 1, &r), CUBLAS_STATUS_NOT_INITIALIZED);
  cublasHandle_t dead = nullptr;
  ASSERT_EQ(BLAS(cublasCreate)(&dead), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(BLAS(cublasDestroy)(dead), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(BLAS(cublasDestroy)(dead), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(BLAS(cublasSgemm)(dead, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &r, nullptr, 1, nullptr, 1,
                              &r, nullptr, 1),
            CUBLAS_STATUS_NOT_INITIALIZED);
  cublasPointerMode_t pm;
  EXPECT_EQ(BLAS(cublasGetPointerMode)(dead, &pm), CUBLAS_STATUS_NOT_INITIALIZED);
}

TEST_F(BlasTest, BadArguments) {
  const float one = 1.0f;
  const double oned = 1.0;
  float r = 0;
  Dev<float> buf(64 * 64);
  float* p = buf.get();
  constexpr auto kBad = CUBLAS_STATUS_INVALID_VALUE;
  const auto N = CUBLAS_OP_N;
  const auto badOp = static_cast<cublasOperation_t>(9);
  // Level 1 / 2
  EXPECT_EQ(BLAS(cublasSdot)(h, 4, p, 1, p, 1, nullptr), kBad);
  EXPECT_EQ(BLAS(cublasSgemv)(h, badOp, 4, 4, &one, p, 4, p, 1, &one, p, 1), kBad);
  EXPECT_EQ(BLAS(cublasSgemv)(h, N, -1, 4, &one, p, 4, p, 1, &one, p, 1), kBad);
  EXPECT_EQ(BLAS(cublasSgemv)(h, N, 4, 4, &one, p, 3, p, 1, &one, p, 1), kBad);
  EXPECT_EQ(BLAS(cublasSgemv)(h, N, 4, 4, &one, p, 4, p, 0, &one, p, 1), kBad);
  EXPECT_EQ(BLAS(cublasSger)(h, 4, 4, &one, p, 1, p, 0, p, 4), kBad);
  EXPECT_EQ(BLAS(cublasSsymv)(h, static_cast<cublasFillMode_t>(2), 4, &one, p, 4, p, 1, &one, p, 1),
            kBad);
  EXPECT_EQ(BLAS(cublasStrsv)(h, CUBLAS_FILL_MODE_LOWER, N, static_cast<cublasDiagType_t>(5), 4, p,
                              4, p, 1),
            kBad);
  // Level 3
  EXPECT_EQ(BLAS(cublasSgemm)(h, N, N, 4, 4, -1, &one, p, 4, p, 4, &one, p, 4), kBad);
  EXPECT_EQ(BLAS(cublasSgemm)(h, N, CUBLAS_OP_T, 4, 8, 4, &one, p, 4, p, 4, &one, p, 4), kBad);
  EXPECT_EQ(BLAS(cublasSgemm)(h, N, N, 4, 4, 4, &one, p, 4, p, 4, &one, p, 2), kBad);
  EXPECT_EQ(
      BLAS(cublasDgemm)(h, CUBLAS_OP_T, N, 4, 4, 8, &oned, reinterpret_cast<double*>(p), 4,
                        reinterpret_cast<double*>(p), 8, &oned, reinterpret_cast<double*>(p), 4),
      kBad);
  EXPECT_EQ(BLAS(cublasSsymm)(h, static_cast<cublasSideMode_t>(3), CUBLAS_FILL_MODE_LOWER, 4, 4,
                              &one, p, 4, p, 4, &one, p, 4),
            kBad);
  EXPECT_EQ(BLAS(cublasSsyrk)(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, 4, 8, &one, p, 4, &one, p, 4),
            kBad);
  EXPECT_EQ(BLAS(cublasStrsm)(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, N, CUBLAS_DIAG_UNIT, 4,
                              8, &one, p, 4, p, 4),
            kBad);
  EXPECT_EQ(BLAS(cublasStrmm)(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, N, CUBLAS_DIAG_UNIT, 4,
                              4, &one, p, 4, p, 4, p, 3),
            kBad);
  EXPECT_EQ(BLAS(cublasSgeam)(h, CUBLAS_OP_T, N, 4, 4, &one, p, 4, &one, p + 16, 4, p, 4), kBad);
  EXPECT_EQ(BLAS(cublasSdgmm)(h, CUBLAS_SIDE_LEFT, 4, 4, p, 2, p, 1, p, 4), kBad);
  EXPECT_EQ(BLAS(cublasSgemmBatched)(h, N, N, 4, 4, 4, &one, nullptr, 4, nullptr, 4, &one, nullptr,
                                     4, -1),
            kBad);
  EXPECT_EQ(BLAS(cublasSgemmStridedBatched)(h, N, N, 4, 4, 4, &one, p, 4, 16, p, 4, 16, &one, p, 4,
                                            16, -2),
            kBad);
  EXPECT_EQ(GemmEx()(h, N, N, 4, 4, 4, &one, p, CUDA_R_32F, 2, p, CUDA_R_32F, 4, &one, p,
                     CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            kBad);
  EXPECT_EQ(BLAS(cublasSgetriBatched)(h, 4, nullptr, 2, nullptr, nullptr, 4, nullptr, 1), kBad);
  // Quick returns: nothing to do is success (and a reduction of nothing is 0).
  r = 5;
  EXPECT_EQ(BLAS(cublasSasum)(h, 0, p, 1, &r), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(r, 0);
  r = 5;
  EXPECT_EQ(BLAS(cublasSnrm2)(h, 8, p, -1, &r), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(r, 0);
  EXPECT_EQ(BLAS(cublasSgemm)(h, N, N, 0, 4, 4, &one, p, 1, p, 4, &one, p, 1),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(BLAS(cublasSaxpy)(h, 0, &one, p, 0, p, 0), CUBLAS_STATUS_SUCCESS);
}

// Work runs at its place in the stream: behind a blocked host function, with
// device-mode scalars read only when it runs; host-mode scalars at the call.
void Block(void* flag) {
  auto* f = static_cast<std::atomic<bool>*>(flag);
  while (!f->load(std::memory_order_acquire)) std::this_thread::yield();
}

TEST_F(BlasTest, StreamOrderScalarsAndBusyTime) {
  UseStream(CU_STREAM_NON_BLOCKING);  // the legacy stream's copies do not wait for it
  const int n = 64;
  const std::vector<float> x = Random<float>(n, 80), y = Random<float>(n, 81);
  Dev<float> dx(x), dy(y), dy2(y), dalpha(std::vector<float>{2.0f});
  std::atomic<bool> go{false};
  ASSERT_EQ(api.cuLaunchHostFunc(stream, &Block, &go), CUDA_SUCCESS);
  float alpha = 3.0f;
  ASSERT_EQ(BLAS(cublasSaxpy)(h, n, &alpha, dx.get(), 1, dy.get(), 1), CUBLAS_STATUS_SUCCESS);
  alpha = 100.0f;  // host mode: the value at the call counts
  ASSERT_EQ(BLAS(cublasSetPointerMode)(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(BLAS(cublasSaxpy)(h, n, dalpha.get(), dx.get(), 1, dy2.get(), 1),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
  // Nothing ran yet; device alpha changes to 5 before the work runs.
  std::vector<float> before(n);
  ASSERT_EQ(api.cuMemcpyDtoH(before.data(), reinterpret_cast<CUdeviceptr>(dy.get()), n * 4),
            CUDA_SUCCESS);
  EXPECT_EQ(before, y);
  dalpha.Put({5.0f});
  unsigned long long busy0 = 0, busy1 = 0;
  ASSERT_EQ(api.remoraEmuGetStreamBusyTime(stream, &busy0), CUDA_SUCCESS);
  go.store(true, std::memory_order_release);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  std::vector<double> ref3(n), ref5(n);
  for (int i = 0; i < n; ++i) {
    ref3[i] = 3.0 * x[i] + y[i];
    ref5[i] = 5.0 * x[i] + y[i];
  }
  EXPECT_LT(RelErr(ref3, dy.Get()), 1e-6);
  EXPECT_LT(RelErr(ref5, dy2.Get()), 1e-6);
  // A GEMM's time counts toward the stream's busy time.
  Dev<float> m(128 * 128);
  const float one = 1.0f;
  ASSERT_EQ(BLAS(cublasSetPointerMode)(h, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(BLAS(cublasSgemm)(h, CUBLAS_OP_N, CUBLAS_OP_N, 128, 128, 128, &one, m.get(), 128,
                              m.get(), 128, &one, m.get(), 128),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(api.remoraEmuGetStreamBusyTime(stream, &busy1), CUDA_SUCCESS);
  EXPECT_GT(busy1, busy0);
}

}  // namespace
}  // namespace remora::emu::test
