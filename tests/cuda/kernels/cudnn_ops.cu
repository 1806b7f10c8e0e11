// tests/cuda/kernels/cudnn_ops.cu - the forwarded cuDNN operations on random data.
//
// Built as users build cuDNN programs (nvcc -cudart shared ... -lcudnn) and run
// unmodified against the stub libcudnn.so.9. Each operation's result is checked
// against a double-precision loop on the host, on a non-default stream: the four
// convolution passes with padding, stride, dilation and groups, in NCHW and NHWC; the fused
// convolution, bias and activation;
// tensor arithmetic; activation, softmax, pooling and LRN; batch normalization.
// Bad calls get the status codes NVIDIA's cuDNN documents; under remora run, pointers outside
// the tenant's memory, a destroyed handle and a routine Remora does not forward, which only
// Remora checks, get them too. Algorithms are chosen as frameworks choose them (the first the
// library reports usable), so the program passes with NVIDIA's cuDNN as with the emulated one.
#include <cudnn.h>

#include <vector>

#include "common.h"

namespace {

int failures = 0;
cudaStream_t stream;

#define DNN_OK(call) STATUS_OK(call, CUDNN_STATUS_SUCCESS, cudnnGetErrorString)
#define EXPECT_DNN(call, expected) EXPECT_STATUS(call, expected, cudnnGetErrorString)

// A float tensor in device memory with its host copy.
struct Tensor {
  int n, c, h, w;
  bool nhwc;
  std::vector<float> host;
  float* dev = nullptr;
  cudnnTensorDescriptor_t desc = nullptr;
  Tensor(int n_, int c_, int h_, int w_, Rng& rng, bool nhwc_ = false)
      : n(n_), c(c_), h(h_), w(w_), nhwc(nhwc_), host(size_t(n_) * c_ * h_ * w_) {
    for (float& v : host) v = rng.Uniform(-1, 1);
    CHECK(cudaMalloc(&dev, host.size() * sizeof(float)));
    Up();
    DNN_OK(cudnnCreateTensorDescriptor(&desc));
    DNN_OK(cudnnSetTensor4dDescriptor(desc, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                      CUDNN_DATA_FLOAT, n, c, h, w));
  }
  ~Tensor() {
    cudnnDestroyTensorDescriptor(desc);
    cudaFree(dev);
  }
  size_t At(int in, int ic, int ih, int iw) const {
    return nhwc ? ((size_t(in) * h + ih) * w + iw) * c + ic
                : ((size_t(in) * c + ic) * h + ih) * w + iw;
  }
  double operator()(int in, int ic, int ih, int iw) const { return host[At(in, ic, ih, iw)]; }
  void Up() {
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::vector<float> Down() const {
    std::vector<float> out(host.size());
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(out.data(), dev, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }
};

// A float filter (K, C, R, S) in device memory with its host copy, in NCHW or NHWC layout.
struct Filter {
  int k, c, r, s;
  bool nhwc;
  std::vector<float> host;
  float* dev = nullptr;
  cudnnFilterDescriptor_t desc = nullptr;
  Filter(int k_, int c_, int r_, int s_, Rng& rng, bool nhwc_ = false)
      : k(k_), c(c_), r(r_), s(s_), nhwc(nhwc_), host(size_t(k_) * c_ * r_ * s_) {
    for (float& v : host) v = rng.Uniform(-1, 1);
    CHECK(cudaMalloc(&dev, host.size() * sizeof(float)));
    CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    DNN_OK(cudnnCreateFilterDescriptor(&desc));
    DNN_OK(cudnnSetFilter4dDescriptor(desc, CUDNN_DATA_FLOAT,
                                      nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, k, c, r, s));
  }
  ~Filter() {
    cudnnDestroyFilterDescriptor(desc);
    cudaFree(dev);
  }
  size_t At(int ik, int ic, int ir, int is) const {
    return nhwc ? ((size_t(ik) * r + ir) * s + is) * c + ic
                : ((size_t(ik) * c + ic) * r + ir) * s + is;
  }
};

void Compare(const char* what, const std::vector<float>& got, const std::vector<double>& want,
             double tol = 1e-4) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!Near(got[i], want[i], tol) && bad++ < 3)
      std::printf("  %s[%zu] = %.7g, want %.7g\n", what, i, got[i], want[i]);
  if (bad) {
    std::printf("FAIL %s: %d of %zu wrong\n", what, bad, want.size());
    ++failures;
  }
}

// The first algorithm the library reports usable, as frameworks pick one; -1 if none.
template <class Perf>
int FirstUsable(const Perf* perf, int returned) {
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return i;
  return -1;
}

// Convolution (cross-correlation) with padding, stride, dilation and groups: the
// forward pass against a loop, then backward data and filter against the loops
// that define them, and the bias gradient.
void Convolutions(cudnnHandle_t h, Rng& rng, bool nhwc) {
  const int N = 2, C = 4, H = 9, W = 8, K = 6, R = 3, S = 3, groups = 2;
  const int pad = 1, str = 2, dil = 1 + nhwc;  // NHWC also dilates
  Tensor x(N, C, H, W, rng, nhwc);
  // The filter in the tensors' layout, as frameworks give it (channels-last convolutions take
  // an NHWC filter; NVIDIA's cuDNN supports few algorithms for mixed layouts).
  Filter wf(K, C / groups, R, S, rng, nhwc);
  const cudnnFilterDescriptor_t wd = wf.desc;
  float* const wdev = wf.dev;
  const std::vector<float>& wh = wf.host;
  const int kpg = K / groups, cpg = C / groups;
  auto widx = [&](int k, int c, int r, int s) { return wf.At(k, c, r, s); };
  cudnnConvolutionDescriptor_t conv;
  DNN_OK(cudnnCreateConvolutionDescriptor(&conv));
  DNN_OK(cudnnSetConvolution2dDescriptor(conv, pad, pad, str, str, dil, dil,
                                         CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DNN_OK(cudnnSetConvolutionGroupCount(conv, groups));
  int on, oc, oh, ow;
  DNN_OK(cudnnGetConvolution2dForwardOutputDim(conv, x.desc, wd, &on, &oc, &oh, &ow));
  const int eh = (H + 2 * pad - ((R - 1) * dil + 1)) / str + 1;
  const int ew = (W + 2 * pad - ((S - 1) * dil + 1)) / str + 1;
  REQUIRE(on == N && oc == K && oh == eh && ow == ew);
  Tensor y(N, K, oh, ow, rng, nhwc);
  auto wat = [&](int k, int c, int r, int s) { return double(wh[widx(k, c, r, s)]); };
  // Which input pixel filter tap (r, s) of output (p, q) reads, or -1.
  auto in_h = [&](int p, int r) { return p * str - pad + r * dil; };
  auto in_w = [&](int q, int s) { return q * str - pad + s * dil; };
  std::vector<double> want(y.host.size());
  const float alpha = 1.5f, beta = 0.5f;
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      for (int p = 0; p < oh; ++p)
        for (int q = 0; q < ow; ++q) {
          double acc = 0;
          const int g = k / kpg;
          for (int c = 0; c < cpg; ++c)
            for (int r = 0; r < R; ++r)
              for (int s = 0; s < S; ++s) {
                const int ih = in_h(p, r), iw = in_w(q, s);
                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                  acc += x(n, g * cpg + c, ih, iw) * wat(k, c, r, s);
              }
          want[y.At(n, k, p, q)] = alpha * acc + beta * y(n, k, p, q);
        }
  // The library's own algorithm choice and workspace size, as frameworks ask.
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int returned = 0;
  DNN_OK(cudnnGetConvolutionForwardAlgorithm_v7(h, x.desc, wd, conv, y.desc, 8, &returned, perf));
  const int fw = FirstUsable(perf, returned);
  REQUIRE(fw >= 0);
  size_t ws_bytes = 0;
  DNN_OK(cudnnGetConvolutionForwardWorkspaceSize(h, x.desc, wd, conv, y.desc, perf[fw].algo,
                                                 &ws_bytes));
  void* ws = nullptr;
  if (ws_bytes) CHECK(cudaMalloc(&ws, ws_bytes));
  DNN_OK(cudnnConvolutionForward(h, &alpha, x.desc, x.dev, wd, wdev, conv, perf[fw].algo, ws,
                                 ws_bytes, &beta, y.desc, y.dev));
  Compare(nhwc ? "conv forward NHWC" : "conv forward NCHW", y.Down(), want, 1e-4);

  // Backward data: dx[n, c, ih, iw] = sum over taps that read it of dy * w.
  const float one = 1, zero = 0;
  Tensor dx(N, C, H, W, rng, nhwc);
  std::vector<double> wdx(dx.host.size(), 0.0), wdw(wh.size(), 0.0), wdb(K, 0.0);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      for (int p = 0; p < oh; ++p)
        for (int q = 0; q < ow; ++q) {
          const double g_out = y(n, k, p, q);  // dy: the forward output's initial values
          wdb[k] += g_out;
          const int g = k / kpg;
          for (int c = 0; c < cpg; ++c)
            for (int r = 0; r < R; ++r)
              for (int s = 0; s < S; ++s) {
                const int ih = in_h(p, r), iw = in_w(q, s);
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                wdx[dx.At(n, g * cpg + c, ih, iw)] += g_out * wat(k, c, r, s);
                wdw[widx(k, c, r, s)] += g_out * x(n, g * cpg + c, ih, iw);
              }
        }
  y.Up();  // dy = y's initial values again
  cudnnConvolutionBwdDataAlgoPerf_t dperf[8];
  DNN_OK(
      cudnnFindConvolutionBackwardDataAlgorithm(h, wd, y.desc, conv, dx.desc, 8, &returned, dperf));
  const int bd = FirstUsable(dperf, returned);
  REQUIRE(bd >= 0);
  size_t dws = 0;
  DNN_OK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, wd, y.desc, conv, dx.desc, dperf[bd].algo,
                                                      &dws));
  void* dwsp = nullptr;
  if (dws) CHECK(cudaMalloc(&dwsp, dws));
  DNN_OK(cudnnConvolutionBackwardData(h, &one, wd, wdev, y.desc, y.dev, conv, dperf[bd].algo, dwsp,
                                      dws, &zero, dx.desc, dx.dev));
  Compare("conv backward data", dx.Down(), wdx, 1e-4);
  cudnnConvolutionBwdFilterAlgoPerf_t fperf[8];
  // Found on the pass's own buffers (dw may be overwritten: the pass below writes all of it).
  DNN_OK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, x.desc, x.dev, y.desc, y.dev, conv, wd,
                                                       wdev, 8, &returned, fperf, nullptr, 0));
  const int bf = FirstUsable(fperf, returned);
  REQUIRE(bf >= 0);
  size_t fws = 0;
  DNN_OK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x.desc, y.desc, conv, wd, fperf[bf].algo,
                                                        &fws));
  void* fwsp = nullptr;
  if (fws) CHECK(cudaMalloc(&fwsp, fws));
  DNN_OK(cudnnConvolutionBackwardFilter(h, &one, x.desc, x.dev, y.desc, y.dev, conv, fperf[bf].algo,
                                        fwsp, fws, &zero, wd, wdev));
  std::vector<float> gw(wh.size());
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(gw.data(), wdev, gw.size() * sizeof(float), cudaMemcpyDeviceToHost));
  Compare("conv backward filter", gw, wdw, 1e-4);
  Tensor db(1, K, 1, 1, rng);
  DNN_OK(cudnnConvolutionBackwardBias(h, &one, y.desc, y.dev, &zero, db.desc, db.dev));
  Compare("conv backward bias", db.Down(), wdb, 1e-4);
  for (void* p : {ws, dwsp, fwsp})
    if (p) CHECK(cudaFree(p));
  DNN_OK(cudnnDestroyConvolutionDescriptor(conv));
}

// Bias add, op-tensor, transform, activation, softmax, pooling, LRN.
void Elementwise(cudnnHandle_t h, Rng& rng) {
  const int N = 2, C = 5, H = 6, W = 7;
  const float one = 1, zero = 0, half = 0.5f;
  Tensor x(N, C, H, W, rng), y(N, C, H, W, rng), bias(1, C, 1, 1, rng);
  // AddTensor: y = y + bias broadcast over N, H, W
  std::vector<double> want(y.host.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) want[y.At(n, c, i, j)] = y(n, c, i, j) + bias(0, c, 0, 0);
  DNN_OK(cudnnAddTensor(h, &one, bias.desc, bias.dev, &one, y.desc, y.dev));
  Compare("AddTensor", y.Down(), want);
  y.host = y.Down();
  // OpTensor MUL: y = (0.5 x) * y
  cudnnOpTensorDescriptor_t op;
  DNN_OK(cudnnCreateOpTensorDescriptor(&op));
  DNN_OK(cudnnSetOpTensorDescriptor(op, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                    CUDNN_NOT_PROPAGATE_NAN));
  for (size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * x.host[i] * y.host[i];
  Tensor out(N, C, H, W, rng);
  DNN_OK(cudnnOpTensor(h, op, &half, x.desc, x.dev, &one, y.desc, y.dev, &zero, out.desc, out.dev));
  Compare("OpTensor MUL", out.Down(), want);
  DNN_OK(cudnnDestroyOpTensorDescriptor(op));
  // TransformTensor NCHW -> NHWC
  Tensor t(N, C, H, W, rng, /*nhwc=*/true);
  std::vector<double> wt(t.host.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) wt[t.At(n, c, i, j)] = x(n, c, i, j);
  DNN_OK(cudnnTransformTensor(h, &one, x.desc, x.dev, &zero, t.desc, t.dev));
  Compare("TransformTensor", t.Down(), wt, 0);
  // Activation: ReLU forward and backward
  cudnnActivationDescriptor_t act;
  DNN_OK(cudnnCreateActivationDescriptor(&act));
  DNN_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0));
  for (size_t i = 0; i < want.size(); ++i) want[i] = x.host[i] > 0 ? x.host[i] : 0;
  DNN_OK(cudnnActivationForward(h, act, &one, x.desc, x.dev, &zero, out.desc, out.dev));
  Compare("ReLU forward", out.Down(), want);
  std::vector<double> wgrad(want.size());
  for (size_t i = 0; i < wgrad.size(); ++i) wgrad[i] = x.host[i] > 0 ? y.host[i] : 0;
  Tensor grad(N, C, H, W, rng);
  DNN_OK(cudnnActivationBackward(h, act, &one, out.desc, out.dev, y.desc, y.dev, x.desc, x.dev,
                                 &zero, grad.desc, grad.dev));
  Compare("ReLU backward", grad.Down(), wgrad);
  DNN_OK(cudnnDestroyActivationDescriptor(act));
  // Softmax over channels (accurate)
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < W; ++j) {
        double mx = -1e30, sum = 0;
        for (int c = 0; c < C; ++c) mx = std::max(mx, x(n, c, i, j));
        for (int c = 0; c < C; ++c) sum += std::exp(x(n, c, i, j) - mx);
        for (int c = 0; c < C; ++c) want[x.At(n, c, i, j)] = std::exp(x(n, c, i, j) - mx) / sum;
      }
  DNN_OK(cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, x.desc,
                             x.dev, &zero, out.desc, out.dev));
  Compare("softmax", out.Down(), want);
  // Max pooling 2x2 stride 2 (output 3x3), forward and backward
  cudnnPoolingDescriptor_t pool;
  DNN_OK(cudnnCreatePoolingDescriptor(&pool));
  DNN_OK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0,
                                     2, 2));
  int pn, pc, ph, pw;
  DNN_OK(cudnnGetPooling2dForwardOutputDim(pool, x.desc, &pn, &pc, &ph, &pw));
  REQUIRE(pn == N && pc == C && ph == 3 && pw == 3);
  Tensor py(N, C, ph, pw, rng), pdy(N, C, ph, pw, rng), pdx(N, C, H, W, rng);
  std::vector<double> wp(py.host.size()), wpd(x.host.size(), 0.0);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < ph; ++i)
        for (int j = 0; j < pw; ++j) {
          int bi = 2 * i, bj = 2 * j;
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
              if (x(n, c, 2 * i + a, 2 * j + b) > x(n, c, bi, bj)) bi = 2 * i + a, bj = 2 * j + b;
          wp[py.At(n, c, i, j)] = x(n, c, bi, bj);
          wpd[x.At(n, c, bi, bj)] += pdy(n, c, i, j);
        }
  DNN_OK(cudnnPoolingForward(h, pool, &one, x.desc, x.dev, &zero, py.desc, py.dev));
  Compare("max pooling forward", py.Down(), wp);
  DNN_OK(cudnnPoolingBackward(h, pool, &one, py.desc, py.dev, pdy.desc, pdy.dev, x.desc, x.dev,
                              &zero, pdx.desc, pdx.dev));
  Compare("max pooling backward", pdx.Down(), wpd);
  DNN_OK(cudnnDestroyPoolingDescriptor(pool));
  // LRN across channels: y = x / (k + alpha/n * sum of squares over the window)^beta
  cudnnLRNDescriptor_t lrn;
  DNN_OK(cudnnCreateLRNDescriptor(&lrn));
  const unsigned ln = 3;
  const double la = 1e-2, lb = 0.75, lk = 2;
  DNN_OK(cudnnSetLRNDescriptor(lrn, ln, la, lb, lk));
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) {
          double ss = 0;
          for (int d = c - int(ln - 1) / 2; d <= c + int(ln) / 2; ++d)
            if (d >= 0 && d < C) ss += x(n, d, i, j) * x(n, d, i, j);
          want[x.At(n, c, i, j)] = x(n, c, i, j) / std::pow(lk + la / ln * ss, lb);
        }
  DNN_OK(cudnnLRNCrossChannelForward(h, lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, x.desc, x.dev,
                                     &zero, out.desc, out.dev));
  Compare("LRN forward", out.Down(), want);
  DNN_OK(cudnnDestroyLRNDescriptor(lrn));
}

// Batch normalization, spatial: inference with given statistics, then training.
void BatchNorm(cudnnHandle_t h, Rng& rng) {
  const int N = 4, C = 3, H = 5, W = 5;
  const float one = 1, zero = 0;
  Tensor x(N, C, H, W, rng), y(N, C, H, W, rng);
  cudnnTensorDescriptor_t bnd;
  DNN_OK(cudnnCreateTensorDescriptor(&bnd));
  DNN_OK(cudnnDeriveBNTensorDescriptor(bnd, x.desc, CUDNN_BATCHNORM_SPATIAL));
  Tensor scale(1, C, 1, 1, rng), bias(1, C, 1, 1, rng), mean(1, C, 1, 1, rng), var(1, C, 1, 1, rng);
  for (float& v : var.host) v = std::fabs(v) + 0.5f;
  var.Up();
  const double eps = 1e-5;
  std::vector<double> want(y.host.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j)
          want[y.At(n, c, i, j)] =
              scale.host[c] * (x(n, c, i, j) - mean.host[c]) / std::sqrt(var.host[c] + eps) +
              bias.host[c];
  DNN_OK(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x.desc,
                                                 x.dev, y.desc, y.dev, bnd, scale.dev, bias.dev,
                                                 mean.dev, var.dev, eps));
  Compare("batchnorm inference", y.Down(), want);
  // Training: batch statistics; running statistics updated with factor 1 (= batch's).
  std::vector<double> bm(C, 0), bv(C, 0);
  const double count = double(N) * H * W;
  for (int c = 0; c < C; ++c) {
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) bm[c] += x(n, c, i, j) / count;
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j)
          bv[c] += (x(n, c, i, j) - bm[c]) * (x(n, c, i, j) - bm[c]) / count;
  }
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j)
          want[y.At(n, c, i, j)] =
              scale.host[c] * (x(n, c, i, j) - bm[c]) / std::sqrt(bv[c] + eps) + bias.host[c];
  Tensor save_mean(1, C, 1, 1, rng), save_inv(1, C, 1, 1, rng);
  DNN_OK(cudnnBatchNormalizationForwardTraining(
      h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x.desc, x.dev, y.desc, y.dev, bnd, scale.dev,
      bias.dev, 1.0, mean.dev, var.dev, eps, save_mean.dev, save_inv.dev));
  Compare("batchnorm training", y.Down(), want, 1e-3);
  Compare("batchnorm running mean", mean.Down(), bm, 1e-4);
  DNN_OK(cudnnDestroyTensorDescriptor(bnd));
}

// Bad calls get NVIDIA's status codes, never a crash: first those NVIDIA's cuDNN documents,
// then what only Remora checks.
void BadCalls(cudnnHandle_t h, Rng& rng) {
  const float one = 1, zero = 0;
  Tensor x(1, 2, 4, 4, rng), y(1, 2, 4, 4, rng);
  cudnnActivationDescriptor_t act;
  DNN_OK(cudnnCreateActivationDescriptor(&act));
  DNN_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_TANH, CUDNN_NOT_PROPAGATE_NAN, 0));
  cudnnTensorDescriptor_t bad;
  DNN_OK(cudnnCreateTensorDescriptor(&bad));
  EXPECT_DNN(cudnnSetTensor4dDescriptor(bad, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, -2, 4, 4),
             CUDNN_STATUS_BAD_PARAM);
  if (UnderRemora("cuDNN bad pointers, handles and descriptors")) {
    float host[64];
    EXPECT_DNN(cudnnActivationForward(h, act, &one, x.desc, host, &zero, y.desc, y.dev),
               CUDNN_STATUS_BAD_PARAM);  // host memory as device memory
    EXPECT_DNN(cudnnActivationForward(h, act, &one, x.desc, x.dev + 16, &zero, y.desc, y.dev),
               CUDNN_STATUS_BAD_PARAM);  // runs past the end of x
    EXPECT_DNN(cudnnActivationForward(h, act, nullptr, x.desc, x.dev, &zero, y.desc, y.dev),
               CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnDestroyTensorDescriptor(bad));
    EXPECT_DNN(cudnnActivationForward(h, act, &one, bad, x.dev, &zero, y.desc, y.dev),
               CUDNN_STATUS_BAD_PARAM);  // a destroyed descriptor
    cudnnHandle_t gone;
    DNN_OK(cudnnCreate(&gone));
    DNN_OK(cudnnDestroy(gone));
    EXPECT_DNN(cudnnActivationForward(gone, act, &one, x.desc, x.dev, &zero, y.desc, y.dev),
               CUDNN_STATUS_BAD_PARAM);
    // A routine Remora does not forward is refused by name.
    size_t states = 0;
    EXPECT_DNN(cudnnDropoutGetStatesSize(h, &states), CUDNN_STATUS_NOT_SUPPORTED);
  } else {
    DNN_OK(cudnnDestroyTensorDescriptor(bad));
  }
  DNN_OK(cudnnDestroyActivationDescriptor(act));
  // The session is still healthy.
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGetLastError());
}

}  // namespace

// The fused convolution, bias and activation, y = act(alpha1 * conv(x, w) + alpha2 * z + bias):
// with RELU and a z of its own, and with IDENTITY (on IMPLICIT_PRECOMP_GEMM, as NVIDIA's
// requires) in place, z being y. Another activation is not supported.
void ConvBiasActivation(cudnnHandle_t h, Rng& rng) {
  const int N = 2, C = 3, H = 7, W = 6, K = 4, R = 3, S = 3;
  Tensor x(N, C, H, W, rng), z(N, K, H, W, rng), y(N, K, H, W, rng), bias(1, K, 1, 1, rng);
  Filter w(K, C, R, S, rng);
  cudnnConvolutionDescriptor_t conv;
  DNN_OK(cudnnCreateConvolutionDescriptor(&conv));
  DNN_OK(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                         CUDNN_DATA_FLOAT));
  cudnnActivationDescriptor_t act;
  DNN_OK(cudnnCreateActivationDescriptor(&act));
  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t ws_bytes = 0;
  DNN_OK(cudnnGetConvolutionForwardWorkspaceSize(h, x.desc, w.desc, conv, y.desc, algo, &ws_bytes));
  void* ws = nullptr;
  if (ws_bytes) CHECK(cudaMalloc(&ws, ws_bytes));
  // conv(x, w) at (n, k, p, q), same-size output.
  auto conv_at = [&](int n, int k, int p, int q) {
    double acc = 0;
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
          const int ih = p - 1 + r, iw = q - 1 + s;
          if (ih >= 0 && ih < H && iw >= 0 && iw < W)
            acc += x(n, c, ih, iw) * w.host[w.At(k, c, r, s)];
        }
    return acc;
  };
  for (const bool relu : {true, false}) {
    const float alpha1 = 1.25f, alpha2 = relu ? 0.5f : 1.0f;
    Tensor& zt = relu ? z : y;  // IDENTITY runs in place
    std::vector<double> want(y.host.size());
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        for (int p = 0; p < H; ++p)
          for (int q = 0; q < W; ++q) {
            const double v = alpha1 * conv_at(n, k, p, q) + alpha2 * zt(n, k, p, q) + bias.host[k];
            want[y.At(n, k, p, q)] = relu ? std::max(v, 0.0) : v;
          }
    DNN_OK(cudnnSetActivationDescriptor(
        act, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0));
    DNN_OK(cudnnConvolutionBiasActivationForward(h, &alpha1, x.desc, x.dev, w.desc, w.dev, conv,
                                                 algo, ws, ws_bytes, &alpha2, zt.desc, zt.dev,
                                                 bias.desc, bias.dev, act, y.desc, y.dev));
    Compare(relu ? "conv bias relu" : "conv bias identity in place", y.Down(), want, 1e-4);
    y.Up();
  }
  DNN_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_TANH, CUDNN_PROPAGATE_NAN, 0.0));
  const float one = 1;
  EXPECT_DNN(cudnnConvolutionBiasActivationForward(h, &one, x.desc, x.dev, w.desc, w.dev, conv,
                                                   algo, ws, ws_bytes, &one, z.desc, z.dev,
                                                   bias.desc, bias.dev, act, y.desc, y.dev),
             CUDNN_STATUS_NOT_SUPPORTED);
  if (ws) CHECK(cudaFree(ws));
  DNN_OK(cudnnDestroyActivationDescriptor(act));
  DNN_OK(cudnnDestroyConvolutionDescriptor(conv));
}

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  REQUIRE(cudnnGetVersion() >= 90000);
  REQUIRE(std::strcmp(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM") == 0);
  cudnnHandle_t h;
  DNN_OK(cudnnCreate(&h));
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DNN_OK(cudnnSetStream(h, stream));
  cudaStream_t got;
  DNN_OK(cudnnGetStream(h, &got));
  REQUIRE(got == stream);
  Convolutions(h, rng, /*nhwc=*/false);
  Convolutions(h, rng, /*nhwc=*/true);
  ConvBiasActivation(h, rng);
  Elementwise(h, rng);
  BatchNorm(h, rng);
  BadCalls(h, rng);
  DNN_OK(cudnnDestroy(h));
  CHECK(cudaStreamDestroy(stream));
  return Finish(failures, "cudnn_ops");
}
