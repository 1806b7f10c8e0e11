// fatbin/fatbin.h - reading CUDA fat binaries: wrappers, headers, entries, payloads.
//
// nvcc embeds device code as a fat binary: a 16-byte header (magic 0xBA55ED50)
// followed by entries, each a header (>= 64 bytes) plus a PTX or ELF payload that
// may be compressed (zlib, LZ4 block, LZ4 frame or ZSTD). The host registers it
// through a 24-byte wrapper (magic 0x466243B1): version 1 points at one fatbin;
// version 2 (-rdc) points at the linked fatbin plus a NULL-terminated array of
// per-translation-unit fatbins, which are the ones holding PTX.
//
//   ASSIGN_OR_RETURN(auto images, fatbin::WrapperImages(wrapper));   // client stub
//   ASSIGN_OR_RETURN(std::string ptx, fatbin::SelectPtx(images[0], 75));  // server
//
// Every function bounds-checks its input: malformed bytes give err::kInvalidPtx,
// never an out-of-bounds read. All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proto/status.h"

namespace remora::fatbin {

using Bytes = std::span<const std::byte>;

inline constexpr uint32_t kWrapperMagic = 0x466243B1;
inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;
// Decoded payloads larger than this are refused as malformed.
inline constexpr uint64_t kMaxImageBytes = uint64_t{1} << 30;

// Entry kinds as stored; other values (e.g. LTO IR) are kept as their number.
enum class Kind : uint16_t { kPtx = 1, kElf = 2 };

// The payload codec, from the entry's compression flag bits.
enum class Compression : uint8_t { kNone, kZlib, kLz4Block, kLz4Frame, kZstd };

// Flag bits of an entry header.
inline constexpr uint64_t kFlag64Bit = 0x1;
inline constexpr uint64_t kFlagDebug = 0x2;
inline constexpr uint64_t kFlagLinux = 0x10;
inline constexpr uint64_t kFlagZlib = 0x1000;
inline constexpr uint64_t kFlagLz4Block = 0x2000;
inline constexpr uint64_t kFlagLz4Frame = 0x4000;
inline constexpr uint64_t kFlagZstd = 0x8000;

// One entry of a fat binary. `payload` views the caller's bytes and lives as
// long as they do: exactly the compressed stream for a compressed entry, the
// whole stored payload (with nvcc's NUL padding) for a raw one.
struct Entry {
  Kind kind;
  uint32_t arch;  // 75 for sm_75 / compute_75
  uint16_t ptx_major, ptx_minor;
  uint64_t flags;
  Compression compression;
  Bytes payload;
  uint64_t uncompressed_size;  // payload.size() when raw
  std::string name;            // source or object path, "" if absent
  std::string options;         // ptxas options, "" if absent
};

// Returns the size of the fat binary starting at `bytes` (header_size +
// bytes_of_entries). kInvalidPtx if the header is truncated, has the wrong magic
// or version, or claims more bytes than `bytes` holds.
Result<size_t> FatbinSize(Bytes bytes);

// Splits a section of concatenated, 8-byte aligned fat binaries (an ELF's
// .nv_fatbin or __nv_relfatbin) into one span per fat binary. Zero padding
// between and after them is skipped; anything else is kInvalidPtx.
Result<std::vector<Bytes>> SplitSection(Bytes section);

// Parses every entry of one fat binary (bytes past its declared size are
// ignored). kInvalidPtx on any inconsistent header, offset or size.
Result<std::vector<Entry>> Parse(Bytes fatbin);

// Decodes `e.payload` into exactly `e.uncompressed_size` bytes. kInvalidPtx if
// the codec fails or yields any other size.
Result<std::vector<std::byte>> Decompress(const Entry& e);

// Returns decoded PTX as text, without the NUL padding nvcc appends.
std::string PtxText(Bytes decoded);

// Returns the decoded text of the PTX entry a driver would JIT for device_arch:
// the highest arch <= device_arch (so host code reading cudaFuncAttributes::
// ptxVersion, as CUB does, sees the arch the device code was compiled for); failing that, the
// lowest arch above it up to `newest` (the emulated GPU runs somewhat newer PTX, refusing only
// the instructions it lacks; 0: none above). kNoKernelImage if there is none (e.g. an sm_XX-only
// build or the PTX-free linked fatbin of an -rdc program); kInvalidPtx if the fat binary or that
// payload is malformed.
Result<std::string> SelectPtx(Bytes fatbin, uint32_t device_arch, uint32_t newest = 0);

// Returns the fat binaries a registration wrapper (the argument of
// __cudaRegisterFatBinary) refers to: v1 -> the one fatbin; v2 -> the linked
// fatbin, then each per-TU fatbin in array order. REQUIRES: `wrapper` and the
// pointers in it belong to this process (they are read unchecked); magic,
// version and sizes are still checked (kInvalidPtx).
Result<std::vector<Bytes>> WrapperImages(const void* wrapper);

// The entry a driver for compute capability `device_arch` (e.g. 90) loads:
// the ELF of the highest arch <= device_arch with the same major version
// (binary compatible), else the PTX it JIT-compiles, of the highest arch <=
// device_arch. With `ptx_only` (an emulator, which runs no machine code) that
// PTX in any case. nullptr if none fits.
const Entry* Choose(std::span<const Entry> entries, uint32_t device_arch, bool ptx_only);

// The PTX entry SelectPtx decodes: the highest arch <= device_arch, failing that the lowest above
// it up to `newest`. nullptr if none fits.
const Entry* ChoosePtx(std::span<const Entry> entries, uint32_t device_arch, uint32_t newest);

// One section of an ELF file: its name, its bytes in the file (empty for one that occupies none,
// such as .bss) and its sh_info.
struct ElfSection {
  std::string name;
  Bytes bytes;
  uint32_t info;
};
// The sections of a little-endian ELF64 image (a cubin, a shared library), bytes viewing `elf`.
// kInvalidPtx if its headers or section names lie outside it.
Result<std::vector<ElfSection>> ElfSections(Bytes elf);

// The registers each kernel of an ELF cubin uses per thread, as ptxas allocated them (the top
// byte of its .text.<kernel> section's sh_info), by kernel name. kInvalidPtx if the ELF is
// malformed; kernels without a count are left out.
Result<std::vector<std::pair<std::string, uint32_t>>> ElfKernelRegisters(Bytes elf);

// ElfKernelRegisters of the machine code a GPU of compute capability `device_arch` loads from
// `fatbin` (Choose's ELF); where it would JIT PTX instead, of the machine code nearest its arch
// (ptxas allocates the same PTX much alike); empty if the fat binary holds none.
Result<std::vector<std::pair<std::string, uint32_t>>> KernelRegisters(Bytes fatbin,
                                                                      uint32_t device_arch);

// "sm_75" / "compute_75" for an entry, as nvcc's -gencode spells them.
std::string EntryName(const Entry& e);

// The entries of a fat binary in one line for logs ("sm_75 compute_75 sm_90 ..."),
// or "malformed (<why>)".
std::string Describe(Bytes fatbin);

// The digest modules are deduplicated by: SHA-256 over each image's length
// (u64, little-endian) and bytes, in order, so the boundaries count.
std::string ImagesDigest(std::span<const Bytes> images);

}  // namespace remora::fatbin
