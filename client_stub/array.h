// client_stub/array.h - CUDA arrays in the tenant: device memory holding elements of a channel
// format in rows, slices and layers. A row's elements are followed by padding up to the pitch,
// the row's bytes rounded up to the device's texture pitch alignment
// (cudaDevAttrTexturePitchAlignment), so that a texture over the array is a pitched 2-D texture
// over that memory which a GPU accepts (it refuses a pitch that is not a multiple of that
// alignment); slices follow each other, rows of pitched bytes each. Copies to and from arrays
// are copies of that memory, row by row.
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
  size_t elem = 0;   // bytes per element
  size_t pitch = 0;  // bytes from a row's start to the next's: Row() and its padding
  size_t Row() const { return extent.width * elem; }  // a row's elements, in bytes
  size_t Rows() const { return extent.height ? extent.height : 1; }
  size_t Slice() const { return pitch * Rows(); }
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
