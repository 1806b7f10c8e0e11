// client_stub/driver_tensor_map.cc - libcuda.so.1's tensor maps (cuTensorMapEncodeTiled,
// Im2col, Im2colWide, ReplaceAddress): the 128-byte descriptors that sm_90 kernels (NVIDIA's
// cuBLAS and cuDNN among them) copy tiles of global memory through. Each is one TensorMapEncode
// call: the server checks the tensor lies in the tenant's memory and its driver encodes it.
#include <cstring>

#include "client_stub/connection.h"
#include "client_stub/driver_internal.h"
#include "client_stub/errors.h"
#include "client_stub/state.h"
#include "remora/v1/session.pb.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::Connection;
using remora::client_stub::DriverCallScope;
namespace v1 = remora::v1;
using remora::CallId;

namespace {

constexpr uint32_t kMaxRank = 5;

// Sends `req`; on success the server's encoding is `*map`.
CUresult Send(const v1::TensorMapRequest& req, CUtensorMap* map) {
  v1::TensorMapReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kTensorMapEncode, req, &rep)) return ToCu(e);
  if (rep.map().size() != sizeof *map) return CUDA_ERROR_UNKNOWN;
  std::memcpy(map, rep.map().data(), sizeof *map);
  return CUDA_SUCCESS;
}

// The fields every encoding shares; false if a pointer the rank needs is null.
bool Describe(v1::TensorMapRequest& req, CUtensorMapDataType type, cuuint32_t rank, void* address,
              const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* element_strides,
              CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
              CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  if (rank == 0 || rank > kMaxRank || dims == nullptr || element_strides == nullptr ||
      (rank > 1 && strides == nullptr))
    return false;
  req.set_data_type(type);
  req.set_rank(rank);
  req.set_address(reinterpret_cast<uint64_t>(address));
  for (uint32_t i = 0; i < rank; ++i) {
    req.add_dims(dims[i]);
    req.add_element_strides(element_strides[i]);
    if (i + 1 < rank) req.add_strides(strides[i]);
  }
  req.set_interleave(interleave);
  req.set_swizzle(swizzle);
  req.set_l2_promotion(l2);
  req.set_oob_fill(fill);
  return true;
}

// One encoding: `describe_rest` adds the fields of its kind and returns false if its
// pointers are null; on success the server's encoding is `*map`.
template <class DescribeRest>
CUresult EncodeMap(v1::TensorMapRequest::Kind kind, CUtensorMap* map, CUtensorMapDataType type,
                   cuuint32_t rank, void* address, const cuuint64_t* dims,
                   const cuuint64_t* strides, const cuuint32_t* element_strides,
                   CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill,
                   DescribeRest&& describe_rest) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  v1::TensorMapRequest req;
  req.set_kind(kind);
  if (map == nullptr ||
      !Describe(req, type, rank, address, dims, strides, element_strides, interleave, swizzle, l2,
                fill) ||
      !describe_rest(req))
    return CUDA_ERROR_INVALID_VALUE;
  return Send(req, map);
}

}  // namespace

extern "C" {

CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank,
                                void* address, const cuuint64_t* dims, const cuuint64_t* strides,
                                const cuuint32_t* box, const cuuint32_t* element_strides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  return EncodeMap(v1::TensorMapRequest::TILED, map, type, rank, address, dims, strides,
                   element_strides, interleave, swizzle, l2, fill, [&](v1::TensorMapRequest& req) {
                     if (box == nullptr) return false;
                     for (uint32_t i = 0; i < rank; ++i) req.add_box(box[i]);
                     return true;
                   });
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank,
                                 void* address, const cuuint64_t* dims, const cuuint64_t* strides,
                                 const int* lower, const int* upper, cuuint32_t channels,
                                 cuuint32_t pixels, const cuuint32_t* element_strides,
                                 CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  return EncodeMap(v1::TensorMapRequest::IM2COL, map, type, rank, address, dims, strides,
                   element_strides, interleave, swizzle, l2, fill, [&](v1::TensorMapRequest& req) {
                     if (rank < 3 || lower == nullptr || upper == nullptr) return false;
                     for (uint32_t i = 0; i + 2 < rank; ++i) {
                       req.add_lower(lower[i]);
                       req.add_upper(upper[i]);
                     }
                     req.set_channels_per_pixel(channels);
                     req.set_pixels_per_column(pixels);
                     return true;
                   });
}

CUresult cuTensorMapEncodeIm2colWide(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank,
                                     void* address, const cuuint64_t* dims,
                                     const cuuint64_t* strides, int lower_width, int upper_width,
                                     cuuint32_t channels, cuuint32_t pixels,
                                     const cuuint32_t* element_strides,
                                     CUtensorMapInterleave interleave,
                                     CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
                                     CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  return EncodeMap(v1::TensorMapRequest::IM2COL_WIDE, map, type, rank, address, dims, strides,
                   element_strides, interleave, swizzle, l2, fill, [&](v1::TensorMapRequest& req) {
                     req.add_lower(lower_width);
                     req.add_upper(upper_width);
                     req.set_channels_per_pixel(channels);
                     req.set_pixels_per_column(pixels);
                     req.set_wide_mode(mode);
                     return true;
                   });
}

CUresult cuTensorMapReplaceAddress(CUtensorMap* map, void* address) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (map == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::TensorMapRequest req;
  req.set_kind(v1::TensorMapRequest::REPLACE_ADDRESS);
  req.set_address(reinterpret_cast<uint64_t>(address));
  req.set_map(map, sizeof *map);
  return Send(req, map);
}

}  // extern "C"
