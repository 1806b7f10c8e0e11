// server/handlers/tensor_map.cc - tensor maps: the descriptors of a tensor in global memory
// that the tensor memory accelerator (sm_90 and later) copies tiles of, which NVIDIA's cuBLAS,
// cuDNN and CUTLASS kernels take as arguments.
//
// A map is host-side bytes, but the driver must encode it, and a kernel given it copies the
// memory it describes: so the tensor is checked to lie in the tenant's memory first, and the
// span of each map this session encoded is kept, so that moving it (cuTensorMapReplaceAddress)
// is checked as well. A map the server did not encode is refused.
#include <array>
#include <cstring>

#include "server/handlers/util.h"
#include "server/session.h"

namespace remora::server {

namespace {

using Req = v1::TensorMapRequest;

// Bytes taken by `n` elements of `type` (a CUtensorMapDataType) in a row; 0 for an unknown type.
uint64_t RowBytes(uint32_t type, uint64_t n) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return n;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2 * n;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4 * n;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8 * n;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B:  // 16 4-bit elements in 8 bytes
      return (n + 15) / 16 * 8;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B:  // ... padded to 16
    case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B:  // 16 6-bit elements in 16 bytes
      return (n + 15) / 16 * 16;
    default:
      return 0;
  }
}

// The bytes from the tensor's address to the end of its last element, checked for shape.
Result<uint64_t> TensorSpan(const Req& req) {
  const uint32_t rank = req.rank();
  if (rank < 1 || rank > 5 || static_cast<uint32_t>(req.dims_size()) != rank ||
      static_cast<uint32_t>(req.strides_size()) != rank - 1 ||
      static_cast<uint32_t>(req.element_strides_size()) != rank)
    return Error(err::kInvalidValue, "a tensor map of rank " + std::to_string(rank) + " with " +
                                         std::to_string(req.dims_size()) + " dimensions and " +
                                         std::to_string(req.strides_size()) + " strides");
  for (uint64_t d : req.dims())
    if (d == 0 || d > (uint64_t{1} << 32))
      return Error(err::kInvalidValue, "a tensor map dimension of " + std::to_string(d));
  uint64_t span = RowBytes(req.data_type(), req.dims(0));
  if (span == 0)
    return Error(err::kInvalidValue, "tensor map data type " + std::to_string(req.data_type()));
  for (uint32_t i = 1; i < rank; ++i) {
    const uint64_t stride = req.strides(static_cast<int>(i - 1));
    uint64_t reach = 0;
    if (__builtin_mul_overflow(req.dims(static_cast<int>(i)) - 1, stride, &reach) ||
        __builtin_add_overflow(span, reach, &span))
      return Error(err::kInvalidValue, "a tensor map whose stride " + std::to_string(stride) +
                                           " reaches past the address space");
  }
  return span;
}

template <class T, class Field>
std::array<T, 5> Five(const Field& f) {
  std::array<T, 5> a{};
  for (int i = 0; i < f.size() && i < 5; ++i) a[static_cast<size_t>(i)] = static_cast<T>(f[i]);
  return a;
}

}  // namespace

Status Session::OnTensorMapEncode(const v1::TensorMapRequest& req, v1::TensorMapReply& rep) {
  const DriverTable& drv = dev().drv();
  CUtensorMap map{};
  uint64_t span = 0;
  if (req.kind() == Req::REPLACE_ADDRESS) {
    if (req.map().size() != sizeof map)
      return Error(err::kInvalidValue, "a tensor map of " + std::to_string(req.map().size()) +
                                           " bytes, not " + std::to_string(sizeof map));
    auto it = tensor_maps_.find(req.map());
    if (it == tensor_maps_.end())
      return Error(err::kInvalidValue,
                   "cuTensorMapReplaceAddress of a tensor map this tenant's "
                   "server did not encode");
    span = it->second;
    RETURN_IF_ERROR(CheckDeviceRange(req.address(), span, "tensor"));
    std::memcpy(&map, req.map().data(), sizeof map);
    RETURN_IF_ERROR(
        dev().Check(drv.cuTensorMapReplaceAddress(&map, reinterpret_cast<void*>(req.address())),
                    "cuTensorMapReplaceAddress"));
  } else {
    ASSIGN_OR_RETURN(span, TensorSpan(req));
    RETURN_IF_ERROR(CheckDeviceRange(req.address(), span, "tensor"));
    const auto type = static_cast<CUtensorMapDataType>(req.data_type());
    void* address = reinterpret_cast<void*>(req.address());
    const auto dims = Five<cuuint64_t>(req.dims());
    const auto strides = Five<cuuint64_t>(req.strides());
    const auto element_strides = Five<cuuint32_t>(req.element_strides());
    const auto interleave = static_cast<CUtensorMapInterleave>(req.interleave());
    const auto swizzle = static_cast<CUtensorMapSwizzle>(req.swizzle());
    const auto l2 = static_cast<CUtensorMapL2promotion>(req.l2_promotion());
    const auto fill = static_cast<CUtensorMapFloatOOBfill>(req.oob_fill());
    switch (req.kind()) {
      case Req::TILED: {
        if (static_cast<uint32_t>(req.box_size()) != req.rank())
          return Error(err::kInvalidValue, "a tiled tensor map's box has " +
                                               std::to_string(req.box_size()) + " dimensions");
        const auto box = Five<cuuint32_t>(req.box());
        RETURN_IF_ERROR(dev().Check(
            drv.cuTensorMapEncodeTiled(&map, type, req.rank(), address, dims.data(), strides.data(),
                                       box.data(), element_strides.data(), interleave, swizzle, l2,
                                       fill),
            "cuTensorMapEncodeTiled"));
        break;
      }
      case Req::IM2COL: {
        if (req.rank() < 3 || static_cast<uint32_t>(req.lower_size()) != req.rank() - 2 ||
            req.upper_size() != req.lower_size())
          return Error(err::kInvalidValue, "an im2col tensor map's corners do not fit its rank");
        const auto lower = Five<int>(req.lower());
        const auto upper = Five<int>(req.upper());
        RETURN_IF_ERROR(dev().Check(
            drv.cuTensorMapEncodeIm2col(&map, type, req.rank(), address, dims.data(),
                                        strides.data(), lower.data(), upper.data(),
                                        req.channels_per_pixel(), req.pixels_per_column(),
                                        element_strides.data(), interleave, swizzle, l2, fill),
            "cuTensorMapEncodeIm2col"));
        break;
      }
      case Req::IM2COL_WIDE:
        if (req.lower_size() != 1 || req.upper_size() != 1)
          return Error(err::kInvalidValue, "a wide im2col tensor map takes one width each way");
        RETURN_IF_ERROR(dev().Check(
            drv.cuTensorMapEncodeIm2colWide(
                &map, type, req.rank(), address, dims.data(), strides.data(), req.lower(0),
                req.upper(0), req.channels_per_pixel(), req.pixels_per_column(),
                element_strides.data(), interleave,
                static_cast<CUtensorMapIm2ColWideMode>(req.wide_mode()), swizzle, l2, fill),
            "cuTensorMapEncodeIm2colWide"));
        break;
      default:
        return Error(err::kInvalidValue, "tensor map kind " + std::to_string(req.kind()));
    }
  }
  std::string bytes(reinterpret_cast<const char*>(&map), sizeof map);
  if (tensor_maps_.size() >= kMaxTensorMaps) tensor_maps_.erase(tensor_maps_.begin());
  tensor_maps_[bytes] = span;
  rep.set_map(std::move(bytes));
  return OkStatus();
}

}  // namespace remora::server
