// emu/ptx/exec_tex.cc - texture and surface instructions: tex, tld4, txq, suld, sust, suq.
//
// Each lane looks its handle up in the launch's TextureTable (the last view found is kept for
// the rest of the instruction: handles are nearly always uniform) and reads or writes elements
// through ResolveAddress, as ld.global/st.global do, so a view over freed memory faults.
//
// Sampling follows the CUDA C++ Programming Guide's "Texture Fetching" appendix:
//   - normalized coordinates are scaled by the size first (x * width, in f32);
//   - address modes act on texel indices, per dimension: clamp to [0, n), border (the texel
//     outside reads TextureView::border, in the texel's format: BorderChannel), wrap (index mod n)
//     and mirror (period 2n); wrap and mirror need normalized coordinates, and act as clamp without
//     them;
//   - point filtering reads texel floor(x); linear filtering (float results only) reads the 2,
//     4 or 8 texels around x - 0.5 and weighs them by frac(x - 0.5) rounded to 8 fractional
//     bits (the guide's 9-bit fixed-point weights); a texel of weight 0 is not read.
// What the texture unit returns depends on the texture, not on the PTX destination type (which
// only names the registers, as on the GPU): float results for float channels and for 8/16-bit
// integer channels not read as integers (unsigned v / (2^n - 1), signed max(v / (2^(n-1) - 1),
// -1)); integer results, sign- or zero-extended to 32 bits, for integer channels read as
// integers and for 32-bit integer channels (which cannot be normalized). Channels the format
// lacks read (0, 0, 0, 1): 1.0f, or 1 for integer results.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu/ptx/half.h"
#include "emu/ptx/texture.h"

namespace remora::emu::ptx {

int TexCoordCount(TexGeom g) {
  switch (g) {
    case TexGeom::k1d:
      return 1;
    case TexGeom::k2d:
    case TexGeom::kA1d:
    case TexGeom::k2dms:
      return 2;
    default:
      return 4;
  }
}

namespace {

// Dimensions the geometry addresses (1d: x; 2d: x, y; 3d: x, y, z).
int GeomDims(TexGeom g) {
  return g == TexGeom::k1d ? 1 : g == TexGeom::k2d ? 2 : 3;
}

bool IsTexType(Ty t) {
  return t == Ty::kF32 || t == Ty::kS32 || t == Ty::kU32;
}

}  // namespace

TexForm DecodeTexModifiers(std::string_view mnemonic, Inst& in) {
  TexForm f;
  auto refuse = [&](TexRefusal r) {
    if (f.refusal == TexRefusal::kNone) f.refusal = r;
  };
  size_t dot = mnemonic.find('.');
  const std::string_view base = mnemonic.substr(0, dot);
  const bool is_tex = base == "tex", is_tld4 = base == "tld4";
  const bool is_surf = base == "suld" || base == "sust";
  const bool is_query = base == "txq" || base == "suq";
  if (base == "sured") refuse(TexRefusal::kReduction);
  std::vector<Ty> types;
  bool binary = false, query = false;
  in.vec = 1;
  while (dot != std::string_view::npos) {
    size_t next = mnemonic.find('.', dot + 1);
    std::string_view w =
        mnemonic.substr(dot + 1, next == std::string_view::npos ? next : next - dot - 1);
    dot = next;
    static constexpr std::pair<std::string_view, TexGeom> kGeoms[] = {
        {"1d", TexGeom::k1d},       {"2d", TexGeom::k2d},     {"3d", TexGeom::k3d},
        {"a1d", TexGeom::kA1d},     {"a2d", TexGeom::kA2d},   {"cube", TexGeom::kCube},
        {"acube", TexGeom::kACube}, {"2dms", TexGeom::k2dms}, {"a2dms", TexGeom::kA2dms}};
    static constexpr std::pair<std::string_view, Ty> kTypes[] = {
        {"b8", Ty::kB8},   {"b16", Ty::kB16}, {"b32", Ty::kB32},
        {"b64", Ty::kB64}, {"u32", Ty::kU32}, {"s32", Ty::kS32},
        {"f32", Ty::kF32}, {"f16", Ty::kF16}, {"f16x2", Ty::kF16x2}};
    bool known = false;
    for (auto& [name, g] : kGeoms) {
      if (w == name) {
        f.geom = g;
        known = true;
      }
    }
    for (auto& [name, t] : kTypes) {
      if (w == name) {
        types.push_back(t);
        known = true;
      }
    }
    if (known) continue;
    if (w == "v2" || w == "v4") {
      in.vec = w == "v2" ? 2 : 4;
    } else if (is_tex && (w == "base" || w == "level" || w == "grad")) {
      f.mode = uint8_t(w == "base" ? TexLod::kBase : w == "level" ? TexLod::kLevel : TexLod::kGrad);
    } else if (is_tld4 && (w == "r" || w == "g" || w == "b" || w == "a")) {
      f.comp = uint8_t(w == "r" ? 0 : w == "g" ? 1 : w == "b" ? 2 : 3);
    } else if (is_surf && w == "b") {
      binary = true;
    } else if (is_surf && w == "p") {
      refuse(TexRefusal::kFormatted);
    } else if (is_surf && (w == "trap" || w == "clamp" || w == "zero")) {
      f.mode = uint8_t(w == "trap"    ? SurfOob::kTrap
                       : w == "clamp" ? SurfOob::kClamp
                                      : SurfOob::kZero);
    } else if (is_surf &&
               (w == "ca" || w == "cg" || w == "cs" || w == "cv" || w == "wb" || w == "wt")) {
      // cache operators: no caches here
    } else if (base == "txq" && w == "level") {
      f.level = true;
    } else if (is_query && (w == "width" || w == "height" || w == "depth")) {
      f.mode = uint8_t(w == "width"    ? TexQuery::kWidth
                       : w == "height" ? TexQuery::kHeight
                                       : TexQuery::kDepth);
      query = true;
    } else if (is_query) {
      refuse(TexRefusal::kQuery);  // channel_data_type, channel_order, normalized_coords, ...
      query = true;
    } else {
      refuse(TexRefusal::kForm);
    }
  }
  switch (f.geom) {
    case TexGeom::kA1d:
    case TexGeom::kA2d:
      if (is_query) refuse(TexRefusal::kLayered);
      break;
    case TexGeom::kCube:
    case TexGeom::kACube:
      if (!is_tex) refuse(TexRefusal::kCube);
      break;
    case TexGeom::k2dms:
    case TexGeom::kA2dms:
      refuse(TexRefusal::kMultisample);
      break;
    default:
      break;
  }
  if (types.size() >= 1) in.ty = types[0];
  if (types.size() >= 2) in.ty2 = types[1];
  if (is_tex || is_tld4) {
    bool ok = f.geom != TexGeom::kNone && types.size() == 2 && IsTexType(in.ty) && in.vec == 4 &&
              (in.ty2 == Ty::kF32 || (is_tex && in.ty2 == Ty::kS32));
    if (is_tld4 && f.geom != TexGeom::k2d) refuse(TexRefusal::kLayered);
    const bool cube = f.geom == TexGeom::kCube || f.geom == TexGeom::kACube;
    if (!ok || (cube && in.ty2 != Ty::kF32)) refuse(TexRefusal::kForm);
  } else if (is_surf) {
    int size = TySize(in.ty);
    bool ok = binary && f.geom != TexGeom::kNone && types.size() == 1 &&
              (in.ty == Ty::kB8 || in.ty == Ty::kB16 || in.ty == Ty::kB32 || in.ty == Ty::kB64) &&
              size * in.vec <= 16;
    if (!ok) refuse(TexRefusal::kForm);
  } else if (is_query) {
    if (!query || types.size() != 1 || in.ty != Ty::kB32) refuse(TexRefusal::kForm);
    if (base == "suq" && f.level) refuse(TexRefusal::kForm);
  }
  return f;
}

namespace {

uint32_t ElemBytes(const TextureView& v) {
  return uint32_t(v.channels) * v.channel_bits / 8;
}

bool FloatResults(const TextureView& v) {
  return v.kind == TextureView::Kind::kFloat || (!v.read_as_integer && v.channel_bits < 32);
}

// What a channel the format lacks reads: (0, 0, 0, 1).
uint32_t MissingChannel(bool float_results, int c) {
  if (c < 3) return 0;
  return float_results ? std::bit_cast<uint32_t>(1.0f) : 1u;
}

// Channel c (< channels) of the element at p, as the texture unit returns it (float bits or a
// widened integer).
uint32_t Channel(const TextureView& v, const uint8_t* p, int c) {
  const bool fr = FloatResults(v);
  switch (v.channel_bits) {
    case 8: {
      uint8_t u = p[c];
      if (v.kind == TextureView::Kind::kSigned) {
        int8_t s = int8_t(u);
        return fr ? std::bit_cast<uint32_t>(std::max(float(s) / 127.0f, -1.0f))
                  : uint32_t(int32_t(s));
      }
      return fr ? std::bit_cast<uint32_t>(float(u) / 255.0f) : uint32_t(u);
    }
    case 16: {
      uint16_t u;
      std::memcpy(&u, p + 2 * c, 2);
      if (v.kind == TextureView::Kind::kFloat) return std::bit_cast<uint32_t>(HalfToFloat(u));
      if (v.kind == TextureView::Kind::kSigned) {
        int16_t s = int16_t(u);
        return fr ? std::bit_cast<uint32_t>(std::max(float(s) / 32767.0f, -1.0f))
                  : uint32_t(int32_t(s));
      }
      return fr ? std::bit_cast<uint32_t>(float(u) / 65535.0f) : uint32_t(u);
    }
    default: {
      uint32_t u;
      std::memcpy(&u, p + 4 * c, 4);
      return u;  // f32 bits, or a 32-bit integer
    }
  }
}

// The last view looked up within one instruction.
struct ViewCache {
  uint64_t handle = 0;
  bool valid = false;
  TextureView v;
};

[[gnu::noinline, gnu::cold]] int HandleFault(Exec& x, const Inst& in, int lane, int32_t code,
                                             uint64_t handle, const std::string& why) {
  char buf[64];
  std::snprintf(
      buf, sizeof buf, "%s handle 0x%llx",
      in.op == Op::kSuld || in.op == Op::kSust || in.op == Op::kSuq ? "surface" : "texture",
      (unsigned long long)handle);
  return FaultAt(x, code, in, buf + (" " + why) + Where(x, lane));
}

// Why the driver's view cannot be read, or nullptr.
const char* BadView(const TextureView& v) {
  if (v.channels != 1 && v.channels != 2 && v.channels != 4) return "has 1, 2 or 4 channels";
  if (v.channel_bits != 8 && v.channel_bits != 16 && v.channel_bits != 32)
    return "has 8, 16 or 32-bit channels";
  if (v.kind == TextureView::Kind::kFloat && v.channel_bits == 8) return "has no 8-bit floats";
  if (v.dims < 1 || v.dims > 3) return "has 1 to 3 dimensions";
  constexpr uint64_t kMaxExtent = uint64_t{1} << 32;
  if (v.width == 0 || v.height == 0 || v.depth == 0 || v.width > kMaxExtent ||
      v.height > kMaxExtent || v.depth > kMaxExtent)
    return "has extents from 1 to 2^32";
  return nullptr;
}

// Lane l's view (a texture, or a surface if `surface`); nullptr after a fault.
const TextureView* Lookup(Exec& x, const Inst& in, int l, ViewCache& c, bool surface) {
  const uint64_t h = Src(x, in.a[0])[l];
  if (!c.valid || c.handle != h) {
    c.valid = false;
    const TextureTable* t = x.L->cfg->textures;
    if (!t) {
      HandleFault(x, in, l, err::kIllegalAddress, h,
                  "is unknown: the launch has no texture objects");
      return nullptr;
    }
    if (!t->Find(h, &c.v)) {
      HandleFault(x, in, l, err::kIllegalAddress, h, "is not a live texture or surface object");
      return nullptr;
    }
    if (const char* why = BadView(c.v)) {
      HandleFault(x, in, l, err::kIllegalAddress, h,
                  std::string("has a format the interpreter cannot read (a view ") + why + ")");
      return nullptr;
    }
    c.handle = h;
    c.valid = true;
  }
  if (c.v.surface != surface) {
    HandleFault(x, in, l, err::kIllegalAddress, h,
                surface ? "is a texture object: suld/sust/suq need a surface object"
                        : "is a surface object: tex/tld4/txq need a texture object");
    return nullptr;
  }
  return &c.v;
}

// The element at in-range indices (i, j, k); nullptr after a fault.
const uint8_t* Element(Exec& x, const Inst& in, int l, const TextureView& v, uint64_t i, uint64_t j,
                       uint64_t k) {
  const uint32_t eb = ElemBytes(v);
  const uint64_t addr = v.base + k * v.slice_pitch + j * v.pitch + i * eb;
  return ResolveAddress(x, in, l, Space::kGlobal, addr, eb);
}

TextureView::Address EffectiveMode(const TextureView& v, int d) {
  TextureView::Address m = v.address[d];
  if (!v.normalized_coords &&
      (m == TextureView::Address::kWrap || m == TextureView::Address::kMirror))
    return TextureView::Address::kClamp;  // wrap and mirror need normalized coordinates
  return m;
}

// Border channel c as float results: NVIDIA keeps the border color in the texel's format, so
// an 8- or 16-bit integer texture read as normalized floats returns the color rounded to a
// step of that format, ties down (an H200 read 0.25, 0.5, 0.75 of an 8-bit unsigned texture
// as 64, 127, 191 of 255; the signed and 16-bit formats follow the same rule, not yet seen).
uint32_t BorderChannel(const TextureView& v, int c) {
  const float b = v.border[c];
  if (v.kind == TextureView::Kind::kFloat || (v.channel_bits != 8 && v.channel_bits != 16))
    return std::bit_cast<uint32_t>(b);
  const bool is_signed = v.kind == TextureView::Kind::kSigned;
  const float steps =
      is_signed ? float((1u << (v.channel_bits - 1)) - 1) : float((1u << v.channel_bits) - 1);
  const float q = std::ceil(std::clamp(b, is_signed ? -1.0f : 0.0f, 1.0f) * steps - 0.5f);
  return std::bit_cast<uint32_t>(std::max(q / steps, -1.0f));
}

// Texel (c[0], c[1], c[2]) through the address modes, as four result words; false after a
// fault.
bool FetchTexel(Exec& x, const Inst& in, int l, const TextureView& v, const int64_t c[3],
                uint32_t out[4]) {
  const uint64_t n[3] = {v.width, v.height, v.depth};
  uint64_t idx[3];
  bool border = false;
  for (int d = 0; d < 3; ++d) {
    const int64_t N = int64_t(n[d]);
    int64_t i = c[d];
    switch (EffectiveMode(v, d)) {
      case TextureView::Address::kClamp:
        i = std::clamp<int64_t>(i, 0, N - 1);
        break;
      case TextureView::Address::kBorder:
        if (i < 0 || i >= N) border = true;
        break;
      case TextureView::Address::kWrap:
        i = (i % N + N) % N;
        break;
      case TextureView::Address::kMirror: {
        const int64_t m = (i % (2 * N) + 2 * N) % (2 * N);
        i = m < N ? m : 2 * N - 1 - m;
        break;
      }
    }
    idx[d] = uint64_t(i);
  }
  const bool fr = FloatResults(v);
  if (border) {
    for (int ch = 0; ch < 4; ++ch)
      out[ch] = ch >= v.channels ? MissingChannel(fr, ch) : fr ? BorderChannel(v, ch) : 0u;
    return true;
  }
  const uint8_t* p = Element(x, in, l, v, idx[0], idx[1], idx[2]);
  if (!p) return false;
  for (int ch = 0; ch < 4; ++ch)
    out[ch] = ch < v.channels ? Channel(v, p, ch) : MissingChannel(fr, ch);
  return true;
}

// A texel-space coordinate: normalized coordinates scaled by the extent.
float Scale(const TextureView& v, float u, uint64_t n) {
  return v.normalized_coords ? u * float(n) : u;
}

// floor(u) as an index; NaN reads texel 0, and huge values stay far outside any texture.
int64_t FloorIndex(float u) {
  if (std::isnan(u)) return 0;
  return int64_t(std::clamp(std::floor(double(u)), -1e12, 1e12));
}

// frac(u) rounded to 8 fractional bits: the weight of the upper texel.
float Weight(float u) {
  if (std::isnan(u) || std::isinf(u)) return 0;
  double f = double(u) - std::floor(double(u));
  return float(std::floor(f * 256.0 + 0.5) / 256.0);
}

// One lane's tex of `v` at the `dims` coordinates `coord` (their bits: integers or floats as
// the instruction's coordinate type): the four result words; false after a fault.
bool SampleLane(Exec& x, const Inst& in, int l, const TextureView& v, int dims,
                const uint32_t* coord, uint32_t out[4]) {
  if (v.linear && (in.ty2 != Ty::kS32 || dims != 1)) {
    HandleFault(x, in, l, err::kIllegalAddress, Src(x, in.a[0])[l],
                "is linear memory: only tex.1d with integer coordinates (tex1Dfetch) reads it");
    return false;
  }
  if (in.ty2 == Ty::kS32) {  // integer coordinates: that texel, no filtering
    int64_t c[3] = {0, 0, 0};
    for (int d = 0; d < dims; ++d) c[d] = int32_t(coord[d]);
    if (!v.linear) return FetchTexel(x, in, l, v, c, out);
    // tex1Dfetch: no address modes; outside [0, width) reads an element of zeros.
    const bool fr = FloatResults(v);
    const uint8_t* p = nullptr;
    if (c[0] >= 0 && uint64_t(c[0]) < v.width) {
      p = Element(x, in, l, v, uint64_t(c[0]), 0, 0);
      if (!p) return false;
    }
    for (int ch = 0; ch < 4; ++ch)
      out[ch] = ch >= v.channels ? MissingChannel(fr, ch) : p ? Channel(v, p, ch) : 0u;
    return true;
  }
  const uint64_t n[3] = {v.width, v.height, v.depth};
  float u[3] = {0, 0, 0};
  for (int d = 0; d < dims; ++d) u[d] = Scale(v, std::bit_cast<float>(coord[d]), n[d]);
  if (!v.filter_linear || !FloatResults(v)) {
    int64_t c[3] = {0, 0, 0};
    for (int d = 0; d < dims; ++d) c[d] = FloorIndex(u[d]);
    return FetchTexel(x, in, l, v, c, out);
  }
  int64_t lo[3] = {0, 0, 0};
  float w[3] = {0, 0, 0};
  for (int d = 0; d < dims; ++d) {
    const float b = u[d] - 0.5f;
    lo[d] = FloorIndex(b);
    w[d] = Weight(b);
  }
  // Lerp along x, then y, then z: corner bit d set takes the upper texel along dimension d.
  float acc[8][4] = {};
  for (int corner = 0; corner < (1 << dims); ++corner) {
    bool zero = false;
    int64_t c[3] = {0, 0, 0};
    for (int d = 0; d < dims; ++d) {
      const bool up = (corner >> d & 1) != 0;
      c[d] = lo[d] + (up ? 1 : 0);
      if ((up ? w[d] : 1.0f - w[d]) == 0.0f) zero = true;
    }
    if (zero) continue;  // a texel of weight 0 is not read
    uint32_t t[4];
    if (!FetchTexel(x, in, l, v, c, t)) return false;
    for (int ch = 0; ch < 4; ++ch) acc[corner][ch] = std::bit_cast<float>(t[ch]);
  }
  for (int ch = 0; ch < 4; ++ch) {
    float r[8];
    for (int k = 0; k < (1 << dims); ++k) r[k] = acc[k][ch];
    for (int d = 0, m = 1 << dims; d < dims; ++d, m >>= 1) {
      for (int k = 0; k < m / 2; ++k) {
        // Pairs differ in bit d of the original corner; after d steps that is bit 0.
        const float a = r[2 * k], b = r[2 * k + 1];
        r[k] = w[d] == 0.0f ? a : w[d] == 1.0f ? b : (1.0f - w[d]) * a + w[d] * b;
      }
    }
    out[ch] = std::bit_cast<uint32_t>(r[0]);
  }
  return true;
}

void WriteResults(Exec& x, const Inst& in, const uint64_t (&tmp)[4][32], int n) {
  for (int k = 0; k < n; ++k) {
    if (in.d[k] == kNoReg) continue;
    uint64_t* d = Dst(x, in.d[k]);
    ForLanes(x.mask, [&](int l) { d[l] = tmp[k][l]; });
  }
}

// What one lane's tex reads: an image (the whole view, or one layer or cube face of it) and the
// coordinates within it.
struct Target {
  TextureView v;
  int dims = 0;
  uint32_t coord[3] = {0, 0, 0};
};

// Layer or face `slice` of `v` alone, as an image of `dims` dimensions.
TextureView Slice(const TextureView& v, uint64_t slice, int dims) {
  TextureView s = v;
  s.base = v.base + slice * v.slice_pitch;
  s.depth = 1;
  s.dims = uint8_t(dims);
  s.layout = TextureView::Layout::kPlain;
  return s;
}

// The cube face a direction points at and the face's normalized coordinates (the CUDA
// programming guide's cubemap table): the major axis picks the face, the other two, divided by
// it, the place on it.
int CubeFace(float x, float y, float z, float* u, float* v) {
  const float ax = std::fabs(x), ay = std::fabs(y), az = std::fabs(z);
  int face;
  float m, s, t;
  if (ax >= ay && ax >= az) {
    face = x >= 0 ? 0 : 1;
    m = ax;
    s = x >= 0 ? -z : z;
    t = -y;
  } else if (ay >= az) {
    face = y >= 0 ? 2 : 3;
    m = ay;
    s = x;
    t = y >= 0 ? z : -z;
  } else {
    face = z >= 0 ? 4 : 5;
    m = az;
    s = z >= 0 ? x : -x;
    t = -y;
  }
  *u = m == 0 ? 0.5f : (s / m + 1.0f) * 0.5f;
  *v = m == 0 ? 0.5f : (t / m + 1.0f) * 0.5f;
  return face;
}

// Where lane l's tex of geometry `g` reads `v`; false after a fault.
bool Locate(Exec& x, const Inst& in, int l, uint64_t handle, const TextureView& v, TexGeom g,
            Target* t) {
  auto operand = [&](int k) { return uint32_t(Src(x, in.a[1 + k])[l]); };
  switch (g) {
    case TexGeom::kA1d:
    case TexGeom::kA2d: {
      if (v.layout != TextureView::Layout::kLayered) {
        HandleFault(x, in, l, err::kIllegalAddress, handle,
                    "is not a layered texture: tex.a1d/tex.a2d read one");
        return false;
      }
      const int64_t layer = std::clamp<int64_t>(int32_t(operand(0)), 0, int64_t(v.depth) - 1);
      t->dims = g == TexGeom::kA1d ? 1 : 2;
      t->v = Slice(v, uint64_t(layer), t->dims);
      for (int d = 0; d < t->dims; ++d) t->coord[d] = operand(1 + d);
      return true;
    }
    case TexGeom::kCube:
    case TexGeom::kACube: {
      if (v.layout != TextureView::Layout::kCubemap) {
        HandleFault(x, in, l, err::kIllegalAddress, handle,
                    "is not a cubemap texture: tex.cube/tex.acube read one");
        return false;
      }
      const int first = g == TexGeom::kACube ? 1 : 0;
      const int64_t cubes = int64_t(v.depth / 6);
      const int64_t layer =
          g == TexGeom::kACube ? std::clamp<int64_t>(int32_t(operand(0)), 0, cubes - 1) : 0;
      float u = 0, w = 0;
      const int face =
          CubeFace(std::bit_cast<float>(operand(first)), std::bit_cast<float>(operand(first + 1)),
                   std::bit_cast<float>(operand(first + 2)), &u, &w);
      t->dims = 2;
      t->v = Slice(v, uint64_t(layer * 6 + face), 2);
      // A face is read with normalized coordinates, clamped at its edges (no seamless filtering
      // across faces).
      t->v.normalized_coords = true;
      t->v.address[0] = t->v.address[1] = TextureView::Address::kClamp;
      t->coord[0] = std::bit_cast<uint32_t>(u);
      t->coord[1] = std::bit_cast<uint32_t>(w);
      return true;
    }
    default:
      t->v = v;
      t->dims = GeomDims(g);
      for (int d = 0; d < t->dims; ++d) t->coord[d] = operand(d);
      return true;
  }
}

int Tex(Exec& x, const Inst& in) {
  const TexForm f = TexForm::Unpack(in.target);
  uint64_t tmp[4][32];
  ViewCache cache;
  uint32_t m = x.mask;
  while (m) {
    const int l = std::countr_zero(m);
    m &= m - 1;
    const TextureView* v = Lookup(x, in, l, cache, false);
    if (!v) return kFault;
    Target t;
    if (!Locate(x, in, l, cache.handle, *v, f.geom, &t)) return kFault;
    uint32_t out[4];
    if (!SampleLane(x, in, l, t.v, t.dims, t.coord, out)) return kFault;
    for (int k = 0; k < 4; ++k) tmp[k][l] = out[k];
  }
  WriteResults(x, in, tmp, 4);
  return kNext;
}

// tld4: the four texels of the bilinear footprint at (x, y), component .comp of each, in the
// ISA's order (counter-clockwise from the lower left): (i, j+1), (i+1, j+1), (i+1, j), (i, j)
// for i = floor(x - 0.5), j = floor(y - 0.5). A component the format lacks reads 0.
int Tld4(Exec& x, const Inst& in) {
  const TexForm f = TexForm::Unpack(in.target);
  uint64_t tmp[4][32];
  ViewCache cache;
  uint32_t m = x.mask;
  while (m) {
    const int l = std::countr_zero(m);
    m &= m - 1;
    const TextureView* v = Lookup(x, in, l, cache, false);
    if (!v) return kFault;
    if (v->linear) {
      HandleFault(x, in, l, err::kIllegalAddress, cache.handle,
                  "is linear memory: tld4 needs a 2-D texture");
      return kFault;
    }
    const float u = Scale(*v, std::bit_cast<float>(uint32_t(Src(x, in.a[1])[l])), v->width) - 0.5f;
    const float w = Scale(*v, std::bit_cast<float>(uint32_t(Src(x, in.a[2])[l])), v->height) - 0.5f;
    const int64_t i = FloorIndex(u), j = FloorIndex(w);
    const int64_t at[4][2] = {{i, j + 1}, {i + 1, j + 1}, {i + 1, j}, {i, j}};
    for (int k = 0; k < 4; ++k) {
      uint32_t t[4];
      const int64_t c[3] = {at[k][0], at[k][1], 0};
      if (!FetchTexel(x, in, l, *v, c, t)) return kFault;
      tmp[k][l] = f.comp < v->channels ? t[f.comp] : 0u;
    }
  }
  WriteResults(x, in, tmp, 4);
  return kNext;
}

// txq/suq width, height, depth (in elements, for surfaces too); txq.level only for level 0.
int Query(Exec& x, const Inst& in) {
  const TexForm f = TexForm::Unpack(in.target);
  const bool surface = in.op == Op::kSuq;
  uint64_t tmp[4][32];
  ViewCache cache;
  uint32_t m = x.mask;
  while (m) {
    const int l = std::countr_zero(m);
    m &= m - 1;
    const TextureView* v = Lookup(x, in, l, cache, surface);
    if (!v) return kFault;
    if (f.level) {
      const int32_t lod = int32_t(Src(x, in.a[1])[l]);
      if (lod != 0) {
        return HandleFault(x, in, l, err::kLaunchFailure, cache.handle,
                           "has one level: txq.level of level " + std::to_string(lod) +
                               " (mipmapped textures are not supported)");
      }
    }
    switch (TexQuery(f.mode)) {
      case TexQuery::kWidth:
        tmp[0][l] = uint32_t(v->width);
        break;
      case TexQuery::kHeight:
        tmp[0][l] = uint32_t(v->height);
        break;
      default:
        tmp[0][l] = uint32_t(v->depth);
        break;
    }
  }
  WriteResults(x, in, tmp, 1);
  return kNext;
}

// suld.b/sust.b: x in bytes, y and z in elements; the access is vec * sizeof(ty) bytes and its
// x must be a multiple of that size. Out of range: .trap faults, .clamp moves the access to the
// nearest one inside (along each dimension), .zero loads zeros and drops stores.
template <bool kStore>
int Surf(Exec& x, const Inst& in) {
  const TexForm f = TexForm::Unpack(in.target);
  const int dims = GeomDims(f.geom);
  const uint32_t size = uint32_t(TySize(in.ty)), access = size * in.vec;
  uint64_t tmp[4][32];
  ViewCache cache;
  uint32_t m = x.mask;
  while (m) {
    const int l = std::countr_zero(m);
    m &= m - 1;
    const TextureView* v = Lookup(x, in, l, cache, true);
    if (!v) return kFault;
    int64_t c[3] = {0, 0, 0};
    if (f.geom == TexGeom::kA1d || f.geom == TexGeom::kA2d) {
      // {layer, x[, y]}: a layer is a slice of the view, as z is of a 3-D one.
      c[2] = int32_t(Src(x, in.a[1])[l]);
      for (int d = 0; d < (f.geom == TexGeom::kA1d ? 1 : 2); ++d)
        c[d] = int32_t(Src(x, in.a[2 + d])[l]);
    } else {
      for (int d = 0; d < dims; ++d) c[d] = int32_t(Src(x, in.a[1 + d])[l]);
    }
    if (c[0] % int64_t(access) != 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf,
                    "misaligned surface access: byte x %lld is not a multiple of %u",
                    (long long)c[0], access);
      return HandleFault(x, in, l, err::kMisalignedAddress, cache.handle, buf);
    }
    const uint64_t row = v->width * ElemBytes(*v);
    const int64_t n[3] = {int64_t(row), int64_t(v->height), int64_t(v->depth)};
    const bool oob = c[0] < 0 || uint64_t(c[0]) + access > row || c[1] < 0 || c[1] >= n[1] ||
                     c[2] < 0 || c[2] >= n[2];
    if (oob) {
      const SurfOob mode = SurfOob(f.mode);
      if (mode == SurfOob::kZero) {
        if (!kStore)
          for (int k = 0; k < in.vec; ++k) tmp[k][l] = 0;
        continue;
      }
      if (mode == SurfOob::kTrap || row < access) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "surface access out of range: (x %lld bytes, y %lld, z %lld), %u bytes, "
                      "outside %llu x %llu x %llu elements of %u bytes",
                      (long long)c[0], (long long)c[1], (long long)c[2], access,
                      (unsigned long long)v->width, (unsigned long long)v->height,
                      (unsigned long long)v->depth, ElemBytes(*v));
        return HandleFault(x, in, l, err::kIllegalAddress, cache.handle, buf);
      }
      c[0] = std::clamp<int64_t>(c[0], 0, int64_t(row - access));
      c[0] -= c[0] % int64_t(access);
      c[1] = std::clamp<int64_t>(c[1], 0, n[1] - 1);
      c[2] = std::clamp<int64_t>(c[2], 0, n[2] - 1);
    }
    const uint64_t addr =
        v->base + uint64_t(c[2]) * v->slice_pitch + uint64_t(c[1]) * v->pitch + uint64_t(c[0]);
    uint8_t* p = ResolveAddress(x, in, l, Space::kGlobal, addr, access);
    if (!p) return kFault;
    for (int k = 0; k < in.vec; ++k) {
      if constexpr (kStore) {
        const uint64_t val = Src(x, in.d[k])[l];
        std::memcpy(p + k * size, &val, size);
      } else {
        uint64_t val = 0;
        std::memcpy(&val, p + k * size, size);
        tmp[k][l] = val;
      }
    }
  }
  if constexpr (!kStore) WriteResults(x, in, tmp, in.vec);
  return kNext;
}

int Refused(Exec& x, const Inst& in) {
  const char* why = "instruction form not implemented";
  switch (TexForm::Unpack(in.target).refusal) {
    case TexRefusal::kLayered:
      why = "layered textures and surfaces (.a1d/.a2d) are not supported";
      break;
    case TexRefusal::kCube:
      why = "cubemap textures are not supported";
      break;
    case TexRefusal::kMultisample:
      why = "multisample textures are not supported";
      break;
    case TexRefusal::kFormatted:
      why = "formatted surface stores (sust.p) are not supported";
      break;
    case TexRefusal::kReduction:
      why = "surface reductions (sured) are not supported";
      break;
    case TexRefusal::kQuery:
      why = "only the width, height and depth queries are supported";
      break;
    case TexRefusal::kOperands:
      why =
          "texel offsets, depth compare, residency predicates and .texref names are not "
          "supported";
      break;
    default:
      break;
  }
  return FaultAt(x, err::kLaunchFailure, in, why);
}

ExecFn Pick(const Inst& in, ExecFn fn) {
  return TexForm::Unpack(in.target).refusal == TexRefusal::kNone ? fn : &Refused;
}

}  // namespace

ExecFn select_Tex(Inst& in) {
  return Pick(in, &Tex);
}
ExecFn select_Tld4(Inst& in) {
  return Pick(in, &Tld4);
}
ExecFn select_Txq(Inst& in) {
  return Pick(in, &Query);
}
ExecFn select_Suq(Inst& in) {
  return Pick(in, &Query);
}
ExecFn select_Suld(Inst& in) {
  return Pick(in, &Surf<false>);
}
ExecFn select_Sust(Inst& in) {
  return Pick(in, &Surf<true>);
}
ExecFn select_Sured(Inst&) {
  return &Refused;
}

}  // namespace remora::emu::ptx
