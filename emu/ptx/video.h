// emu/ptx/video.h - the SIMD video instructions' operand form, decoded once at load.
//
// vop4.dtype.atype.btype{.sat|.add} d{.mask}, a{.asel}, b{.bsel}, c (vop2 likewise on half-words):
// element i of the first operand is byte (half-word) asel[i] of the 8 bytes (4 half-words) of
// b:a, sign- or zero-extended per .atype, and likewise bsel and .btype for the second. The
// results go to the element positions .mask names (merged into c's, or added to c with .add).
// Defaults: .asel .b3210 / .h10, .bsel .b7654 / .h32, .mask .b3210 / .h10.
//
// The form lives in Inst::target: bits 3i..3i+2 asel[i], 12+3i.. bsel[i], 24..27 the mask (bit i:
// element i), 28 .atype signed, 29 .btype signed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "emu/ptx/ir.h"

namespace remora::emu::ptx {

inline bool IsVideoOp(Op op) {
  switch (op) {
    case Op::kVadd4:
    case Op::kVsub4:
    case Op::kVavrg4:
    case Op::kVabsdiff4:
    case Op::kVmin4:
    case Op::kVmax4:
    case Op::kVadd2:
    case Op::kVsub2:
    case Op::kVavrg2:
    case Op::kVabsdiff2:
    case Op::kVmin2:
    case Op::kVmax2:
      return true;
    default:
      return false;
  }
}

// Elements of a video op: 4 (bytes) or 2 (half-words).
inline int VideoElements(Op op) {
  switch (op) {
    case Op::kVadd2:
    case Op::kVsub2:
    case Op::kVavrg2:
    case Op::kVabsdiff2:
    case Op::kVmin2:
    case Op::kVmax2:
      return 2;
    default:
      return 4;
  }
}

inline constexpr uint32_t kVideoASigned = 1u << 28, kVideoBSigned = 1u << 29;

// Sets in.target from the selector suffixes written on d, a and b ("b3210", "h10"; empty for the
// default) and from .atype and .btype (each .u32 or .s32). Returns why the form is not valid
// PTX, or an empty string.
std::string DecodeVideoForm(Inst& in, Ty atype, Ty btype, std::string_view dsel,
                            std::string_view asel, std::string_view bsel);

}  // namespace remora::emu::ptx
