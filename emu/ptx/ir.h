// emu/ptx/ir.h - the decoded IR: instructions with resolved operands, functions, the program.
//
// The parser turns PTX text into one code array per Program. Every operand is resolved at decode:
// a register is a slot index into the executing frame (one 64-bit slot per register, 32 lanes
// wide), an immediate is a slot of the read-only constant pool (kConstSlot set), a label is a
// code index, a symbol is a constant, a global index or a frame offset.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/ptx/device_runtime.h"
#include "emu/ptx/ptx.h"

namespace remora::emu::ptx {

enum class Op : uint16_t {
  kInvalid = 0,
#define PTX_OP(id, Name, mnemonic, shape, section) k##Name = id,
#include "emu/ptx/ops.def"
};

enum class Shape : uint8_t { None, D, DA, DAB, DABC, DABCE, Mem, Var };

// Returns the base mnemonic of `op` ("add"), or "?" for an unknown value.
const char* OpName(Op op);

// Operand and register types. Size and kind are derived by helpers below.
enum class Ty : uint8_t {
  kNone,
  kPred,
  kB8,
  kB16,
  kB32,
  kB64,
  kB128,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF16x2,
  kBF16,
  kBF16x2,
  kF32,
  kF64,
  kTF32,   // an f32 whose low 13 mantissa bits are ignored (cvt.rna.tf32.f32, mma/wmma .tf32)
  kU16x2,  // two 16-bit integers in a 32-bit register, element 0 in the low half (add/min/max)
  kS16x2,
  kE4m3x2,  // two 8-bit floats in a .b16 register, element 0 in the low byte (cvt only)
  kE5m2x2,
};
const char* TyName(Ty t);
inline int TySize(Ty t) {
  switch (t) {
    case Ty::kPred:
      return 1;
    case Ty::kB8:
    case Ty::kU8:
    case Ty::kS8:
      return 1;
    case Ty::kB16:
    case Ty::kU16:
    case Ty::kS16:
    case Ty::kF16:
    case Ty::kBF16:
    case Ty::kE4m3x2:
    case Ty::kE5m2x2:
      return 2;
    case Ty::kB32:
    case Ty::kU32:
    case Ty::kS32:
    case Ty::kF32:
    case Ty::kF16x2:
    case Ty::kBF16x2:
    case Ty::kTF32:
    case Ty::kU16x2:
    case Ty::kS16x2:
      return 4;
    case Ty::kB64:
    case Ty::kU64:
    case Ty::kS64:
    case Ty::kF64:
      return 8;
    case Ty::kB128:
      return 16;
    default:
      return 0;
  }
}
inline bool TyIsSigned(Ty t) {
  return t == Ty::kS8 || t == Ty::kS16 || t == Ty::kS32 || t == Ty::kS64;
}
inline bool TyIsFloat(Ty t) {
  return t == Ty::kF16 || t == Ty::kF32 || t == Ty::kF64 || t == Ty::kBF16 || t == Ty::kF16x2 ||
         t == Ty::kBF16x2;
}

enum class Space : uint8_t { kGeneric, kGlobal, kShared, kLocal, kConst, kParam };

// Rounding modifier; the *i forms round to an integral value, kRna is nearest with ties away
// from zero (cvt to .tf32 only).
enum class Rnd : uint8_t { kNone, kRn, kRz, kRm, kRp, kRni, kRzi, kRmi, kRpi, kRna };

enum class Cmp : uint8_t {
  kNone,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kLo,
  kLs,
  kHi,
  kHs,
  kEqu,
  kNeu,
  kLtu,
  kLeu,
  kGtu,
  kGeu,
  kNum,
  kNan,
};

// The operation-selecting word of atom/red/shfl/vote/redux/bar.red/setp combine/match.
enum class Sub : uint8_t {
  kNone,
  kAdd,
  kInc,
  kDec,
  kCas,
  kExch,
  kMin,
  kMax,
  kAnd,
  kOr,
  kXor,
  kUp,
  kDown,
  kBfly,
  kIdx,
  kAll,
  kAny,
  kUni,
  kBallot,
  kPopc,
  kLo,
  kHi,
  kWide,
  kL,
  kR,
  kNaN,        // min/max.NaN: a NaN operand gives the canonical NaN
  kSatfinite,  // cvt.satfinite: beyond the largest finite value, that value (NaN stays NaN)
  // testp's tests.
  kFinite,
  kInfinite,
  kNumber,
  kNotANumber,
  kNormal,
  kSubnormal,
  // prmt's modes: c's two low bits pick a window, a byte or an edge of {b, a}.
  kF4e,
  kB4e,
  kRc8,
  kEcl,
  kEcr,
  kRc16,
};

// Instruction flags.
enum : uint16_t {
  kFlagFtz = 1,
  kFlagSat = 2,
  kFlagApprox = 4,
  kFlagFull = 8,
  kFlagGuardNeg = 16,
  kFlagTo = 32,
  kFlagWrap = 64,
  kFlagClamp = 128,
  kFlagShiftAmt = 256,
  kFlagUni = 512,
  kFlagVolatile = 1024,
  kFlagPredOut = 2048,
  kFlagArrive = 4096,
  kFlagSecondDest = 8192,
  kFlagCarryOut = 16384,  // .cc: write the per-lane carry flag (Warp::carry)
  kFlagRelu = 32768,      // .relu: negative results become +0 (fma/cvt to half types)
};

inline constexpr uint32_t kConstSlot = 1u << 31;  // operand refers to the constant pool
inline constexpr uint32_t kNoReg = 0xffffffffu;

// How the uniform part of an address or symbol value is found at run time.
enum class SymKind : uint8_t {
  kNone,    // just the immediate `off`
  kGlobal,  // launch's address of global `sym`, plus `off`
  kFrame,   // the executing frame's local base, plus `off` (depots, .func params, call temps)
  kShared,  // parse time only: static .shared variable `sym`; link adds its offset to `off`
};

// Special registers (mov from %tid.x and friends).
enum class SReg : uint8_t {
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kLaneid,
  kWarpid,
  kNwarpid,
  kSmid,
  kNsmid,
  kGridid,
  kLanemaskEq,
  kLanemaskLt,
  kLanemaskLe,
  kLanemaskGt,
  kLanemaskGe,
  kClock,
  kClock64,
  kGlobaltimer,
  kEnvreg,           // %envreg<n> the driver leaves 0
  kGridWorkspaceHi,  // %envreg1: LaunchConfig::grid_workspace >> 32
  kGridWorkspaceLo,  // %envreg2: its low 32 bits
  kDynSmem,
  kTotalSmem,
  kReservedSmemBegin,  // %reserved_smem_offset_begin (and _0); + kReservedSmemBytes: _end, _cap
  kReservedSmemEnd,
  kReservedSmem1,  // %reserved_smem_offset_1: the second half of the reserved area
  kClockHi,
  kGlobaltimerLo,
  kGlobaltimerHi,
  kZero,  // registers whose value is 0 here: %pm*, cluster ranks/ids in a 1-CTA cluster, ...
  kOne,   // registers whose value is 1 here: cluster sizes (every CTA is its own cluster)
};

struct Exec;
struct Inst;
// Executes one decoded instruction over x.mask; returns an ExecResult.
using ExecFn = int (*)(Exec& x, const Inst& in);
// Runs one instruction over the warps xs[0..n) of a block that run together, one after another;
// returns the first result other than kNext with *at its warp (exec.h's RunWarps).
using WarpsFn = int (*)(Exec* xs, uint32_t n, const Inst& in, uint32_t* at);
enum ExecResult : int { kNext = 0, kJumped = 1, kRepick = 2, kFault = 3 };

// What an instruction does to memory the block's other warps see (Inst::visible); the values
// index launch.cc's limits.
enum class Visible : uint8_t { kNo, kReads, kWrites };

struct Inst {
  ExecFn fn = nullptr;
  ExecFn inner = nullptr;  // the wrapped function of a rounding-mode wrapper
  uint32_t d[4] = {kNoReg, kNoReg, kNoReg, kNoReg};          // destination slots
  uint32_t a[5] = {kNoReg, kNoReg, kNoReg, kNoReg, kNoReg};  // source slots
  int64_t off = 0;                                           // address/symbol immediate
  uint32_t base = kNoReg;                                    // address base register slot
  uint32_t sym = 0;                                          // global index for SymKind::kGlobal
  uint32_t target = 0;      // branch pc, call site, cp/mbarrier AsyncForm or video.h form
  uint32_t guard = kNoReg;  // predicate slot
  uint32_t line = 0;        // PTX source line, for errors
  uint16_t flags = 0;
  Op op = Op::kInvalid;
  Ty ty = Ty::kNone;   // main type
  Ty ty2 = Ty::kNone;  // source type (cvt, set, slct)
  Space space = Space::kGeneric;
  SymKind symkind = SymKind::kNone;
  Rnd rnd = Rnd::kNone;
  Cmp cmp = Cmp::kNone;
  Sub sub = Sub::kNone;   // atom op, shfl mode, ...
  Sub sub2 = Sub::kNone;  // setp/bar.red combining op, mul mode
  uint8_t nd = 0, na = 0;
  uint8_t vec = 1;      // .v2/.v4 element count
  uint8_t src_neg = 0;  // bit i: source a[i] is a negated predicate
  uint8_t sreg = 0;     // SReg for mov from a special register
  // Whether it reads or writes memory the block's other warps see (global, shared or generic
  // addresses): while the block's warps run apart, that paces its warp (launch.cc).
  Visible visible = Visible::kNo;
};

// The register slots `in` reads as operands (its sources and address base; not constants, not
// its guard) and those it writes: what launch.cc's plan and regalloc.cc's liveness both see.
template <class F>
void ForOperandReads(const Inst& in, F&& f) {
  for (uint32_t a : in.a)
    if (a != kNoReg && !(a & kConstSlot)) f(a);
  if (in.base != kNoReg) f(in.base);
}
template <class F>
void ForOperandWrites(const Inst& in, F&& f) {
  for (uint32_t d : in.d)
    if (d != kNoReg) f(d);
}

// How the warps of a converged block that run together (launch.cc's Lockstep) take one
// instruction, worked out once at load (PlanTogether): its kind and the registers it touches.
struct Together {
  enum Kind : uint8_t {
    kEach,     // each warp runs it in turn over its lanes (no effect beyond its own lanes' state)
    kBarrier,  // a plain CTA barrier: nothing to wait for if every thread reaches it at once
    kBranch,   // a branch: taken together if every warp's guard agrees
    kLeave,    // anything else: the warps go back to running one at a time
  };
  Kind kind = kLeave;
  bool once = false;  // unguarded, computes the same value in every warp from its operands alone
  uint8_t nread = 0, nwrite = 0;
  uint8_t bar = 0;         // kBarrier: the barrier
  uint32_t count = 0;      // kBarrier: the threads it waits for (0: every thread)
  uint32_t read[6];        // register slots read: sources and the address base, not constants
  uint32_t write[4];       // register slots written
  WarpsFn each = nullptr;  // kEach: the instruction's function over several warps, if it has one
  uint64_t touch_lo = 0;   // bit s: slot s < 64 is read or written
  bool touch_hi = false;   // a slot of 64 or more is read or written
};

// A call site: where the caller's .param temporaries go in the callee's frame.
// An indirect call (`call (r), %rd, (a), prototype;`) has callee kNoReg: its copies hold the
// caller's offsets and the prototype's sizes; the callee's offsets are taken when it runs.
struct CallSite {
  uint32_t callee = 0;  // function index
  bool indirect = false;
  struct Copy {
    uint32_t from, to, size;  // frame offsets: caller temp -> callee param (or back for returns)
  };
  std::vector<Copy> args;  // caller frame -> callee frame
  std::vector<Copy> rets;  // callee frame -> caller frame
};

// A warp-level matrix instruction (mma, ldmatrix, movmatrix, wmma.load/store/mma), decoded once
// at load: its form and its register operands, which outnumber Inst's d[]/a[] slots. The Inst
// names it by index (Inst::target into ProgramImpl::matrix); wmma's address is the Inst's own
// (base, off, symkind, space) and its stride is Inst::a[0]. exec_mma.cc executes it.
struct MatrixOp {
  enum Kind : uint8_t { kMma, kLdmatrix, kMovmatrix, kWmmaLoad, kWmmaStore, kWmmaMma };
  static constexpr int kMaxRegs = 8;
  Kind kind = kMma;
  bool supported = true;  // false: a form decoded but not implemented (refused when reached)
  bool row_a = true;      // .row layout of A (mma/wmma.mma), or of the wmma.load/store matrix
  bool row_b = false;     // .row layout of B (mma/wmma.mma)
  bool satfinite = false;
  bool trans = false;  // ldmatrix/movmatrix .trans
  char frag = 0;       // wmma.load/store: 'a', 'b', 'c' or 'd'
  uint8_t m = 0, n = 0, k = 0;
  uint8_t num = 0;                                                    // ldmatrix .x1/.x2/.x4
  Ty ta = Ty::kNone, tb = Ty::kNone, tc = Ty::kNone, td = Ty::kNone;  // element types
  Rnd rnd = Rnd::kNone;
  uint8_t nd = 0, na = 0, nb = 0, nc = 0;  // register counts; wmma.load/store use d only
  uint32_t d[kMaxRegs], a[kMaxRegs], b[kMaxRegs], c[kMaxRegs];  // register slots
};

// kSetConditional: cudaGraphSetConditional, a store to the handle's word. kUnserved: a function
// of CUDA's that Remora does not serve (the rest of device-side graph control): the module loads,
// and a thread that calls it fails its launch, naming it.
enum class Builtin : uint8_t {
  kNone,
  kVprintf,
  kAssertfail,
  kMalloc,
  kFree,
  kDeviceRuntime,
  kSetConditional,
  kUnserved
};

struct Function {
  std::string name;
  bool is_entry = false;
  bool defined = false;
  Builtin builtin = Builtin::kNone;
  RuntimeCall runtime_call = RuntimeCall::kNone;  // which, for Builtin::kDeviceRuntime
  uint32_t entry_pc = 0;
  uint32_t nregs = 0;        // register slots of one frame
  uint32_t frame_bytes = 0;  // local frame: params, returns, depot, call temporaries
  uint32_t depot_bytes = 0;
  struct Param {
    std::string name;
    uint32_t offset, size, align;  // offset: param buffer (entry) or frame (func)
  };
  std::vector<Param> params;
  std::vector<Param> rets;
  uint32_t maxntid[3] = {0, 0, 0};
  uint32_t cluster[3] = {0, 0, 0};  // .reqnctapercluster (0: none asked)
  bool explicit_cluster = false;    // .explicitcluster: every launch must name a cluster shape
  uint32_t kernel_index = 0;
};

struct Global {
  std::string name;
  Space space = Space::kGlobal;
  uint64_t size = 0;
  uint32_t align = 1;
  bool defined = false;
  bool managed = false;  // .attribute(.managed)
  std::vector<std::byte> init;
  struct Reloc {
    uint64_t at;      // byte offset inside this global
    uint32_t target;  // global index whose address is stored there
    int64_t addend;
    int size;  // 4 or 8
  };
  std::vector<Reloc> relocs;
};

class ProgramImpl {
 public:
  std::vector<Inst> code;
  std::vector<Together> together;      // one per code entry
  std::vector<std::string> code_text;  // mnemonic as written ("mad.hi.sat.s32"), one per code entry
  std::vector<uint64_t> consts;        // constant pool: nconst * 32 lanes
  std::vector<Function> funcs;
  std::vector<CallSite> calls;
  std::vector<MatrixOp> matrix;  // operands of the warp-level matrix instructions
  // brx.idx's target lists (.branchtargets), as pcs; an instruction's in.target indexes it.
  std::vector<std::vector<uint32_t>> branch_tables;
  std::vector<Global> globals;  // .global and .const only
  std::vector<KernelInfo> kernels;
  std::vector<GlobalInfo> global_info;
  std::vector<uint32_t> kernel_func;  // kernel index -> function index
  std::unordered_map<std::string, uint32_t> func_by_name;
  std::unordered_map<std::string, uint32_t> global_by_name;
  uint32_t dyn_shared_align = 16;
  uint32_t func_tag = 0;  // this program's part of its functions' addresses (FuncAddress)
  bool uses_device_runtime = false;  // calls CUDA's device runtime (device_runtime.h)
  bool uses_alloca = false;          // allocates on a lane's stack (alloca, exec_ctl.cc)
  // Default storage for globals when a launch supplies no addresses (tests, tools).
  std::vector<std::vector<uint64_t>> own_storage;
  std::vector<uint64_t> own_addresses;
  // Global addresses whose pointer initialisers were last written (Launch patches on change).
  mutable std::mutex reloc_mu;
  mutable std::vector<uint64_t> reloc_applied;
};

// Device addresses of .func symbols (function pointers, vtable entries): a window above the
// shared/local/param ones, no host address, so a load or store through one faults. The tag
// (24 bits of a per-program counter) keeps a pointer taken in one program from calling another
// program's function of the same index.
inline constexpr uint64_t kFuncWindow = 0x0004000000000000ull;
inline constexpr uint32_t kMaxFuncs = 1u << 20;
inline uint64_t FuncAddress(const ProgramImpl& P, uint32_t func) {
  return kFuncWindow | uint64_t(P.func_tag & 0xffffffu) << 24 | uint64_t(func) << 4;
}
// The function index `addr` names, or kNoReg if it is not the address of a defined .func.
inline uint32_t FuncAtAddress(const ProgramImpl& P, uint64_t addr) {
  if ((addr & 0xffff00000000000full) != kFuncWindow) return kNoReg;
  if ((addr >> 24 & 0xffffffu) != (P.func_tag & 0xffffffu)) return kNoReg;
  uint32_t f = uint32_t(addr >> 4 & (kMaxFuncs - 1));
  if (f >= P.funcs.size() || !P.funcs[f].defined || P.funcs[f].is_entry) return kNoReg;
  return f;
}
// The kernel index `addr` names (a kernel's address taken in device code, as a device-side
// launch passes it), or kNoReg.
inline uint32_t KernelAtAddress(const ProgramImpl& P, uint64_t addr) {
  if ((addr & 0xffff00000000000full) != kFuncWindow) return kNoReg;
  if ((addr >> 24 & 0xffffffu) != (P.func_tag & 0xffffffu)) return kNoReg;
  uint32_t f = uint32_t(addr >> 4 & (kMaxFuncs - 1));
  if (f >= P.funcs.size() || !P.funcs[f].defined || !P.funcs[f].is_entry) return kNoReg;
  return P.funcs[f].kernel_index;
}

}  // namespace remora::emu::ptx
