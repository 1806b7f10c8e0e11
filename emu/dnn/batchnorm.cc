// emu/dnn/batchnorm.cc - batch normalization: forward inference, forward
// training (batch statistics, running averages, saved mean and inverse
// standard deviation) and backward; PER_ACTIVATION and SPATIAL
// (SPATIAL_PERSISTENT computes as SPATIAL). Plain loops in double.
#include <cmath>
#include <cstdint>
#include <vector>

#include "emu/dnn/dnn.h"

namespace remora::emu::dnn {
namespace {

// x's view, the parameter layout (scale/bias/mean/var share one descriptor),
// and how many x elements feed each parameter.
struct Bn {
  View x;
  View p;  // base unset; At() rebinds it
  int64_t per = 1;

  View At(const void* base) const {
    View v = p;
    v.base = static_cast<char*>(const_cast<void*>(base));
    return v;
  }
  // Packed index of x element `i`'s parameter.
  int64_t Param(const int64_t i[5]) const {
    int64_t o = 0;
    for (int k = 0; k < 5; ++k) o = o * p.dim[k] + (p.dim[k] == 1 ? 0 : i[k]);
    return o;
  }
};

// Checks mode, epsilon, x and the parameter descriptor. Errors: BAD_PARAM.
cudnnStatus_t CheckBn(cudnnBatchNormMode_t mode, double epsilon, const View& x,
                      cudnnTensorDescriptor_t pDesc, Bn* bn) {
  DNN_CHECK_ARG(mode == CUDNN_BATCHNORM_PER_ACTIVATION || mode == CUDNN_BATCHNORM_SPATIAL ||
                mode == CUDNN_BATCHNORM_SPATIAL_PERSISTENT);
  DNN_CHECK_ARG(epsilon >= CUDNN_BN_MIN_EPSILON);
  static const char placeholder = 0;
  View p;
  DNN_RETURN_IF_ERROR(MakeView(pDesc, &placeholder, &p));
  DNN_CHECK_ARG(p.nd == x.nd && p.dim[0] == 1 && p.dim[1] == x.dim[1]);
  for (int k = 2; k < 5; ++k) {
    DNN_CHECK_ARG(p.dim[k] == (mode == CUDNN_BATCHNORM_PER_ACTIVATION ? x.dim[k] : 1));
  }
  DNN_CHECK_ARG(p.type == (x.type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
  bn->x = x;
  bn->p = p;
  bn->per = x.Count() / p.Count();
  return CUDNN_STATUS_SUCCESS;
}

// Batch mean and biased variance of every parameter position.
void Stats(const Bn& bn, std::vector<double>* mean, std::vector<double>* var) {
  const size_t n = static_cast<size_t>(bn.p.Count());
  mean->assign(n, 0);
  var->assign(n, 0);
  Each(bn.x.dim, [&](const int64_t* i) {
    (*mean)[static_cast<size_t>(bn.Param(i))] += bn.x.Get(bn.x.Off(i));
  });
  for (double& m : *mean) m /= static_cast<double>(bn.per);
  Each(bn.x.dim, [&](const int64_t* i) {
    const size_t k = static_cast<size_t>(bn.Param(i));
    const double d = bn.x.Get(bn.x.Off(i)) - (*mean)[k];
    (*var)[k] += d * d;
  });
  for (double& v : *var) v /= static_cast<double>(bn.per);
}

// The packed parameter position of every element of the parameter layout.
template <class F>
void EachParam(const Bn& bn, F f) {
  Each(bn.p.dim, [&](const int64_t* i) { f(i, static_cast<size_t>(bn.Param(i))); });
}

}  // namespace
}  // namespace remora::emu::dnn

using namespace remora::emu::dnn;  // NOLINT: entry points are global by ABI

// y = alpha * (scale * (x - mean) / sqrt(var + eps) + bias) + beta * y.
REMORA_DNN_API cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    cudnnTensorDescriptor_t xDesc, const void* x, cudnnTensorDescriptor_t yDesc, void* y,
    cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
    const void* estimatedMean, const void* estimatedVariance, double epsilon) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View xv, yv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_CHECK_ARG(xv.SameDims(yv) && xv.type == yv.type);
  Bn bn;
  DNN_RETURN_IF_ERROR(CheckBn(mode, epsilon, xv, bnScaleBiasMeanVarDesc, &bn));
  DNN_CHECK_ARG(bnScale != nullptr && bnBias != nullptr && estimatedMean != nullptr &&
                estimatedVariance != nullptr && alpha != nullptr && beta != nullptr);
  const double al = ReadScale(yv.type, alpha), be = ReadScale(yv.type, beta);
  const View sc = bn.At(bnScale), bi = bn.At(bnBias), me = bn.At(estimatedMean),
             va = bn.At(estimatedVariance);
  return call.Submit([=] {
    Each(xv.dim, [&](const int64_t* i) {
      const double r = sc.Get(sc.BroadcastOff(i)) *
                           (xv.Get(xv.Off(i)) - me.Get(me.BroadcastOff(i))) /
                           std::sqrt(va.Get(va.BroadcastOff(i)) + epsilon) +
                       bi.Get(bi.BroadcastOff(i));
      yv.Blend(yv.Off(i), r, al, be);
    });
  });
}

// Normalizes with the batch's statistics; updates the running averages
// (unbiased variance) when given, saves mean and 1 / sqrt(var + eps) when given.
REMORA_DNN_API cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    cudnnTensorDescriptor_t xDesc, const void* x, cudnnTensorDescriptor_t yDesc, void* y,
    cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
    double exponentialAverageFactor, void* resultRunningMean, void* resultRunningVariance,
    double epsilon, void* resultSaveMean, void* resultSaveInvVariance) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View xv, yv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(yDesc, y, &yv));
  DNN_CHECK_ARG(xv.SameDims(yv) && xv.type == yv.type);
  Bn bn;
  DNN_RETURN_IF_ERROR(CheckBn(mode, epsilon, xv, bnScaleBiasMeanVarDesc, &bn));
  DNN_CHECK_ARG(bnScale != nullptr && bnBias != nullptr && alpha != nullptr && beta != nullptr);
  DNN_CHECK_ARG((resultRunningMean == nullptr) == (resultRunningVariance == nullptr));
  DNN_CHECK_ARG((resultSaveMean == nullptr) == (resultSaveInvVariance == nullptr));
  const double al = ReadScale(yv.type, alpha), be = ReadScale(yv.type, beta);
  const bool running = resultRunningMean != nullptr, save = resultSaveMean != nullptr;
  const View sc = bn.At(bnScale), bi = bn.At(bnBias);
  const View rm = bn.At(running ? resultRunningMean : bnScale),
             rv = bn.At(running ? resultRunningVariance : bnScale);
  const View sm = bn.At(save ? resultSaveMean : bnScale),
             si = bn.At(save ? resultSaveInvVariance : bnScale);
  const double f = exponentialAverageFactor;
  return call.Submit([=] {
    std::vector<double> mean, var;
    Stats(bn, &mean, &var);
    Each(xv.dim, [&](const int64_t* i) {
      const size_t k = static_cast<size_t>(bn.Param(i));
      const double r =
          sc.Get(sc.BroadcastOff(i)) * (xv.Get(xv.Off(i)) - mean[k]) / std::sqrt(var[k] + epsilon) +
          bi.Get(bi.BroadcastOff(i));
      yv.Blend(yv.Off(i), r, al, be);
    });
    const double unbias =
        bn.per > 1 ? static_cast<double>(bn.per) / static_cast<double>(bn.per - 1) : 1.0;
    EachParam(bn, [&](const int64_t* i, size_t k) {
      if (running) {
        const int64_t mo = rm.Off(i), vo = rv.Off(i);
        rm.Put(mo, (1 - f) * rm.Get(mo) + f * mean[k]);
        rv.Put(vo, (1 - f) * rv.Get(vo) + f * var[k] * unbias);
      }
      if (save) {
        sm.Put(sm.Off(i), mean[k]);
        si.Put(si.Off(i), 1 / std::sqrt(var[k] + epsilon));
      }
    });
  });
}

// dx = alphaData * dx_bn + betaData * dx; dscale and dbias likewise with
// alphaParam/betaParam. Saved statistics are used when both are given, else
// recomputed from x.
REMORA_DNN_API cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alphaDataDiff,
    const void* betaDataDiff, const void* alphaParamDiff, const void* betaParamDiff,
    cudnnTensorDescriptor_t xDesc, const void* x, cudnnTensorDescriptor_t dyDesc, const void* dy,
    cudnnTensorDescriptor_t dxDesc, void* dx, cudnnTensorDescriptor_t dBnScaleBiasDesc,
    const void* bnScale, void* dBnScaleResult, void* dBnBiasResult, double epsilon,
    const void* savedMean, const void* savedInvVariance) {
  Call call;
  DNN_RETURN_IF_ERROR(call.Begin(handle));
  View xv, dyv, dxv;
  DNN_RETURN_IF_ERROR(MakeView(xDesc, x, &xv));
  DNN_RETURN_IF_ERROR(MakeView(dyDesc, dy, &dyv));
  DNN_RETURN_IF_ERROR(MakeView(dxDesc, dx, &dxv));
  DNN_CHECK_ARG(xv.SameDims(dyv) && xv.SameDims(dxv));
  DNN_CHECK_ARG(xv.type == dyv.type && xv.type == dxv.type);
  Bn bn;
  DNN_RETURN_IF_ERROR(CheckBn(mode, epsilon, xv, dBnScaleBiasDesc, &bn));
  DNN_CHECK_ARG(bnScale != nullptr && dBnScaleResult != nullptr && dBnBiasResult != nullptr);
  DNN_CHECK_ARG(alphaDataDiff != nullptr && betaDataDiff != nullptr && alphaParamDiff != nullptr &&
                betaParamDiff != nullptr);
  DNN_CHECK_ARG((savedMean == nullptr) == (savedInvVariance == nullptr));
  const double ad = ReadScale(dxv.type, alphaDataDiff), bd = ReadScale(dxv.type, betaDataDiff);
  const double ap = ReadScale(dxv.type, alphaParamDiff), bp = ReadScale(dxv.type, betaParamDiff);
  const bool saved = savedMean != nullptr;
  const View sc = bn.At(bnScale), ds = bn.At(dBnScaleResult), db = bn.At(dBnBiasResult);
  const View sm = bn.At(saved ? savedMean : bnScale),
             si = bn.At(saved ? savedInvVariance : bnScale);
  return call.Submit([=] {
    const size_t np = static_cast<size_t>(bn.p.Count());
    std::vector<double> mean(np), inv(np);
    if (saved) {
      EachParam(bn, [&](const int64_t* i, size_t k) {
        mean[k] = sm.Get(sm.Off(i));
        inv[k] = si.Get(si.Off(i));
      });
    } else {
      std::vector<double> var;
      Stats(bn, &mean, &var);
      for (size_t k = 0; k < np; ++k) inv[k] = 1 / std::sqrt(var[k] + epsilon);
    }
    std::vector<double> sum_dy(np), sum_dy_xhat(np);
    Each(xv.dim, [&](const int64_t* i) {
      const size_t k = static_cast<size_t>(bn.Param(i));
      const double g = dyv.Get(dyv.Off(i));
      sum_dy[k] += g;
      sum_dy_xhat[k] += g * (xv.Get(xv.Off(i)) - mean[k]) * inv[k];
    });
    const double m = static_cast<double>(bn.per);
    Each(xv.dim, [&](const int64_t* i) {
      const size_t k = static_cast<size_t>(bn.Param(i));
      const double xhat = (xv.Get(xv.Off(i)) - mean[k]) * inv[k];
      const double r = sc.Get(sc.BroadcastOff(i)) * inv[k] / m *
                       (m * dyv.Get(dyv.Off(i)) - sum_dy[k] - xhat * sum_dy_xhat[k]);
      dxv.Blend(dxv.Off(i), r, ad, bd);
    });
    EachParam(bn, [&](const int64_t* i, size_t k) {
      ds.Blend(ds.Off(i), sum_dy_xhat[k], ap, bp);
      db.Blend(db.Off(i), sum_dy[k], ap, bp);
    });
  });
}
