// tests/emu/blas_test.cc - emu/blas's libcublas.so.13 routine by routine, dlopened as the server
// loads it. The core routines (level 1-3 in S and D, gemm's forms, the batched LU) are called on
// random data in device memory and checked against a naive double-precision loop, in both
// pointer modes and on the legacy and a created stream (BlasModes); the rest of server/blas.def
// is checked end to end, through a live server, by tests/cuda/kernels/cublas_routines.cu and
// cublas_level2.cu.
#include "tests/emu/blas_harness.h"

namespace remora::emu::test {

INSTANTIATE_TEST_SUITE_P(Modes, BlasModes, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Device" : "Host") +
                                  (std::get<1>(info.param) ? "Stream" : "Legacy");
                         });

// Index of element i of a BLAS vector of n elements with increment inc.
size_t VecAt(int n, int inc, int i) {
  return inc >= 0 ? static_cast<size_t>(i) * inc : static_cast<size_t>(n - 1 - i) * -inc;
}

template <class T>
void BlasModes::Level1() {
  const int n = 37;
  const double tol = Fn<T>::kTol;
  for (auto [incx, incy] : {std::pair{1, 1}, std::pair{2, -3}, std::pair{-1, 2}}) {
    SCOPED_TRACE("incx " + std::to_string(incx) + " incy " + std::to_string(incy));
    const size_t lx = static_cast<size_t>(n) * std::abs(incx);
    const size_t ly = static_cast<size_t>(n) * std::abs(incy);
    const std::vector<T> x = Random<T>(lx, 1), y = Random<T>(ly, 2);
    const std::vector<double> xd = ToDouble(x), yd = ToDouble(y);
    Dev<T> dx(x), dy(y);

    // axpy
    std::vector<double> ref = yd;
    for (int i = 0; i < n; ++i) ref[VecAt(n, incy, i)] += 0.75 * xd[VecAt(n, incx, i)];
    ASSERT_EQ(Fn<T>::axpy()(h, n, S<T>(0.75), dx.get(), incx, dy.get(), incy),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(ref, dy.Get()), tol) << "axpy";
    dy.Put(y);

    // dot
    double dot = 0;
    for (int i = 0; i < n; ++i) dot += xd[VecAt(n, incx, i)] * yd[VecAt(n, incy, i)];
    Result<T> r(device());
    ASSERT_EQ(Fn<T>::dot()(h, n, dx.get(), incx, dy.get(), incy, r.ptr()), CUBLAS_STATUS_SUCCESS);
    EXPECT_NEAR(ToD(r.value()), dot, tol * n) << "dot";

    // copy, swap (x and y have n elements at their increments)
    ref = yd;
    for (int i = 0; i < n; ++i) ref[VecAt(n, incy, i)] = xd[VecAt(n, incx, i)];
    ASSERT_EQ(Fn<T>::copy()(h, n, dx.get(), incx, dy.get(), incy), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(RelErr(ref, dy.Get()), 0) << "copy";
    dy.Put(y);
    ASSERT_EQ(Fn<T>::swap()(h, n, dx.get(), incx, dy.get(), incy), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(RelErr(ref, dy.Get()), 0) << "swap y";
    std::vector<double> refx = xd;
    for (int i = 0; i < n; ++i) refx[VecAt(n, incx, i)] = yd[VecAt(n, incy, i)];
    EXPECT_EQ(RelErr(refx, dx.Get()), 0) << "swap x";
    dx.Put(x);
    dy.Put(y);

    // rot
    const double c = 0.6, s = 0.8;
    std::vector<double> rx = xd, ry = yd;
    for (int i = 0; i < n; ++i) {
      const double a = xd[VecAt(n, incx, i)], b = yd[VecAt(n, incy, i)];
      rx[VecAt(n, incx, i)] = c * a + s * b;
      ry[VecAt(n, incy, i)] = c * b - s * a;
    }
    ASSERT_EQ(Fn<T>::rot()(h, n, dx.get(), incx, dy.get(), incy, S<T>(c), S<T>(s)),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(rx, dx.Get()), tol) << "rot x";
    EXPECT_LT(RelErr(ry, dy.Get()), tol) << "rot y";
    dx.Put(x);
    dy.Put(y);
  }

  // The single-vector routines: positive increment (incx <= 0 means n = 0).
  const int inc = 3;
  std::vector<T> x = Random<T>(static_cast<size_t>(n) * inc, 3);
  x[5 * inc] = FromD<T>(-4.0);   // the largest magnitude: index 6
  x[9 * inc] = FromD<T>(0.001);  // the smallest: index 10
  const std::vector<double> xd = ToDouble(x);
  Dev<T> dx(x);
  double nrm = 0, asum = 0;
  for (int i = 0; i < n; ++i) {
    nrm += xd[i * inc] * xd[i * inc];
    asum += std::abs(xd[i * inc]);
  }
  Result<T> r1(device()), r2(device());
  ASSERT_EQ(Fn<T>::nrm2()(h, n, dx.get(), inc, r1.ptr()), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Fn<T>::asum()(h, n, dx.get(), inc, r2.ptr()), CUBLAS_STATUS_SUCCESS);
  EXPECT_NEAR(ToD(r1.value()), std::sqrt(nrm), tol * 10);
  EXPECT_NEAR(ToD(r2.value()), asum, tol * n);
  Result<int> i1(device()), i2(device()), i3(device());
  ASSERT_EQ(Fn<T>::iamax()(h, n, dx.get(), inc, i1.ptr()), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Fn<T>::iamin()(h, n, dx.get(), inc, i2.ptr()), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Fn<T>::iamax()(h, 0, dx.get(), inc, i3.ptr()), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(i1.value(), 6);
  EXPECT_EQ(i2.value(), 10);
  EXPECT_EQ(i3.value(), 0);
  std::vector<double> ref = xd;
  for (int i = 0; i < n; ++i) ref[i * inc] *= -1.5;
  ASSERT_EQ(Fn<T>::scal()(h, n, S<T>(-1.5), dx.get(), inc), CUBLAS_STATUS_SUCCESS);
  EXPECT_LT(RelErr(ref, dx.Get()), tol) << "scal";
}

TEST_P(BlasModes, Level1) {
  Level1<float>();
  Level1<double>();
}

template <class T>
void BlasModes::Level2() {
  const double tol = Fn<T>::kTol;
  const int m = 33, n = 21, lda = 40;
  const std::vector<T> A = Random<T>(static_cast<size_t>(lda) * std::max(m, n), 10);
  const std::vector<double> Ad = ToDouble(A);
  Dev<T> dA(A);
  for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C}) {
    for (auto [incx, incy] : {std::pair{1, 1}, std::pair{-2, 3}}) {
      SCOPED_TRACE("gemv op " + std::to_string(op) + " incx " + std::to_string(incx));
      const int xn = op == CUBLAS_OP_N ? n : m, yn = op == CUBLAS_OP_N ? m : n;
      const std::vector<T> x = Random<T>(static_cast<size_t>(xn) * std::abs(incx), 11);
      const std::vector<T> y = Random<T>(static_cast<size_t>(yn) * std::abs(incy), 12);
      const std::vector<double> xd = ToDouble(x);
      std::vector<double> ref = ToDouble(y);
      for (int i = 0; i < yn; ++i) {
        double s = 0;
        for (int j = 0; j < xn; ++j) {
          const double a = op == CUBLAS_OP_N ? Ad[i + j * lda] : Ad[j + i * lda];
          s += a * xd[VecAt(xn, incx, j)];
        }
        double& v = ref[VecAt(yn, incy, i)];
        v = 1.25 * s - 0.5 * v;
      }
      Dev<T> dx(x), dy(y);
      ASSERT_EQ(Fn<T>::gemv()(h, op, m, n, S<T>(1.25), dA.get(), lda, dx.get(), incx, S<T>(-0.5),
                              dy.get(), incy),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(RelErr(ref, dy.Get()), tol);
    }
  }
  {  // ger: A += alpha x y^T
    const int incx = -1, incy = 2;
    const std::vector<T> x = Random<T>(m, 13), y = Random<T>(static_cast<size_t>(n) * 2, 14);
    const std::vector<double> xd = ToDouble(x), yd = ToDouble(y);
    std::vector<double> ref = Ad;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i)
        ref[i + j * lda] += 0.5 * xd[VecAt(m, incx, i)] * yd[VecAt(n, incy, j)];
    }
    Dev<T> dx(x), dy(y), dB(A);
    ASSERT_EQ(Fn<T>::ger()(h, m, n, S<T>(0.5), dx.get(), incx, dy.get(), incy, dB.get(), lda),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(ref, dB.Get()), tol) << "ger";
  }
  for (cublasFillMode_t uplo : {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER}) {
    SCOPED_TRACE("uplo " + std::to_string(uplo));
    auto sym = [&](int i, int j) {  // the symmetric matrix the stored triangle means
      const bool stored = uplo == CUBLAS_FILL_MODE_LOWER ? i >= j : i <= j;
      return stored ? Ad[i + j * lda] : Ad[j + i * lda];
    };
    const std::vector<T> x = Random<T>(n, 15), y = Random<T>(static_cast<size_t>(n) * 2, 16);
    const std::vector<double> xd = ToDouble(x);
    std::vector<double> ref = ToDouble(y);
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += sym(i, j) * xd[j];
      ref[i * 2] = 2.0 * s + 1.0 * ref[i * 2];
    }
    Dev<T> dx(x), dy(y);
    ASSERT_EQ(
        Fn<T>::symv()(h, uplo, n, S<T>(2.0), dA.get(), lda, dx.get(), 1, S<T>(1.0), dy.get(), 2),
        CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(ref, dy.Get()), tol) << "symv";

    // trsv: solve op(T) x = b for a well-conditioned triangle, check op(T) x == b.
    std::vector<T> tri = A;
    for (int i = 0; i < n; ++i) tri[i + i * lda] = FromD<T>(4.0 + ToD(tri[i + i * lda]));
    const std::vector<double> td = ToDouble(tri);
    for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T}) {
      for (cublasDiagType_t diag : {CUBLAS_DIAG_NON_UNIT, CUBLAS_DIAG_UNIT}) {
        auto t = [&](int i, int j) {
          if (i == j && diag == CUBLAS_DIAG_UNIT) return 1.0;
          const int r = op == CUBLAS_OP_N ? i : j, c = op == CUBLAS_OP_N ? j : i;
          const bool in = uplo == CUBLAS_FILL_MODE_LOWER ? r >= c : r <= c;
          return in ? td[r + c * lda] : 0.0;
        };
        const std::vector<T> b = Random<T>(n, 17);
        Dev<T> dT(tri), dxb(b);
        ASSERT_EQ(Fn<T>::trsv()(h, uplo, op, diag, n, dT.get(), lda, dxb.get(), 1),
                  CUBLAS_STATUS_SUCCESS);
        const std::vector<T> sol = dxb.Get();
        std::vector<T> back(n);
        for (int i = 0; i < n; ++i) {
          double s = 0;
          for (int j = 0; j < n; ++j) s += t(i, j) * ToD(sol[j]);
          back[i] = FromD<T>(s);
        }
        EXPECT_LT(RelErr(ToDouble(b), back), tol * 10) << "trsv op " << op << " diag " << diag;
      }
    }
  }
}

TEST_P(BlasModes, Level2) {
  Level2<float>();
  Level2<double>();
}

template <class T>
void BlasModes::Level3() {
  const double tol = Fn<T>::kTol;
  const int m = 35, n = 19, k = 27, ld = 41;
  const std::vector<T> A = Random<T>(static_cast<size_t>(ld) * 41, 20);
  const std::vector<T> B = Random<T>(static_cast<size_t>(ld) * 41, 21);
  const std::vector<T> C = Random<T>(static_cast<size_t>(ld) * 41, 22);
  const std::vector<double> Ad = ToDouble(A), Bd = ToDouble(B), Cd = ToDouble(C);
  Dev<T> dA(A), dB(B);
  for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C}) {
    for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C}) {
      Dev<T> dC(C);
      ASSERT_EQ(Fn<T>::gemm()(h, ta, tb, m, n, k, S<T>(1.5), dA.get(), ld, dB.get(), ld, S<T>(-2.0),
                              dC.get(), ld),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(RelErr(RefGemm(ta, tb, m, n, k, 1.5, Ad, ld, Bd, ld, -2.0, Cd, ld), dC.Get()), tol)
          << "gemm " << ta << tb;
    }
  }
  {  // k == 0: C = beta C
    Dev<T> dC(C);
    ASSERT_EQ(Fn<T>::gemm()(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, 0, S<T>(1.5), dA.get(), ld, dB.get(),
                            ld, S<T>(2.0), dC.get(), ld),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(RefGemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, 0, 1.5, Ad, ld, Bd, ld, 2.0, Cd, ld),
                     dC.Get()),
              tol)
        << "gemm k = 0";
  }
  for (cublasFillMode_t uplo : {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER}) {
    auto sym = [&](int i, int j) {
      const bool stored = uplo == CUBLAS_FILL_MODE_LOWER ? i >= j : i <= j;
      return stored ? Ad[i + j * ld] : Ad[j + i * ld];
    };
    for (cublasSideMode_t side : {CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT}) {
      std::vector<double> ref = Cd;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
          double s = 0;
          if (side == CUBLAS_SIDE_LEFT) {
            for (int l = 0; l < m; ++l) s += sym(i, l) * Bd[l + j * ld];
          } else {
            for (int l = 0; l < n; ++l) s += Bd[i + l * ld] * sym(l, j);
          }
          ref[i + j * ld] = 0.5 * s + 0.25 * ref[i + j * ld];
        }
      }
      Dev<T> dC(C);
      ASSERT_EQ(Fn<T>::symm()(h, side, uplo, m, n, S<T>(0.5), dA.get(), ld, dB.get(), ld,
                              S<T>(0.25), dC.get(), ld),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(RelErr(ref, dC.Get()), tol) << "symm side " << side << " uplo " << uplo;
    }
    for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T}) {
      // syrk touches only the `uplo` triangle of C.
      std::vector<double> ref = Cd;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < n; ++i) {
          if (uplo == CUBLAS_FILL_MODE_LOWER ? i < j : i > j) continue;
          double s = 0;
          for (int l = 0; l < k; ++l) s += OpAt(Ad, ld, op, i, l) * OpAt(Ad, ld, op, j, l);
          ref[i + j * ld] = -1.0 * s + 0.5 * ref[i + j * ld];
        }
      }
      Dev<T> dC(C);
      ASSERT_EQ(Fn<T>::syrk()(h, uplo, op, n, k, S<T>(-1.0), dA.get(), ld, S<T>(0.5), dC.get(), ld),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(RelErr(ref, dC.Get()), tol) << "syrk";
    }
    // trmm (out of place) and trsm (in place) with a diagonally dominant triangle.
    std::vector<T> tri = A;
    for (int i = 0; i < ld; ++i) tri[i + i * ld] = FromD<T>(4.0 + ToD(tri[i + i * ld]));
    const std::vector<double> td = ToDouble(tri);
    Dev<T> dT(tri);
    for (cublasSideMode_t side : {CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT}) {
      for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T}) {
        const cublasDiagType_t diag = op == CUBLAS_OP_N ? CUBLAS_DIAG_NON_UNIT : CUBLAS_DIAG_UNIT;
        auto t = [&](int i, int j) {  // op(T)(i, j)
          if (i == j && diag == CUBLAS_DIAG_UNIT) return 1.0;
          const int r = op == CUBLAS_OP_N ? i : j, c = op == CUBLAS_OP_N ? j : i;
          const bool in = uplo == CUBLAS_FILL_MODE_LOWER ? r >= c : r <= c;
          return in ? td[r + c * ld] : 0.0;
        };
        std::vector<double> ref = Cd;  // C = 2 op(T) B or 2 B op(T)
        for (int j = 0; j < n; ++j) {
          for (int i = 0; i < m; ++i) {
            double s = 0;
            if (side == CUBLAS_SIDE_LEFT) {
              for (int l = 0; l < m; ++l) s += t(i, l) * Bd[l + j * ld];
            } else {
              for (int l = 0; l < n; ++l) s += Bd[i + l * ld] * t(l, j);
            }
            ref[i + j * ld] = 2.0 * s;
          }
        }
        Dev<T> dC(C);
        ASSERT_EQ(Fn<T>::trmm()(h, side, uplo, op, diag, m, n, S<T>(2.0), dT.get(), ld, dB.get(),
                                ld, dC.get(), ld),
                  CUBLAS_STATUS_SUCCESS);
        EXPECT_LT(RelErr(ref, dC.Get()), tol) << "trmm side " << side << " op " << op;
        // trsm undoes it: solve op(T) X = C / 2 (X = B).
        ASSERT_EQ(
            Fn<T>::trsm()(h, side, uplo, op, diag, m, n, S<T>(0.5), dT.get(), ld, dC.get(), ld),
            CUBLAS_STATUS_SUCCESS);
        std::vector<double> refB = ref;
        for (int j = 0; j < n; ++j) {
          for (int i = 0; i < m; ++i) refB[i + j * ld] = Bd[i + j * ld];
        }
        EXPECT_LT(RelErr(refB, dC.Get()), tol * 10) << "trsm side " << side << " op " << op;
      }
    }
  }
  for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T}) {
    for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_C}) {
      std::vector<double> ref = Cd;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
          ref[i + j * ld] = 0.5 * OpAt(Ad, ld, ta, i, j) - 3.0 * OpAt(Bd, ld, tb, i, j);
        }
      }
      Dev<T> dC(C);
      ASSERT_EQ(Fn<T>::geam()(h, ta, tb, m, n, S<T>(0.5), dA.get(), ld, S<T>(-3.0), dB.get(), ld,
                              dC.get(), ld),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(RelErr(ref, dC.Get()), tol) << "geam";
    }
  }
  {  // geam with beta == 0 leaves B unread (NaN), in place C == A.
    std::vector<T> nan(B.size(), FromD<T>(std::nan("")));
    Dev<T> dN(nan), dC(C);
    std::vector<double> ref = Cd;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) ref[i + j * ld] *= 2.0;
    }
    ASSERT_EQ(Fn<T>::geam()(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, S<T>(2.0), dC.get(), ld, S<T>(0.0),
                            dN.get(), ld, dC.get(), ld),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(ref, dC.Get()), tol) << "geam in place";
  }
  for (cublasSideMode_t side : {CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT}) {
    for (int incx : {1, -2, 0}) {
      const int len = side == CUBLAS_SIDE_LEFT ? m : n;
      const std::vector<T> x =
          Random<T>(static_cast<size_t>(len) * std::max(1, std::abs(incx)), 23);
      const std::vector<double> xd = ToDouble(x);
      std::vector<double> ref = Cd;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
          const int e = side == CUBLAS_SIDE_LEFT ? i : j;
          const double xv = incx == 0 ? xd[0] : xd[VecAt(len, incx, e)];
          ref[i + j * ld] = Ad[i + j * ld] * xv;
        }
      }
      Dev<T> dx(x), dC(C);
      ASSERT_EQ(Fn<T>::dgmm()(h, side, m, n, dA.get(), ld, dx.get(), incx, dC.get(), ld),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(RelErr(ref, dC.Get()), tol) << "dgmm side " << side << " incx " << incx;
    }
  }
}

TEST_P(BlasModes, Level3) {
  Level3<float>();
  Level3<double>();
}

TEST_P(BlasModes, ComplexAndHalfGemm) {
  const int m = 23, n = 17, k = 31, ld = 33;
  const size_t sz = static_cast<size_t>(ld) * 33;
  for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C}) {
    const cublasOperation_t tb = ta == CUBLAS_OP_N ? CUBLAS_OP_C : CUBLAS_OP_N;
    // Complex: the reference in std::complex<double>; C conjugates.
    auto cref = [&](const std::vector<double>& a, const std::vector<double>& b,
                    const std::vector<double>& c, std::complex<double> alpha,
                    std::complex<double> beta) {
      auto el = [&](const std::vector<double>& X, cublasOperation_t op, int i, int j) {
        const size_t at =
            op == CUBLAS_OP_N ? i + static_cast<size_t>(j) * ld : j + static_cast<size_t>(i) * ld;
        std::complex<double> v(X[2 * at], X[2 * at + 1]);
        return op == CUBLAS_OP_C ? std::conj(v) : v;
      };
      std::vector<double> out = c;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
          std::complex<double> s = 0;
          for (int l = 0; l < k; ++l) s += el(a, ta, i, l) * el(b, tb, l, j);
          const size_t at = i + static_cast<size_t>(j) * ld;
          const std::complex<double> v =
              alpha * s + beta * std::complex<double>(c[2 * at], c[2 * at + 1]);
          out[2 * at] = v.real();
          out[2 * at + 1] = v.imag();
        }
      }
      return out;
    };
    {
      const std::vector<float> a = Random<float>(2 * sz, 30), b = Random<float>(2 * sz, 31),
                               c = Random<float>(2 * sz, 32);
      Dev<float> da(a), db(b), dc(c);
      ASSERT_EQ(BLAS(cublasCgemm)(h, ta, tb, m, n, k, S(make_cuComplex(0.5f, -1.0f)),
                                  reinterpret_cast<const cuComplex*>(da.get()), ld,
                                  reinterpret_cast<const cuComplex*>(db.get()), ld,
                                  S(make_cuComplex(1.0f, 0.25f)),
                                  reinterpret_cast<cuComplex*>(dc.get()), ld),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(
          RelErr(cref(ToDouble(a), ToDouble(b), ToDouble(c), {0.5, -1.0}, {1.0, 0.25}), dc.Get()),
          1e-4)
          << "Cgemm " << ta;
    }
    {
      const std::vector<double> a = Random<double>(2 * sz, 33), b = Random<double>(2 * sz, 34),
                                c = Random<double>(2 * sz, 35);
      Dev<double> da(a), db(b), dc(c);
      ASSERT_EQ(BLAS(cublasZgemm)(h, ta, tb, m, n, k, S(make_cuDoubleComplex(-0.5, 2.0)),
                                  reinterpret_cast<const cuDoubleComplex*>(da.get()), ld,
                                  reinterpret_cast<const cuDoubleComplex*>(db.get()), ld,
                                  S(make_cuDoubleComplex(0.0, 1.0)),
                                  reinterpret_cast<cuDoubleComplex*>(dc.get()), ld),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_LT(RelErr(cref(a, b, c, {-0.5, 2.0}, {0.0, 1.0}), dc.Get()), 1e-10) << "Zgemm " << ta;
    }
    {
      const std::vector<__half> a = Random<__half>(sz, 36), b = Random<__half>(sz, 37),
                                c = Random<__half>(sz, 38);
      Dev<__half> da(a), db(b), dc(c);
      ASSERT_EQ(BLAS(cublasHgemm)(h, ta, tb, m, n, k, S(__float2half(0.5f)), da.get(), ld, db.get(),
                                  ld, S(__float2half(-1.0f)), dc.get(), ld),
                CUBLAS_STATUS_SUCCESS);
      const auto ref =
          RefGemm(ta, tb, m, n, k, 0.5, ToDouble(a), ld, ToDouble(b), ld, -1.0, ToDouble(c), ld);
      EXPECT_LT(RelErr(ref, dc.Get()), 1e-2) << "Hgemm " << ta;
    }
  }
}

// GemmEx over every supported type combination, then refusals.
TEST_P(BlasModes, GemmEx) {
  const int m = 29, n = 18, k = 24, ld = 32;
  const size_t sz = static_cast<size_t>(ld) * 32;
  struct Case {
    cudaDataType ab, c;
    int compute;  // cublasComputeType_t or a legacy cudaDataType
    double tol;
  };
  const Case cases[] = {
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1e-4},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 1e-4},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 1e-4},
      {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 1e-4},  // legacy computeType
      {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 1e-10},
      {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, 1e-10},
      {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 1e-2},
      {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F, 1e-4},
      {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, 1e-2},
      {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2e-2},
      {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, 1e-4},
  };
  // Storage of each type, converted from one set of doubles so the reference
  // sees exactly the values the library reads.
  auto make = [&](cudaDataType t, unsigned seed, std::vector<double>* exact) {
    const std::vector<double> v = ToDouble(Random<double>(sz, seed));
    std::vector<std::byte> bytes;
    auto fill = [&](auto tag) {
      using E = decltype(tag);
      std::vector<E> e(sz);
      for (size_t i = 0; i < sz; ++i) e[i] = FromD<E>(v[i]);
      *exact = ToDouble(e);
      bytes.resize(sz * sizeof(E));
      std::memcpy(bytes.data(), e.data(), bytes.size());
    };
    switch (t) {
      case CUDA_R_16F:
        fill(__half{});
        break;
      case CUDA_R_16BF:
        fill(__nv_bfloat16{});
        break;
      case CUDA_R_64F:
        fill(double{});
        break;
      default:
        fill(float{});
        break;
    }
    return bytes;
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("types " + std::to_string(c.ab) + "/" + std::to_string(c.c) + " compute " +
                 std::to_string(c.compute));
    std::vector<double> ad, bd, cd;
    auto a = make(c.ab, 40, &ad), b = make(c.ab, 41, &bd), cc = make(c.c, 42, &cd);
    Dev<std::byte> da(a), db(b), dc(cc);
    const bool d64 = c.ab == CUDA_R_64F;
    const bool h16 = c.compute == CUBLAS_COMPUTE_16F;
    const void* alpha = d64   ? static_cast<const void*>(S(0.75))
                        : h16 ? static_cast<const void*>(S(__float2half(0.75f)))
                              : S(0.75f);
    const void* beta = d64   ? static_cast<const void*>(S(-0.5))
                       : h16 ? static_cast<const void*>(S(__float2half(-0.5f)))
                             : S(-0.5f);
    ASSERT_EQ(GemmEx()(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, alpha, da.get(), c.ab, ld, db.get(),
                       c.ab, ld, beta, dc.get(), c.c, ld,
                       static_cast<cublasComputeType_t>(c.compute), CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    const auto ref = RefGemm(CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, 0.75, ad, ld, bd, ld, -0.5, cd, ld);
    const auto raw = dc.Get();
    std::vector<double> got;
    switch (c.c) {
      case CUDA_R_16F: {
        std::vector<__half> v(sz);
        std::memcpy(v.data(), raw.data(), raw.size());
        got = ToDouble(v);
        break;
      }
      case CUDA_R_16BF: {
        std::vector<__nv_bfloat16> v(sz);
        std::memcpy(v.data(), raw.data(), raw.size());
        got = ToDouble(v);
        break;
      }
      case CUDA_R_64F: {
        got.resize(sz);
        std::memcpy(got.data(), raw.data(), raw.size());
        break;
      }
      default: {
        std::vector<float> v(sz);
        std::memcpy(v.data(), raw.data(), raw.size());
        got = ToDouble(v);
        break;
      }
    }
    EXPECT_LT(RelErr(ref, got), c.tol);
  }
  // Unsupported combinations.
  Dev<double> buf(sz);
  const float one = 1.0f;
  const void* s = device() ? static_cast<const void*>(S(1.0f)) : &one;
  EXPECT_EQ(
      GemmEx()(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, s, buf.get(), CUDA_R_32F, 4, buf.get(),
               CUDA_R_32F, 4, s, buf.get(), CUDA_R_32F, 4, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      GemmEx()(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, s, buf.get(), CUDA_R_8I, 4, buf.get(),
               CUDA_R_8I, 4, s, buf.get(), CUDA_R_32I, 4, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      GemmEx()(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, s, buf.get(), CUDA_R_16F, 4, buf.get(),
               CUDA_R_32F, 4, s, buf.get(), CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_NOT_SUPPORTED);
}

template <class T>
void BlasModes::Batched() {
  const double tol = Fn<T>::kTol;
  const int m = 20, n = 16, k = 12, ld = 24, batch = 3;
  const long long stride = static_cast<long long>(ld) * 24 + 8;
  const size_t total = static_cast<size_t>(stride) * batch;
  const std::vector<T> A = Random<T>(total, 50), B = Random<T>(total, 51), C = Random<T>(total, 52);
  const std::vector<double> Ad = ToDouble(A), Bd = ToDouble(B), Cd = ToDouble(C);
  // The expected C: each batch's GEMM on its slice.
  auto expect = [&](cublasOperation_t ta, cublasOperation_t tb) {
    std::vector<double> out = Cd;
    for (int b = 0; b < batch; ++b) {
      auto slice = [&](const std::vector<double>& v) {
        return std::vector<double>(v.begin() + b * stride, v.begin() + (b + 1) * stride);
      };
      const auto r =
          RefGemm(ta, tb, m, n, k, 1.25, slice(Ad), ld, slice(Bd), ld, 0.5, slice(Cd), ld);
      std::copy(r.begin(), r.end(), out.begin() + b * stride);
    }
    return out;
  };
  Dev<T> dA(A), dB(B);
  auto ptrs = [&](T* base) {
    std::vector<T*> p(batch);
    for (int b = 0; b < batch; ++b) p[b] = base + b * stride;
    return p;
  };
  {
    Dev<T> dC(C);
    Dev<T*> pa(ptrs(dA.get())), pb(ptrs(dB.get())), pc(ptrs(dC.get()));
    ASSERT_EQ(Fn<T>::gemmBatched()(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, S<T>(1.25), pa.get(), ld,
                                   pb.get(), ld, S<T>(0.5), pc.get(), ld, batch),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(expect(CUBLAS_OP_N, CUBLAS_OP_T), dC.Get()), tol) << "gemmBatched";
  }
  {
    Dev<T> dC(C);
    ASSERT_EQ(Fn<T>::gemmStridedBatched()(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, S<T>(1.25),
                                          dA.get(), ld, stride, dB.get(), ld, stride, S<T>(0.5),
                                          dC.get(), ld, stride, batch),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(expect(CUBLAS_OP_T, CUBLAS_OP_N), dC.Get()), tol) << "gemmStridedBatched";
  }
  const cublasComputeType_t ct = std::is_same_v<T, float> ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F;
  {
    Dev<T> dC(C);
    Dev<T*> pa(ptrs(dA.get())), pb(ptrs(dB.get())), pc(ptrs(dC.get()));
    ASSERT_EQ(GemmBatchedEx()(h, CUBLAS_OP_T, CUBLAS_OP_T, m, n, k, S<T>(1.25),
                              reinterpret_cast<const void* const*>(pa.get()), Fn<T>::kType, ld,
                              reinterpret_cast<const void* const*>(pb.get()), Fn<T>::kType, ld,
                              S<T>(0.5), reinterpret_cast<void* const*>(pc.get()), Fn<T>::kType, ld,
                              batch, ct, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(expect(CUBLAS_OP_T, CUBLAS_OP_T), dC.Get()), tol) << "GemmBatchedEx";
  }
  {
    Dev<T> dC(C);
    ASSERT_EQ(GemmStridedBatchedEx()(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, S<T>(1.25), dA.get(),
                                     Fn<T>::kType, ld, stride, dB.get(), Fn<T>::kType, ld, stride,
                                     S<T>(0.5), dC.get(), Fn<T>::kType, ld, stride, batch, ct,
                                     CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_LT(RelErr(expect(CUBLAS_OP_N, CUBLAS_OP_N), dC.Get()), tol) << "GemmStridedBatchedEx";
  }
}

TEST_P(BlasModes, Batched) {
  Batched<float>();
  Batched<double>();
}

// The half-precision strided Ex path (conversion per batch).
TEST_P(BlasModes, StridedBatchedExHalf) {
  const int m = 16, n = 16, k = 16, batch = 2;
  const long long stride = 16 * 16;
  const std::vector<__half> A = Random<__half>(stride * batch, 60),
                            B = Random<__half>(stride * batch, 61);
  Dev<__half> dA(A), dB(B);
  Dev<float> dC(static_cast<size_t>(stride) * batch);
  ASSERT_EQ(
      GemmStridedBatchedEx()(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, S(1.0f), dA.get(), CUDA_R_16F, m,
                             stride, dB.get(), CUDA_R_16F, k, stride, S(0.0f), dC.get(), CUDA_R_32F,
                             m, stride, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_SUCCESS);
  const std::vector<double> Ad = ToDouble(A), Bd = ToDouble(B);
  std::vector<double> ref(static_cast<size_t>(stride) * batch);
  for (int b = 0; b < batch; ++b) {
    const auto r =
        RefGemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1.0,
                std::vector<double>(Ad.begin() + b * stride, Ad.begin() + (b + 1) * stride), m,
                std::vector<double>(Bd.begin() + b * stride, Bd.begin() + (b + 1) * stride), k, 0.0,
                std::vector<double>(stride), m);
    std::copy(r.begin(), r.end(), ref.begin() + b * stride);
  }
  EXPECT_LT(RelErr(ref, dC.Get()), 1e-4);
}

// getrf (with and without pivots), getrs, getri and matinv on a batch.

}  // namespace remora::emu::test
