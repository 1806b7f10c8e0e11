// tests/emu/dnn_ops_test.cc - emu/dnn's libcudnn.so.9 beyond convolution: tensor arithmetic,
// activation, softmax, pooling, LRN and batch normalization against double-precision references,
// and stream order.
#include "tests/emu/dnn_harness.h"

namespace remora::emu::test {
namespace {

// ---- Tensor arithmetic ----

TEST_F(DnnTest, AddTensorBroadcastsBias) {
  const Dims cd{2, 5, 4, 6}, ad{1, 5, 1, 1};
  Tensor cT(CUDNN_DATA_FLOAT, cd, Strides(cd, true));
  Tensor aT(CUDNN_DATA_FLOAT, ad, Strides(ad, false));
  const Vec av = aT.Set(Random(aT.count(), 21));
  const Vec old = cT.Set(Random(cT.count(), 22));
  const float a = 2, b = 0.5;
  ASSERT_EQ(DNN(cudnnAddTensor)(h, &a, aT.desc(), aT.ptr(), &b, cT.desc(), cT.ptr()),
            CUDNN_STATUS_SUCCESS);
  Vec want(cT.count());
  ForEach(cT.canon(), [&](const Idx& i) { want[Lin(cT.canon(), i)] = av[i[1]]; });
  ExpectBlend(cT.Get(), want, a, b, old, 1e-5, "add tensor");
  const Dims bad{1, 4, 1, 1};
  Tensor badT(CUDNN_DATA_FLOAT, bad, Strides(bad, false));
  EXPECT_EQ(DNN(cudnnAddTensor)(h, &a, badT.desc(), badT.ptr(), &b, cT.desc(), cT.ptr()),
            CUDNN_STATUS_BAD_PARAM);
}

TEST_F(DnnTest, OpTensorScaleSetTransform) {
  const Dims d{2, 3, 5, 4}, bd{1, 3, 1, 4};
  Tensor A(CUDNN_DATA_FLOAT, d, Strides(d, false));
  Tensor B(CUDNN_DATA_FLOAT, bd, Strides(bd, true));
  Tensor C(CUDNN_DATA_FLOAT, d, Strides(d, true));
  const Vec av = A.Set(Random(A.count(), 31, 0.1, 2));
  const Vec bv = B.Set(Random(B.count(), 32));
  cudnnOpTensorDescriptor_t op = nullptr;
  ASSERT_EQ(DNN(cudnnCreateOpTensorDescriptor)(&op), CUDNN_STATUS_SUCCESS);
  const float a1 = 0.5, a2 = -2;
  for (int kind = CUDNN_OP_TENSOR_ADD; kind <= CUDNN_OP_TENSOR_NOT; ++kind) {
    ASSERT_EQ(DNN(cudnnSetOpTensorDescriptor)(op, static_cast<cudnnOpTensorOp_t>(kind),
                                              CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
              CUDNN_STATUS_SUCCESS);
    const float beta = kind % 2 == 0 ? 0.f : 0.25f;
    const Vec old = beta == 0 ? Vec(C.count()) : C.Set(Random(C.count(), 33 + kind));
    ASSERT_EQ(DNN(cudnnOpTensor)(h, op, &a1, A.desc(), A.ptr(), &a2, B.desc(), B.ptr(), &beta,
                                 C.desc(), C.ptr()),
              CUDNN_STATUS_SUCCESS);
    Vec want(C.count());
    ForEach(C.canon(), [&](const Idx& i) {
      const double x = a1 * av[Lin(A.canon(), i)];
      const double y = a2 * bv[Lin(B.canon(), Idx{0, i[1], 0, 0, i[4]})];
      double r = 0;
      switch (kind) {
        case CUDNN_OP_TENSOR_ADD:
          r = x + y;
          break;
        case CUDNN_OP_TENSOR_MUL:
          r = x * y;
          break;
        case CUDNN_OP_TENSOR_MIN:
          r = std::min(x, y);
          break;
        case CUDNN_OP_TENSOR_MAX:
          r = std::max(x, y);
          break;
        case CUDNN_OP_TENSOR_SQRT:
          r = std::sqrt(x);
          break;
        default:
          r = 1 - x;
          break;
      }
      want[Lin(C.canon(), i)] = r;
    });
    ExpectBlend(C.Get(), want, 1, beta, old, 1e-5, "op tensor " + std::to_string(kind));
  }
  EXPECT_EQ(DNN(cudnnDestroyOpTensorDescriptor)(op), CUDNN_STATUS_SUCCESS);

  // Scale, set.
  const Vec cv = C.Set(Random(C.count(), 40));
  const float s = -3;
  ASSERT_EQ(DNN(cudnnScaleTensor)(h, C.desc(), C.ptr(), &s), CUDNN_STATUS_SUCCESS);
  ExpectBlend(C.Get(), cv, s, 0, cv, 1e-6, "scale");
  const float v = 7.5;
  ASSERT_EQ(DNN(cudnnSetTensor)(h, C.desc(), C.ptr(), &v), CUDNN_STATUS_SUCCESS);
  ExpectBlend(C.Get(), Vec(C.count(), 7.5), 1, 0, cv, 0, "set");

  // Transform NCHW -> NHWC, and NHWC -> NCHW with beta.
  const float ta = 2, tb = 0, tb2 = -1;
  ASSERT_EQ(DNN(cudnnTransformTensor)(h, &ta, A.desc(), A.ptr(), &tb, C.desc(), C.ptr()),
            CUDNN_STATUS_SUCCESS);
  ExpectBlend(C.Get(), av, ta, 0, av, 1e-6, "transform");
  Tensor back(CUDNN_DATA_DOUBLE, d, Strides(d, false));
  const Vec bold = back.Set(Random(back.count(), 41));
  const double da = 1, db = -1;
  (void)tb2;
  ASSERT_EQ(DNN(cudnnTransformTensor)(h, &da, C.desc(), C.ptr(), &db, back.desc(), back.ptr()),
            CUDNN_STATUS_SUCCESS);
  Vec twice(av.size());
  for (size_t i = 0; i < av.size(); ++i) twice[i] = 2 * av[i];
  ExpectBlend(back.Get(), twice, 1, -1, bold, 1e-6, "transform back");
}

// ---- Activation and softmax ----

double Sig(double x) {
  return 1 / (1 + std::exp(-x));
}

TEST_F(DnnTest, ActivationForwardBackward) {
  for (cudnnDataType_t type : {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF}) {
    const Dims d{2, 4, 5, 6};
    Tensor x(type, d, Strides(d, true)), y(type, d, Strides(d, false));
    Tensor dy(type, d, Strides(d, false)), dx(type, d, Strides(d, true));
    const Vec xv = x.Set(Random(x.count(), 51, -2, 2));
    const Vec dyv = dy.Set(Random(dy.count(), 52));
    cudnnActivationDescriptor_t act = nullptr;
    ASSERT_EQ(DNN(cudnnCreateActivationDescriptor)(&act), CUDNN_STATUS_SUCCESS);
    const double coef = 0.8;
    for (int mode = CUDNN_ACTIVATION_SIGMOID; mode <= CUDNN_ACTIVATION_SWISH; ++mode) {
      ASSERT_EQ(DNN(cudnnSetActivationDescriptor)(act, static_cast<cudnnActivationMode_t>(mode),
                                                  CUDNN_NOT_PROPAGATE_NAN, coef),
                CUDNN_STATUS_SUCCESS);
      Vec f(x.count()), df(x.count());
      for (size_t i = 0; i < xv.size(); ++i) {
        const double v = xv[i];
        switch (mode) {
          case CUDNN_ACTIVATION_SIGMOID:
            f[i] = Sig(v);
            df[i] = Sig(v) * (1 - Sig(v));
            break;
          case CUDNN_ACTIVATION_RELU:
            f[i] = std::max(v, 0.0);
            df[i] = v > 0;
            break;
          case CUDNN_ACTIVATION_TANH:
            f[i] = std::tanh(v);
            df[i] = 1 - f[i] * f[i];
            break;
          case CUDNN_ACTIVATION_CLIPPED_RELU:
            f[i] = std::min(std::max(v, 0.0), coef);
            df[i] = v > 0 && v < coef;
            break;
          case CUDNN_ACTIVATION_ELU:
            f[i] = v > 0 ? v : coef * (std::exp(v) - 1);
            df[i] = v > 0 ? 1 : coef * std::exp(v);
            break;
          case CUDNN_ACTIVATION_IDENTITY:
            f[i] = v;
            df[i] = 1;
            break;
          default:
            f[i] = v * Sig(v);
            df[i] = Sig(v) + v * Sig(v) * (1 - Sig(v));
            break;
        }
      }
      const std::string what =
          "activation " + std::to_string(mode) + " type " + std::to_string(type);
      const Scale a(type, 1.5), zero(type, 0), b(type, 0.5);
      ASSERT_EQ(DNN(cudnnActivationForward)(h, act, a.ptr(), x.desc(), x.ptr(), zero.ptr(),
                                            y.desc(), y.ptr()),
                CUDNN_STATUS_SUCCESS);
      const double tol = Tol(type) * 2;
      ExpectBlend(y.Get(), f, a.value(), 0, f, tol, what);
      // y itself (not alpha * y) feeds backward.
      const Vec yv = y.Set(f);
      const Vec old = dx.Set(Random(dx.count(), 53));
      const cudnnStatus_t st =
          DNN(cudnnActivationBackward)(h, act, a.ptr(), y.desc(), y.ptr(), dy.desc(), dy.ptr(),
                                       x.desc(), x.ptr(), b.ptr(), dx.desc(), dx.ptr());
      if (mode == CUDNN_ACTIVATION_IDENTITY) {
        EXPECT_EQ(st, CUDNN_STATUS_BAD_PARAM);
        continue;
      }
      ASSERT_EQ(st, CUDNN_STATUS_SUCCESS) << what;
      Vec want(x.count());
      for (size_t i = 0; i < want.size(); ++i) want[i] = df[i] * dyv[i];
      if (type == CUDNN_DATA_HALF &&
          (mode == CUDNN_ACTIVATION_SIGMOID || mode == CUDNN_ACTIVATION_TANH)) {
        // The derivative is taken from the (rounded) stored y.
        for (size_t i = 0; i < want.size(); ++i) {
          want[i] =
              dyv[i] * (mode == CUDNN_ACTIVATION_SIGMOID ? yv[i] * (1 - yv[i]) : 1 - yv[i] * yv[i]);
        }
      }
      ExpectBlend(dx.Get(), want, a.value(), b.value(), old, tol, what + " backward");
    }
    EXPECT_EQ(DNN(cudnnDestroyActivationDescriptor)(act), CUDNN_STATUS_SUCCESS);
  }
}

TEST_F(DnnTest, SoftmaxForwardBackward) {
  const Dims d{2, 5, 3, 4};
  Tensor x(CUDNN_DATA_FLOAT, d, Strides(d, true)), y(CUDNN_DATA_FLOAT, d, Strides(d, false));
  Tensor dy(CUDNN_DATA_FLOAT, d, Strides(d, false)), dx(CUDNN_DATA_FLOAT, d, Strides(d, true));
  const Vec xv = x.Set(Random(x.count(), 61, -3, 3));
  const Vec dyv = dy.Set(Random(dy.count(), 62));
  const Idx c = x.canon();
  for (int mode : {CUDNN_SOFTMAX_MODE_INSTANCE, CUDNN_SOFTMAX_MODE_CHANNEL}) {
    for (int algo : {CUDNN_SOFTMAX_FAST, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_LOG}) {
      // Groups: key = n (instance) or (n, h, w) (channel).
      auto key = [&](const Idx& i) {
        return mode == CUDNN_SOFTMAX_MODE_INSTANCE ? i[0] : (i[0] * c[3] + i[3]) * c[4] + i[4];
      };
      Vec mx(c[0] * c[3] * c[4], -1e300), sum(mx.size());
      ForEach(c, [&](const Idx& i) { mx[key(i)] = std::max(mx[key(i)], xv[Lin(c, i)]); });
      ForEach(c, [&](const Idx& i) { sum[key(i)] += std::exp(xv[Lin(c, i)] - mx[key(i)]); });
      Vec want(x.count());
      ForEach(c, [&](const Idx& i) {
        const double z = xv[Lin(c, i)] - mx[key(i)];
        want[Lin(c, i)] =
            algo == CUDNN_SOFTMAX_LOG ? z - std::log(sum[key(i)]) : std::exp(z) / sum[key(i)];
      });
      const std::string what =
          "softmax mode " + std::to_string(mode) + " algo " + std::to_string(algo);
      const float a = 1, zero = 0, b = 0.5;
      ASSERT_EQ(DNN(cudnnSoftmaxForward)(h, static_cast<cudnnSoftmaxAlgorithm_t>(algo),
                                         static_cast<cudnnSoftmaxMode_t>(mode), &a, x.desc(),
                                         x.ptr(), &zero, y.desc(), y.ptr()),
                CUDNN_STATUS_SUCCESS);
      const Vec yv = y.Get();
      ExpectBlend(yv, want, 1, 0, want, 1e-5, what);
      Vec s2(mx.size());
      ForEach(c, [&](const Idx& i) {
        const int k = Lin(c, i);
        s2[key(i)] += algo == CUDNN_SOFTMAX_LOG ? dyv[k] : dyv[k] * yv[k];
      });
      Vec grad(x.count());
      ForEach(c, [&](const Idx& i) {
        const int k = Lin(c, i);
        grad[k] = algo == CUDNN_SOFTMAX_LOG ? dyv[k] - std::exp(yv[k]) * s2[key(i)]
                                            : yv[k] * (dyv[k] - s2[key(i)]);
      });
      const Vec old = dx.Set(Random(dx.count(), 63));
      const float a2 = 2;
      ASSERT_EQ(DNN(cudnnSoftmaxBackward)(h, static_cast<cudnnSoftmaxAlgorithm_t>(algo),
                                          static_cast<cudnnSoftmaxMode_t>(mode), &a2, y.desc(),
                                          y.ptr(), dy.desc(), dy.ptr(), &b, dx.desc(), dx.ptr()),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(dx.Get(), grad, a2, b, old, 1e-5, what + " backward");
    }
  }
  const float a = 1, zero = 0;
  EXPECT_EQ(DNN(cudnnSoftmaxForward)(h, static_cast<cudnnSoftmaxAlgorithm_t>(7),
                                     CUDNN_SOFTMAX_MODE_CHANNEL, &a, x.desc(), x.ptr(), &zero,
                                     y.desc(), y.ptr()),
            CUDNN_STATUS_BAD_PARAM);
}

// ---- Pooling and LRN ----

struct PoolCase {
  Dims x, win, pad, stride;
};

TEST_F(DnnTest, PoolingForwardBackward) {
  const PoolCase cases[] = {{{2, 3, 7, 6}, {3, 2}, {1, 0}, {2, 2}},
                            {{2, 3, 6, 6}, {2, 2}, {0, 0}, {2, 2}},
                            {{2, 2, 5, 6, 5}, {2, 3, 2}, {1, 1, 0}, {2, 1, 2}}};
  for (const PoolCase& pc : cases) {
    const int nd = static_cast<int>(pc.x.size());
    Dims yd{pc.x[0], pc.x[1]};
    for (int s = 0; s < nd - 2; ++s) {
      yd.push_back((pc.x[2 + s] + 2 * pc.pad[s] - pc.win[s]) / pc.stride[s] + 1);
    }
    Tensor x(CUDNN_DATA_FLOAT, pc.x, Strides(pc.x, true)),
        y(CUDNN_DATA_FLOAT, yd, Strides(yd, false));
    Tensor dy(CUDNN_DATA_FLOAT, yd, Strides(yd, true)),
        dx(CUDNN_DATA_FLOAT, pc.x, Strides(pc.x, false));
    const Vec xv = x.Set(Random(x.count(), 71));
    const Vec dyv = dy.Set(Random(dy.count(), 72));
    const Idx xc = x.canon(), yc = y.canon();
    Idx win{1, 1, 1, 1, 1}, pad{0, 0, 0, 0, 0}, str{1, 1, 1, 1, 1};
    for (int s = 0; s < nd - 2; ++s) {
      win[5 - (nd - 2) + s] = pc.win[s];
      pad[5 - (nd - 2) + s] = pc.pad[s];
      str[5 - (nd - 2) + s] = pc.stride[s];
    }
    auto window = [&](const Idx& o, const std::function<void(int)>& f) {
      for (int a = 0; a < win[2]; ++a)
        for (int b = 0; b < win[3]; ++b)
          for (int e = 0; e < win[4]; ++e) {
            const Idx i{o[0], o[1], o[2] * str[2] - pad[2] + a, o[3] * str[3] - pad[3] + b,
                        o[4] * str[4] - pad[4] + e};
            if (i[2] < 0 || i[2] >= xc[2] || i[3] < 0 || i[3] >= xc[3] || i[4] < 0 || i[4] >= xc[4])
              continue;
            f(Lin(xc, i));
          }
    };
    cudnnPoolingDescriptor_t pd = nullptr;
    ASSERT_EQ(DNN(cudnnCreatePoolingDescriptor)(&pd), CUDNN_STATUS_SUCCESS);
    for (int mode :
         {CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
          CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_POOLING_MAX_DETERMINISTIC}) {
      ASSERT_EQ(DNN(cudnnSetPoolingNdDescriptor)(pd, static_cast<cudnnPoolingMode_t>(mode),
                                                 CUDNN_NOT_PROPAGATE_NAN, nd - 2, pc.win.data(),
                                                 pc.pad.data(), pc.stride.data()),
                CUDNN_STATUS_SUCCESS);
      const bool is_max = mode == CUDNN_POOLING_MAX || mode == CUDNN_POOLING_MAX_DETERMINISTIC;
      Vec want(y.count()), grad(x.count());
      ForEach(yc, [&](const Idx& o) {
        double best = -1e300, sum = 0;
        int arg = -1, n = 0;
        window(o, [&](int k) {
          if (xv[k] > best) {
            best = xv[k];
            arg = k;
          }
          sum += xv[k];
          ++n;
        });
        const double div =
            mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? win[2] * win[3] * win[4] : n;
        const double g = dyv[Lin(yc, o)];
        want[Lin(yc, o)] = is_max ? best : sum / div;
        if (is_max) {
          grad[arg] += g;
        } else {
          window(o, [&](int k) { grad[k] += g / div; });
        }
      });
      const std::string what = "pooling " + std::to_string(nd) + "d mode " + std::to_string(mode);
      const float a = 1, zero = 0, b = -0.5;
      ASSERT_EQ(DNN(cudnnPoolingForward)(h, pd, &a, x.desc(), x.ptr(), &zero, y.desc(), y.ptr()),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(y.Get(), want, 1, 0, want, 1e-5, what);
      const Vec old = dx.Set(Random(dx.count(), 73));
      ASSERT_EQ(DNN(cudnnPoolingBackward)(h, pd, &a, y.desc(), y.ptr(), dy.desc(), dy.ptr(),
                                          x.desc(), x.ptr(), &b, dx.desc(), dx.ptr()),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(dx.Get(), grad, 1, b, old, 1e-5, what + " backward");
    }
    // A y of the wrong shape is refused.
    const float a = 1, zero = 0;
    EXPECT_EQ(DNN(cudnnPoolingForward)(h, pd, &a, x.desc(), x.ptr(), &zero, x.desc(), x.ptr()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(DNN(cudnnDestroyPoolingDescriptor)(pd), CUDNN_STATUS_SUCCESS);
  }
}

TEST_F(DnnTest, LrnForwardBackward) {
  const Dims d{2, 7, 4, 5};
  Tensor x(CUDNN_DATA_FLOAT, d, Strides(d, true)), y(CUDNN_DATA_FLOAT, d, Strides(d, false));
  Tensor dy(CUDNN_DATA_FLOAT, d, Strides(d, false)), dx(CUDNN_DATA_FLOAT, d, Strides(d, true));
  const Vec xv = x.Set(Random(x.count(), 81, -2, 2));
  const Vec dyv = dy.Set(Random(dy.count(), 82));
  const unsigned n = 4;
  const double la = 0.3, lb = 0.75, lk = 1.5;
  cudnnLRNDescriptor_t l = nullptr;
  ASSERT_EQ(DNN(cudnnCreateLRNDescriptor)(&l), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(DNN(cudnnSetLRNDescriptor)(l, n, la, lb, lk), CUDNN_STATUS_SUCCESS);
  const Idx c = x.canon();
  const int behind = (n - 1) / 2, ahead = n - 1 - behind;
  // Reference by the formula; the backward by finite differences of the
  // double-precision forward of sum(y * dy).
  auto forward = [&](const Vec& in) {
    Vec out(in.size());
    ForEach(c, [&](const Idx& i) {
      double s = 0;
      for (int j = std::max(0, i[1] - behind); j <= std::min(c[1] - 1, i[1] + ahead); ++j) {
        const double v = in[Lin(c, Idx{i[0], j, i[2], i[3], i[4]})];
        s += v * v;
      }
      out[Lin(c, i)] = in[Lin(c, i)] * std::pow(lk + la / n * s, -lb);
    });
    return out;
  };
  const Vec want = forward(xv);
  const float a = 1, zero = 0, b = 0.5;
  ASSERT_EQ(DNN(cudnnLRNCrossChannelForward)(h, l, CUDNN_LRN_CROSS_CHANNEL_DIM1, &a, x.desc(),
                                             x.ptr(), &zero, y.desc(), y.ptr()),
            CUDNN_STATUS_SUCCESS);
  ExpectBlend(y.Get(), want, 1, 0, want, 1e-5, "lrn");
  Vec grad(x.count());
  const double eps = 1e-6;
  for (size_t k = 0; k < grad.size(); ++k) {
    Vec p = xv, m = xv;
    p[k] += eps;
    m[k] -= eps;
    const Vec fp = forward(p), fm = forward(m);
    double s = 0;
    for (size_t j = 0; j < fp.size(); ++j) s += (fp[j] - fm[j]) * dyv[j];
    grad[k] = s / (2 * eps);
  }
  const Vec old = dx.Set(Random(dx.count(), 83));
  ASSERT_EQ(DNN(cudnnLRNCrossChannelBackward)(h, l, CUDNN_LRN_CROSS_CHANNEL_DIM1, &a, y.desc(),
                                              y.ptr(), dy.desc(), dy.ptr(), x.desc(), x.ptr(), &b,
                                              dx.desc(), dx.ptr()),
            CUDNN_STATUS_SUCCESS);
  ExpectBlend(dx.Get(), grad, 1, b, old, 1e-4, "lrn backward");
  EXPECT_EQ(DNN(cudnnLRNCrossChannelForward)(h, l, static_cast<cudnnLRNMode_t>(3), &a, x.desc(),
                                             x.ptr(), &zero, y.desc(), y.ptr()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(DNN(cudnnDestroyLRNDescriptor)(l), CUDNN_STATUS_SUCCESS);
}

// ---- Batch normalization ----

TEST_F(DnnTest, BatchNormBothModes) {
  for (cudnnBatchNormMode_t mode : {CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION,
                                    CUDNN_BATCHNORM_SPATIAL_PERSISTENT}) {
    const bool spatial = mode != CUDNN_BATCHNORM_PER_ACTIVATION;
    const Dims d{3, 4, 3, 5};
    const Dims pd = spatial ? Dims{1, 4, 1, 1} : Dims{1, 4, 3, 5};
    Tensor x(CUDNN_DATA_FLOAT, d, Strides(d, true)), y(CUDNN_DATA_FLOAT, d, Strides(d, false));
    Tensor dy(CUDNN_DATA_FLOAT, d, Strides(d, false)), dx(CUDNN_DATA_FLOAT, d, Strides(d, true));
    auto param = [&] { return Tensor(CUDNN_DATA_FLOAT, pd, Strides(pd, false)); };
    Tensor scale = param(), bias = param(), rmean = param(), rvar = param(), smean = param(),
           sinv = param(), dscale = param(), dbias = param();
    const Vec xv = x.Set(Random(x.count(), 91, -2, 3));
    const Vec dyv = dy.Set(Random(dy.count(), 92));
    const Vec sc = scale.Set(Random(scale.count(), 93, 0.5, 1.5));
    const Vec bi = bias.Set(Random(bias.count(), 94));
    const Vec rm0 = rmean.Set(Random(rmean.count(), 95));
    const Vec rv0 = rvar.Set(Random(rvar.count(), 96, 0.5, 1.5));
    const Idx c = x.canon(), pc = scale.canon();
    auto pk = [&](const Idx& i) {
      return spatial ? i[1] : Lin(pc, Idx{0, i[1], i[2], i[3], i[4]});
    };
    const int np = scale.count();
    const double m = static_cast<double>(x.count()) / np;
    Vec mean(np), var(np);
    ForEach(c, [&](const Idx& i) { mean[pk(i)] += xv[Lin(c, i)] / m; });
    ForEach(c, [&](const Idx& i) {
      const double e = xv[Lin(c, i)] - mean[pk(i)];
      var[pk(i)] += e * e / m;
    });
    const double eps = 1e-3, f = 0.3;
    const std::string what = "batchnorm mode " + std::to_string(mode);

    // Inference with the running statistics.
    const float a = 1.5, zero = 0;
    ASSERT_EQ(DNN(cudnnBatchNormalizationForwardInference)(
                  h, mode, &a, &zero, x.desc(), x.ptr(), y.desc(), y.ptr(), scale.desc(),
                  scale.ptr(), bias.ptr(), rmean.ptr(), rvar.ptr(), eps),
              CUDNN_STATUS_SUCCESS);
    Vec inf(x.count());
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      inf[Lin(c, i)] = sc[k] * (xv[Lin(c, i)] - rm0[k]) / std::sqrt(rv0[k] + eps) + bi[k];
    });
    ExpectBlend(y.Get(), inf, a, 0, inf, 1e-5, what + " inference");

    // Training.
    const Vec yold = y.Set(Random(y.count(), 97));
    const float one = 1, half = 0.5;
    ASSERT_EQ(DNN(cudnnBatchNormalizationForwardTraining)(h, mode, &one, &half, x.desc(), x.ptr(),
                                                          y.desc(), y.ptr(), scale.desc(),
                                                          scale.ptr(), bias.ptr(), f, rmean.ptr(),
                                                          rvar.ptr(), eps, smean.ptr(), sinv.ptr()),
              CUDNN_STATUS_SUCCESS);
    Vec tr(x.count()), rm(np), rv(np), inv(np);
    for (int k = 0; k < np; ++k) {
      rm[k] = (1 - f) * rm0[k] + f * mean[k];
      rv[k] = (1 - f) * rv0[k] + f * var[k] * m / (m - 1);
      inv[k] = 1 / std::sqrt(var[k] + eps);
    }
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      tr[Lin(c, i)] = sc[k] * (xv[Lin(c, i)] - mean[k]) * inv[k] + bi[k];
    });
    ExpectBlend(y.Get(), tr, 1, 0.5, yold, 1e-5, what + " training y");
    ExpectBlend(rmean.Get(), rm, 1, 0, rm, 1e-5, what + " running mean");
    ExpectBlend(rvar.Get(), rv, 1, 0, rv, 1e-5, what + " running var");
    ExpectBlend(smean.Get(), mean, 1, 0, mean, 1e-5, what + " saved mean");
    ExpectBlend(sinv.Get(), inv, 1, 0, inv, 1e-5, what + " saved inv var");

    // Backward, with saved statistics and then recomputing them.
    Vec sdy(np), sdyx(np);
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      const double xhat = (xv[Lin(c, i)] - mean[k]) * inv[k];
      sdy[k] += dyv[Lin(c, i)];
      sdyx[k] += dyv[Lin(c, i)] * xhat;
    });
    Vec gx(x.count());
    ForEach(c, [&](const Idx& i) {
      const int k = pk(i);
      const double xhat = (xv[Lin(c, i)] - mean[k]) * inv[k];
      gx[Lin(c, i)] = sc[k] * inv[k] / m * (m * dyv[Lin(c, i)] - sdy[k] - xhat * sdyx[k]);
    });
    for (bool use_saved : {true, false}) {
      const Vec dxo = dx.Set(Random(dx.count(), 98));
      const Vec dso = dscale.Set(Random(np, 99));
      const Vec dbo = dbias.Set(Random(np, 100));
      const float ad = 2, bd = 0.5, ap = 1, bp = use_saved ? 0.f : 1.f;
      ASSERT_EQ(DNN(cudnnBatchNormalizationBackward)(
                    h, mode, &ad, &bd, &ap, &bp, x.desc(), x.ptr(), dy.desc(), dy.ptr(), dx.desc(),
                    dx.ptr(), scale.desc(), scale.ptr(), dscale.ptr(), dbias.ptr(), eps,
                    use_saved ? smean.ptr() : nullptr, use_saved ? sinv.ptr() : nullptr),
                CUDNN_STATUS_SUCCESS);
      ExpectBlend(dx.Get(), gx, ad, bd, dxo, 1e-4, what + " backward dx");
      ExpectBlend(dscale.Get(), sdyx, ap, bp, dso, 1e-4, what + " backward dscale");
      ExpectBlend(dbias.Get(), sdy, ap, bp, dbo, 1e-4, what + " backward dbias");
    }
    // Epsilon below CUDNN_BN_MIN_EPSILON, a parameter tensor of the wrong shape.
    EXPECT_EQ(DNN(cudnnBatchNormalizationForwardInference)(
                  h, mode, &a, &zero, x.desc(), x.ptr(), y.desc(), y.ptr(), scale.desc(),
                  scale.ptr(), bias.ptr(), rmean.ptr(), rvar.ptr(), -1),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(DNN(cudnnBatchNormalizationForwardInference)(
                  h, mode, &a, &zero, x.desc(), x.ptr(), y.desc(), y.ptr(), x.desc(), scale.ptr(),
                  bias.ptr(), rmean.ptr(), rvar.ptr(), eps),
              CUDNN_STATUS_BAD_PARAM);
  }
}

// Work runs in stream order: a set, then a scale, queued back to back.
TEST_F(DnnTest, StreamOrder) {
  const Dims d{2, 3, 4, 4};
  Tensor t(CUDNN_DATA_FLOAT, d, Strides(d, false));
  const float v = 2, s = 3;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(DNN(cudnnSetTensor)(h, t.desc(), t.ptr(), &v), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(DNN(cudnnScaleTensor)(h, t.desc(), t.ptr(), &s), CUDNN_STATUS_SUCCESS);
  }
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  ExpectBlend(t.Get(), Vec(t.count(), 6), 1, 0, Vec(t.count()), 0, "stream order");
}

// The ids of this process's threads named `name` (new threads inherit their
// creator's name: OpenMP's helpers carry the name of the thread that made them).
std::set<std::string> ThreadsNamed(const std::string& name) {
  std::set<std::string> ids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    if (std::getline(comm, got) && got == name) ids.insert(task.path().filename());
  }
  return ids;
}

// cuDNN work from streams that come and go runs on the library's one compute
// thread, so one oneDNN helper team serves every stream: none is built per
// stream, and none is left exiting (unjoined) when a stream's worker exits.
TEST_F(DnnTest, OneComputeTeamServesStreamsThatComeAndGo) {
  const Dims xd{2, 4, 9, 9}, wd{6, 4, 3, 3}, yd{2, 6, 7, 7};
  Tensor x(CUDNN_DATA_FLOAT, xd, Strides(xd, false));
  Tensor w = Tensor::Filter(CUDNN_DATA_FLOAT, wd, CUDNN_TENSOR_NCHW);
  Tensor y(CUDNN_DATA_FLOAT, yd, Strides(yd, false));
  const Vec xv = x.Set(Random(x.count(), 21));
  const Vec wv = w.Set(Random(w.count(), 22));
  cudnnConvolutionDescriptor_t c = nullptr;
  ASSERT_EQ(DNN(cudnnCreateConvolutionDescriptor)(&c), CUDNN_STATUS_SUCCESS);
  const int pad[2] = {0, 0}, one[2] = {1, 1};
  ASSERT_EQ(DNN(cudnnSetConvolutionNdDescriptor)(c, 2, pad, one, one, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  ConvRef ref;
  ref.xc = x.canon();
  ref.wc = w.canon();
  ref.yc = y.canon();
  Vec want(y.count());
  ref.Taps([&](int xi, int wi, int yi) { want[yi] += xv[xi] * wv[wi]; });

  std::set<std::string> team;
  for (int round = 0; round < 3; ++round) {
    CUstream s = nullptr;
    ASSERT_EQ(api.cuStreamCreate(&s, 0), CUDA_SUCCESS);
    ASSERT_EQ(DNN(cudnnSetStream)(h, reinterpret_cast<cudaStream_t>(s)), CUDNN_STATUS_SUCCESS);
    const float a = 1, b = 0;
    ASSERT_EQ(DNN(cudnnConvolutionForward)(h, &a, x.desc(), x.ptr(), w.fdesc(), w.ptr(), c,
                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &b,
                                           y.desc(), y.ptr()),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(api.cuStreamSynchronize(s), CUDA_SUCCESS);
    ExpectBlend(y.Get(), want, 1, 0, want, Tol(CUDNN_DATA_FLOAT), "round " + std::to_string(round));
    ASSERT_EQ(DNN(cudnnSetStream)(h, reinterpret_cast<cudaStream_t>(stream)), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(api.cuStreamDestroy(s), CUDA_SUCCESS);
    // Past the stream worker's exit: a team tied to it would be going now.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::set<std::string> now = ThreadsNamed("remora-dnn");
    ASSERT_FALSE(now.empty()) << "round " << round;
    if (round == 0) team = now;
    EXPECT_EQ(now, team) << "round " << round;
  }
  EXPECT_EQ(DNN(cudnnDestroyConvolutionDescriptor)(c), CUDNN_STATUS_SUCCESS);
}

}  // namespace
}  // namespace remora::emu::test
