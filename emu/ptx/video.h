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
//
// The scalar video instructions (vadd vsub vabsdiff vmin vmax vshl vshr vmad vset) work on one
// byte, half-word or word of a and of b, sign- or zero-extended, in a wide intermediate; the result
// is optionally clamped to d's range (.sat), then goes to d whole, combined with c by a secondary
// operation (.add .min .max), or merged into c at d's selector (d.b0 ... d.h1). Their form in
// Inst::target: bits 0..2 the a selector, 3..5 b's, 6..8 d's (kScalarWord or a ScalarSel), 9..10
// the shift mode (vshl, vshr), 11..12 vmad's scale, 13 vmad's .po, 28 and 29 as above; the
// secondary operation is Inst::sub, vset's comparison Inst::cmp, the destination type Inst::ty.
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

inline bool IsScalarVideoOp(Op op) {
  return op >= Op::kVadd && op <= Op::kVset;
}

// The part of a 32-bit operand a scalar video selector names: the word (no selector), bytes
// .b0 to .b3, half-words .h0 and .h1.
enum ScalarSel : uint32_t {
  kScalarWord,
  kScalarB0,
  kScalarB1,
  kScalarB2,
  kScalarB3,
  kScalarH0,
  kScalarH1
};
enum ScalarShift : uint32_t { kShiftNone, kShiftClamp, kShiftWrap };
enum ScalarScale : uint32_t { kScaleNone, kScaleShr7, kScaleShr15 };
inline constexpr uint32_t kScalarPlusOne = 1u << 13;

// Decodes scalar video instruction in.op's modifiers `mods` (the mnemonic after its first dot),
// its operands' selector suffixes ("b0", "h1"; empty for none), which of a, b and c are negated
// (bits 0, 1, 2) and its operand count (3, or 4 with c) into in.ty, in.sub, in.cmp, in.flags,
// in.src_neg and in.target. Returns why the instruction is not valid PTX (ptxas refuses every
// form outside the ISA's grammar), or an empty string.
std::string DecodeScalarVideo(Inst& in, std::string_view mods, std::string_view dsel,
                              std::string_view asel, std::string_view bsel, uint32_t negated,
                              size_t operands);

// Sets in.target from the selector suffixes written on d, a and b ("b3210", "h10"; empty for the
// default) and from .atype and .btype (each .u32 or .s32). Returns why the form is not valid
// PTX, or an empty string.
std::string DecodeVideoForm(Inst& in, Ty atype, Ty btype, std::string_view dsel,
                            std::string_view asel, std::string_view bsel);

}  // namespace remora::emu::ptx
