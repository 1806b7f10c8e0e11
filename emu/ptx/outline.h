// emu/ptx/outline.h - a PTX text's top level, found without parsing it: where each function's
// definition lies, so that a large module can be loaded a kernel at a time (emu/module.h).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.h"

namespace remora::emu::ptx {

struct PtxOutline {
  struct Definition {
    std::string name;
    bool entry = false;  // .entry (a kernel), else .func
    size_t begin = 0;    // its text: from the start of its header's line
    size_t end = 0;      // to just past its closing brace
  };
  std::vector<Definition> definitions;  // text order
};

// The function definitions of `ptx`, in text order. Comments and strings are skipped.
// Errors: kInvalidPtx when a brace or parenthesis is left open, a definition has no name, or
// two definitions share one (weak definitions: the caller loads the module whole instead).
Result<PtxOutline> OutlinePtx(std::string_view ptx);

// `ptx` with only the definitions `kernels` need: those entries, and every function whose name
// appears in text kept (a call, an address taken, an initialiser), transitively. Every other
// definition gives way to its newlines alone, so lines keep their numbers; declarations,
// variables and directives all stay, in order. A name in `kernels` that is no entry is ignored.
// `*kept`, if given, is set to the number of definitions kept.
std::string PrunePtx(std::string_view ptx, const PtxOutline& outline,
                     std::span<const std::string> kernels, size_t* kept = nullptr);

}  // namespace remora::emu::ptx
