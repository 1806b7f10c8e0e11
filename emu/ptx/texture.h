// emu/ptx/texture.h - tex, tld4, txq, suld, sust, suq and sured: the forms the decoder shares
// with exec_tex.cc.
//
// Texture and surface objects are 64-bit handles the driver's TextureTable (ptx.h) maps to a
// TextureView at each fetch. Operands (the decoder's layout):
//   tex, tld4  d[0..3] the destination vector; a[0] the handle, a[1..3] the coordinates
//              (.3d's fourth is dropped); .level's lod and .grad's gradients are not kept:
//              a view has one level, which every level-of-detail reads.
//   suld       d[0..vec-1] the destinations; a[0] the handle, a[1..3] the coordinates.
//   sust       a[0] the handle, a[1..3] the coordinates; d[0..vec-1] the SOURCE slots (a
//              .v4 store of a 3-D surface needs 8 sources, more than a[] holds).
//   txq, suq   d[0] the result; a[0] the handle; txq.level: a[1] the level.
// Inst::ty is the destination (tex/tld4) or access (suld/sust) type, Inst::ty2 the coordinate
// type (tex), Inst::vec the vector length, Inst::target the packed TexForm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "emu/ptx/exec.h"

namespace remora::emu::ptx {

enum class TexGeom : uint8_t { k1d, k2d, k3d, kA1d, kA2d, kCube, kACube, k2dms, kA2dms, kNone };
enum class TexLod : uint8_t { kBase, kLevel, kGrad };               // tex: how the level is chosen
enum class SurfOob : uint8_t { kTrap, kClamp, kZero };              // suld/sust out-of-range mode
enum class TexQuery : uint8_t { kWidth, kHeight, kDepth, kOther };  // txq/suq

// Why a decoded form is refused when it is reached (kNone: it runs).
enum class TexRefusal : uint8_t {
  kNone,
  kLayered,      // .a1d/.a2d (texture and surface arrays)
  kCube,         // .cube/.acube
  kMultisample,  // .2dms/.a2dms
  kFormatted,    // sust.p
  kReduction,    // sured
  kQuery,        // a txq/suq attribute other than width/height/depth
  kOperands,     // texel offsets, depth compare, a residency predicate, a .texref name
  kForm,         // any other modifier or type combination
};

struct TexForm {
  TexGeom geom = TexGeom::kNone;
  uint8_t mode = 0;    // TexLod (tex), SurfOob (suld/sust), TexQuery (txq/suq)
  uint8_t comp = 0;    // tld4: 0..3 for .r/.g/.b/.a
  bool level = false;  // txq.level
  TexRefusal refusal = TexRefusal::kNone;

  uint32_t Pack() const {
    return uint32_t(geom) | uint32_t(mode) << 4 | uint32_t(comp) << 8 | uint32_t(level) << 12 |
           uint32_t(refusal) << 16;
  }
  static TexForm Unpack(uint32_t v) {
    TexForm f;
    f.geom = TexGeom(v & 15);
    f.mode = uint8_t(v >> 4 & 15);
    f.comp = uint8_t(v >> 8 & 15);
    f.level = (v >> 12 & 1) != 0;
    f.refusal = TexRefusal(v >> 16 & 255);
    return f;
  }
};

// Coordinates the geometry takes in PTX ([a, {c...}]): 1, 2 or 4 (.3d), 2 (.a1d), 4 (.a2d).
int TexCoordCount(TexGeom g);

// Decodes the words after the base mnemonic of tex/tld4/txq/suld/sust/suq/sured into `in`
// (ty, ty2, vec) and the returned form. A word or combination it does not implement is not an
// error: the form comes back with a refusal, and the instruction faults when reached.
TexForm DecodeTexModifiers(std::string_view mnemonic, Inst& in);

}  // namespace remora::emu::ptx
