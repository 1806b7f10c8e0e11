// client_stub/array.h - CUDA arrays in the tenant: device memory holding elements of a channel
// format in rows, slices and layers, packed (a row is exactly width elements). Copies to and
// from arrays are copies of that memory. Kernels cannot read them through textures or
// surfaces (the emulated GPU has no texture unit): texture and surface objects stay refused.
//
// The toolkit's opaque handle types are completed here: cudaArray_t is cudaArray*, and the
// driver's CUarray stands for the same object.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

struct cudaArray {
  void* dptr = nullptr;
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};  // in elements; height and depth 0 for fewer dimensions, as given
  unsigned flags = 0;
  size_t elem = 0;  // bytes per element
  size_t Row() const { return extent.width * elem; }
  size_t Rows() const { return extent.height ? extent.height : 1; }
  size_t Slice() const { return Row() * Rows(); }
  size_t Slices() const { return extent.depth ? extent.depth : 1; }
};

namespace remora::client_stub {

// Bytes per element of `d` (the sum of its channels' bits), or 0 for a format without one.
size_t ElementBytes(const cudaChannelFormatDesc& d);

// The driver's format (a CUarray_format) of `d`'s channels, from its first: half or float, or
// the signed or unsigned integer of that width. REQUIRES: plain channels of 8, 16 or 32 bits
// (16 or 32 for floats). (cuda.h is not included here: libcuda.so.1's entry points must see
// it first, made visible, through driver_api.h.)
unsigned DriverFormat(const cudaChannelFormatDesc& d);

}  // namespace remora::client_stub
