// emu/program_cache.h - PTX parsed once per distinct set of sources, shared by
// every module loaded from it.
//
// Every tenant session that registers the same program loads the same image;
// parsing, decoding and linking its PTX is by far the most expensive part of
// cuModuleLoadData. What that derives (the immutable ptx::Program: code,
// kernel signatures, global layouts and initialisers) is cached here, keyed by
// the exact PTX sources the image decodes to (their bytes, compared in full
// after a hash). Each module still gets its own global storage (module.h):
// nothing mutable lives in an entry. An entry lives while something holds it
// (a Module, a linker state) and is evicted when the last holder drops it.
// Concurrent loads of the same sources parse once; different sources parse in
// parallel. Thread-safe.
//
//   std::shared_ptr<const ParsedProgram> p;
//   if (CUresult r = GetProgram(sources, "cannot load module", &p); r != CUDA_SUCCESS) ...
//
// Why the decoded sources and not the raw image bytes: cuModuleLoadData gets
// an unsized pointer, and a fat binary's extent comes from its (tenant
// supplied) header, so hashing the claimed bytes could read far past a short
// buffer; decoding reads only what it did before. Decoding (decompression)
// still runs per load; it is cheap next to the parse.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <cuda.h>

#include "emu/ptx/ptx.h"

namespace remora::emu {

struct ParsedProgram {
  std::shared_ptr<const ptx::Program> program;
  int ptx_target = 0;  // lowest `.target sm_N` of its sources (0: none)
};

// The parsed program of `sources` (one or more PTX texts linked together):
// the live cache entry for exactly these sources, else a fresh parse (checked
// with CheckPtxHeader, then ptx::Load). On failure the reason goes to stderr
// as "remora-emu: <what>: <status>" and nothing is cached.
// Errors: CUDA_ERROR_INVALID_PTX, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, or the
// CUresult of ptx::Load's failure.
CUresult GetProgram(std::span<const std::string> sources, const char* what,
                    std::shared_ptr<const ParsedProgram>* out);

struct ProgramCacheStats {
  uint64_t entries = 0;  // live cached programs
  uint64_t parses = 0;   // successful parses since the process started
};
ProgramCacheStats GetProgramCacheStats();

}  // namespace remora::emu
