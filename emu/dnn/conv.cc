// emu/dnn/conv.cc - convolutions: algorithm lists, workspace sizes, forward,
// backward data, backward filter (oneDNN, f32) and backward bias.
//
// float and half data run on oneDNN's f32 convolutions: float tensors are passed
// in place with their own strides, half tensors (and a filter flipped for
// CUDNN_CONVOLUTION) are widened into packed f32 copies first. double data, and
// any shape oneDNN refuses, run a plain loop accumulating in double. No pass
// needs a workspace: every size reported is 0 and any workspace is accepted.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "emu/dnn/dnn.h"

namespace remora::emu::dnn {
namespace {

// One convolution's shape, in the canonical D, H, W spatial slots (unused
// leading slots: size 1, pad 0, stride 1, dilation 1).
struct Geom {
  int sp = 0;  // spatial dimensions of the descriptors
  int64_t N = 0, C = 0, K = 0, G = 1;
  int64_t I[3] = {1, 1, 1}, O[3] = {1, 1, 1}, R[3] = {1, 1, 1};
  int64_t pad[3] = {}, str[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
  bool flip = false;  // CUDNN_CONVOLUTION: the filter is applied mirrored
};

// Whether `compute` is a compute type cuDNN accepts for data of type `data`.
bool ValidCompute(cudnnDataType_t data, cudnnDataType_t compute) {
  switch (data) {
    case CUDNN_DATA_FLOAT:
      return compute == CUDNN_DATA_FLOAT;
    case CUDNN_DATA_DOUBLE:
      return compute == CUDNN_DATA_DOUBLE;
    case CUDNN_DATA_HALF:
      return compute == CUDNN_DATA_HALF || compute == CUDNN_DATA_FLOAT;
    default:
      return false;
  }
}

// Checks x (or dx), w (or dw), conv and y (or dy) against each other as cuDNN
// does and fills *g. Errors: BAD_PARAM (ranks, channels, groups, output dims);
// NOT_SUPPORTED (mixed types, compute type).
cudnnStatus_t Check(const View& x, const View& w, const cudnnConvolutionStruct& c, const View& y,
                    Geom* g) {
  const int sp = static_cast<int>(c.pads.size());
  DNN_CHECK_ARG(x.nd == w.nd && x.nd == y.nd && sp == x.nd - 2);
  if (x.type != w.type || x.type != y.type || !ValidCompute(x.type, c.compute)) {
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  g->sp = sp;
  g->N = x.dim[0];
  g->C = x.dim[1];
  g->K = w.dim[0];
  g->G = c.groups;
  DNN_CHECK_ARG(w.dim[1] * g->G == g->C && g->K % g->G == 0);
  DNN_CHECK_ARG(y.dim[0] == g->N && y.dim[1] == g->K);
  for (int s = 0; s < 3; ++s) {
    const int k = s - (3 - sp);  // descriptor's spatial index, < 0 for unused slots
    if (k < 0) continue;
    g->I[s] = x.dim[2 + s];
    g->R[s] = w.dim[2 + s];
    g->pad[s] = c.pads[k];
    g->str[s] = c.strides[k];
    g->dil[s] = c.dilations[k];
    const int64_t span = (g->R[s] - 1) * g->dil[s] + 1;
    DNN_CHECK_ARG(g->I[s] + 2 * g->pad[s] >= span);
    g->O[s] = (g->I[s] + 2 * g->pad[s] - span) / g->str[s] + 1;
    DNN_CHECK_ARG(y.dim[2 + s] == g->O[s]);
  }
  g->flip = c.mode == CUDNN_CONVOLUTION;
  return CUDNN_STATUS_SUCCESS;
}

// Resolves and checks the descriptors of one pass.
cudnnStatus_t Resolve(cudnnTensorDescriptor_t xd, const void* x, cudnnFilterDescriptor_t wd,
                      const void* w, cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd,
                      const void* y, View* xv, View* wv, View* yv, Geom* g) {
  cudnnConvolutionStruct c;
  DNN_RETURN_IF_ERROR(DnnCopy(cd, &c));
  DNN_RETURN_IF_ERROR(MakeView(xd, x, xv));
  DNN_RETURN_IF_ERROR(MakeFilterView(wd, w, wv));
  DNN_RETURN_IF_ERROR(MakeView(yd, y, yv));
  return Check(*xv, *wv, c, *yv, g);
}

// Descriptor-only variant for the algorithm and workspace queries (the views
// get a non-null placeholder address, never dereferenced).
cudnnStatus_t ResolveShapes(cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                            cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd) {
  static const char placeholder = 0;
  View x, w, y;
  Geom g;
  return Resolve(xd, &placeholder, wd, &placeholder, cd, yd, &placeholder, &x, &w, &y, &g);
}

// `v` with its spatial dims mirrored (negative strides).
View Flipped(View v) {
  const size_t elem = v.type == CUDNN_DATA_DOUBLE ? 8 : v.type == CUDNN_DATA_HALF ? 2 : 4;
  for (int k = 2; k < 5; ++k) {
    v.base += (v.dim[k] - 1) * v.str[k] * static_cast<int64_t>(elem);
    v.str[k] = -v.str[k];
  }
  return v;
}

// A packed f32 tensor shaped like some view.
struct Dense {
  std::vector<float> buf;
  View view;
};

Dense MakeDense(const View& like) {
  Dense d;
  d.buf.resize(static_cast<size_t>(like.Count()));
  d.view = like;
  d.view.type = CUDNN_DATA_FLOAT;
  d.view.base = reinterpret_cast<char*>(d.buf.data());
  int64_t s = 1;
  for (int k = 4; k >= 0; --k) {
    d.view.str[k] = s;
    s *= like.dim[k];
  }
  return d;
}

// A packed f32 copy of `v`.
Dense Widen(const View& v) {
  Dense d = MakeDense(v);
  Each(v.dim, [&](const int64_t* i) { d.view.Put(d.view.Off(i), v.Get(v.Off(i))); });
  return d;
}

// dst = alpha * src + beta * dst, element by element (same dims).
void BlendAll(const View& src, const View& dst, double alpha, double beta) {
  Each(dst.dim, [&](const int64_t* i) { dst.Blend(dst.Off(i), src.Get(src.Off(i)), alpha, beta); });
}

// ---- oneDNN ----

dnnl::engine& Engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// oneDNN's descriptor of an f32 view: its own rank, its strides; a filter of
// `groups` > 1 gets oneDNN's leading group dimension.
dnnl::memory::desc Md(const View& v, int64_t groups = 1) {
  dnnl::memory::dims dims{v.dim[0], v.dim[1]};
  dnnl::memory::dims strides{v.str[0], v.str[1]};
  for (int k = 5 - (v.nd - 2); k < 5; ++k) {
    dims.push_back(v.dim[k]);
    strides.push_back(v.str[k]);
  }
  if (groups > 1) {
    dims[0] /= groups;
    dims.insert(dims.begin(), groups);
    strides.insert(strides.begin(), strides[0] * dims[1]);
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory Mem(const View& v, int64_t groups = 1) {
  return dnnl::memory(Md(v, groups), Engine(), v.base);
}

struct Params {
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};

Params ParamsOf(const Geom& g) {
  Params p;
  for (int s = 3 - g.sp; s < 3; ++s) {
    p.strides.push_back(g.str[s]);
    p.dilates.push_back(g.dil[s] - 1);
    p.pad_l.push_back(g.pad[s]);
    p.pad_r.push_back((g.O[s] - 1) * g.str[s] + (g.R[s] - 1) * g.dil[s] + 1 - g.I[s] - g.pad[s]);
  }
  return p;
}

// An f32 view of `v` for oneDNN: `v` itself when float with positive strides,
// else a packed widened copy kept alive in *keep.
View F32(const View& v, Dense* keep) {
  bool direct = v.type == CUDNN_DATA_FLOAT;
  for (int k = 0; k < 5; ++k) direct = direct && v.str[k] >= 0;
  if (direct) return v;
  *keep = Widen(v);
  return keep->view;
}

dnnl::convolution_forward::desc FwdDesc(const View& x, const View& w, const View& y,
                                        const Geom& g) {
  const Params p = ParamsOf(g);
  return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                         dnnl::algorithm::convolution_direct, Md(x), Md(w, g.G),
                                         Md(y), p.strides, p.dilates, p.pad_l, p.pad_r);
}

void Run(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  dnnl::stream s(Engine());
  prim.execute(s, args);
  s.wait();
}

// y = alpha * conv(x, w) + beta * y on oneDNN; throws dnnl::error when oneDNN
// has no implementation.
void ForwardDnnl(const View& x, const View& w, const View& y, const Geom& g, double alpha,
                 double beta) {
  Dense xk, wk;
  const View xf = F32(x, &xk);
  const View wf = F32(g.flip ? Flipped(w) : w, &wk);
  // Float y and beta == 0: written in place, alpha as a linear post-op
  // (oneDNN 2.6 has no f32 output scales, and its sum post-op falls back to the
  // reference kernel, so beta != 0 blends from a packed result instead).
  bool direct = y.type == CUDNN_DATA_FLOAT && beta == 0;
  for (int k = 0; k < 5; ++k) direct = direct && y.str[k] >= 0;
  if (direct) {
    dnnl::primitive_attr attr;
    if (alpha != 1) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, static_cast<float>(alpha), 0.f);
      attr.set_post_ops(ops);
    }
    const dnnl::convolution_forward::primitive_desc pd(FwdDesc(xf, wf, y, g), attr, Engine());
    Run(dnnl::convolution_forward(pd),
        {{DNNL_ARG_SRC, Mem(xf)}, {DNNL_ARG_WEIGHTS, Mem(wf, g.G)}, {DNNL_ARG_DST, Mem(y)}});
    return;
  }
  Dense out = MakeDense(y);
  const dnnl::convolution_forward::primitive_desc pd(FwdDesc(xf, wf, out.view, g), Engine());
  Run(dnnl::convolution_forward(pd),
      {{DNNL_ARG_SRC, Mem(xf)}, {DNNL_ARG_WEIGHTS, Mem(wf, g.G)}, {DNNL_ARG_DST, Mem(out.view)}});
  BlendAll(out.view, y, alpha, beta);
}

// dx = alpha * conv_backward_data(w, dy) + beta * dx on oneDNN.
void BackwardDataDnnl(const View& w, const View& dy, const View& dx, const Geom& g, double alpha,
                      double beta) {
  Dense wk, dyk;
  const View wf = F32(g.flip ? Flipped(w) : w, &wk);
  const View dyf = F32(dy, &dyk);
  Dense out = MakeDense(dx);
  const bool direct = dx.type == CUDNN_DATA_FLOAT && alpha == 1 && beta == 0;
  const View target = direct ? dx : out.view;
  const Params p = ParamsOf(g);
  const dnnl::convolution_forward::primitive_desc hint(FwdDesc(target, wf, dyf, g), Engine());
  const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, Md(target),
                                                Md(wf, g.G), Md(dyf), p.strides, p.dilates, p.pad_l,
                                                p.pad_r);
  const dnnl::convolution_backward_data::primitive_desc pd(d, Engine(), hint);
  Run(dnnl::convolution_backward_data(pd), {{DNNL_ARG_DIFF_SRC, Mem(target)},
                                            {DNNL_ARG_WEIGHTS, Mem(wf, g.G)},
                                            {DNNL_ARG_DIFF_DST, Mem(dyf)}});
  if (!direct) BlendAll(out.view, dx, alpha, beta);
}

// dw = alpha * conv_backward_weights(x, dy) + beta * dw on oneDNN.
void BackwardFilterDnnl(const View& x, const View& dy, const View& dw, const Geom& g, double alpha,
                        double beta) {
  Dense xk, dyk;
  const View xf = F32(x, &xk);
  const View dyf = F32(dy, &dyk);
  Dense out = MakeDense(dw);
  const bool direct = dw.type == CUDNN_DATA_FLOAT && !g.flip && alpha == 1 && beta == 0;
  const View target = direct ? dw : out.view;
  const Params p = ParamsOf(g);
  const dnnl::convolution_forward::primitive_desc hint(FwdDesc(xf, target, dyf, g), Engine());
  const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, Md(xf),
                                                   Md(target, g.G), Md(dyf), p.strides, p.dilates,
                                                   p.pad_l, p.pad_r);
  const dnnl::convolution_backward_weights::primitive_desc pd(d, Engine(), hint);
  Run(dnnl::convolution_backward_weights(pd), {{DNNL_ARG_SRC, Mem(xf)},
                                               {DNNL_ARG_DIFF_WEIGHTS, Mem(target, g.G)},
                                               {DNNL_ARG_DIFF_DST, Mem(dyf)}});
  if (!direct) BlendAll(out.view, g.flip ? Flipped(dw) : dw, alpha, beta);
}

// ---- The plain loop (double data, oneDNN refusals) ----

enum class Pass { kForward, kData, kFilter };

// Visits every (output point, filter tap) pair of the convolution: f(x_off,
// w_off, y_off) with offsets into x, w (the mirrored tap for
// CUDNN_CONVOLUTION) and y.
template <class F>
void Taps(const View& x, const View& w, const View& y, const Geom& g, F f) {
  const int64_t cg = g.C / g.G, kg = g.K / g.G;
  auto tap = [&](int s, int64_t r) { return g.flip ? g.R[s] - 1 - r : r; };
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k) {
      const int64_t grp = k / kg;
      for (int64_t o0 = 0; o0 < g.O[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.O[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.O[2]; ++o2) {
            const int64_t yi[5] = {n, k, o0, o1, o2};
            const int64_t y_off = y.Off(yi);
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t r0 = 0; r0 < g.R[0]; ++r0) {
                const int64_t i0 = o0 * g.str[0] - g.pad[0] + r0 * g.dil[0];
                if (i0 < 0 || i0 >= g.I[0]) continue;
                for (int64_t r1 = 0; r1 < g.R[1]; ++r1) {
                  const int64_t i1 = o1 * g.str[1] - g.pad[1] + r1 * g.dil[1];
                  if (i1 < 0 || i1 >= g.I[1]) continue;
                  for (int64_t r2 = 0; r2 < g.R[2]; ++r2) {
                    const int64_t i2 = o2 * g.str[2] - g.pad[2] + r2 * g.dil[2];
                    if (i2 < 0 || i2 >= g.I[2]) continue;
                    const int64_t xi[5] = {n, grp * cg + c, i0, i1, i2};
                    const int64_t wi[5] = {k, c, tap(0, r0), tap(1, r1), tap(2, r2)};
                    f(x.Off(xi), w.Off(wi), y_off);
                  }
                }
              }
          }
    }
}

// A view addressing a packed array shaped like `v` (its Off is the index).
View PackedIndex(const View& v) {
  View idx = v;
  idx.base = nullptr;
  int64_t s = 1;
  for (int k = 4; k >= 0; --k) {
    idx.str[k] = s;
    s *= v.dim[k];
  }
  return idx;
}

// One pass by the plain loop, accumulating the output in a packed double array.
void Loop(Pass pass, const View& x, const View& w, const View& y, const Geom& g, double alpha,
          double beta) {
  const View& out = pass == Pass::kForward ? y : pass == Pass::kData ? x : w;
  const View idx = PackedIndex(out);
  std::vector<double> acc(static_cast<size_t>(out.Count()));
  auto at = [&](int64_t i) -> double& { return acc[static_cast<size_t>(i)]; };
  switch (pass) {
    case Pass::kForward:
      Taps(x, w, idx, g,
           [&](int64_t xo, int64_t wo, int64_t yo) { at(yo) += x.Get(xo) * w.Get(wo); });
      break;
    case Pass::kData:
      Taps(idx, w, y, g,
           [&](int64_t xo, int64_t wo, int64_t yo) { at(xo) += y.Get(yo) * w.Get(wo); });
      break;
    case Pass::kFilter:
      Taps(x, idx, y, g,
           [&](int64_t xo, int64_t wo, int64_t yo) { at(wo) += y.Get(yo) * x.Get(xo); });
      break;
  }
  Each(out.dim, [&](const int64_t* i) { out.Blend(out.Off(i), at(idx.Off(i)), alpha, beta); });
}

// Runs `pass` on oneDNN for float/half, falling back to the loop when oneDNN
// refuses; double always loops.
void Execute(Pass pass, const View& x, const View& w, const View& y, double alpha, double beta,
             const Geom& g) {
  if (x.type != CUDNN_DATA_DOUBLE) {
    try {
      switch (pass) {
        case Pass::kForward:
          ForwardDnnl(x, w, y, g, alpha, beta);
          return;
        case Pass::kData:
          BackwardDataDnnl(w, y, x, g, alpha, beta);
          return;
        case Pass::kFilter:
          BackwardFilterDnnl(x, y, w, g, alpha, beta);
          return;
      }
    } catch (const dnnl::error&) {
      // No oneDNN implementation for this shape: the loop below computes it.
    }
  }
  Loop(pass, x, w, y, g, alpha, beta);
}

// Fills perf results for algorithms 0..count-1 (all accepted, no workspace).
template <class Perf, class Algo>
cudnnStatus_t ListAlgos(int count, int requested, int* returned, Perf* perf, cudnnMathType_t math) {
  DNN_CHECK_ARG(requested >= 1 && returned != nullptr && perf != nullptr);
  const int n = std::min(count, requested);
  for (int i = 0; i < n; ++i) {
    Perf p;
    std::memset(&p, 0, sizeof(p));
    p.algo = static_cast<Algo>(i);
    p.status = CUDNN_STATUS_SUCCESS;
    p.time = -1;
    p.memory = 0;
    p.determinism = CUDNN_DETERMINISTIC;
    p.mathType = math;
    perf[i] = p;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t MathOf(cudnnConvolutionDescriptor_t cd, cudnnMathType_t* math) {
  cudnnConvolutionStruct c;
  DNN_RETURN_IF_ERROR(DnnCopy(cd, &c));
  *math = c.math;
  return CUDNN_STATUS_SUCCESS;
}

// Shared body of the three convolution passes: (x, w, y) are the forward
// pass's roles whichever of them is the output.
cudnnStatus_t Submit(Pass pass, cudnnHandle_t h, const void* alpha, cudnnTensorDescriptor_t xd,
                     const void* x, cudnnFilterDescriptor_t wd, const void* w,
                     cudnnConvolutionDescriptor_t cd, int algo, int algo_count, const void* ws,
                     size_t ws_bytes, const void* beta, cudnnTensorDescriptor_t yd, const void* y) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(h));
  View xv, wv, yv;
  Geom g;
  DNN_RETURN_IF_ERROR(Resolve(xd, x, wd, w, cd, yd, y, &xv, &wv, &yv, &g));
  DNN_CHECK_ARG(algo >= 0 && algo < algo_count);
  DNN_CHECK_ARG(ws != nullptr || ws_bytes == 0);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double a = ReadScale(xv.type, alpha);
  const double b = ReadScale(xv.type, beta);
  return call.Submit([=] { Execute(pass, xv, wv, yv, a, b, g); });
}

}  // namespace
}  // namespace remora::emu::dnn

using namespace remora::emu::dnn;  // NOLINT: entry points are global by ABI

REMORA_DNN_API cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, cudnnTensorDescriptor_t srcDesc, cudnnFilterDescriptor_t filterDesc,
    cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t destDesc, int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  CUstream s;
  DNN_RETURN_IF_ERROR(GetStream(handle, &s));
  DNN_RETURN_IF_ERROR(ResolveShapes(srcDesc, filterDesc, convDesc, destDesc));
  cudnnMathType_t math;
  DNN_RETURN_IF_ERROR(MathOf(convDesc, &math));
  return ListAlgos<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, requestedAlgoCount, returnedAlgoCount, perfResults, math);
}

REMORA_DNN_API cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, cudnnFilterDescriptor_t filterDesc, cudnnTensorDescriptor_t diffDesc,
    cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t gradDesc, int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  CUstream s;
  DNN_RETURN_IF_ERROR(GetStream(handle, &s));
  DNN_RETURN_IF_ERROR(ResolveShapes(gradDesc, filterDesc, convDesc, diffDesc));
  cudnnMathType_t math;
  DNN_RETURN_IF_ERROR(MathOf(convDesc, &math));
  return ListAlgos<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, requestedAlgoCount, returnedAlgoCount, perfResults,
      math);
}

REMORA_DNN_API cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, cudnnTensorDescriptor_t srcDesc, cudnnTensorDescriptor_t diffDesc,
    cudnnConvolutionDescriptor_t convDesc, cudnnFilterDescriptor_t gradDesc, int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults) {
  CUstream s;
  DNN_RETURN_IF_ERROR(GetStream(handle, &s));
  DNN_RETURN_IF_ERROR(ResolveShapes(srcDesc, gradDesc, convDesc, diffDesc));
  cudnnMathType_t math;
  DNN_RETURN_IF_ERROR(MathOf(convDesc, &math));
  return ListAlgos<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, requestedAlgoCount, returnedAlgoCount, perfResults,
      math);
}

REMORA_DNN_API cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, cudnnFilterDescriptor_t wDesc,
    cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t yDesc,
    cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  CUstream s;
  DNN_RETURN_IF_ERROR(GetStream(handle, &s));
  DNN_RETURN_IF_ERROR(ResolveShapes(xDesc, wDesc, convDesc, yDesc));
  DNN_CHECK_ARG(algo >= 0 && algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT && sizeInBytes != nullptr);
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

REMORA_DNN_API cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc, cudnnTensorDescriptor_t dyDesc,
    cudnnConvolutionDescriptor_t convDesc, cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* sizeInBytes) {
  CUstream s;
  DNN_RETURN_IF_ERROR(GetStream(handle, &s));
  DNN_RETURN_IF_ERROR(ResolveShapes(dxDesc, wDesc, convDesc, dyDesc));
  DNN_CHECK_ARG(algo >= 0 && algo < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT &&
                sizeInBytes != nullptr);
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

REMORA_DNN_API cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, cudnnTensorDescriptor_t dyDesc,
    cudnnConvolutionDescriptor_t convDesc, cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* sizeInBytes) {
  CUstream s;
  DNN_RETURN_IF_ERROR(GetStream(handle, &s));
  DNN_RETURN_IF_ERROR(ResolveShapes(xDesc, gradDesc, convDesc, dyDesc));
  DNN_CHECK_ARG(algo >= 0 && algo < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT &&
                sizeInBytes != nullptr);
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

REMORA_DNN_API cudnnStatus_t cudnnConvolutionForward(
    cudnnHandle_t handle, const void* alpha, cudnnTensorDescriptor_t xDesc, const void* x,
    cudnnFilterDescriptor_t wDesc, const void* w, cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
    cudnnTensorDescriptor_t yDesc, void* y) {
  return Submit(Pass::kForward, handle, alpha, xDesc, x, wDesc, w, convDesc, algo,
                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, workSpace, workSpaceSizeInBytes, beta, yDesc, y);
}

REMORA_DNN_API cudnnStatus_t cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void* alpha, cudnnFilterDescriptor_t wDesc, const void* w,
    cudnnTensorDescriptor_t dyDesc, const void* dy, cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionBwdDataAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes,
    const void* beta, cudnnTensorDescriptor_t dxDesc, void* dx) {
  return Submit(Pass::kData, handle, alpha, dxDesc, dx, wDesc, w, convDesc, algo,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, workSpace, workSpaceSizeInBytes, beta,
                dyDesc, dy);
}

REMORA_DNN_API cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void* alpha, cudnnTensorDescriptor_t xDesc, const void* x,
    cudnnTensorDescriptor_t dyDesc, const void* dy, cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes,
    const void* beta, cudnnFilterDescriptor_t dwDesc, void* dw) {
  return Submit(Pass::kFilter, handle, alpha, xDesc, x, dwDesc, dw, convDesc, algo,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, workSpace, workSpaceSizeInBytes, beta,
                dyDesc, dy);
}

// db (1 x K x 1 x 1) = alpha * sum of dy over N and the spatial dims + beta * db.
REMORA_DNN_API cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                                          cudnnTensorDescriptor_t dyDesc,
                                                          const void* dy, const void* beta,
                                                          cudnnTensorDescriptor_t dbDesc,
                                                          void* db) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View dyv, dbv;
  DNN_RETURN_IF_ERROR(MakeView(dyDesc, dy, &dyv));
  DNN_RETURN_IF_ERROR(MakeView(dbDesc, db, &dbv));
  DNN_CHECK_ARG(dbv.dim[1] == dyv.dim[1] && dbv.Count() == dbv.dim[1]);
  if (dyv.type != dbv.type) return CUDNN_STATUS_NOT_SUPPORTED;
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double a = ReadScale(dbv.type, alpha);
  const double b = ReadScale(dbv.type, beta);
  return call.Submit([=] {
    std::vector<double> sum(static_cast<size_t>(dyv.dim[1]));
    Each(dyv.dim, [&](const int64_t* i) { sum[static_cast<size_t>(i[1])] += dyv.Get(dyv.Off(i)); });
    for (int64_t k = 0; k < dbv.dim[1]; ++k) {
      const int64_t i[5] = {0, k, 0, 0, 0};
      dbv.Blend(dbv.Off(i), sum[static_cast<size_t>(k)], a, b);
    }
  });
}
