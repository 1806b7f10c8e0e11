// emu/ptx/exec_mma.cc - warp-level matrix instructions: mma, ldmatrix, movmatrix, wmma.
//
// Each is a whole-warp collective: the 32 lanes' fragments are gathered into plain row-major
// matrices, the operation runs on those, and the result is scattered back to the lanes.
//
// Fragment layouts. mma's are specified per shape and type (PTX ISA 9.7.14.5, "Matrix Fragments
// for mma.mMnNkK") and MmaPos implements them exactly: kernels build and read fragments element
// by element. ldmatrix and movmatrix hand out 8x8 matrices in the layout of 9.7.14.5.15 (lane l
// holds row l/4, columns 2(l%4) and 2(l%4)+1, in the low then the high half of a register).
// wmma's layouts are unspecified (9.7.14.4.1); WmmaPos gives lane l the n elements
// (l % lanes) * n .. (l % lanes) * n + n - 1 of the matrix in row-major order, n being what the
// lane's registers hold and lanes = rows * cols / n. wmma.load, wmma.mma and wmma.store agree
// on it, and code that manipulates fragments only as PTX allows (the same element-wise operation
// on every element) cannot tell. An .f16 multiplicand fragment holds 16 elements, more than its
// share of the matrix: lanes l and l + lanes then hold the same elements, and the copy of lane
// l < lanes is the one mma and store read.
//
// Numerics (the hardware leaves order, rounding and subnormals unspecified): .f16, .bf16 and
// .tf32 products are exact (formed in double) and summed in f32 in k order, starting from C; an
// .f16 D is that f32 sum rounded to nearest even. .tf32 operands drop their low 13 mantissa bits,
// which the tensor cores ignore. .f64 is a chain of fused multiply-adds in k order. Integer sums
// are exact, then wrap to 32 bits or, with .satfinite, clamp to the s32 range.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <optional>

#include "emu/ptx/exec.h"
#include "emu/ptx/half.h"
#include "emu/ptx/matrix.h"

namespace remora::emu::ptx {
namespace {

constexpr uint32_t kAllLanes = 0xffffffffu;
constexpr int kMaxElems = 512;  // the largest operand: a 16x32 or 32x16 multiplicand

// Bits of one element of a fragment of type t (every type the decoder lets through has a size).
int Bits(Ty t) {
  return 8 * TySize(t);
}

// Elements one register holds: a 32-bit register packs 32 / bits of them, an .f64 register one.
int PerReg(Ty t) {
  return t == Ty::kF64 ? 1 : 32 / Bits(t);
}

double Value(Ty t, uint64_t raw) {
  switch (t) {
    case Ty::kF16:
      return HalfToDouble(uint16_t(raw), kF16);
    case Ty::kBF16:
      return HalfToDouble(uint16_t(raw), kBF16);
    case Ty::kTF32:
      return std::bit_cast<float>(uint32_t(raw) & 0xffffe000u);
    case Ty::kF32:
      return std::bit_cast<float>(uint32_t(raw));
    case Ty::kF64:
      return std::bit_cast<double>(raw);
    case Ty::kS8:
      return int8_t(raw);
    case Ty::kU8:
      return uint8_t(raw);
    default:  // .s32
      return int32_t(raw);
  }
}

struct Dims {
  int rows, cols;
};
struct Pos {
  int r, c;
};

// The matrix a fragment belongs to: 'a' (M x K), 'b' (K x N), or 'c'/'d' (M x N).
Dims FragDims(const MatrixOp& m, char which) {
  if (which == 'a') return {m.m, m.k};
  if (which == 'b') return {m.k, m.n};
  return {m.m, m.n};
}

// Elements of one lane's fragment.
int FragElems(const MatrixOp& m, char which, Ty t, bool wmma) {
  if (wmma && t == Ty::kF16 && (which == 'a' || which == 'b')) return 16;
  Dims d = FragDims(m, which);
  return d.rows * d.cols / 32;
}

// Row and column of element i of lane l's mma fragment `which` (PTX ISA 9.7.14.5.2-10).
Pos MmaPos(const MatrixOp& m, char which, int l, int i) {
  const int g = l >> 2, t = l & 3;  // groupID, threadID_in_group
  if (which == 'c' || which == 'd') {
    if (m.m == 8) return {g, 2 * t + i};  // m8n8k4 .f64
    return {g + 8 * (i >> 1), 2 * t + (i & 1)};
  }
  const bool a = which == 'a';
  switch (m.ta) {
    case Ty::kF16:
    case Ty::kBF16:  // m16n8k8 uses the first half of the m16n8k16 pattern
      if (a) return {g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)};
      return {2 * t + (i & 1) + 8 * (i >> 1), g};
    case Ty::kTF32:
      if (a) return m.k == 4 ? Pos{g + 8 * i, t} : Pos{g + 8 * (i & 1), t + 4 * (i >> 1)};
      return {t + 4 * i, g};
    case Ty::kF64:
      return a ? Pos{g, t} : Pos{t, g};
    default:  // .s8 / .u8, m16n8k16 and m16n8k32
      if (a) {
        if (m.k == 16) return {g + 8 * (i >> 2), 4 * t + (i & 3)};
        return {g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)};
      }
      return {4 * t + (i & 3) + 16 * (i >> 2), g};
  }
}

// Row and column of element i of lane l's wmma fragment of `n` elements (see the file head).
Pos WmmaPos(Dims d, int n, int l, int i) {
  int lanes = d.rows * d.cols / n;
  int e = (l % lanes) * n + i;
  return {e / d.cols, e % d.cols};
}

// Raw bits of element i of the fragment held by lane l in register slots `slots`.
uint64_t RawElem(const Exec& x, const uint32_t* slots, Ty t, int l, int i) {
  const int per = PerReg(t), bits = Bits(t);
  uint64_t r = Src(x, slots[i / per])[l];
  if (bits == 64) return r;
  return (r >> (bits * (i % per))) & ((uint64_t{1} << bits) - 1);
}

// Fragment registers of all 32 lanes being assembled from raw elements.
struct FragRegs {
  uint64_t v[MatrixOp::kMaxRegs][32] = {};
  void Put(Ty t, int l, int i, uint64_t raw) {
    const int per = PerReg(t), bits = Bits(t);
    if (bits < 64) raw &= (uint64_t{1} << bits) - 1;
    v[i / per][l] |= raw << (bits * (i % per));
  }
  void Store(Exec& x, const uint32_t* slots, int n) const {
    for (int r = 0; r < n; ++r) std::memcpy(Dst(x, slots[r]), v[r], sizeof v[r]);
  }
};

// Gathers operand `which` of the warp's fragments into the row-major matrix `out`.
template <bool kWmma>
void Gather(const Exec& x, const MatrixOp& m, char which, const uint32_t* slots, Ty t,
            double* out) {
  const Dims d = FragDims(m, which);
  const int n = FragElems(m, which, t, kWmma);
  const int lanes = kWmma ? d.rows * d.cols / n : 32;
  for (int l = 0; l < lanes; ++l) {
    for (int i = 0; i < n; ++i) {
      Pos p = kWmma ? WmmaPos(d, n, l, i) : MmaPos(m, which, l, i);
      out[p.r * d.cols + p.c] = Value(t, RawElem(x, slots, t, l, i));
    }
  }
}

// D = A * B + C on row-major matrices; D holds the raw bits of each element of type m.td.
void Multiply(const MatrixOp& m, const double* A, const double* B, const double* C, uint64_t* D) {
  const int M = m.m, N = m.n, K = m.k;
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < N; ++c) {
      const double* a = A + r * K;
      const double* b = B + c;
      double cv = C[r * N + c];
      uint64_t& d = D[r * N + c];
      if (m.td == Ty::kF64) {
        double acc = cv;
        for (int k = 0; k < K; ++k) acc = std::fma(a[k], b[k * N], acc);
        d = std::bit_cast<uint64_t>(acc);
      } else if (m.td == Ty::kS32) {
        int64_t acc = int64_t(cv);
        for (int k = 0; k < K; ++k) acc += int64_t(a[k]) * int64_t(b[k * N]);
        if (m.satfinite) acc = std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX);
        d = uint32_t(uint64_t(acc));
      } else {
        float acc = float(cv);
        for (int k = 0; k < K; ++k) acc += float(a[k] * b[k * N]);  // the product is exact
        d = m.td == Ty::kF32 ? std::bit_cast<uint32_t>(acc)
                             : DoubleToHalf(double(acc), Rnd::kRn, kF16);
      }
    }
  }
}

const MatrixOp& OpOf(const Exec& x, const Inst& in) {
  return x.L->P->matrix[in.target];
}

// The instruction needs all 32 lanes at once (.sync.aligned): parks the group until the others
// arrive, and faults where the hardware's result is undefined (a lane has exited, or a guard
// leaves a lane out). Returns kNext when it may run.
int WholeWarp(Exec& x, const Inst& in) {
  if (x.mask == kAllLanes) [[likely]]
    return kNext;
  if (x.mask == x.group && !Converged(x, kAllLanes)) return kRepick;
  if (x.mask == kAllLanes) return kNext;
  return FaultAt(x, err::kLaunchFailure, in,
                 "warp-level matrix instruction executed by " +
                     std::to_string(std::popcount(x.mask)) + " of the warp's 32 lanes");
}

template <bool kWmma>
int Mma(Exec& x, const Inst& in) {
  if (int r = WholeWarp(x, in); r != kNext) return r;
  const MatrixOp& m = OpOf(x, in);
  double A[kMaxElems], B[kMaxElems], C[256];
  uint64_t D[256];
  Gather<kWmma>(x, m, 'a', m.a, m.ta, A);
  Gather<kWmma>(x, m, 'b', m.b, m.tb, B);
  Gather<kWmma>(x, m, 'c', m.c, m.tc, C);
  Multiply(m, A, B, C, D);
  const Dims dd = FragDims(m, 'd');
  const int n = FragElems(m, 'd', m.td, kWmma);
  FragRegs out;
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < n; ++i) {
      Pos p = kWmma ? WmmaPos(dd, n, l, i) : MmaPos(m, 'd', l, i);
      out.Put(m.td, l, i, D[p.r * dd.cols + p.c]);
    }
  }
  out.Store(x, m.d, m.nd);
  return kNext;
}

// ldmatrix: lanes 8j..8j+7 give the row addresses of matrix j; every lane receives its
// fragment of each matrix (of the transpose with .trans).
int Ldmatrix(Exec& x, const Inst& in) {
  if (int r = WholeWarp(x, in); r != kNext) return r;
  const MatrixOp& m = OpOf(x, in);
  const uint64_t ub = UniformBase(x, in);
  const uint64_t* base = in.base == kNoReg ? nullptr : Src(x, in.base);
  uint16_t rows[4][8][8];
  for (int j = 0; j < m.num; ++j) {
    for (int r = 0; r < 8; ++r) {
      const int lane = 8 * j + r;
      const uint64_t addr = (base ? base[lane] : 0) + ub;
      if (addr % 16)  // each row is one 16-byte access
        return FaultAt(x, err::kMisalignedAddress, in,
                       "ldmatrix row at " + Hex(addr) + ", not 16-byte aligned," + Where(x, lane));
      uint8_t* p = ResolveAddress(x, in, lane, in.space, addr, 16);
      if (!p) return kFault;
      std::memcpy(rows[j][r], p, 16);
    }
  }
  for (int j = 0; j < m.num; ++j) {
    uint64_t* d = Dst(x, m.d[j]);
    for (int l = 0; l < 32; ++l) {
      const int g = l >> 2, t = l & 3;
      uint32_t lo = m.trans ? rows[j][2 * t][g] : rows[j][g][2 * t];
      uint32_t hi = m.trans ? rows[j][2 * t + 1][g] : rows[j][g][2 * t + 1];
      d[l] = lo | hi << 16;
    }
  }
  return kNext;
}

// movmatrix.trans: the 8x8 matrix held in ldmatrix's layout becomes its transpose.
int Movmatrix(Exec& x, const Inst& in) {
  if (int r = WholeWarp(x, in); r != kNext) return r;
  const MatrixOp& m = OpOf(x, in);
  const uint64_t* a = Src(x, m.a[0]);
  uint16_t mat[8][8];
  for (int l = 0; l < 32; ++l) {
    mat[l >> 2][2 * (l & 3)] = uint16_t(a[l]);
    mat[l >> 2][2 * (l & 3) + 1] = uint16_t(a[l] >> 16);
  }
  uint64_t* d = Dst(x, m.d[0]);
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    d[l] = uint32_t(mat[2 * t][g]) | uint32_t(mat[2 * t + 1][g]) << 16;
  }
  return kNext;
}

// The memory a wmma.load/store reaches: its matrix, checked once as one access.
struct WmmaMemory {
  uint8_t* p;
  Dims dims;
  Ty t;
  int64_t stride;
  int esize;
  bool row;
  uint8_t* At(Pos q) const {
    int64_t e = row ? int64_t(q.r) * stride + q.c : int64_t(q.c) * stride + q.r;
    return p + e * esize;
  }
};

[[gnu::noinline, gnu::cold]] int WmmaFault(Exec& x, const Inst& in, const char* what, long long v) {
  char buf[160];
  std::snprintf(buf, sizeof buf, what, v);
  return FaultAt(x, err::kLaunchFailure, in, buf);
}

// Resolves the address and stride every lane must give alike (.aligned); kNext or kFault. A
// stride below the matrix's inner dimension overlaps its rows, as a GPU addresses them.
int WmmaResolve(Exec& x, const Inst& in, const MatrixOp& m, WmmaMemory* mem) {
  mem->t = m.ta;  // the one type word of wmma.load/store
  mem->dims = FragDims(m, m.frag);
  mem->row = m.row_a;
  mem->esize = Bits(mem->t) / 8;
  const int inner = mem->row ? mem->dims.cols : mem->dims.rows;
  const int lead = mem->row ? mem->dims.rows : mem->dims.cols;
  const uint64_t ub = UniformBase(x, in);
  const uint64_t* base = in.base == kNoReg ? nullptr : Src(x, in.base);
  const uint64_t* stride = in.a[0] == kNoReg ? nullptr : Src(x, in.a[0]);
  const uint64_t addr = (base ? base[0] : 0) + ub;
  mem->stride = stride ? int64_t(uint32_t(stride[0])) : inner;
  for (int l = 1; l < 32; ++l) {
    if ((base && base[l] != base[0]) || (stride && uint32_t(stride[l]) != uint32_t(stride[0])))
      return WmmaFault(x, in, "lane %lld gives another address or stride than lane 0",
                       (long long)l);
  }
  const uint64_t bytes =
      (uint64_t(lead - 1) * uint64_t(mem->stride) + uint64_t(inner)) * uint64_t(mem->esize);
  if (bytes > 0xffffffffu) return WmmaFault(x, in, "matrix of %lld bytes", (long long)bytes);
  mem->p = ResolveAddress(x, in, 0, in.space, addr, uint32_t(bytes));
  return mem->p ? kNext : kFault;
}

int WmmaLoad(Exec& x, const Inst& in) {
  if (int r = WholeWarp(x, in); r != kNext) return r;
  const MatrixOp& m = OpOf(x, in);
  WmmaMemory mem;
  if (int r = WmmaResolve(x, in, m, &mem); r != kNext) return r;
  const int n = FragElems(m, m.frag, mem.t, true);
  FragRegs out;
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < n; ++i) {
      uint64_t raw = 0;
      std::memcpy(&raw, mem.At(WmmaPos(mem.dims, n, l, i)), size_t(mem.esize));
      out.Put(mem.t, l, i, raw);
    }
  }
  out.Store(x, m.d, m.nd);
  return kNext;
}

int WmmaStore(Exec& x, const Inst& in) {
  if (int r = WholeWarp(x, in); r != kNext) return r;
  const MatrixOp& m = OpOf(x, in);
  WmmaMemory mem;
  if (int r = WmmaResolve(x, in, m, &mem); r != kNext) return r;
  const int n = FragElems(m, 'd', mem.t, true);
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < n; ++i) {
      uint64_t raw = RawElem(x, m.d, mem.t, l, i);
      std::memcpy(mem.At(WmmaPos(mem.dims, n, l, i)), &raw, size_t(mem.esize));
    }
  }
  return kNext;
}

// ---- decoding ----

std::optional<Ty> MatrixType(std::string_view w) {
  static const std::pair<const char*, Ty> kRows[] = {
      {"f16", Ty::kF16}, {"bf16", Ty::kBF16}, {"tf32", Ty::kTF32},
      {"f32", Ty::kF32}, {"f64", Ty::kF64},   {"s8", Ty::kS8},
      {"u8", Ty::kU8},   {"s32", Ty::kS32},   {"b16", Ty::kB16},
  };
  for (auto& [name, t] : kRows)
    if (w == name) return t;
  return std::nullopt;
}

// m<M>n<N>[k<K>], as in .m16n8k16 and ldmatrix's .m8n8.
bool ParseShape(std::string_view w, MatrixOp* m) {
  int v[3] = {0, 0, 0};
  const char keys[3] = {'m', 'n', 'k'};
  size_t p = 0;
  for (int f = 0; f < 3 && p < w.size(); ++f) {
    if (w[p] != keys[f]) return false;
    size_t q = ++p;
    while (p < w.size() && w[p] >= '0' && w[p] <= '9' && v[f] < 1000)
      v[f] = v[f] * 10 + (w[p++] - '0');
    if (p == q) return false;
  }
  if (p != w.size() || v[1] == 0) return false;
  m->m = uint8_t(std::min(v[0], 255));
  m->n = uint8_t(std::min(v[1], 255));
  m->k = uint8_t(std::min(v[2], 255));
  return true;
}

bool IsShape(const MatrixOp& m, int M, int N, int K) {
  return m.m == M && m.n == N && m.k == K;
}
// The three shapes of .f16, .bf16 and 8-bit integer wmma.
bool WmmaHalfShape(const MatrixOp& m) {
  return IsShape(m, 16, 16, 16) || IsShape(m, 32, 8, 16) || IsShape(m, 8, 32, 16);
}
bool IsInt8(Ty t) {
  return t == Ty::kS8 || t == Ty::kU8;
}

// mma.sync.aligned forms implemented (9.7.14.5.14): .row.col only, D and C of one type.
bool ValidMma(const MatrixOp& m) {
  if (!m.row_a || m.row_b || m.tc != m.td) return false;
  if (m.rnd != Rnd::kNone && !(m.ta == Ty::kF64 && m.rnd == Rnd::kRn)) return false;
  if (m.satfinite && !IsInt8(m.ta)) return false;
  switch (m.ta) {
    case Ty::kF16:
      return m.tb == Ty::kF16 && (IsShape(m, 16, 8, 8) || IsShape(m, 16, 8, 16)) &&
             (m.tc == Ty::kF16 || m.tc == Ty::kF32);
    case Ty::kBF16:
      return m.tb == Ty::kBF16 && (IsShape(m, 16, 8, 8) || IsShape(m, 16, 8, 16)) &&
             m.tc == Ty::kF32;
    case Ty::kTF32:
      return m.tb == Ty::kTF32 && (IsShape(m, 16, 8, 4) || IsShape(m, 16, 8, 8)) &&
             m.tc == Ty::kF32;
    case Ty::kF64:
      return m.tb == Ty::kF64 && IsShape(m, 8, 8, 4) && m.tc == Ty::kF64;
    case Ty::kS8:
    case Ty::kU8:
      return IsInt8(m.tb) && (IsShape(m, 16, 8, 16) || IsShape(m, 16, 8, 32)) && m.tc == Ty::kS32;
    default:
      return false;
  }
}

// Whether a wmma multiplicand of type t exists for the shape.
bool WmmaMultiplicand(const MatrixOp& m, Ty t) {
  if (t == Ty::kF16 || t == Ty::kBF16 || IsInt8(t)) return WmmaHalfShape(m);
  if (t == Ty::kTF32) return IsShape(m, 16, 16, 8);
  if (t == Ty::kF64) return IsShape(m, 8, 8, 4);
  return false;
}
// Whether a wmma accumulator of type t exists for the shape.
bool WmmaAccumulator(const MatrixOp& m, Ty t) {
  if (t == Ty::kF16 || t == Ty::kS32) return WmmaHalfShape(m);
  if (t == Ty::kF32) return WmmaHalfShape(m) || IsShape(m, 16, 16, 8);
  if (t == Ty::kF64) return IsShape(m, 8, 8, 4);
  return false;
}

// wmma.mma.sync.aligned forms implemented (9.7.14.4.5).
bool ValidWmmaMma(const MatrixOp& m) {
  if (!WmmaMultiplicand(m, m.ta) || (m.tb != m.ta && !(IsInt8(m.ta) && IsInt8(m.tb)))) return false;
  if (!WmmaAccumulator(m, m.tc) || !WmmaAccumulator(m, m.td)) return false;
  if (m.rnd != Rnd::kNone && !(m.ta == Ty::kF64 && m.rnd == Rnd::kRn)) return false;
  if (m.satfinite && !IsInt8(m.ta)) return false;
  switch (m.ta) {
    case Ty::kF16:
      return m.tc != Ty::kS32 && m.td != Ty::kS32;
    case Ty::kS8:
    case Ty::kU8:
      return m.tc == Ty::kS32 && m.td == Ty::kS32;
    case Ty::kF64:
      return m.tc == Ty::kF64 && m.td == Ty::kF64;
    default:  // .bf16, .tf32
      return m.tc == Ty::kF32 && m.td == Ty::kF32;
  }
}

}  // namespace

void DecodeMatrixForm(Op op, std::string_view mods, MatrixOp* m, Space* space) {
  *m = MatrixOp{};
  m->kind = op == Op::kLdmatrix    ? MatrixOp::kLdmatrix
            : op == Op::kMovmatrix ? MatrixOp::kMovmatrix
                                   : MatrixOp::kMma;
  bool ok = true, sync = false, wmma_kind = op != Op::kWmma, shape = false;
  int nlayouts = 0, ntypes = 0;
  Ty types[4] = {};
  while (!mods.empty()) {
    size_t dot = mods.find('.');
    std::string_view w = mods.substr(0, dot);
    mods = dot == std::string_view::npos ? std::string_view() : mods.substr(dot + 1);
    if (!wmma_kind) {  // wmma's first word says which instruction it is
      wmma_kind = true;
      if (w == "load")
        m->kind = MatrixOp::kWmmaLoad;
      else if (w == "store")
        m->kind = MatrixOp::kWmmaStore;
      else if (w == "mma")
        m->kind = MatrixOp::kWmmaMma;
      else
        ok = false;
      continue;
    }
    bool ldst = m->kind == MatrixOp::kWmmaLoad || m->kind == MatrixOp::kWmmaStore;
    if (w == "sync") {
      sync = true;
    } else if (w == "aligned") {
    } else if (ldst && m->frag == 0 && w.size() == 1 && w[0] >= 'a' && w[0] <= 'd') {
      m->frag = w[0];
    } else if (w == "row" || w == "col") {
      (nlayouts == 0 ? m->row_a : m->row_b) = w == "row";
      ok = ok && ++nlayouts <= 2;
    } else if (!shape && ParseShape(w, m)) {
      shape = true;
    } else if (auto t = MatrixType(w)) {
      if (ntypes < 4) types[ntypes] = *t;
      ok = ok && ++ntypes <= 4;
    } else if (w == "satfinite") {
      m->satfinite = true;
    } else if (w == "trans") {
      m->trans = true;
    } else if (w == "x1" || w == "x2" || w == "x4") {
      m->num = uint8_t(w[1] - '0');
    } else if (w == "global") {
      *space = Space::kGlobal;
    } else if (w == "shared" || w == "shared::cta") {
      *space = Space::kShared;
    } else if (w == "rn") {
      m->rnd = Rnd::kRn;
    } else {
      ok = false;  // .sp, .kind::*, .e4m3, .s4, .b1, .xor.popc, directed rounding, ...
    }
  }
  // Which type word is which: mma and 4-type wmma.mma name D, A, B, C; f16 wmma.mma names D, C.
  switch (m->kind) {
    case MatrixOp::kMma:
    case MatrixOp::kWmmaMma:
      if (ntypes == 4) {
        m->td = types[0], m->ta = types[1], m->tb = types[2], m->tc = types[3];
      } else if (ntypes == 2 && m->kind == MatrixOp::kWmmaMma) {
        m->td = types[0], m->ta = m->tb = Ty::kF16, m->tc = types[1];
      } else {
        ok = false;
      }
      break;
    default:
      ok = ok && ntypes == 1;
      m->ta = m->tb = m->tc = m->td = types[0];
      break;
  }
  if (ok && sync) {
    switch (m->kind) {
      case MatrixOp::kMma:
        ok = nlayouts == 2 && !m->trans && m->num == 0 && *space == Space::kGeneric && ValidMma(*m);
        m->na = uint8_t(m->m * m->k / 32 / PerReg(m->ta));
        m->nb = uint8_t(m->k * m->n / 32 / PerReg(m->tb));
        m->nc = uint8_t(m->m * m->n / 32 / PerReg(m->tc));
        m->nd = uint8_t(m->m * m->n / 32 / PerReg(m->td));
        break;
      case MatrixOp::kWmmaMma:
        ok = nlayouts == 2 && !m->trans && m->num == 0 && *space == Space::kGeneric &&
             ValidWmmaMma(*m);
        m->na = uint8_t(FragElems(*m, 'a', m->ta, true) / PerReg(m->ta));
        m->nb = uint8_t(FragElems(*m, 'b', m->tb, true) / PerReg(m->tb));
        m->nc = uint8_t(FragElems(*m, 'c', m->tc, true) / PerReg(m->tc));
        m->nd = uint8_t(FragElems(*m, 'd', m->td, true) / PerReg(m->td));
        break;
      case MatrixOp::kWmmaLoad:
      case MatrixOp::kWmmaStore: {
        bool load = m->kind == MatrixOp::kWmmaLoad;
        bool mul = m->frag == 'a' || m->frag == 'b';
        ok = nlayouts == 1 && !m->trans && m->num == 0 && m->rnd == Rnd::kNone && !m->satfinite &&
             (load ? m->frag != 'd' && m->frag != 0 : m->frag == 'd') &&
             (mul ? WmmaMultiplicand(*m, m->ta) : WmmaAccumulator(*m, m->ta));
        m->nd = uint8_t(FragElems(*m, m->frag, m->ta, true) / PerReg(m->ta));
        break;
      }
      case MatrixOp::kLdmatrix:
        ok = nlayouts == 0 && IsShape(*m, 8, 8, 0) && m->num != 0 && m->ta == Ty::kB16 &&
             m->rnd == Rnd::kNone && !m->satfinite &&
             (*space == Space::kShared || *space == Space::kGeneric);
        m->nd = m->num;
        break;
      case MatrixOp::kMovmatrix:
        ok = nlayouts == 0 && IsShape(*m, 8, 8, 0) && m->trans && m->num == 0 &&
             m->ta == Ty::kB16 && m->rnd == Rnd::kNone && !m->satfinite &&
             *space == Space::kGeneric;
        m->nd = m->na = 1;
        break;
    }
  }
  m->supported = ok && sync;
  if (!m->supported) m->nd = m->na = m->nb = m->nc = 0;
}

ExecFn SelectMatrix(const MatrixOp& m) {
  if (!m.supported) return nullptr;
  switch (m.kind) {
    case MatrixOp::kMma:
      return &Mma<false>;
    case MatrixOp::kWmmaMma:
      return &Mma<true>;
    case MatrixOp::kLdmatrix:
      return &Ldmatrix;
    case MatrixOp::kMovmatrix:
      return &Movmatrix;
    case MatrixOp::kWmmaLoad:
      return &WmmaLoad;
    case MatrixOp::kWmmaStore:
      return &WmmaStore;
  }
  return nullptr;
}

// The decoder selects these rows' exec functions with SelectMatrix (their form lives in
// ProgramImpl::matrix, out of an Inst's reach); the row functions are never asked.
ExecFn select_Mma(Inst&) {
  return nullptr;
}
ExecFn select_Ldmatrix(Inst&) {
  return nullptr;
}
ExecFn select_Movmatrix(Inst&) {
  return nullptr;
}
ExecFn select_Wmma(Inst&) {
  return nullptr;
}

}  // namespace remora::emu::ptx
