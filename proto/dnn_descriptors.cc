// proto/dnn_descriptors.cc - cuDNN's descriptor entry points, for both libcudnn.so.9 of Remora.
//
// Compiled into the stub's library (client_stub/) and the emulated GPU's
// (emu/dnn/); not part of remora_status. Every descriptor is plain data in a
// registry (proto/dnn_descriptors.h): created, set, read and destroyed by the
// same code in both libraries, with the statuses NVIDIA's cuDNN 9 documents for
// bad arguments (an invalid enumerant or a non-positive size: BAD_PARAM; a rank
// beyond what cuDNN takes, or more than 2^31 - 1 elements: NOT_SUPPORTED). The
// stub reads them into each request; the emulator computes with them.
#include "proto/dnn_descriptors.h"

#include <climits>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace remora {
namespace {

bool ValidType(cudnnDataType_t t) {
  return t >= CUDNN_DATA_FLOAT && t <= CUDNN_DATA_COMPLEX_FP64;
}

bool ValidNan(cudnnNanPropagation_t n) {
  return n == CUDNN_NOT_PROPAGATE_NAN || n == CUDNN_PROPAGATE_NAN;
}

// NCHW and NHWC are laid out here; NCHW_VECT_C is a valid format this library
// does not lay out.
cudnnStatus_t CheckFormat(cudnnTensorFormat_t f) {
  if (f == CUDNN_TENSOR_NCHW || f == CUDNN_TENSOR_NHWC) return CUDNN_STATUS_SUCCESS;
  return f == CUDNN_TENSOR_NCHW_VECT_C ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
}

// A tensor's or filter's rank: 3 to CUDNN_DIM_MAX (cuDNN's NOT_SUPPORTED outside).
cudnnStatus_t CheckRank(int n) {
  return n < 3 || n > CUDNN_DIM_MAX ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
}

// Each of `dims` positive (BAD_PARAM), at most 2^31 - 1 elements in all
// (NOT_SUPPORTED, cuDNN's 2 Giga-element limit).
cudnnStatus_t CheckDims(const std::vector<int>& dims) {
  int64_t count = 1;
  for (int d : dims) {
    if (d < 1) return CUDNN_STATUS_BAD_PARAM;
  }
  for (int d : dims) {
    count *= d;
    if (count > INT_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
  }
  return CUDNN_STATUS_SUCCESS;
}

// Packed strides for `dims` (checked by CheckDims): the last dimension fastest,
// or NHWC's order (N, then spatial dimensions, then C fastest).
std::vector<int> Packed(const std::vector<int>& dims, bool nhwc) {
  const size_t n = dims.size();
  std::vector<int> s(n);
  int acc = 1;
  if (!nhwc) {
    for (size_t i = n; i-- > 0;) s[i] = acc, acc *= dims[i];
    return s;
  }
  s[1] = acc;
  acc *= dims[1];
  for (size_t i = n; i-- > 2;) s[i] = acc, acc *= dims[i];
  s[0] = acc;
  return s;
}

// cudnnSetTensorNdDescriptor's checks, then `d` set.
cudnnStatus_t SetTensor(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int nb, const int* dims,
                        const int* strides) {
  return DnnLive<cudnnTensorStruct>().With(d, [&](cudnnTensorStruct& t) {
    if (!ValidType(dtype)) return CUDNN_STATUS_BAD_PARAM;
    if (cudnnStatus_t s = CheckRank(nb)) return s;
    if (dims == nullptr || strides == nullptr) return CUDNN_STATUS_BAD_PARAM;
    std::vector<int> dv(dims, dims + nb), sv(strides, strides + nb);
    if (cudnnStatus_t s = CheckDims(dv)) return s;
    for (int v : sv) {
      if (v < 1) return CUDNN_STATUS_BAD_PARAM;
    }
    t.shape = DnnTensorShape{dtype, std::move(dv), std::move(sv)};
    t.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

// A packed tensor in `format` (cudnnSetTensor4dDescriptor, cudnnSetTensorNdDescriptorEx).
cudnnStatus_t SetPackedTensor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                              cudnnDataType_t dtype, int nb, const int* dims) {
  if (cudnnStatus_t s = CheckFormat(format)) return s;
  if (!ValidType(dtype)) return CUDNN_STATUS_BAD_PARAM;
  if (cudnnStatus_t s = CheckRank(nb)) return s;
  if (dims == nullptr) return CUDNN_STATUS_BAD_PARAM;
  const std::vector<int> dv(dims, dims + nb);
  if (cudnnStatus_t s = CheckDims(dv)) return s;
  const std::vector<int> sv = Packed(dv, format == CUDNN_TENSOR_NHWC);
  return SetTensor(d, dtype, nb, dv.data(), sv.data());
}

cudnnStatus_t SetFilter(cudnnFilterDescriptor_t d, cudnnDataType_t dtype,
                        cudnnTensorFormat_t format, int n, const int* dims) {
  return DnnLive<cudnnFilterStruct>().With(d, [&](cudnnFilterStruct& f) {
    if (!ValidType(dtype)) return CUDNN_STATUS_BAD_PARAM;
    if (cudnnStatus_t s = CheckFormat(format)) return s;
    if (cudnnStatus_t s = CheckRank(n)) return s;
    if (dims == nullptr) return CUDNN_STATUS_BAD_PARAM;
    std::vector<int> v(dims, dims + n);
    if (cudnnStatus_t s = CheckDims(v)) return s;
    f.shape = DnnFilterShape{dtype, format, std::move(v)};
    f.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

// The spatial rank of a convolution or pooling descriptor: 1 to
// CUDNN_DIM_MAX - 2 (BAD_PARAM below, NOT_SUPPORTED above).
cudnnStatus_t CheckSpatial(int n) {
  if (n < 1) return CUDNN_STATUS_BAD_PARAM;
  return n > CUDNN_DIM_MAX - 2 ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
}

// Copies up to `n` of `v` into `out` (which may be null when n is 0).
void CopyOut(const std::vector<int>& v, int n, int* out) {
  for (int i = 0; i < n && i < static_cast<int>(v.size()); ++i) out[i] = v[i];
}

// A nbDimsRequested argument: negative is BAD_PARAM; a positive one needs its arrays.
bool RequestOk(int requested, std::initializer_list<const int*> arrays) {
  if (requested < 0) return false;
  if (requested == 0) return true;
  for (const int* a : arrays) {
    if (a == nullptr) return false;
  }
  return true;
}

}  // namespace
}  // namespace remora

using remora::DnnCopy;
using remora::DnnCreate;
using remora::DnnDestroy;
using remora::DnnLive;

// ---- Tensor descriptors --------------------------------------------------------------

REMORA_DNN_API cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  return DnnCreate(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  return DnnDestroy(d);
}

REMORA_DNN_API cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d,
                                                        cudnnDataType_t dtype, int nb,
                                                        const int dims[], const int strides[]) {
  return remora::SetTensor(d, dtype, nb, dims, strides);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d,
                                                            cudnnTensorFormat_t format,
                                                            cudnnDataType_t dtype, int n, int c,
                                                            int h, int w) {
  const int dims[] = {n, c, h, w};
  return remora::SetPackedTensor(d, format, dtype, 4, dims);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d,
                                                              cudnnDataType_t dtype, int n, int c,
                                                              int h, int w, int ns, int cs, int hs,
                                                              int ws) {
  const int dims[] = {n, c, h, w}, strides[] = {ns, cs, hs, ws};
  return remora::SetTensor(d, dtype, 4, dims, strides);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t d,
                                                              cudnnTensorFormat_t format,
                                                              cudnnDataType_t dtype, int nb,
                                                              const int dims[]) {
  return remora::SetPackedTensor(d, format, dtype, nb, dims);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t d,
                                                            cudnnDataType_t* dtype, int* n, int* c,
                                                            int* h, int* w, int* ns, int* cs,
                                                            int* hs, int* ws) {
  cudnnTensorStruct t;
  if (cudnnStatus_t s = DnnCopy(d, &t)) return s;
  if (t.shape.dims.size() != 4 || !dtype || !n || !c || !h || !w || !ns || !cs || !hs || !ws)
    return CUDNN_STATUS_BAD_PARAM;
  const std::vector<int>& D = t.shape.dims;
  const std::vector<int>& S = t.shape.strides;
  *dtype = static_cast<cudnnDataType_t>(t.shape.dtype);
  *n = D[0], *c = D[1], *h = D[2], *w = D[3];
  *ns = S[0], *cs = S[1], *hs = S[2], *ws = S[3];
  return CUDNN_STATUS_SUCCESS;
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d,
                                                            int requested, cudnnDataType_t* dtype,
                                                            int* nb, int dims[], int strides[]) {
  cudnnTensorStruct t;
  if (cudnnStatus_t s = DnnCopy(d, &t)) return s;
  if (!dtype || !nb || !remora::RequestOk(requested, {dims, strides}))
    return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(t.shape.dtype);
  *nb = static_cast<int>(t.shape.dims.size());
  remora::CopyOut(t.shape.dims, requested, dims);
  remora::CopyOut(t.shape.strides, requested, strides);
  return CUDNN_STATUS_SUCCESS;
}
// The bytes the tensor reaches from its first element. NOT_SUPPORTED for a data
// type neither library computes with.
REMORA_DNN_APP_API cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t d,
                                                           size_t* size) {
  cudnnTensorStruct t;
  if (cudnnStatus_t s = DnnCopy(d, &t)) return s;
  if (size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  remora::Result<uint64_t> r = remora::DnnTensorReach(t.shape);
  if (!r.ok()) return static_cast<cudnnStatus_t>(remora::CudaToDnnStatus(r.status().code()));
  *size = *r;
  return CUDNN_STATUS_SUCCESS;
}

// Batch normalization's scale, bias, mean and variance: 1xCx1x1 (spatial modes)
// or 1xCxHxW (per activation), packed; float for half data.
REMORA_DNN_APP_API cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derived,
                                                               const cudnnTensorDescriptor_t x,
                                                               cudnnBatchNormMode_t mode) {
  cudnnTensorStruct t;
  if (cudnnStatus_t s = DnnCopy(x, &t)) return s;
  if (mode != CUDNN_BATCHNORM_PER_ACTIVATION && mode != CUDNN_BATCHNORM_SPATIAL &&
      mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
    return CUDNN_STATUS_BAD_PARAM;
  std::vector<int> dims = t.shape.dims;
  dims[0] = 1;
  if (mode != CUDNN_BATCHNORM_PER_ACTIVATION) {
    for (size_t i = 2; i < dims.size(); ++i) dims[i] = 1;
  }
  const cudnnDataType_t type = t.shape.dtype == CUDNN_DATA_HALF
                                   ? CUDNN_DATA_FLOAT
                                   : static_cast<cudnnDataType_t>(t.shape.dtype);
  return remora::SetPackedTensor(derived, CUDNN_TENSOR_NCHW, type, static_cast<int>(dims.size()),
                                 dims.data());
}

// ---- Filter descriptors ------------------------------------------------------------

REMORA_DNN_API cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  return DnnCreate(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  return DnnDestroy(d);
}
REMORA_DNN_API cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d,
                                                        cudnnDataType_t dtype,
                                                        cudnnTensorFormat_t format, int nb,
                                                        const int dims[]) {
  return remora::SetFilter(d, dtype, format, nb, dims);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d,
                                                            cudnnDataType_t dtype,
                                                            cudnnTensorFormat_t format, int k,
                                                            int c, int h, int w) {
  const int dims[] = {k, c, h, w};
  return remora::SetFilter(d, dtype, format, 4, dims);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t d,
                                                            cudnnDataType_t* dtype,
                                                            cudnnTensorFormat_t* format, int* k,
                                                            int* c, int* h, int* w) {
  cudnnFilterStruct f;
  if (cudnnStatus_t s = DnnCopy(d, &f)) return s;
  if (f.shape.dims.size() != 4 || !dtype || !format || !k || !c || !h || !w)
    return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(f.shape.dtype);
  *format = static_cast<cudnnTensorFormat_t>(f.shape.format);
  *k = f.shape.dims[0], *c = f.shape.dims[1], *h = f.shape.dims[2], *w = f.shape.dims[3];
  return CUDNN_STATUS_SUCCESS;
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t d,
                                                            int requested, cudnnDataType_t* dtype,
                                                            cudnnTensorFormat_t* format, int* nb,
                                                            int dims[]) {
  cudnnFilterStruct f;
  if (cudnnStatus_t s = DnnCopy(d, &f)) return s;
  if (!dtype || !format || !nb || !remora::RequestOk(requested, {dims}))
    return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(f.shape.dtype);
  *format = static_cast<cudnnTensorFormat_t>(f.shape.format);
  *nb = static_cast<int>(f.shape.dims.size());
  remora::CopyOut(f.shape.dims, requested, dims);
  return CUDNN_STATUS_SUCCESS;
}
// The bytes of the packed filter. NOT_SUPPORTED for a data type neither library
// computes with.
REMORA_DNN_APP_API cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t d,
                                                           size_t* size) {
  cudnnFilterStruct f;
  if (cudnnStatus_t s = DnnCopy(d, &f)) return s;
  if (size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  remora::Result<uint64_t> r = remora::DnnFilterReach(f.shape);
  if (!r.ok()) return static_cast<cudnnStatus_t>(remora::CudaToDnnStatus(r.status().code()));
  *size = *r;
  return CUDNN_STATUS_SUCCESS;
}

// ---- Convolution descriptors ---------------------------------------------------------

REMORA_DNN_API cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  return DnnCreate(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  return DnnDestroy(d);
}
REMORA_DNN_API cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int n,
                                                             const int pads[], const int strides[],
                                                             const int dilations[],
                                                             cudnnConvolutionMode_t mode,
                                                             cudnnDataType_t compute) {
  return DnnLive<cudnnConvolutionStruct>().With(d, [&](cudnnConvolutionStruct& c) {
    if (cudnnStatus_t s = remora::CheckSpatial(n)) return s;
    if (!pads || !strides || !dilations) return CUDNN_STATUS_BAD_PARAM;
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
    if (!remora::ValidType(compute)) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < n; ++i) {
      if (pads[i] < 0 || strides[i] < 1 || dilations[i] < 1) return CUDNN_STATUS_BAD_PARAM;
    }
    c.pads.assign(pads, pads + n);
    c.strides.assign(strides, strides + n);
    c.dilations.assign(dilations, dilations + n);
    c.mode = mode;
    c.compute = compute;
    c.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d,
                                                                 int ph, int pw, int u, int v,
                                                                 int dh, int dw,
                                                                 cudnnConvolutionMode_t mode,
                                                                 cudnnDataType_t compute) {
  const int pads[] = {ph, pw}, strides[] = {u, v}, dilations[] = {dh, dw};
  return cudnnSetConvolutionNdDescriptor(d, 2, pads, strides, dilations, mode, compute);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetConvolution2dDescriptor(
    const cudnnConvolutionDescriptor_t d, int* ph, int* pw, int* u, int* v, int* dh, int* dw,
    cudnnConvolutionMode_t* mode, cudnnDataType_t* compute) {
  cudnnConvolutionStruct c;
  if (cudnnStatus_t s = DnnCopy(d, &c)) return s;
  if (c.pads.size() != 2 || !ph || !pw || !u || !v || !dh || !dw || !mode || !compute)
    return CUDNN_STATUS_BAD_PARAM;
  *ph = c.pads[0], *pw = c.pads[1], *u = c.strides[0], *v = c.strides[1];
  *dh = c.dilations[0], *dw = c.dilations[1], *mode = c.mode, *compute = c.compute;
  return CUDNN_STATUS_SUCCESS;
}
// A request above CUDNN_DIM_MAX - 2 is NOT_SUPPORTED (cuDNN's documented range).
REMORA_DNN_APP_API cudnnStatus_t cudnnGetConvolutionNdDescriptor(
    const cudnnConvolutionDescriptor_t d, int requested, int* n, int pads[], int strides[],
    int dilations[], cudnnConvolutionMode_t* mode, cudnnDataType_t* compute) {
  cudnnConvolutionStruct c;
  if (cudnnStatus_t s = DnnCopy(d, &c)) return s;
  if (!n || !mode || !compute || !remora::RequestOk(requested, {pads, strides, dilations}))
    return CUDNN_STATUS_BAD_PARAM;
  if (requested > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_NOT_SUPPORTED;
  *n = static_cast<int>(c.pads.size());
  remora::CopyOut(c.pads, requested, pads);
  remora::CopyOut(c.strides, requested, strides);
  remora::CopyOut(c.dilations, requested, dilations);
  *mode = c.mode, *compute = c.compute;
  return CUDNN_STATUS_SUCCESS;
}
REMORA_DNN_API cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d,
                                                           int groups) {
  return DnnLive<cudnnConvolutionStruct>().With(d, [groups](cudnnConvolutionStruct& c) {
    if (groups < 1) return CUDNN_STATUS_BAD_PARAM;
    c.groups = groups;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t d,
                                                               int* groups) {
  return DnnLive<cudnnConvolutionStruct>().With(d, [groups](cudnnConvolutionStruct& c) {
    if (groups == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *groups = c.groups;
    return CUDNN_STATUS_SUCCESS;
  });
}
// Recorded and reported back (in algorithm results); it selects no kernel here.
REMORA_DNN_API cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d,
                                                         cudnnMathType_t math) {
  return DnnLive<cudnnConvolutionStruct>().With(d, [math](cudnnConvolutionStruct& c) {
    if (math < CUDNN_DEFAULT_MATH || math > CUDNN_FMA_MATH) return CUDNN_STATUS_BAD_PARAM;
    c.math = math;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d,
                                                             cudnnMathType_t* math) {
  return DnnLive<cudnnConvolutionStruct>().With(d, [math](cudnnConvolutionStruct& c) {
    if (math == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *math = c.math;
    return CUDNN_STATUS_SUCCESS;
  });
}
// out = 1 + (in + 2 pad - ((filter - 1) dilation + 1)) / stride, per spatial
// dimension; N from the input, C from the filter's K. BAD_PARAM when the ranks,
// channels and groups disagree or the dilated filter exceeds the padded input.
REMORA_DNN_APP_API cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t in,
    const cudnnFilterDescriptor_t filter, int nb, int out[]) {
  cudnnConvolutionStruct c;
  cudnnTensorStruct x;
  cudnnFilterStruct w;
  if (cudnnStatus_t s = DnnCopy(conv, &c)) return s;
  if (cudnnStatus_t s = DnnCopy(in, &x)) return s;
  if (cudnnStatus_t s = DnnCopy(filter, &w)) return s;
  const std::vector<int>& xd = x.shape.dims;
  const std::vector<int>& wd = w.shape.dims;
  const size_t spatial = c.pads.size();
  if (out == nullptr || static_cast<size_t>(nb) != xd.size() || xd.size() != wd.size() ||
      spatial + 2 != xd.size() || xd[1] != wd[1] * c.groups || wd[0] % c.groups != 0)
    return CUDNN_STATUS_BAD_PARAM;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t span = int64_t{wd[i + 2] - 1} * c.dilations[i] + 1;
    if (xd[i + 2] + 2 * int64_t{c.pads[i]} < span) return CUDNN_STATUS_BAD_PARAM;
  }
  out[0] = xd[0];
  out[1] = wd[0];
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t span = int64_t{wd[i + 2] - 1} * c.dilations[i] + 1;
    out[i + 2] = static_cast<int>(1 + (xd[i + 2] + 2 * int64_t{c.pads[i]} - span) / c.strides[i]);
  }
  return CUDNN_STATUS_SUCCESS;
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t in,
    const cudnnFilterDescriptor_t filter, int* n, int* c, int* h, int* w) {
  if (!n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  int out[4];
  if (cudnnStatus_t s = cudnnGetConvolutionNdForwardOutputDim(conv, in, filter, 4, out)) return s;
  *n = out[0], *c = out[1], *h = out[2], *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- Activation descriptors ----------------------------------------------------------

REMORA_DNN_API cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) {
  return DnnCreate(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  return DnnDestroy(d);
}
REMORA_DNN_API cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                                          cudnnActivationMode_t mode,
                                                          cudnnNanPropagation_t nan, double coef) {
  return DnnLive<cudnnActivationStruct>().With(d, [=](cudnnActivationStruct& a) {
    if (mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH || !remora::ValidNan(nan))
      return CUDNN_STATUS_BAD_PARAM;
    a.mode = mode, a.nan = nan, a.coef = coef;
    a.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t d,
                                                              cudnnActivationMode_t* mode,
                                                              cudnnNanPropagation_t* nan,
                                                              double* coef) {
  cudnnActivationStruct a;
  if (cudnnStatus_t s = DnnCopy(d, &a)) return s;
  if (!mode || !nan || !coef) return CUDNN_STATUS_BAD_PARAM;
  *mode = a.mode, *nan = a.nan, *coef = a.coef;
  return CUDNN_STATUS_SUCCESS;
}
REMORA_DNN_APP_API cudnnStatus_t
cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double beta) {
  return DnnLive<cudnnActivationStruct>().With(d, [beta](cudnnActivationStruct& a) {
    a.swish_beta = beta;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t
cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double* beta) {
  return DnnLive<cudnnActivationStruct>().With(d, [beta](cudnnActivationStruct& a) {
    if (beta == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *beta = a.swish_beta;
    return CUDNN_STATUS_SUCCESS;
  });
}

// ---- Pooling descriptors -------------------------------------------------------------

REMORA_DNN_API cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) {
  return DnnCreate(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
  return DnnDestroy(d);
}
REMORA_DNN_API cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t d,
                                                         cudnnPoolingMode_t mode,
                                                         cudnnNanPropagation_t nan, int n,
                                                         const int window[], const int pads[],
                                                         const int strides[]) {
  return DnnLive<cudnnPoolingStruct>().With(d, [&](cudnnPoolingStruct& p) {
    if (mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC ||
        !remora::ValidNan(nan))
      return CUDNN_STATUS_BAD_PARAM;
    if (cudnnStatus_t s = remora::CheckSpatial(n)) return s;
    if (!window || !pads || !strides) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < n; ++i) {
      if (window[i] < 1 || pads[i] < 0 || strides[i] < 1) return CUDNN_STATUS_BAD_PARAM;
    }
    p.mode = mode, p.nan = nan;
    p.window.assign(window, window + n);
    p.pads.assign(pads, pads + n);
    p.strides.assign(strides, strides + n);
    p.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d,
                                                             cudnnPoolingMode_t mode,
                                                             cudnnNanPropagation_t nan, int wh,
                                                             int ww, int ph, int pw, int sh,
                                                             int sw) {
  const int window[] = {wh, ww}, pads[] = {ph, pw}, strides[] = {sh, sw};
  return cudnnSetPoolingNdDescriptor(d, mode, nan, 2, window, pads, strides);
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetPoolingNdDescriptor(
    const cudnnPoolingDescriptor_t d, int requested, cudnnPoolingMode_t* mode,
    cudnnNanPropagation_t* nan, int* n, int window[], int pads[], int strides[]) {
  cudnnPoolingStruct p;
  if (cudnnStatus_t s = DnnCopy(d, &p)) return s;
  if (!mode || !nan || !n || !remora::RequestOk(requested, {window, pads, strides}))
    return CUDNN_STATUS_BAD_PARAM;
  *mode = p.mode, *nan = p.nan, *n = static_cast<int>(p.window.size());
  remora::CopyOut(p.window, requested, window);
  remora::CopyOut(p.pads, requested, pads);
  remora::CopyOut(p.strides, requested, strides);
  return CUDNN_STATUS_SUCCESS;
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t d,
                                                             cudnnPoolingMode_t* mode,
                                                             cudnnNanPropagation_t* nan, int* wh,
                                                             int* ww, int* ph, int* pw, int* sh,
                                                             int* sw) {
  cudnnPoolingStruct p;
  if (cudnnStatus_t s = DnnCopy(d, &p)) return s;
  if (p.window.size() != 2 || !mode || !nan || !wh || !ww || !ph || !pw || !sh || !sw)
    return CUDNN_STATUS_BAD_PARAM;
  *mode = p.mode, *nan = p.nan;
  *wh = p.window[0], *ww = p.window[1], *ph = p.pads[0], *pw = p.pads[1];
  *sh = p.strides[0], *sw = p.strides[1];
  return CUDNN_STATUS_SUCCESS;
}
// out = 1 + (in + 2 pad - window) / stride, per spatial dimension; N and C from
// the input. BAD_PARAM when the ranks disagree or a window exceeds the padded input.
REMORA_DNN_APP_API cudnnStatus_t cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t d,
                                                                   const cudnnTensorDescriptor_t in,
                                                                   int nb, int out[]) {
  cudnnPoolingStruct p;
  cudnnTensorStruct x;
  if (cudnnStatus_t s = DnnCopy(d, &p)) return s;
  if (cudnnStatus_t s = DnnCopy(in, &x)) return s;
  const std::vector<int>& xd = x.shape.dims;
  if (out == nullptr || static_cast<size_t>(nb) != xd.size() || p.window.size() + 2 != xd.size())
    return CUDNN_STATUS_BAD_PARAM;
  for (size_t i = 0; i < p.window.size(); ++i) {
    if (xd[i + 2] + 2 * int64_t{p.pads[i]} < p.window[i]) return CUDNN_STATUS_BAD_PARAM;
  }
  out[0] = xd[0];
  out[1] = xd[1];
  for (size_t i = 0; i < p.window.size(); ++i)
    out[i + 2] =
        static_cast<int>(1 + (xd[i + 2] + 2 * int64_t{p.pads[i]} - p.window[i]) / p.strides[i]);
  return CUDNN_STATUS_SUCCESS;
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t d,
                                                                   const cudnnTensorDescriptor_t in,
                                                                   int* n, int* c, int* h, int* w) {
  if (!n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  int out[4];
  if (cudnnStatus_t s = cudnnGetPoolingNdForwardOutputDim(d, in, 4, out)) return s;
  *n = out[0], *c = out[1], *h = out[2], *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- LRN and op-tensor descriptors ---------------------------------------------------

REMORA_DNN_API cudnnStatus_t cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t* d) {
  return DnnCreate(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t d) {
  return DnnDestroy(d);
}
// n in [CUDNN_LRN_MIN_N, CUDNN_LRN_MAX_N], k >= CUDNN_LRN_MIN_K, beta >=
// CUDNN_LRN_MIN_BETA; BAD_PARAM otherwise.
REMORA_DNN_API cudnnStatus_t cudnnSetLRNDescriptor(cudnnLRNDescriptor_t d, unsigned n, double alpha,
                                                   double beta, double k) {
  return DnnLive<cudnnLRNStruct>().With(d, [=](cudnnLRNStruct& l) {
    if (n < CUDNN_LRN_MIN_N || n > CUDNN_LRN_MAX_N || k < CUDNN_LRN_MIN_K ||
        beta < CUDNN_LRN_MIN_BETA)
      return CUDNN_STATUS_BAD_PARAM;
    l.n = n, l.alpha = alpha, l.beta = beta, l.k = k;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetLRNDescriptor(cudnnLRNDescriptor_t d, unsigned* n,
                                                       double* alpha, double* beta, double* k) {
  cudnnLRNStruct l;
  if (cudnnStatus_t s = DnnCopy(d, &l)) return s;
  if (!n || !alpha || !beta || !k) return CUDNN_STATUS_BAD_PARAM;
  *n = l.n, *alpha = l.alpha, *beta = l.beta, *k = l.k;
  return CUDNN_STATUS_SUCCESS;
}

REMORA_DNN_API cudnnStatus_t cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t* d) {
  return DnnCreate(d);
}
REMORA_DNN_API cudnnStatus_t cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t d) {
  return DnnDestroy(d);
}
REMORA_DNN_API cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t d,
                                                        cudnnOpTensorOp_t op,
                                                        cudnnDataType_t compute,
                                                        cudnnNanPropagation_t nan) {
  return DnnLive<cudnnOpTensorStruct>().With(d, [=](cudnnOpTensorStruct& o) {
    if (op < CUDNN_OP_TENSOR_ADD || op > CUDNN_OP_TENSOR_NOT || !remora::ValidType(compute) ||
        !remora::ValidNan(nan))
      return CUDNN_STATUS_BAD_PARAM;
    o.op = op, o.compute = compute, o.nan = nan;
    o.set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}
REMORA_DNN_APP_API cudnnStatus_t cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t d,
                                                            cudnnOpTensorOp_t* op,
                                                            cudnnDataType_t* compute,
                                                            cudnnNanPropagation_t* nan) {
  cudnnOpTensorStruct o;
  if (cudnnStatus_t s = DnnCopy(d, &o)) return s;
  if (!op || !compute || !nan) return CUDNN_STATUS_BAD_PARAM;
  *op = o.op, *compute = o.compute, *nan = o.nan;
  return CUDNN_STATUS_SUCCESS;
}
