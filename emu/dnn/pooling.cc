// emu/dnn/pooling.cc - pooling (max, both averages; 1-3 spatial dims) and LRN
// across channels, forward and backward: plain loops over strided views in
// double. Backward passes recompute what they need from x (the argmax of a max
// window, LRN's scale), as cuDNN takes x, y and dy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "emu/dnn/dnn.h"

namespace remora::emu::dnn {
namespace {

struct PoolGeom {
  int64_t win[3] = {1, 1, 1}, pad[3] = {}, str[3] = {1, 1, 1};
};

// Checks x and y against the pooling descriptor. Errors: BAD_PARAM.
cudnnStatus_t CheckPool(const cudnnPoolingStruct& p, const View& x, const View& y, PoolGeom* g) {
  const int sp = static_cast<int>(p.window.size());
  DNN_CHECK_ARG(sp == x.nd - 2 && x.nd == y.nd && x.type == y.type);
  DNN_CHECK_ARG(x.dim[0] == y.dim[0] && x.dim[1] == y.dim[1]);
  for (int s = 0; s < 3; ++s) {
    const int k = s - (3 - sp);
    if (k < 0) continue;
    g->win[s] = p.window[k];
    g->pad[s] = p.pads[k];
    g->str[s] = p.strides[k];
    DNN_CHECK_ARG(x.dim[2 + s] + 2 * g->pad[s] >= g->win[s]);
    DNN_CHECK_ARG(y.dim[2 + s] == (x.dim[2 + s] + 2 * g->pad[s] - g->win[s]) / g->str[s] + 1);
  }
  return CUDNN_STATUS_SUCCESS;
}

// Calls f(x_off) for the in-bounds inputs of output window `o` (N, C, D, H, W
// index into y); returns how many there were.
template <class F>
int64_t Window(const View& x, const PoolGeom& g, const int64_t o[5], F f) {
  int64_t count = 0;
  for (int64_t r0 = 0; r0 < g.win[0]; ++r0) {
    const int64_t i0 = o[2] * g.str[0] - g.pad[0] + r0;
    if (i0 < 0 || i0 >= x.dim[2]) continue;
    for (int64_t r1 = 0; r1 < g.win[1]; ++r1) {
      const int64_t i1 = o[3] * g.str[1] - g.pad[1] + r1;
      if (i1 < 0 || i1 >= x.dim[3]) continue;
      for (int64_t r2 = 0; r2 < g.win[2]; ++r2) {
        const int64_t i2 = o[4] * g.str[2] - g.pad[2] + r2;
        if (i2 < 0 || i2 >= x.dim[4]) continue;
        const int64_t xi[5] = {o[0], o[1], i0, i1, i2};
        f(x.Off(xi));
        ++count;
      }
    }
  }
  return count;
}

bool IsMax(cudnnPoolingMode_t m) {
  return m == CUDNN_POOLING_MAX || m == CUDNN_POOLING_MAX_DETERMINISTIC;
}

// The divisor of an average window with `count` inputs in bounds.
double Divisor(const cudnnPoolingStruct& p, const PoolGeom& g, int64_t count) {
  return p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
             ? static_cast<double>(g.win[0] * g.win[1] * g.win[2])
             : static_cast<double>(count);
}

// A packed index over v's dims (for scratch arrays).
int64_t Packed(const View& v, const int64_t i[5]) {
  return (((i[0] * v.dim[1] + i[1]) * v.dim[2] + i[2]) * v.dim[3] + i[3]) * v.dim[4] + i[4];
}

}  // namespace
}  // namespace remora::emu::dnn

using namespace remora::emu::dnn;  // NOLINT: entry points are global by ABI

REMORA_DNN_API cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle,
                                                 cudnnPoolingDescriptor_t poolingDesc,
                                                 const void* alpha, cudnnTensorDescriptor_t xDesc,
                                                 const void* x, const void* beta,
                                                 cudnnTensorDescriptor_t yDesc, void* y) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  cudnnPoolingStruct p;
  DNN_RETURN_IF_ERROR(DnnCopy(poolingDesc, &p));
  View xv, yv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  PoolGeom g;
  DNN_RETURN_IF_ERROR(CheckPool(p, xv, yv, &g));
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(yv.type, alpha), be = ReadScale(yv.type, beta);
  return call.Submit([=] {
    Each(yv.dim, [&](const int64_t* o) {
      double r;
      if (IsMax(p.mode)) {
        r = -INFINITY;
        Window(xv, g, o, [&](int64_t xo) { r = std::max(r, xv.Get(xo)); });
      } else {
        double sum = 0;
        const int64_t n = Window(xv, g, o, [&](int64_t xo) { sum += xv.Get(xo); });
        r = n == 0 ? 0 : sum / Divisor(p, g, n);
      }
      yv.Blend(yv.Off(o), r, al, be);
    });
  });
}

// dx = alpha * pooling_backward(dy) + beta * dx: max sends each dy to its
// window's first maximum of x; averages spread dy / divisor over the window.
REMORA_DNN_API cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle,
                                                  cudnnPoolingDescriptor_t poolingDesc,
                                                  const void* alpha, cudnnTensorDescriptor_t yDesc,
                                                  const void* y, cudnnTensorDescriptor_t dyDesc,
                                                  const void* dy, cudnnTensorDescriptor_t xDesc,
                                                  const void* x, const void* beta,
                                                  cudnnTensorDescriptor_t dxDesc, void* dx) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  cudnnPoolingStruct p;
  DNN_RETURN_IF_ERROR(DnnCopy(poolingDesc, &p));
  View yv, dyv, xv, dxv;
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_RETURN_IF_ERROR(MakeView(dyDesc, dy, &dyv));
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(dxDesc, dx, &dxv));
  PoolGeom g;
  DNN_RETURN_IF_ERROR(CheckPool(p, xv, yv, &g));
  DNN_CHECK_ARG(yv.SameDims(dyv) && xv.SameDims(dxv));
  DNN_CHECK_ARG(yv.type == dyv.type && xv.type == dxv.type);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(dxv.type, alpha), be = ReadScale(dxv.type, beta);
  return call.Submit([=] {
    // Gradients accumulate in a packed array indexed like x (x offsets are
    // mapped back through a packed copy of the window walk).
    std::vector<double> acc(static_cast<size_t>(xv.Count()));
    View idx = xv;  // packed addressing of x's dims
    int64_t s = 1;
    for (int k = 4; k >= 0; --k) {
      idx.str[k] = s;
      s *= xv.dim[k];
    }
    Each(yv.dim, [&](const int64_t* o) {
      const double g_out = dyv.Get(dyv.Off(o));
      if (IsMax(p.mode)) {
        double best = -INFINITY;
        int64_t arg = -1;
        std::vector<int64_t> offs;
        Window(idx, g, o, [&](int64_t pi) { offs.push_back(pi); });
        int64_t n = 0;
        Window(xv, g, o, [&](int64_t xo) {
          const double v = xv.Get(xo);
          if (v > best || arg < 0) {
            best = v;
            arg = offs[static_cast<size_t>(n)];
          }
          ++n;
        });
        if (arg >= 0) acc[static_cast<size_t>(arg)] += g_out;
      } else {
        std::vector<int64_t> offs;
        const int64_t n = Window(idx, g, o, [&](int64_t pi) { offs.push_back(pi); });
        if (n == 0) return;
        const double share = g_out / Divisor(p, g, n);
        for (int64_t pi : offs) acc[static_cast<size_t>(pi)] += share;
      }
    });
    Each(dxv.dim, [&](const int64_t* i) {
      dxv.Blend(dxv.Off(i), acc[static_cast<size_t>(Packed(xv, i))], al, be);
    });
  });
}

// ---- LRN across channels ----
//
// cuDNN's formula: y_c = x_c / (k + alpha / n * sum_{j in W(c)} x_j^2)^beta,
// W(c) = [c - floor((n-1)/2), c + n - 1 - floor((n-1)/2)] clipped to [0, C).

namespace remora::emu::dnn {
namespace {

// The scale k + alpha / n * sum x_j^2 of every element, in a packed array.
std::vector<double> LrnScale(const cudnnLRNStruct& l, const View& x) {
  std::vector<double> scale(static_cast<size_t>(x.Count()));
  const int64_t behind = (static_cast<int64_t>(l.n) - 1) / 2;
  const int64_t ahead = static_cast<int64_t>(l.n) - 1 - behind;
  Each(x.dim, [&](const int64_t* i) {
    double sum = 0;
    for (int64_t j = std::max<int64_t>(0, i[1] - behind);
         j <= std::min<int64_t>(x.dim[1] - 1, i[1] + ahead); ++j) {
      const int64_t k[5] = {i[0], j, i[2], i[3], i[4]};
      const double v = x.Get(x.Off(k));
      sum += v * v;
    }
    scale[static_cast<size_t>(Packed(x, i))] = l.k + l.alpha / l.n * sum;
  });
  return scale;
}

cudnnStatus_t CheckLrn(cudnnLRNMode_t mode, const View& x) {
  DNN_CHECK_ARG(mode == CUDNN_LRN_CROSS_CHANNEL_DIM1);
  DNN_CHECK_ARG(x.nd >= 3);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace remora::emu::dnn

REMORA_DNN_API cudnnStatus_t cudnnLRNCrossChannelForward(cudnnHandle_t handle,
                                                         cudnnLRNDescriptor_t normDesc,
                                                         cudnnLRNMode_t lrnMode, const void* alpha,
                                                         cudnnTensorDescriptor_t xDesc,
                                                         const void* x, const void* beta,
                                                         cudnnTensorDescriptor_t yDesc, void* y) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  cudnnLRNStruct l;
  DNN_RETURN_IF_ERROR(DnnCopy(normDesc, &l));
  View xv, yv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_RETURN_IF_ERROR(CheckLrn(lrnMode, xv));
  DNN_CHECK_ARG(xv.SameDims(yv) && xv.type == yv.type);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(yv.type, alpha), be = ReadScale(yv.type, beta);
  return call.Submit([=] {
    const std::vector<double> scale = LrnScale(l, xv);
    Each(yv.dim, [&](const int64_t* i) {
      const double r =
          xv.Get(xv.Off(i)) * std::pow(scale[static_cast<size_t>(Packed(xv, i))], -l.beta);
      yv.Blend(yv.Off(i), r, al, be);
    });
  });
}

// dx_i = dy_i * s_i^-beta - 2 * beta * alpha / n * x_i * sum_{c: i in W(c)}
// dy_c * x_c * s_c^(-beta - 1), with s recomputed from x.
REMORA_DNN_API cudnnStatus_t cudnnLRNCrossChannelBackward(
    cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, cudnnLRNMode_t lrnMode, const void* alpha,
    cudnnTensorDescriptor_t yDesc, const void* y, cudnnTensorDescriptor_t dyDesc, const void* dy,
    cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, cudnnTensorDescriptor_t dxDesc,
    void* dx) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  cudnnLRNStruct l;
  DNN_RETURN_IF_ERROR(DnnCopy(normDesc, &l));
  View yv, dyv, xv, dxv;
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_RETURN_IF_ERROR(MakeView(dyDesc, dy, &dyv));
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(dxDesc, dx, &dxv));
  DNN_RETURN_IF_ERROR(CheckLrn(lrnMode, xv));
  DNN_CHECK_ARG(xv.SameDims(yv) && xv.SameDims(dyv) && xv.SameDims(dxv));
  DNN_CHECK_ARG(xv.type == yv.type && xv.type == dyv.type && xv.type == dxv.type);
  DNN_CHECK_ARG(alpha != nullptr && beta != nullptr);
  const double al = ReadScale(dxv.type, alpha), be = ReadScale(dxv.type, beta);
  return call.Submit([=] {
    const std::vector<double> scale = LrnScale(l, xv);
    const int64_t behind = (static_cast<int64_t>(l.n) - 1) / 2;
    const int64_t ahead = static_cast<int64_t>(l.n) - 1 - behind;
    // c's window holds i when c - behind <= i <= c + ahead.
    Each(dxv.dim, [&](const int64_t* i) {
      double sum = 0;
      for (int64_t c = std::max<int64_t>(0, i[1] - ahead);
           c <= std::min<int64_t>(xv.dim[1] - 1, i[1] + behind); ++c) {
        const int64_t k[5] = {i[0], c, i[2], i[3], i[4]};
        const double s = scale[static_cast<size_t>(Packed(xv, k))];
        sum += dyv.Get(dyv.Off(k)) * xv.Get(xv.Off(k)) * std::pow(s, -l.beta - 1);
      }
      const double si = scale[static_cast<size_t>(Packed(xv, i))];
      const double r = dyv.Get(dyv.Off(i)) * std::pow(si, -l.beta) -
                       2 * l.beta * l.alpha / l.n * xv.Get(xv.Off(i)) * sum;
      dxv.Blend(dxv.Off(i), r, al, be);
    });
  });
}
