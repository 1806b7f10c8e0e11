// fatbin/link_image.h - the image a tenant's cuLinkComplete returns under Remora: the inputs of
// its link, unlinked, for the server to link with the device's own linker when the image is
// loaded (NVIDIA's driver links to a cubin at once; the stub has no linker, and the server
// links for whatever device it drives: JIT for a GPU, the interpreter's for the emulated one).
//
//   layout: "RMRLINK\0", u64 total bytes, u32 count, then per input u32 CUjitInputType,
//           u64 size, the bytes (little-endian, unaligned)
//
// A program may copy the image and load the copy: it is recognized by its magic, and its
// header gives its length, as a cubin's or fat binary's does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fatbin/fatbin.h"

namespace remora::fatbin {

inline constexpr char kLinkMagic[8] = {'R', 'M', 'R', 'L', 'I', 'N', 'K', '\0'};
// Bytes of the header before the first input.
inline constexpr size_t kLinkHeaderBytes = 20;

struct LinkInput {
  uint32_t type = 0;  // CUjitInputType
  std::string bytes;
};

// The image of `inputs`.
std::string EncodeLinkImage(const std::vector<LinkInput>& inputs);
// True if `image` (at least 8 readable bytes) starts with kLinkMagic.
bool IsLinkImage(const void* image);
// The image's length from its header, or 0 if the header is not a link image's or claims more
// than kMaxImageBytes. REQUIRES: kLinkHeaderBytes readable bytes.
uint64_t LinkImageSize(const void* image);
// The inputs of `image`. Errors: kInvalidPtx for a bad magic, a length or count that
// disagrees with the bytes, or an input past the end.
Result<std::vector<LinkInput>> DecodeLinkImage(Bytes image);

}  // namespace remora::fatbin
