// emu/image.h - what cuModuleLoadData may be handed, decoded to PTX sources.
//
// Accepted images: NUL-terminated PTX text; a CUDA fat binary (magic
// 0xBA55ED50) or its registration wrapper (0x466243B1), from which the
// lowest-arch PTX <= sm_75 is taken; and the emulator's own linked image, the
// output of cuLinkComplete, which carries several PTX sources:
//   u32 magic 'RMLK' | u32 version 1 | u32 count | u32 0 | count x (u64 len, bytes)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cuda.h>

#include "emu/device.h"

namespace remora::emu {

inline constexpr uint32_t kLinkedMagic = 0x4B4C4D52;  // "RMLK" little-endian

// The PTX sources in `image` (whose size is unknown: headers bound the read).
// Errors: CUDA_ERROR_INVALID_VALUE for null; CUDA_ERROR_NO_BINARY_FOR_GPU for a
// fat binary without PTX the device runs (the highest at or below its compute_80, else the
// lowest up to kNewestPtx) or for an ELF cubin; CUDA_ERROR_INVALID_IMAGE
// for a malformed linked image; CUDA_ERROR_INVALID_PTX for a malformed fatbin.
// With `registers`, also the registers per thread of each kernel the machine code a GPU of the
// emulated device's compute capability would load holds (fatbin::KernelRegisters; nothing for
// PTX, or an image without such code).
using KernelRegisters = std::vector<std::pair<std::string, uint32_t>>;
CUresult DecodeImage(const void* image, std::vector<std::string>* ptx,
                     KernelRegisters* registers = nullptr);

// The PTX of a fat binary of `size` bytes (0: read the size from its header), its newest
// target at most `newest` where it has none at or below the device's, and with `registers` its
// kernels' registers as DecodeImage gives them. Errors as DecodeImage.
CUresult PtxFromFatbin(const void* fatbin, size_t size, std::vector<std::string>* ptx,
                       KernelRegisters* registers = nullptr, int newest = kNewestPtx);

// Serialises `sources` as a linked image.
std::vector<std::byte> EncodeLinked(std::span<const std::string> sources);

// Checks that PTX text targets what the emulator runs: .target sm_N with N <= kNewestPtx (else
// CUDA_ERROR_INVALID_PTX; above the device's kArch it is said once per target on stderr, and an
// instruction the device lacks is refused at launch) and .version <= 9.0 (else
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION). Text without the directives passes.
CUresult CheckPtxHeader(const std::string& ptx);

// N of the `.target sm_N` directive of PTX text; 0 if it has none.
int PtxTarget(const std::string& ptx);

// Why the calling thread's latest module load or link refused its PTX (the parser's line and
// reason, or the target it names), as NVIDIA's JIT writes it to CU_JIT_ERROR_LOG_BUFFER; also
// said on stderr. ClearJitError forgets it before a new load.
void SetJitError(std::string text);
const std::string& JitError();
void ClearJitError();

// Writes JitError() (after a failure; nothing after a success) to the CU_JIT_ERROR_LOG_BUFFER
// among `options`, NUL-terminated within CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, which then holds
// the bytes written; the info log gets an empty string.
void WriteJitLogs(unsigned n, const CUjit_option* options, void** values, CUresult result);

}  // namespace remora::emu
