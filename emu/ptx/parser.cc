// emu/ptx/parser.cc - PTX text to the decoded IR: directives, declarations, instructions, linking.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "emu/ptx/async.h"
#include "emu/ptx/exec.h"
#include "emu/ptx/ir.h"
#include "emu/ptx/lexer.h"
#include "emu/ptx/matrix.h"
#include "emu/ptx/texture.h"
#include "emu/ptx/video.h"

namespace remora::emu::ptx {
namespace {

struct OpRow {
  Op op;
  const char* mnemonic;
  Shape shape;
};
constexpr OpRow kOpRows[] = {
#define PTX_OP(id, Name, mnemonic, shape, section) {Op::k##Name, mnemonic, Shape::shape},
#include "emu/ptx/ops.def"
};

using SelectFn = ExecFn (*)(Inst&);
struct SelectRow {
  Op op;
  SelectFn fn;
};
constexpr SelectRow kSelectRows[] = {
#define PTX_OP(id, Name, mnemonic, shape, section) {Op::k##Name, &select_##Name},
#include "emu/ptx/ops.def"
};

const OpRow* FindOp(std::string_view m) {
  for (const OpRow& r : kOpRows)
    if (m == r.mnemonic) return &r;
  return nullptr;
}

SelectFn FindSelect(Op op) {
  for (const SelectRow& r : kSelectRows)
    if (r.op == op) return r.fn;
  return nullptr;
}

// ---- modifiers ----
enum class ModKind : uint8_t { kType, kRnd, kFlag, kSpace, kCmp, kSub, kVec, kIgnore, kSync };
struct ModRow {
  const char* text;
  ModKind kind;
  uint8_t value;
  Cmp cmp_alt = Cmp::kNone;  // meaning inside setp/set
};
constexpr ModRow kMods[] = {
    {"pred", ModKind::kType, uint8_t(Ty::kPred)},
    {"b8", ModKind::kType, uint8_t(Ty::kB8)},
    {"b16", ModKind::kType, uint8_t(Ty::kB16)},
    {"b32", ModKind::kType, uint8_t(Ty::kB32)},
    {"b64", ModKind::kType, uint8_t(Ty::kB64)},
    {"b128", ModKind::kType, uint8_t(Ty::kB128)},
    {"u8", ModKind::kType, uint8_t(Ty::kU8)},
    {"u16", ModKind::kType, uint8_t(Ty::kU16)},
    {"u32", ModKind::kType, uint8_t(Ty::kU32)},
    {"u64", ModKind::kType, uint8_t(Ty::kU64)},
    {"s8", ModKind::kType, uint8_t(Ty::kS8)},
    {"s16", ModKind::kType, uint8_t(Ty::kS16)},
    {"s32", ModKind::kType, uint8_t(Ty::kS32)},
    {"s64", ModKind::kType, uint8_t(Ty::kS64)},
    {"f16", ModKind::kType, uint8_t(Ty::kF16)},
    {"f16x2", ModKind::kType, uint8_t(Ty::kF16x2)},
    {"bf16", ModKind::kType, uint8_t(Ty::kBF16)},
    {"bf16x2", ModKind::kType, uint8_t(Ty::kBF16x2)},
    {"f32", ModKind::kType, uint8_t(Ty::kF32)},
    {"f64", ModKind::kType, uint8_t(Ty::kF64)},
    {"tf32", ModKind::kType, uint8_t(Ty::kTF32)},
    {"u16x2", ModKind::kType, uint8_t(Ty::kU16x2)},
    {"s16x2", ModKind::kType, uint8_t(Ty::kS16x2)},
    {"e4m3x2", ModKind::kType, uint8_t(Ty::kE4m3x2)},
    {"e5m2x2", ModKind::kType, uint8_t(Ty::kE5m2x2)},
    {"satfinite", ModKind::kSub, uint8_t(Sub::kSatfinite)},
    {"rn", ModKind::kRnd, uint8_t(Rnd::kRn)},
    {"rz", ModKind::kRnd, uint8_t(Rnd::kRz)},
    {"rm", ModKind::kRnd, uint8_t(Rnd::kRm)},
    {"rp", ModKind::kRnd, uint8_t(Rnd::kRp)},
    {"rni", ModKind::kRnd, uint8_t(Rnd::kRni)},
    {"rzi", ModKind::kRnd, uint8_t(Rnd::kRzi)},
    {"rmi", ModKind::kRnd, uint8_t(Rnd::kRmi)},
    {"rpi", ModKind::kRnd, uint8_t(Rnd::kRpi)},
    {"rna", ModKind::kRnd, uint8_t(Rnd::kRna)},
    {"ftz", ModKind::kFlag, 0},
    {"sat", ModKind::kFlag, 1},
    {"approx", ModKind::kFlag, 2},
    {"full", ModKind::kFlag, 3},
    {"to", ModKind::kFlag, 5},
    {"wrap", ModKind::kFlag, 6},
    {"clamp", ModKind::kFlag, 7},
    {"shiftamt", ModKind::kFlag, 8},
    {"volatile", ModKind::kFlag, 10},
    {"arrive", ModKind::kFlag, 12},
    {"cc", ModKind::kFlag, 14},
    {"relu", ModKind::kFlag, 15},
    {"global", ModKind::kSpace, uint8_t(Space::kGlobal)},
    {"shared", ModKind::kSpace, uint8_t(Space::kShared)},
    {"shared::cta", ModKind::kSpace, uint8_t(Space::kShared)},
    {"local", ModKind::kSpace, uint8_t(Space::kLocal)},
    {"const", ModKind::kSpace, uint8_t(Space::kConst)},
    {"param", ModKind::kSpace, uint8_t(Space::kParam)},
    {"eq", ModKind::kCmp, uint8_t(Cmp::kEq)},
    {"ne", ModKind::kCmp, uint8_t(Cmp::kNe)},
    {"lt", ModKind::kCmp, uint8_t(Cmp::kLt)},
    {"le", ModKind::kCmp, uint8_t(Cmp::kLe)},
    {"gt", ModKind::kCmp, uint8_t(Cmp::kGt)},
    {"ge", ModKind::kCmp, uint8_t(Cmp::kGe)},
    {"ls", ModKind::kCmp, uint8_t(Cmp::kLs)},
    {"hs", ModKind::kCmp, uint8_t(Cmp::kHs)},
    {"equ", ModKind::kCmp, uint8_t(Cmp::kEqu)},
    {"neu", ModKind::kCmp, uint8_t(Cmp::kNeu)},
    {"ltu", ModKind::kCmp, uint8_t(Cmp::kLtu)},
    {"leu", ModKind::kCmp, uint8_t(Cmp::kLeu)},
    {"gtu", ModKind::kCmp, uint8_t(Cmp::kGtu)},
    {"geu", ModKind::kCmp, uint8_t(Cmp::kGeu)},
    {"num", ModKind::kCmp, uint8_t(Cmp::kNum)},
    {"nan", ModKind::kCmp, uint8_t(Cmp::kNan)},
    {"lo", ModKind::kSub, uint8_t(Sub::kLo), Cmp::kLo},
    {"hi", ModKind::kSub, uint8_t(Sub::kHi), Cmp::kHi},
    {"wide", ModKind::kSub, uint8_t(Sub::kWide)},
    {"NaN", ModKind::kSub, uint8_t(Sub::kNaN)},
    {"f4e", ModKind::kSub, uint8_t(Sub::kF4e)},
    {"b4e", ModKind::kSub, uint8_t(Sub::kB4e)},
    {"rc8", ModKind::kSub, uint8_t(Sub::kRc8)},
    {"ecl", ModKind::kSub, uint8_t(Sub::kEcl)},
    {"ecr", ModKind::kSub, uint8_t(Sub::kEcr)},
    {"rc16", ModKind::kSub, uint8_t(Sub::kRc16)},
    {"add", ModKind::kSub, uint8_t(Sub::kAdd)},
    {"inc", ModKind::kSub, uint8_t(Sub::kInc)},
    {"dec", ModKind::kSub, uint8_t(Sub::kDec)},
    {"cas", ModKind::kSub, uint8_t(Sub::kCas)},
    {"exch", ModKind::kSub, uint8_t(Sub::kExch)},
    {"min", ModKind::kSub, uint8_t(Sub::kMin)},
    {"max", ModKind::kSub, uint8_t(Sub::kMax)},
    {"and", ModKind::kSub, uint8_t(Sub::kAnd)},
    {"or", ModKind::kSub, uint8_t(Sub::kOr)},
    {"xor", ModKind::kSub, uint8_t(Sub::kXor)},
    {"up", ModKind::kSub, uint8_t(Sub::kUp)},
    {"down", ModKind::kSub, uint8_t(Sub::kDown)},
    {"bfly", ModKind::kSub, uint8_t(Sub::kBfly)},
    {"idx", ModKind::kSub, uint8_t(Sub::kIdx)},
    {"all", ModKind::kSub, uint8_t(Sub::kAll)},
    {"any", ModKind::kSub, uint8_t(Sub::kAny)},
    {"uni", ModKind::kSub, uint8_t(Sub::kUni)},
    {"ballot", ModKind::kSub, uint8_t(Sub::kBallot)},
    {"popc", ModKind::kSub, uint8_t(Sub::kPopc)},
    {"finite", ModKind::kSub, uint8_t(Sub::kFinite)},
    {"infinite", ModKind::kSub, uint8_t(Sub::kInfinite)},
    {"number", ModKind::kSub, uint8_t(Sub::kNumber)},
    {"notanumber", ModKind::kSub, uint8_t(Sub::kNotANumber)},
    {"normal", ModKind::kSub, uint8_t(Sub::kNormal)},
    {"subnormal", ModKind::kSub, uint8_t(Sub::kSubnormal)},
    {"l", ModKind::kSub, uint8_t(Sub::kL)},
    {"r", ModKind::kSub, uint8_t(Sub::kR)},
    {"v2", ModKind::kVec, 2},
    {"v4", ModKind::kVec, 4},
    {"sync", ModKind::kSync, 0},
    {"wait", ModKind::kSync, 0},  // barrier.cluster.wait
    {"aligned", ModKind::kIgnore, 0},
    {"warp", ModKind::kSync, 1},
    {"red", ModKind::kSync, 2},
    // Ordering, scope and cache hints: the interpreter is at least as strong as any of them.
    {"nc", ModKind::kIgnore, 0},
    {"weak", ModKind::kIgnore, 0},
    {"relaxed", ModKind::kIgnore, 0},
    {"acquire", ModKind::kIgnore, 0},
    {"release", ModKind::kIgnore, 0},
    {"acq_rel", ModKind::kIgnore, 0},
    {"sc", ModKind::kIgnore, 0},
    {"cta", ModKind::kIgnore, 0},
    {"gpu", ModKind::kIgnore, 0},
    {"sys", ModKind::kIgnore, 0},
    {"gl", ModKind::kIgnore, 0},
    {"cluster", ModKind::kIgnore, 0},
    {"ca", ModKind::kIgnore, 0},
    {"cg", ModKind::kIgnore, 0},
    {"cs", ModKind::kIgnore, 0},
    {"lu", ModKind::kIgnore, 0},
    {"cv", ModKind::kIgnore, 0},
    {"wb", ModKind::kIgnore, 0},
    {"wt", ModKind::kIgnore, 0},
    {"noftz", ModKind::kIgnore, 0},
    {"L1::no_allocate", ModKind::kIgnore, 0},
    {"L1::evict_last", ModKind::kIgnore, 0},
    {"L1::evict_first", ModKind::kIgnore, 0},
    {"L1::evict_normal", ModKind::kIgnore, 0},
    {"L1::evict_unchanged", ModKind::kIgnore, 0},
    {"L2::64B", ModKind::kIgnore, 0},
    {"L2::128B", ModKind::kIgnore, 0},
    {"L2::256B", ModKind::kIgnore, 0},
    // Cache policies (createpolicy, ld/st/atom/red .L2::cache_hint, prefetch): hints only.
    {"L2::cache_hint", ModKind::kIgnore, 0},
    {"L2::evict_last", ModKind::kIgnore, 0},
    {"L2::evict_first", ModKind::kIgnore, 0},
    {"L2::evict_normal", ModKind::kIgnore, 0},
    {"L2::evict_unchanged", ModKind::kIgnore, 0},
    {"fractional", ModKind::kIgnore, 0},
    {"range", ModKind::kIgnore, 0},
    {"L2", ModKind::kIgnore, 0},
    {"L1", ModKind::kIgnore, 0},
};

const ModRow* FindMod(std::string_view m) {
  for (const ModRow& r : kMods)
    if (m == r.text) return &r;
  return nullptr;
}

// ---- raw operands ----
struct RawOp {
  enum Kind : uint8_t { kReg, kImm, kSym, kAddr, kVec, kSReg, kSink, kList } kind = kImm;
  uint32_t reg = kNoReg;
  uint32_t reg2 = kNoReg;  // second destination after '|'
  int64_t imm = 0;
  uint8_t fimm = 0;    // 0 integer, 4 = 0f literal (f32 bits), 8 = 0d literal or decimal float
  bool neg = false;    // !p: a predicate's negation
  bool minus = false;  // -%r: a register negated (vmad's operands alone)
  bool has_base = false;
  bool has_coords = false;  // [handle, {coordinates}] of a texture or surface instruction: elems
  std::string sym;
  std::string sel;  // a register's selector suffix without the dot ("b3210": video instructions)
  std::vector<RawOp> elems;
  SReg sreg = SReg::kTidX;
};

struct FrameSym {
  std::string name;
  uint32_t offset, size;
};

struct PendingCall {
  uint32_t site;
  std::string callee;
  std::vector<FrameSym> args, rets;
  uint32_t line;
  int module;
};

struct ModuleScope {
  std::unordered_map<std::string, uint32_t> globals, funcs;
  std::unordered_map<std::string, uint32_t> shared;  // name -> index into Parser::shared_vars_
  std::string dyn_shared;                            // name of the extern dynamic shared array
  std::unordered_map<std::string, bool> dyn_names;
};

// What ptxas accepts: statically allocated shared memory is limited to 48 KiB per kernel.
constexpr uint64_t kMaxStaticShared = 48 * 1024;
// The emulator's bounds on what a module declares: one variable, a thread's frame
// (a GPU's local memory per thread is 512 KiB) and the program's static .global and
// .const data, which the loader materialises (a real GPU's .const bank is 64 KiB).
constexpr uint64_t kMaxDeclBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxFrameBytes = 512 * 1024;
constexpr uint64_t kMaxStaticGlobal = uint64_t{256} << 20;
// Virtual registers of one function (nvcc's largest seen: a few thousand); each is a slot
// of every thread's register file.
constexpr uint32_t kMaxRegisters = 65536;

uint32_t AlignUp(uint32_t v, uint32_t a) {
  return a ? (v + a - 1) / a * a : v;
}

class Parser {
 public:
  Parser(ProgramImpl& p) : P(p) {}

  Status ParseModule(std::string_view src, int module);
  Status Link();

 private:
  // Token helpers.
  const Token& Peek(size_t k = 0) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }
  const Token& Next() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }
  bool IsP(std::string_view p, size_t k = 0) const {
    return Peek(k).kind == Token::kPunct && Peek(k).text == p;
  }
  bool IsW(std::string_view w, size_t k = 0) const {
    return Peek(k).kind == Token::kIdent && Peek(k).text == w;
  }
  // `.reg`, or `.reg.<type>` written as one word (ptxas takes both; CUDA's half and bfloat16
  // headers write the second in inline assembly).
  bool IsRegDirective() const {
    return IsW(".reg") || (Peek().kind == Token::kIdent && Peek().text.starts_with(".reg."));
  }
  // Names the instruction being decoded (its tokens are all read by then), else the token at
  // hand.
  Status Err(const std::string& what) const {
    const Token& t = Peek();
    const bool decoding = decoding_ != nullptr;
    return Error(
        err::kInvalidPtx,
        "PTX module " + std::to_string(module_) + " line " +
            std::to_string(decoding ? decoding_line_ : t.line) + ": " + what +
            (decoding ? " (in '" + *decoding_ + "')" : " (at '" + std::string(t.text) + "')"));
  }
  Status Expect(std::string_view p) {
    if (!IsP(p)) return Err("expected '" + std::string(p) + "'");
    Next();
    return OkStatus();
  }
  void SkipLine() {
    uint32_t line = Peek().line;
    while (Peek().kind != Token::kEnd && Peek().line == line) Next();
  }
  Status SkipBalanced();
  Result<int64_t> ParseInt();

  // Declarations.
  struct VarDecl {
    Space space = Space::kGlobal;
    uint32_t align = 0;
    Ty ty = Ty::kNone;
    std::string name;
    uint64_t count = 1;
    bool is_array = false, unsized = false;
    bool managed = false;  // .attribute(.managed): a __managed__ variable
    int vec = 1;
  };
  Status ParseVarDecl(VarDecl* out);
  Status ParseModuleVar(bool is_extern, bool is_visible);
  Status ParseInitializer(Global& g, Ty elem, uint32_t elem_size);
  Status ParseFunction(bool is_entry, bool is_extern, bool is_visible);
  Status ParseParamList(Function& f, std::vector<Function::Param>& out, bool in_frame);
  // The next word's directive when it is `directive`, `.local` or `.param` say, alone or with
  // its type joined (.param.f32 x), as ptxas takes both: consumes the word and sets d->ty from
  // a joined type. False (nothing consumed) for another word; an error for a joined non-type.
  Result<bool> TakeTypedDirective(std::string_view directive, VarDecl* d);
  Status ParseBody(Function& f, uint32_t fidx);
  Status ParseRegDecl();
  // Maps register `name`, declared in the innermost open block, to a slot: a name an enclosing
  // block declared gets a slot of its own, the outer one restored when the block closes (PTX
  // scoping); a name redeclared where its earlier declaration is closed keeps its slot.
  Result<uint32_t> DeclareReg(const std::string& name);
  void OpenBlock();
  void CloseBlock();
  // Records the width of register `slot` as declared (the latest declaration wins: inline
  // asm scopes reuse names).
  void NoteWidth(uint32_t slot, Ty ty) {
    if (slot_bytes_.size() <= slot) slot_bytes_.resize(slot + 1, 0);
    slot_bytes_[slot] = uint8_t(TySize(ty));
  }
  uint32_t SlotBytes(uint32_t slot) const {
    return slot < slot_bytes_.size() ? slot_bytes_[slot] : 0;
  }
  Status ParseInstruction(Function& f, uint32_t fidx);
  Status ParseOperand(RawOp* op);

  // Decoding.
  Result<uint32_t> SrcSlot(const RawOp& op, Ty ty);
  Result<uint32_t> DstSlot(const RawOp& op);
  uint32_t ConstSlot(uint64_t bits);
  uint32_t SharedConstSlot(uint32_t var, int64_t imm);
  Status ResolveSymbol(const std::string& name, int64_t off, Inst& in, Space* space);
  Status DecodeAddress(const RawOp& op, Inst& in);
  Status Decode(Function& f, uint32_t fidx, const std::string& mnemonic, std::vector<RawOp>& ops,
                Inst& in);
  Status DecodeCall(Function& f, std::vector<RawOp>& ops, Inst& in, bool tail_list);
  // kInvalidPtx, naming `mnemonic`, unless its `n` operands are from `lo` to `hi`.
  Status NeedOperands(const std::string& mnemonic, size_t n, size_t lo, size_t hi) {
    if (n < lo || n > hi)
      return Err("'" + mnemonic + "' takes " + std::to_string(lo) + " operands, got " +
                 std::to_string(n));
    return OkStatus();
  }
  Status DecodeMatrix(const std::string& mnemonic, std::string_view mods, std::vector<RawOp>& ops,
                      Inst& in);
  Status DecodeIndirectCall(std::vector<RawOp>& ops, Inst& in, size_t k, PendingCall& pc);
  Status DecodeAsync(const std::string& mnemonic, std::vector<RawOp>& ops, Inst& in);
  Status DecodeTexture(const std::string& mnemonic, std::vector<RawOp>& ops, Inst& in);
  // cvt.pack.sat.{u16,s16}.s32 d, a, b and cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b, c.
  Status DecodeScalarVideo(const std::string& mnemonic, std::string_view mods,
                           std::vector<RawOp>& ops, Inst& in);
  Status DecodeCvtPack(const std::string& mnemonic, std::string_view mods, std::vector<RawOp>& ops,
                       Inst& in);
  Status ParsePrototype();
  // Function addresses: the .func `name` declares, or kNoReg; TakeAddress records the use.
  uint32_t LookupFunc(const std::string& name) const {
    auto it = scope().funcs.find(name);
    if (it != scope().funcs.end()) return it->second;
    auto jt = P.func_by_name.find(name);
    return jt == P.func_by_name.end() ? kNoReg : jt->second;
  }
  Result<uint64_t> TakeAddress(uint32_t func);
  Status InitRef(Global& g, uint64_t pos, uint32_t esize, const std::string& s, int64_t add);

  uint32_t LookupGlobal(const std::string& name) const {
    auto it = scope().globals.find(name);
    if (it != scope().globals.end()) return it->second;
    auto jt = P.global_by_name.find(name);
    return jt == P.global_by_name.end() ? kNoReg : jt->second;
  }
  ModuleScope& scope() { return scopes_[module_]; }
  const ModuleScope& scope() const { return scopes_.at(module_); }

  ProgramImpl& P;
  std::vector<Token> toks_;
  size_t i_ = 0;
  int module_ = 0;
  std::map<int, ModuleScope> scopes_;
  std::unordered_map<uint64_t, uint32_t> const_index_;
  std::vector<PendingCall> pending_calls_;
  // Static .shared variables, laid out per kernel at link (LayOutShared).
  struct SharedVar {
    uint32_t size, align;
  };
  struct SharedConst {  // a constant-pool slot holding a shared variable's offset plus imm
    uint32_t slot, var;
    int64_t imm;
  };
  std::vector<SharedVar> shared_vars_;
  std::vector<SharedConst> shared_consts_;
  std::vector<std::vector<uint32_t>> func_shared_;  // function -> shared variables it names
  std::vector<std::vector<uint32_t>> func_sites_;   // function -> call sites in its body
  uint32_t cur_fidx_ = 0;
  uint32_t AddSharedVar(uint32_t size, uint32_t align);
  void NoteSharedUse(uint32_t var);
  Status LayOutShared();
  std::unordered_map<uint32_t, std::vector<std::pair<uint32_t, int>>> call_funcs_;  // unused

  // Per-function state.
  std::unordered_map<std::string, uint32_t> regs_;
  std::vector<uint8_t> slot_bytes_;  // declared width of each register slot of the function
  std::vector<FrameSym> frame_syms_;
  uint64_t static_bytes_ = 0;  // defined .global/.const bytes of the whole program
  std::vector<size_t> scope_marks_;
  // Register scoping: the depth of each name's live declaration (kClosedDepth once its block
  // closed), what each open nested block shadowed, and slots freed by closed blocks.
  static constexpr int kClosedDepth = 1 << 30;
  struct Shadowed {
    std::string name;
    uint32_t slot;
    int depth;
  };
  struct RegBlock {
    std::vector<Shadowed> shadowed;
    std::vector<std::string> declared;
  };
  std::unordered_map<std::string, int> reg_depth_;
  std::vector<RegBlock> reg_blocks_;
  std::vector<uint32_t> free_slots_;
  // Labels, like registers, are local to the { } block that declares them: inline assembly that
  // inlining or unrolling copies repeats its labels (CUTLASS's barrier waits, a brx.idx
  // table), each copy branching within itself. Blocks are numbered as they open, 0 the body.
  using LabelKey = std::pair<uint32_t, std::string>;  // block, name
  std::map<LabelKey, uint32_t> labels_;               // the pc of each
  std::vector<uint32_t> label_parent_;                // block -> the block enclosing it
  uint32_t label_block_ = 0;                          // the block being parsed
  struct LabelUse {
    uint32_t pc;
    std::string name;
    uint32_t block;  // where the instruction naming it is
  };
  std::vector<LabelUse> label_fixups_;  // bra targets
  // The function's .branchtargets lists, and the brx.idx instructions naming one.
  std::map<LabelKey, std::vector<std::string>> branch_lists_;
  std::vector<LabelUse> brx_fixups_;
  // Where `name` is found from `block`: the key of the innermost enclosing block declaring it
  // in `table`, or none.
  template <class Table>
  const typename Table::mapped_type* FindScoped(const Table& table, uint32_t block,
                                                const std::string& name) const {
    for (;;) {
      auto it = table.find({block, name});
      if (it != table.end()) return &it->second;
      if (block == 0) return nullptr;
      block = label_parent_[block];
    }
  }
  std::vector<std::pair<uint32_t, int>> pending_module_;
  std::unordered_map<std::string, Function> protos_;  // the function's .callprototype labels
  std::vector<uint32_t> addr_taken_;                  // functions whose address is taken
  std::vector<uint32_t> kernels_taken_;               // kernels whose address is taken
  // .weak (and .common) definitions: another definition of the symbol replaces them, and one
  // that comes after a definition is dropped.
  bool cur_weak_ = false;
  std::unordered_map<uint32_t, bool> weak_funcs_, weak_globals_;
  uint32_t sink_slot_ = kNoReg;
  uint32_t sreg_slot_ = kNoReg;            // the function's copy of a special register cvt reads
  const std::string* decoding_ = nullptr;  // the mnemonic of the instruction Decode is at
  uint32_t decoding_line_ = 0;
  Function* cur_ = nullptr;
};

Status Parser::SkipBalanced() {
  int depth = 0;
  do {
    if (Peek().kind == Token::kEnd) return Err("unbalanced braces");
    if (IsP("{")) ++depth;
    if (IsP("}")) --depth;
    Next();
  } while (depth > 0);
  return OkStatus();
}

std::optional<int64_t> ParseIntText(std::string_view t) {
  bool unsig = !t.empty() && (t.back() == 'U' || t.back() == 'u');
  if (unsig) t.remove_suffix(1);
  uint64_t v = 0;
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
    base = 2;
    t.remove_prefix(2);
  } else if (t.size() > 1 && t[0] == '0') {
    base = 8;
    t.remove_prefix(1);
  }
  auto r = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return std::nullopt;
  return int64_t(v);
}

Result<int64_t> Parser::ParseInt() {
  bool neg = false;
  if (IsP("-")) {
    neg = true;
    Next();
  }
  if (Peek().kind != Token::kNumber) return Err("expected an integer");
  auto v = ParseIntText(Next().text);
  if (!v) return Err("bad integer");
  return neg ? int64_t(0 - uint64_t(*v)) : *v;  // wraps: -(-2^63) is -2^63, as in PTX
}

// Parses a number token into a RawOp immediate (integer, 0f/0d float bits, decimal float).
bool ParseNumber(std::string_view t, bool neg, RawOp* op) {
  op->kind = RawOp::kImm;
  if (t.size() == 10 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F')) {
    uint32_t bits = 0;
    auto r = std::from_chars(t.data() + 2, t.data() + t.size(), bits, 16);
    if (r.ec != std::errc()) return false;
    if (neg) bits ^= 0x80000000u;
    op->imm = bits;
    op->fimm = 4;
    return true;
  }
  if (t.size() == 18 && t[0] == '0' && (t[1] == 'd' || t[1] == 'D')) {
    uint64_t bits = 0;
    auto r = std::from_chars(t.data() + 2, t.data() + t.size(), bits, 16);
    if (r.ec != std::errc()) return false;
    if (neg) bits ^= 0x8000000000000000ull;
    op->imm = int64_t(bits);
    op->fimm = 8;
    return true;
  }
  bool hex = t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
  if (!hex && (t.find('.') != std::string_view::npos || t.find('e') != std::string_view::npos ||
               t.find('E') != std::string_view::npos)) {
    double d = std::strtod(std::string(t).c_str(), nullptr);
    op->imm = int64_t(std::bit_cast<uint64_t>(neg ? -d : d));
    op->fimm = 8;
    return true;
  }
  auto v = ParseIntText(t);
  if (!v) return false;
  op->imm = neg ? int64_t(0 - uint64_t(*v)) : *v;  // wraps: -(-2^63) is -2^63, as in PTX
  return true;
}

std::optional<SReg> FindSReg(std::string_view n) {
  static const std::pair<const char*, SReg> kRows[] = {
      {"%tid.x", SReg::kTidX},
      {"%tid.y", SReg::kTidY},
      {"%tid.z", SReg::kTidZ},
      {"%ntid.x", SReg::kNtidX},
      {"%ntid.y", SReg::kNtidY},
      {"%ntid.z", SReg::kNtidZ},
      {"%ctaid.x", SReg::kCtaidX},
      {"%ctaid.y", SReg::kCtaidY},
      {"%ctaid.z", SReg::kCtaidZ},
      {"%nctaid.x", SReg::kNctaidX},
      {"%nctaid.y", SReg::kNctaidY},
      {"%nctaid.z", SReg::kNctaidZ},
      {"%laneid", SReg::kLaneid},
      {"%warpid", SReg::kWarpid},
      {"%nwarpid", SReg::kNwarpid},
      {"%smid", SReg::kSmid},
      {"%nsmid", SReg::kNsmid},
      {"%gridid", SReg::kGridid},
      {"%lanemask_eq", SReg::kLanemaskEq},
      {"%lanemask_lt", SReg::kLanemaskLt},
      {"%lanemask_le", SReg::kLanemaskLe},
      {"%lanemask_gt", SReg::kLanemaskGt},
      {"%lanemask_ge", SReg::kLanemaskGe},
      {"%clock", SReg::kClock},
      {"%clock64", SReg::kClock64},
      {"%globaltimer", SReg::kGlobaltimer},
      {"%globaltimer_lo", SReg::kGlobaltimerLo},
      {"%globaltimer_hi", SReg::kGlobaltimerHi},
      {"%clock_hi", SReg::kClockHi},
      // Clusters (sm_90): a launch without cluster dimensions runs each CTA as its own cluster.
      {"%clusterid.x", SReg::kCtaidX},
      {"%clusterid.y", SReg::kCtaidY},
      {"%clusterid.z", SReg::kCtaidZ},
      {"%nclusterid.x", SReg::kNctaidX},
      {"%nclusterid.y", SReg::kNctaidY},
      {"%nclusterid.z", SReg::kNctaidZ},
      {"%cluster_ctaid.x", SReg::kZero},
      {"%cluster_ctaid.y", SReg::kZero},
      {"%cluster_ctaid.z", SReg::kZero},
      {"%cluster_nctaid.x", SReg::kOne},
      {"%cluster_nctaid.y", SReg::kOne},
      {"%cluster_nctaid.z", SReg::kOne},
      {"%cluster_ctarank", SReg::kZero},
      {"%cluster_nctarank", SReg::kOne},
      {"%is_explicit_cluster", SReg::kZero},
      {"%aggr_smem_size", SReg::kTotalSmem},
      {"%reserved_smem_offset_begin", SReg::kReservedSmemBegin},
      {"%reserved_smem_offset_0", SReg::kReservedSmemBegin},
      {"%reserved_smem_offset_1", SReg::kReservedSmem1},
      {"%reserved_smem_offset_end", SReg::kReservedSmemEnd},
      {"%reserved_smem_offset_cap", SReg::kReservedSmemEnd},
      {"%current_graph_exec", SReg::kZero},
      {"%dynamic_smem_size", SReg::kDynSmem},
      {"%total_smem_size", SReg::kTotalSmem},
  };
  for (auto& [name, id] : kRows)
    if (n == name) return id;
  // NVIDIA's driver passes a cooperative launch's grid workspace in %envreg1:%envreg2.
  if (n == "%envreg1") return SReg::kGridWorkspaceHi;
  if (n == "%envreg2") return SReg::kGridWorkspaceLo;
  if (n.starts_with("%envreg")) return SReg::kEnvreg;
  if (n.starts_with("%pm"))
    return SReg::kZero;  // performance monitor counters %pm0..7(_64): nothing counted
  return std::nullopt;
}

// Predefined identifiers that are constants rather than special registers (PTX ISA "Predefined
// Identifiers"; the %-names are in FindSReg).
std::optional<int64_t> FindPredefinedConstant(std::string_view n) {
  static const std::pair<const char*, int64_t> kRows[] = {
      {"WARP_SZ", 32},
  };
  for (auto& [name, v] : kRows)
    if (n == name) return v;
  return std::nullopt;
}

Status Parser::ParseOperand(RawOp* op) {
  if (IsP("{")) {
    Next();
    op->kind = RawOp::kVec;
    while (!IsP("}")) {
      RawOp e;
      RETURN_IF_ERROR(ParseOperand(&e));
      op->elems.push_back(std::move(e));
      if (IsP(","))
        Next();
      else if (!IsP("}"))
        return Err("expected ',' or '}' in vector operand");
    }
    Next();
    if (IsP("|")) {  // tex's residency predicate: {d...}|p
      Next();
      auto it = regs_.find(std::string(Peek().text));
      if (it == regs_.end()) return Err("undeclared register after '|'");
      Next();
      op->reg2 = it->second;
    }
    return OkStatus();
  }
  if (IsP("[")) {
    Next();
    op->kind = RawOp::kAddr;
    if (Peek().kind == Token::kIdent) {
      std::string n(Next().text);
      auto it = regs_.find(n);
      if (it != regs_.end()) {
        op->reg = it->second;
        op->has_base = true;
      } else {
        op->sym = n;
      }
      if (IsP("+")) {
        Next();
        ASSIGN_OR_RETURN(op->imm, ParseInt());
      } else if (IsP("-")) {
        ASSIGN_OR_RETURN(op->imm, ParseInt());
      }
      if (IsP(",")) {  // tex/suld/sust: [handle, {coordinates}] (or one bare coordinate)
        Next();
        RawOp c;
        RETURN_IF_ERROR(ParseOperand(&c));
        if (c.kind == RawOp::kVec)
          op->elems = std::move(c.elems);
        else
          op->elems.push_back(std::move(c));
        op->has_coords = true;
      }
    } else {
      ASSIGN_OR_RETURN(op->imm, ParseInt());
    }
    return Expect("]");
  }
  if (IsP("!")) {
    Next();
    RETURN_IF_ERROR(ParseOperand(op));
    op->neg = true;
    return OkStatus();
  }
  if (IsP("-") && Peek(1).kind == Token::kIdent) {
    Next();
    RETURN_IF_ERROR(ParseOperand(op));
    if (op->kind != RawOp::kReg) return Err("only a register is negated with '-'");
    op->minus = true;
    return OkStatus();
  }
  if (IsP("-") || Peek().kind == Token::kNumber) {
    bool neg = false;
    if (IsP("-")) {
      neg = true;
      Next();
    }
    if (Peek().kind != Token::kNumber) return Err("expected a number");
    if (!ParseNumber(Peek().text, neg, op)) return Err("bad number");
    Next();
    return OkStatus();
  }
  if (Peek().kind != Token::kIdent) return Err("expected an operand");
  std::string n(Next().text);
  if (n == "_") {
    op->kind = RawOp::kSink;
    op->reg = sink_slot_;
  } else if (auto c = FindPredefinedConstant(n)) {
    op->kind = RawOp::kImm;
    op->imm = *c;
  } else if (auto it = regs_.find(n); it != regs_.end()) {
    op->kind = RawOp::kReg;
    op->reg = it->second;
  } else if (auto s = FindSReg(n)) {
    op->kind = RawOp::kSReg;
    op->sreg = *s;
  } else if (size_t dot = n.find('.'); dot != std::string::npos && regs_.count(n.substr(0, dot))) {
    op->kind = RawOp::kReg;  // reg.sel; Decode refuses a selector outside video instructions
    op->reg = regs_.find(n.substr(0, dot))->second;
    op->sel = n.substr(dot + 1);
  } else if (n[0] == '%') {
    return Err("undeclared register " + n);
  } else {
    op->kind = RawOp::kSym;
    op->sym = n;
    if (IsP("+")) {
      Next();
      ASSIGN_OR_RETURN(op->imm, ParseInt());
    }
  }
  if (IsP("|")) {
    Next();
    if (Peek().kind != Token::kIdent) return Err("expected a register after '|'");
    auto it = regs_.find(std::string(Peek().text));
    if (it == regs_.end()) return Err("undeclared register");
    Next();
    op->reg2 = it->second;
  }
  return OkStatus();
}

Status Parser::ParseVarDecl(VarDecl* d) {
  // [.align N] [.vN] .type name [ '[' N? ']' ]*
  for (;;) {
    if (IsW(".align")) {
      Next();
      ASSIGN_OR_RETURN(int64_t a, ParseInt());
      if (a <= 0 || a > 65536 || (a & (a - 1)) != 0)
        return Err(".align must be a power of two up to 65536");
      d->align = uint32_t(a);
    } else if (IsW(".attribute")) {  // .attribute(.managed), .attribute(.unified(a, b))
      Next();
      RETURN_IF_ERROR(Expect("("));
      for (int depth = 1; depth > 0;) {
        if (Peek().kind == Token::kEnd) return Err("unterminated .attribute(...)");
        if (IsW(".managed")) d->managed = true;
        if (IsP("(")) ++depth;
        if (IsP(")")) --depth;
        Next();
      }
    } else if (IsW(".v2") || IsW(".v4")) {
      d->vec = Next().text[2] - '0';
    } else if (IsW(".ptr") || IsW(".global") || IsW(".shared") || IsW(".const") || IsW(".local")) {
      Next();
    } else if (Peek().kind == Token::kIdent && Peek().text[0] == '.') {
      const ModRow* m = FindMod(Peek().text.substr(1));
      if (!m || m->kind != ModKind::kType) return Err("unknown declaration attribute");
      d->ty = Ty(m->value);
      Next();
    } else {
      break;
    }
  }
  if (d->ty == Ty::kNone) return Err("declaration without a type");
  if (Peek().kind != Token::kIdent) return Err("expected a name");
  d->name = std::string(Next().text);
  while (IsP("[")) {
    Next();
    d->is_array = true;
    if (IsP("]")) {
      d->unsized = true;
      Next();
      continue;
    }
    ASSIGN_OR_RETURN(int64_t n, ParseInt());
    if (n < 0) return Err("negative array extent");
    if (n > 0 && d->count > kMaxDeclBytes / uint64_t(n)) return Err("array larger than 1 GiB");
    d->count *= uint64_t(n);
    RETURN_IF_ERROR(Expect("]"));
  }
  d->count *= uint64_t(d->vec);
  if (d->count * uint64_t(std::max(1, TySize(d->ty))) > kMaxDeclBytes)
    return Err("variable larger than 1 GiB");
  if (d->align == 0) d->align = uint32_t(std::max(1, TySize(d->ty) * d->vec));
  return OkStatus();
}

Status Parser::ParseInitializer(Global& g, Ty elem, uint32_t esize) {
  uint64_t pos = 0;
  auto put_one = [&]() -> Status {
    if (pos + esize > g.size) return Err("too many initialisers");
    // generic(sym)[+off] | sym[+off] | number
    if (IsW("generic")) {
      Next();
      RETURN_IF_ERROR(Expect("("));
      if (Peek().kind != Token::kIdent) return Err("expected a symbol");
      std::string s(Next().text);
      RETURN_IF_ERROR(Expect(")"));
      int64_t add = 0;
      if (IsP("+")) {
        Next();
        ASSIGN_OR_RETURN(add, ParseInt());
      }
      RETURN_IF_ERROR(InitRef(g, pos, esize, s, add));
    } else if (Peek().kind == Token::kIdent) {
      std::string s(Next().text);
      int64_t add = 0;
      if (IsP("+")) {
        Next();
        ASSIGN_OR_RETURN(add, ParseInt());
      }
      RETURN_IF_ERROR(InitRef(g, pos, esize, s, add));
    } else {
      bool neg = false;
      if (IsP("-")) {
        neg = true;
        Next();
      }
      RawOp v;
      if (Peek().kind != Token::kNumber || !ParseNumber(Peek().text, neg, &v))
        return Err("bad initialiser");
      Next();
      uint64_t bits = uint64_t(v.imm);
      if (elem == Ty::kF32 && v.fimm == 8) {
        bits = std::bit_cast<uint32_t>(float(std::bit_cast<double>(bits)));
      } else if (elem == Ty::kF64 && v.fimm == 4) {
        bits = std::bit_cast<uint64_t>(double(std::bit_cast<float>(uint32_t(bits))));
      } else if (elem == Ty::kF32 && v.fimm == 0) {
        bits = std::bit_cast<uint32_t>(float(v.imm));
      } else if (elem == Ty::kF64 && v.fimm == 0) {
        bits = std::bit_cast<uint64_t>(double(v.imm));
      }
      std::memcpy(g.init.data() + pos, &bits, esize);
    }
    pos += esize;
    return OkStatus();
  };
  std::function<Status()> parse_list = [&]() -> Status {
    if (IsP("{")) {
      Next();
      while (!IsP("}")) {
        RETURN_IF_ERROR(parse_list());
        if (IsP(","))
          Next();
        else if (!IsP("}"))
          return Err("expected ',' or '}' in initialiser");
      }
      Next();
      return OkStatus();
    }
    return put_one();
  };
  return parse_list();
}

Status Parser::ParseModuleVar(bool is_extern, bool is_visible) {
  VarDecl d;
  std::string_view sp = Next().text;
  d.space = sp == ".shared"  ? Space::kShared
            : sp == ".const" ? Space::kConst
            : sp == ".local" ? Space::kLocal
                             : Space::kGlobal;
  RETURN_IF_ERROR(ParseVarDecl(&d));
  uint32_t esize = uint32_t(std::max(1, TySize(d.ty)));
  if (d.space == Space::kShared) {
    if (d.unsized || is_extern) {
      scope().dyn_names[d.name] = true;
      P.dyn_shared_align = std::max(P.dyn_shared_align, d.align);
    } else {
      scope().shared[d.name] = AddSharedVar(uint32_t(d.count * esize), d.align);
    }
    if (IsP("=")) return Err("initialiser on .shared");
    return Expect(";");
  }
  if (d.space == Space::kLocal) return Err("module-scope .local is not supported");
  uint32_t idx;
  auto it = P.global_by_name.find(d.name);
  if ((is_visible || is_extern) && it != P.global_by_name.end()) {
    idx = it->second;
  } else {
    idx = uint32_t(P.globals.size());
    P.globals.emplace_back();
    P.globals[idx].name = d.name;
    if (is_visible || is_extern) P.global_by_name[d.name] = idx;
  }
  scope().globals[d.name] = idx;
  Global& g = P.globals[idx];
  if (!is_extern) {
    if (g.defined && cur_weak_) {  // the definition already there stays
      Global dropped;
      dropped.size = d.count * esize;
      dropped.init.assign(dropped.size, std::byte{0});
      if (IsP("=")) {
        Next();
        RETURN_IF_ERROR(ParseInitializer(dropped, d.ty, esize));
      }
      return Expect(";");
    }
    if (g.defined && !weak_globals_[idx]) return Err("duplicate definition of " + d.name);
    if (g.defined) static_bytes_ -= g.size;  // a weak definition gives way
    weak_globals_[idx] = cur_weak_;
    g.relocs.clear();
    g.defined = true;
    g.space = d.space;
    g.managed = d.managed;
    g.align = d.align;
    g.size = d.count * esize;
    static_bytes_ += g.size;
    if (static_bytes_ > kMaxStaticGlobal)
      return Err("static .global and .const data exceed the emulator's 256 MiB");
    g.init.assign(g.size, std::byte{0});
    if (IsP("=")) {
      Next();
      RETURN_IF_ERROR(ParseInitializer(P.globals[idx], d.ty, esize));
    }
  } else if (g.size == 0) {
    g.space = d.space;
    g.size = d.count * esize;
    g.align = d.align;
  }
  return Expect(";");
}

Result<bool> Parser::TakeTypedDirective(std::string_view directive, VarDecl* d) {
  const std::string_view w = Peek().kind == Token::kIdent ? Peek().text : std::string_view();
  const size_t dot = w.find('.', 1);
  if (w.substr(0, dot) != directive) return false;
  Next();
  if (dot != std::string_view::npos) {
    const ModRow* m = FindMod(w.substr(dot + 1));
    if (!m || m->kind != ModKind::kType) return Err("unknown type in " + std::string(w));
    d->ty = Ty(m->value);
  }
  return true;
}

Status Parser::ParseParamList(Function& f, std::vector<Function::Param>& out, bool in_frame) {
  RETURN_IF_ERROR(Expect("("));
  uint32_t off = in_frame ? f.frame_bytes : 0;
  if (!in_frame && !f.params.empty()) off = f.params.back().offset + f.params.back().size;
  while (!IsP(")")) {
    VarDecl d;
    ASSIGN_OR_RETURN(bool param, TakeTypedDirective(".param", &d));
    if (!param) {
      ASSIGN_OR_RETURN(bool reg, TakeTypedDirective(".reg", &d));
      if (!reg) return Err("expected .param");
    }
    RETURN_IF_ERROR(ParseVarDecl(&d));
    uint32_t size = uint32_t(d.count * std::max(1, TySize(d.ty)));
    off = AlignUp(off, d.align);
    out.push_back({d.name, off, size, d.align});
    off += size;
    if (off > kMaxFrameBytes) return Err("parameters exceed 512 KiB");
    if (IsP(",")) Next();
  }
  Next();
  if (in_frame) f.frame_bytes = off;
  return OkStatus();
}

Status Parser::ParseFunction(bool is_entry, bool is_extern, bool is_visible) {
  Next();  // .entry / .func
  Function f;
  f.is_entry = is_entry;
  std::vector<Function::Param> rets;
  if (!is_entry && IsP("(")) RETURN_IF_ERROR(ParseParamList(f, rets, true));
  if (Peek().kind != Token::kIdent) return Err("expected a function name");
  f.name = std::string(Next().text);
  f.rets = rets;
  if (IsP("(")) RETURN_IF_ERROR(ParseParamList(f, f.params, !is_entry));
  // Performance directives.
  for (;;) {
    if (IsW(".maxntid") || IsW(".reqntid")) {
      bool max = Peek().text == ".maxntid";
      Next();
      for (int k = 0; k < 3; ++k) {
        ASSIGN_OR_RETURN(int64_t v, ParseInt());
        if (max) f.maxntid[k] = uint32_t(v);
        if (!IsP(",")) break;
        Next();
      }
    } else if (IsW(".reqnctapercluster")) {  // __cluster_dims__: 1 to 3 extents
      Next();
      for (int k = 0; k < 3; ++k) f.cluster[k] = 1;
      for (int k = 0; k < 3; ++k) {
        ASSIGN_OR_RETURN(int64_t v, ParseInt());
        if (v < 1 || v > 1024) return Err(".reqnctapercluster takes extents from 1 to 1024");
        f.cluster[k] = uint32_t(v);
        if (!IsP(",")) break;
        Next();
      }
    } else if (IsW(".explicitcluster")) {
      Next();
      f.explicit_cluster = true;
    } else if (IsW(".minnctapersm") || IsW(".maxnreg") || IsW(".maxnctapersm") ||
               IsW(".maxclusterrank")) {
      Next();
      ASSIGN_OR_RETURN(int64_t v, ParseInt());
      (void)v;
    } else if (IsW(".noreturn")) {
      Next();
    } else if (IsW(".pragma")) {
      Next();
      Next();
      RETURN_IF_ERROR(Expect(";"));
    } else {
      break;
    }
  }
  auto& names = (is_visible || is_extern) ? P.func_by_name : scope().funcs;
  uint32_t idx;
  auto it = names.find(f.name);
  if (it != names.end() || scope().funcs.count(f.name)) {
    idx = it != names.end() ? it->second : scope().funcs[f.name];
  } else {
    idx = uint32_t(P.funcs.size());
    P.funcs.emplace_back();
    P.funcs[idx].name = f.name;
    names[f.name] = idx;
  }
  scope().funcs[f.name] = idx;
  if (IsP(";")) {
    Next();
    if (!P.funcs[idx].defined) {
      std::string n = P.funcs[idx].name;
      P.funcs[idx] = f;
      P.funcs[idx].name = n;
    }
    return OkStatus();
  }
  if (P.funcs[idx].defined && cur_weak_) return SkipBalanced();  // the one already there stays
  if (P.funcs[idx].defined && !weak_funcs_[idx]) return Err("duplicate definition of " + f.name);
  if (!IsP("{")) return Err("expected '{' or ';' after function header");
  weak_funcs_[idx] = cur_weak_;
  f.defined = true;
  f.entry_pc = uint32_t(P.code.size());
  P.funcs[idx] = std::move(f);
  return ParseBody(P.funcs[idx], idx);
}

Status Parser::ParseRegDecl() {
  Ty ty = Ty::kNone;
  auto type_of = [&](std::string_view word) -> Status {
    const ModRow* m = FindMod(word);
    if (!m || m->kind != ModKind::kType) return Err("unsupported register declaration");
    ty = Ty(m->value);
    return OkStatus();
  };
  // Types written onto the directive (.reg.b32), then apart from it (.reg .b32).
  std::string_view joined = Next().text.substr(std::string_view(".reg").size());
  while (!joined.empty()) {
    const size_t next = joined.find('.', 1);
    RETURN_IF_ERROR(type_of(joined.substr(1, next == std::string_view::npos ? next : next - 1)));
    joined = next == std::string_view::npos ? std::string_view() : joined.substr(next);
  }
  while (Peek().kind == Token::kIdent && Peek().text[0] == '.') {
    RETURN_IF_ERROR(type_of(Peek().text.substr(1)));
    Next();
  }
  if (ty == Ty::kNone) return Err(".reg without a type");
  for (;;) {
    if (Peek().kind != Token::kIdent) return Err("expected a register name");
    std::string n(Next().text);
    if (IsP("<")) {
      Next();
      ASSIGN_OR_RETURN(int64_t cnt, ParseInt());
      RETURN_IF_ERROR(Expect(">"));
      if (cnt < 0 || cnt > int64_t(kMaxRegisters - cur_->nregs))
        return Err("a function declares more than 65536 registers");
      for (int64_t k = 0; k < cnt; ++k) {
        ASSIGN_OR_RETURN(uint32_t slot, DeclareReg(n + std::to_string(k)));
        NoteWidth(slot, ty);
      }
    } else {
      ASSIGN_OR_RETURN(uint32_t slot, DeclareReg(n));
      NoteWidth(slot, ty);
    }
    if (!IsP(",")) break;
    Next();
  }
  return Expect(";");
}

Result<uint32_t> Parser::DeclareReg(const std::string& name) {
  const int depth = int(reg_blocks_.size());
  auto fresh = [&]() -> Result<uint32_t> {
    if (!free_slots_.empty()) {
      const uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      return slot;
    }
    if (cur_->nregs >= kMaxRegisters) return Err("a function declares more than 65536 registers");
    return cur_->nregs++;
  };
  auto it = regs_.find(name);
  if (it != regs_.end() && reg_depth_[name] < depth) {  // an enclosing block's: shadow it
    reg_blocks_.back().shadowed.push_back({name, it->second, reg_depth_[name]});
    ASSIGN_OR_RETURN(it->second, fresh());
  } else if (it == regs_.end()) {
    ASSIGN_OR_RETURN(uint32_t slot, fresh());
    it = regs_.emplace(name, slot).first;
  }
  reg_depth_[name] = depth;
  if (depth > 0) reg_blocks_.back().declared.push_back(name);
  return it->second;
}

void Parser::OpenBlock() {
  scope_marks_.push_back(frame_syms_.size());
  reg_blocks_.emplace_back();
  label_parent_.push_back(label_block_);
  label_block_ = uint32_t(label_parent_.size() - 1);
}

void Parser::CloseBlock() {
  if (scope_marks_.empty()) return;
  label_block_ = label_parent_[label_block_];
  frame_syms_.resize(scope_marks_.back());
  scope_marks_.pop_back();
  RegBlock& b = reg_blocks_.back();
  for (const std::string& name : b.declared) reg_depth_[name] = kClosedDepth;
  for (auto s = b.shadowed.rbegin(); s != b.shadowed.rend(); ++s) {
    free_slots_.push_back(regs_[s->name]);
    regs_[s->name] = s->slot;
    reg_depth_[s->name] = s->depth;
  }
  reg_blocks_.pop_back();
}

Status Parser::ParseBody(Function& fref, uint32_t fidx) {
  regs_.clear();
  reg_depth_.clear();
  reg_blocks_.clear();
  free_slots_.clear();
  slot_bytes_.clear();
  frame_syms_.clear();
  scope_marks_.clear();
  labels_.clear();
  label_fixups_.clear();
  branch_lists_.clear();
  brx_fixups_.clear();
  label_parent_.assign(1, 0);
  label_block_ = 0;
  protos_.clear();
  cur_ = &fref;
  cur_fidx_ = fidx;
  Function& f = fref;
  sink_slot_ = f.nregs++;
  sreg_slot_ = kNoReg;
  for (auto& p : f.params)
    if (!f.is_entry) frame_syms_.push_back({p.name, p.offset, p.size});
  for (auto& p : f.rets) frame_syms_.push_back({p.name, p.offset, p.size});
  Next();  // {
  int depth = 1;
  while (depth > 0) {
    const Token& t = Peek();
    if (t.kind == Token::kEnd) return Err("unexpected end inside function " + f.name);
    if (IsP("{")) {
      Next();
      ++depth;
      OpenBlock();
      continue;
    }
    if (IsP("}")) {
      Next();
      --depth;
      CloseBlock();
      continue;
    }
    if (IsRegDirective()) {
      RETURN_IF_ERROR(ParseRegDecl());
      continue;
    }
    if (IsW(".loc") || IsW(".file")) {
      SkipLine();
      continue;
    }
    if (IsW(".pragma")) {
      Next();
      Next();
      RETURN_IF_ERROR(Expect(";"));
      continue;
    }
    VarDecl d;
    ASSIGN_OR_RETURN(bool frame_var, TakeTypedDirective(".local", &d));
    if (!frame_var) {
      ASSIGN_OR_RETURN(frame_var, TakeTypedDirective(".param", &d));
    }
    if (frame_var) {
      RETURN_IF_ERROR(ParseVarDecl(&d));
      uint32_t size = uint32_t(d.count * std::max(1, TySize(d.ty)));
      f.frame_bytes = AlignUp(f.frame_bytes, std::max<uint32_t>(d.align, 1));
      frame_syms_.push_back({d.name, f.frame_bytes, size});
      f.frame_bytes += size;
      if (f.frame_bytes > kMaxFrameBytes) return Err("a function's .local data exceeds 512 KiB");
      RETURN_IF_ERROR(Expect(";"));
      continue;
    }
    if (IsW(".shared")) {
      Next();
      VarDecl d;
      RETURN_IF_ERROR(ParseVarDecl(&d));
      scope().shared[d.name] = AddSharedVar(uint32_t(d.count * std::max(1, TySize(d.ty))), d.align);
      RETURN_IF_ERROR(Expect(";"));
      continue;
    }
    if (t.kind == Token::kIdent && IsP(":", 1) && IsW(".callprototype", 2)) {
      RETURN_IF_ERROR(ParsePrototype());
      continue;
    }
    if (t.kind == Token::kIdent && IsP(":", 1) &&
        (IsW(".branchtargets", 2) || IsW(".calltargets", 2))) {
      // A target list: brx.idx's labels, kept by name; or an indirect call's, which the call
      // does not need (it names a .callprototype, below).
      const std::string name(t.text);
      const bool branch = IsW(".branchtargets", 2);
      Next();
      Next();
      Next();
      std::vector<std::string> targets;
      while (Peek().kind != Token::kEnd && !IsP(";")) {
        if (Peek().kind == Token::kIdent) targets.emplace_back(Peek().text);
        Next();
      }
      RETURN_IF_ERROR(Expect(";"));
      if (branch) branch_lists_[{label_block_, name}] = std::move(targets);
      continue;
    }
    if (t.kind == Token::kIdent && IsP(":", 1)) {
      labels_[{label_block_, std::string(t.text)}] = uint32_t(P.code.size());
      Next();
      Next();
      continue;
    }
    RETURN_IF_ERROR(ParseInstruction(f, fidx));
  }
  for (const LabelUse& use : label_fixups_) {
    const uint32_t* to = FindScoped(labels_, use.block, use.name);
    if (!to) return Err("unknown label " + use.name + " in " + f.name);
    P.code[use.pc].target = *to;
  }
  for (const LabelUse& use : brx_fixups_) {
    // The list's labels are looked up from where the brx.idx is, as ptxas scopes them.
    const std::vector<std::string>* list = FindScoped(branch_lists_, use.block, use.name);
    if (!list) return Err("brx.idx names " + use.name + ", not a .branchtargets list of " + f.name);
    std::vector<uint32_t> pcs;
    for (const std::string& label : *list) {
      const uint32_t* to = FindScoped(labels_, use.block, label);
      if (!to) return Err("unknown label " + label + " in " + use.name);
      pcs.push_back(*to);
    }
    P.code[use.pc].target = uint32_t(P.branch_tables.size());
    P.branch_tables.push_back(std::move(pcs));
  }
  f.frame_bytes = AlignUp(f.frame_bytes, 16);
  for (size_t pc = f.entry_pc; pc < P.code.size(); ++pc) {
    // An alloca must not reach down into its function's frame.
    if (P.code[pc].op == Op::kAlloca || P.code[pc].op == Op::kStackrestore)
      P.code[pc].target = f.frame_bytes;
    if (P.code[pc].op != Op::kCall) continue;
    P.code[pc].d[0] = f.nregs;
    P.code[pc].d[1] = f.frame_bytes;
  }
  // Falling off the end returns.
  Inst ret;
  ret.op = Op::kRet;
  ret.fn = select_Ret(ret);
  P.code.push_back(ret);
  P.code_text.emplace_back("ret");
  return OkStatus();
}

Status Parser::ParseInstruction(Function& f, uint32_t fidx) {
  Inst in;
  in.line = Peek().line;
  if (IsP("@")) {
    Next();
    bool neg = false;
    if (IsP("!")) {
      neg = true;
      Next();
    }
    auto it = regs_.find(std::string(Peek().text));
    if (it == regs_.end()) return Err("guard is not a declared predicate");
    Next();
    in.guard = it->second;
    if (neg) in.flags |= kFlagGuardNeg;
  }
  if (Peek().kind != Token::kIdent) return Err("expected an instruction");
  std::string mnemonic(Next().text);
  std::vector<RawOp> ops;
  bool is_call = mnemonic == "call" || mnemonic.starts_with("call.");
  while (!IsP(";")) {
    if (Peek().kind == Token::kEnd) return Err("missing ';'");
    RawOp op;
    if (is_call && IsP("(")) {
      Next();
      op.kind = RawOp::kList;
      while (!IsP(")")) {
        RawOp e;
        RETURN_IF_ERROR(ParseOperand(&e));
        op.elems.push_back(std::move(e));
        if (IsP(",")) Next();
      }
      Next();
    } else {
      RETURN_IF_ERROR(ParseOperand(&op));
    }
    ops.push_back(std::move(op));
    if (IsP(",")) Next();
  }
  Next();
  decoding_ = &mnemonic;
  decoding_line_ = in.line;
  struct Done {
    const std::string*& at;
    ~Done() { at = nullptr; }
  } done{decoding_};
  if (mnemonic.starts_with("cvt.") && ops.size() == 2 && ops[1].kind == RawOp::kSReg) {
    // PTX lets cvt read a special register; the interpreter reads them with mov alone: a mov
    // into a slot of the function's own first, which the cvt then reads.
    if (sreg_slot_ == kNoReg) {
      if (f.nregs >= kMaxRegisters) return Err("a function declares more than 65536 registers");
      sreg_slot_ = f.nregs++;
    }
    std::vector<RawOp> read(2);
    read[0].kind = RawOp::kReg;
    read[0].reg = sreg_slot_;
    read[1] = ops[1];
    Inst mov;
    mov.line = in.line;
    RETURN_IF_ERROR(Decode(f, fidx, "mov.u64", read, mov));
    P.code.push_back(mov);
    P.code_text.emplace_back("mov.u64");
    ops[1] = read[0];
  }
  RETURN_IF_ERROR(Decode(f, fidx, mnemonic, ops, in));
  P.code.push_back(in);
  P.code_text.push_back(std::move(mnemonic));
  return OkStatus();
}

// A slot of its own (never shared with an equal constant): LayOutShared writes the value.
uint32_t Parser::SharedConstSlot(uint32_t var, int64_t imm) {
  NoteSharedUse(var);
  uint32_t idx = uint32_t(P.consts.size() / 32);
  P.consts.insert(P.consts.end(), 32, 0);
  shared_consts_.push_back({idx, var, imm});
  return idx | kConstSlot;
}

uint32_t Parser::AddSharedVar(uint32_t size, uint32_t align) {
  shared_vars_.push_back({size, std::max<uint32_t>(align, 1)});
  return uint32_t(shared_vars_.size() - 1);
}

void Parser::NoteSharedUse(uint32_t var) {
  func_shared_.resize(std::max<size_t>(func_shared_.size(), cur_fidx_ + 1));
  func_shared_[cur_fidx_].push_back(var);
}

uint32_t Parser::ConstSlot(uint64_t bits) {
  auto it = const_index_.find(bits);
  if (it != const_index_.end()) return it->second | kConstSlot;
  uint32_t idx = uint32_t(P.consts.size() / 32);
  P.consts.insert(P.consts.end(), 32, bits);
  const_index_[bits] = idx;
  return idx | kConstSlot;
}

Result<uint32_t> Parser::SrcSlot(const RawOp& op, Ty ty) {
  switch (op.kind) {
    case RawOp::kReg:
    case RawOp::kSink:
      return op.reg;
    case RawOp::kImm: {
      uint64_t bits = uint64_t(op.imm);
      if (ty == Ty::kF32 && op.fimm == 8)
        bits = std::bit_cast<uint32_t>(float(std::bit_cast<double>(bits)));
      else if (ty == Ty::kF64 && op.fimm == 4)
        bits = std::bit_cast<uint64_t>(double(std::bit_cast<float>(uint32_t(bits))));
      else if (ty == Ty::kF32 && op.fimm == 0)
        bits = std::bit_cast<uint32_t>(float(op.imm));
      else if (ty == Ty::kF64 && op.fimm == 0)
        bits = std::bit_cast<uint64_t>(double(op.imm));
      return ConstSlot(bits);
    }
    case RawOp::kSym: {
      auto sh = scope().shared.find(op.sym);
      if (sh != scope().shared.end()) return SharedConstSlot(sh->second, op.imm);
      return Err("symbol " + op.sym + " cannot be used as a value here");
    }
    default:
      return Err("operand kind not allowed as a source");
  }
}

Result<uint32_t> Parser::DstSlot(const RawOp& op) {
  if (op.kind == RawOp::kReg || op.kind == RawOp::kSink) return op.reg;
  return Err("destination must be a register");
}

// Resolves `name` for an address or a value: sets in.symkind/sym/off and the space it lives in.
Status Parser::ResolveSymbol(const std::string& name, int64_t off, Inst& in, Space* space) {
  for (auto it = frame_syms_.rbegin(); it != frame_syms_.rend(); ++it) {
    if (it->name == name) {
      in.symkind = SymKind::kFrame;
      in.off = int64_t(it->offset) + off;
      *space = Space::kLocal;
      return OkStatus();
    }
  }
  if (cur_->is_entry) {
    for (auto& p : cur_->params) {
      if (p.name == name) {
        in.symkind = SymKind::kNone;
        in.off = int64_t(p.offset) + off;
        *space = Space::kParam;
        return OkStatus();
      }
    }
  }
  if (auto it = scope().shared.find(name); it != scope().shared.end()) {
    NoteSharedUse(it->second);
    in.symkind = SymKind::kShared;
    in.sym = it->second;
    in.off = off;
    *space = Space::kShared;
    return OkStatus();
  }
  if (scope().dyn_names.count(name)) {
    in.symkind = SymKind::kGlobal;
    in.sym = kNoReg;  // patched at link: the dynamic shared base pseudo-global
    in.off = off;
    *space = Space::kShared;
    return OkStatus();
  }
  uint32_t g = LookupGlobal(name);
  if (g != kNoReg) {
    in.symkind = SymKind::kGlobal;
    in.sym = g;
    in.off = off;
    *space = P.globals[g].space == Space::kConst ? Space::kConst : Space::kGlobal;
    return OkStatus();
  }
  if (uint32_t f = LookupFunc(name); f != kNoReg) {
    if (in.op == Op::kMov && TySize(in.ty) != 8)
      return Err("the address of function " + name + " needs a 64-bit mov");
    ASSIGN_OR_RETURN(uint64_t addr, TakeAddress(f));
    in.symkind = SymKind::kNone;
    in.off = int64_t(addr + uint64_t(off));
    *space = Space::kGlobal;
    return OkStatus();
  }
  return Err("unknown symbol " + name);
}

Status Parser::DecodeAddress(const RawOp& op, Inst& in) {
  if (op.kind != RawOp::kAddr) return Err("expected an address operand [..]");
  in.base = op.has_base ? op.reg : kNoReg;
  in.off = op.imm;
  if (!op.sym.empty()) {
    Space sp;
    RETURN_IF_ERROR(ResolveSymbol(op.sym, op.imm, in, &sp));
    if (in.space == Space::kParam && sp == Space::kLocal) in.space = Space::kLocal;
    if (in.space == Space::kGeneric) {
      if (sp == Space::kLocal || sp == Space::kShared || sp == Space::kParam) in.space = sp;
    }
  }
  return OkStatus();
}

bool IsCmpWord(const ModRow* m) {
  return m->kind == ModKind::kCmp || m->cmp_alt != Cmp::kNone;
}

Status Parser::Decode(Function& f, uint32_t fidx, const std::string& mnemonic,
                      std::vector<RawOp>& ops, Inst& in) {
  (void)fidx;
  std::string_view rest(mnemonic);
  size_t dot = rest.find('.');
  std::string_view base = rest.substr(0, dot);
  const OpRow* row = FindOp(base);
  if (!row) {
    // PTX instructions the interpreter does not implement: the module loads (ptxas takes it) and
    // a kernel that reaches one is refused at launch, naming it; its operands are not read. Any
    // other mnemonic is not PTX, and the module is refused, as a GPU's JIT refuses it.
    static constexpr std::string_view kUnimplemented[] = {"clusterlaunchcontrol",
                                                          "elect",
                                                          "getctarank",
                                                          "istypep",
                                                          "multimem",
                                                          "setmaxnreg",
                                                          "stmatrix",
                                                          "tcgen05",
                                                          "tensormap",
                                                          "vset2",
                                                          "vset4",
                                                          "wgmma"};
    if (std::find(std::begin(kUnimplemented), std::end(kUnimplemented), base) ==
        std::end(kUnimplemented))
      return Err("unknown instruction '" + std::string(base) + "'");
    in.fn = &exec_unimplemented;
    return OkStatus();
  }
  in.op = row->op;
  if (in.op == Op::kGriddepcontrol) {
    if (mnemonic != "griddepcontrol.wait" && mnemonic != "griddepcontrol.launch_dependents")
      return Err("griddepcontrol is .wait or .launch_dependents, not '" + mnemonic + "'");
    RETURN_IF_ERROR(NeedOperands(mnemonic, ops.size(), 0, 0));
    in.fn = select_Griddepcontrol(in);
    return OkStatus();
  }
  if (in.op == Op::kMma || in.op == Op::kLdmatrix || in.op == Op::kMovmatrix || in.op == Op::kWmma)
    return DecodeMatrix(mnemonic, dot == std::string_view::npos ? "" : rest.substr(dot + 1), ops,
                        in);
  if (IsScalarVideoOp(in.op))
    return DecodeScalarVideo(mnemonic, dot == std::string_view::npos ? "" : rest.substr(dot + 1),
                             ops, in);
  for (const RawOp& o : ops) {
    for (const RawOp& e : o.elems)
      if (!e.sel.empty()) return Err("operand selector '." + e.sel + "' in a vector operand");
    if (!o.sel.empty() && !IsVideoOp(in.op))
      return Err("operand selector '." + o.sel + "' outside a video instruction");
    if (o.minus) return Err("a negated register outside vmad");
  }
  if (in.op == Op::kCp || in.op == Op::kMbarrier) return DecodeAsync(mnemonic, ops, in);
  if (in.op == Op::kTex || in.op == Op::kTld4 || in.op == Op::kTxq || in.op == Op::kSuld ||
      in.op == Op::kSust || in.op == Op::kSured || in.op == Op::kSuq)
    return DecodeTexture(mnemonic, ops, in);
  if (in.op == Op::kCvt && dot != std::string_view::npos &&
      rest.substr(dot + 1).starts_with("pack."))
    return DecodeCvtPack(mnemonic, rest.substr(dot + 1), ops, in);
  bool is_cmp_op = in.op == Op::kSetp || in.op == Op::kSet;
  std::vector<Ty> types;
  rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  // Every fence (ordering, proxy, mbarrier-init) orders no more than the interpreter always
  // does: one memory, seen in program order by every proxy.
  if (in.op == Op::kFence) rest = std::string_view();
  bool bar_red = false;
  // A modifier the decoder does not know makes a form it does not implement: ptxas took it, so
  // the module loads and a kernel that reaches the instruction fails, naming it.
  bool unknown_modifier = false;
  bool cache_hint = false;  // .L2::cache_hint: a last operand, the cache policy
  while (!rest.empty()) {
    size_t d = rest.find('.');
    std::string_view w = rest.substr(0, d);
    rest = d == std::string_view::npos ? std::string_view() : rest.substr(d + 1);
    cache_hint |= w == "L2::cache_hint";
    if (in.op == Op::kCreatepolicy && w == "cvt") continue;  // createpolicy.cvt.L2.b64
    const ModRow* m = FindMod(w);
    if (!m) {
      unknown_modifier = true;
      continue;
    }
    switch (m->kind) {
      case ModKind::kType:
        types.push_back(Ty(m->value));
        break;
      case ModKind::kRnd:
        in.rnd = Rnd(m->value);
        break;
      case ModKind::kFlag:
        in.flags |= uint16_t(1u << m->value);
        break;
      case ModKind::kSpace:
        in.space = Space(m->value);
        break;
      case ModKind::kCmp:
        in.cmp = Cmp(m->value);
        break;
      case ModKind::kVec:
        in.vec = m->value;
        break;
      case ModKind::kIgnore:
        break;
      case ModKind::kSync:
        if (m->value == 1) in.sub2 = Sub::kUni;  // bar.warp
        if (m->value == 2) bar_red = true;
        break;
      case ModKind::kSub:
        if (is_cmp_op && m->cmp_alt != Cmp::kNone) {
          in.cmp = m->cmp_alt;
        } else if (is_cmp_op || (bar_red && in.sub != Sub::kNone)) {
          in.sub2 = Sub(m->value);
        } else if (Sub(m->value) == Sub::kLo || Sub(m->value) == Sub::kHi ||
                   Sub(m->value) == Sub::kWide) {
          in.sub2 = Sub(m->value);
        } else if (Sub(m->value) == Sub::kUni &&
                   (in.op == Op::kBra || in.op == Op::kCall || in.op == Op::kBrx)) {
          in.flags |= kFlagUni;
        } else {
          in.sub = Sub(m->value);
        }
        break;
    }
    (void)IsCmpWord;
  }
  // A modifier the decoder does not know makes a form it does not implement, whose operands
  // may be shaped otherwise than the known forms' (cvt.rn.satfinite.e4m3x2.f32 d, a, b): they
  // are not read, and the kernel that reaches it is refused then.
  if (unknown_modifier) {
    in.fn = &exec_unimplemented;
    return OkStatus();
  }
  if (bar_red) in.flags |= kFlagPredOut;  // bar.red marker
  if (!types.empty()) in.ty = types[0];
  if (types.size() > 1) in.ty2 = types[1];
  if (IsVideoOp(in.op)) {
    if (types.size() != 3 || ops.size() != 4)
      return Err("'" + mnemonic + "' takes .dtype.atype.btype and operands d, a, b, c");
    std::string why = DecodeVideoForm(in, types[1], types[2], ops[0].sel, ops[1].sel, ops[2].sel);
    if (!why.empty()) return Err(why + " in '" + mnemonic + "'");
  }
  size_t n = ops.size();
  auto need = [&](size_t lo, size_t hi) { return NeedOperands(mnemonic, n, lo, hi); };
  auto dst = [&](int k) -> Status {
    ASSIGN_OR_RETURN(in.d[0], DstSlot(ops[k]));
    if (ops[k].reg2 != kNoReg) {
      in.d[1] = ops[k].reg2;
      in.flags |= kFlagSecondDest;
    }
    in.nd = 1;
    return OkStatus();
  };
  auto src = [&](int k, int slot, Ty ty) -> Status {
    ASSIGN_OR_RETURN(in.a[slot], SrcSlot(ops[k], ty));
    if (ops[k].neg) in.src_neg |= uint8_t(1u << slot);
    in.na = uint8_t(std::max<int>(in.na, slot + 1));
    return OkStatus();
  };
  switch (row->shape) {
    case Shape::None:
      RETURN_IF_ERROR(need(0, 0));
      break;
    case Shape::D:
      RETURN_IF_ERROR(need(1, 1));
      RETURN_IF_ERROR(dst(0));
      break;
    case Shape::DA:
    case Shape::DAB:
    case Shape::DABC:
    case Shape::DABCE: {
      size_t cnt = row->shape == Shape::DA     ? 2
                   : row->shape == Shape::DAB  ? 3
                   : row->shape == Shape::DABC ? 4
                                               : 5;
      if (in.op == Op::kCvt && in.ty2 == Ty::kF32 &&
          (in.ty == Ty::kF16x2 || in.ty == Ty::kBF16x2 || in.ty == Ty::kE4m3x2 ||
           in.ty == Ty::kE5m2x2))
        cnt = 3;  // cvt.rn.f16x2.f32 d, a, b packs two conversions
      RETURN_IF_ERROR(need(cnt, cnt));
      if (in.op == Op::kMov) {
        if (ops[0].kind == RawOp::kVec) {  // unpack
          for (size_t k = 0; k < ops[0].elems.size() && k < 4; ++k) {
            ASSIGN_OR_RETURN(in.d[k], DstSlot(ops[0].elems[k]));
          }
          in.nd = uint8_t(ops[0].elems.size());
          in.vec = in.nd;
          ASSIGN_OR_RETURN(in.a[0], SrcSlot(ops[1], in.ty));
          in.na = 1;
          in.sub = Sub::kDown;  // unpack marker
          break;
        }
        RETURN_IF_ERROR(dst(0));
        if (ops[1].kind == RawOp::kVec) {  // pack
          for (size_t k = 0; k < ops[1].elems.size() && k < 4; ++k) {
            ASSIGN_OR_RETURN(in.a[k], SrcSlot(ops[1].elems[k], Ty::kNone));
          }
          in.na = uint8_t(ops[1].elems.size());
          in.vec = in.na;
          in.sub = Sub::kUp;  // pack marker
          break;
        }
        if (ops[1].kind == RawOp::kSReg) {
          in.sreg = uint8_t(ops[1].sreg);
          in.sub = Sub::kIdx;  // special-register marker
          break;
        }
        if (ops[1].kind == RawOp::kSym) {
          Space sp;
          RETURN_IF_ERROR(ResolveSymbol(ops[1].sym, ops[1].imm, in, &sp));
          if (sp == Space::kParam) in.off += 0;  // param-space address of an entry param
          in.sub = Sub::kAll;                    // symbol-address marker
          break;
        }
        RETURN_IF_ERROR(src(1, 0, in.ty));
        break;
      }
      if (in.op == Op::kCvta && ops[1].kind == RawOp::kSym) {
        RETURN_IF_ERROR(dst(0));
        Space sp;
        RETURN_IF_ERROR(ResolveSymbol(ops[1].sym, ops[1].imm, in, &sp));
        in.sub = Sub::kAll;
        break;
      }
      RETURN_IF_ERROR(dst(0));
      for (size_t k = 1; k < cnt; ++k) {
        Ty t = in.ty;
        if ((in.op == Op::kShl || in.op == Op::kShr) && k == 2) t = Ty::kU32;
        if ((in.op == Op::kSelp) && k == 3) t = Ty::kPred;
        if (in.op == Op::kSlct && k == 3) t = in.ty2;
        if (in.op == Op::kCvt) t = in.ty2;
        RETURN_IF_ERROR(src(int(k), int(k - 1), t));
      }
      break;
    }
    case Shape::Mem: {
      if (cache_hint) {  // the policy a cache would keep the line by: read by no one here
        if (n == 0 || (ops[n - 1].kind != RawOp::kReg && ops[n - 1].kind != RawOp::kImm))
          return Err("'" + mnemonic + "' takes a cache policy last");
        --n;
      }
      bool is_st = in.op == Op::kSt || in.op == Op::kRed;
      bool is_prefetch = in.op == Op::kPrefetch || in.op == Op::kPrefetchu;
      if (is_prefetch) {
        RETURN_IF_ERROR(need(1, 1));
        RETURN_IF_ERROR(DecodeAddress(ops[0], in));
        break;
      }
      if (in.op == Op::kAtom) {
        RETURN_IF_ERROR(need(3, 4));
        RETURN_IF_ERROR(dst(0));
        RETURN_IF_ERROR(DecodeAddress(ops[1], in));
        RETURN_IF_ERROR(src(2, 0, in.ty));
        if (n == 4) RETURN_IF_ERROR(src(3, 1, in.ty));
        break;
      }
      RETURN_IF_ERROR(need(2, 2));
      const RawOp& addr = is_st ? ops[0] : ops[1];
      RawOp& val = is_st ? ops[1] : ops[0];
      RETURN_IF_ERROR(DecodeAddress(addr, in));
      if (val.kind == RawOp::kVec) {
        if (val.elems.size() != in.vec) return Err("vector size does not match .v modifier");
        for (size_t k = 0; k < val.elems.size(); ++k) {
          if (is_st) {
            ASSIGN_OR_RETURN(in.a[k], SrcSlot(val.elems[k], in.ty));
          } else {
            ASSIGN_OR_RETURN(in.d[k], DstSlot(val.elems[k]));
          }
        }
        if (is_st)
          in.na = in.vec;
        else
          in.nd = in.vec;
      } else if (is_st) {
        RETURN_IF_ERROR(src(1, 0, in.ty));
      } else {
        RETURN_IF_ERROR(dst(0));
      }
      if (!is_st && in.op != Op::kAtom && in.ty == Ty::kS32 && in.d[0] != kNoReg &&
          SlotBytes(in.d[0]) == 8)
        in.ty2 = Ty::kS64;  // ld.s32 into a 64-bit register sign-extends
      break;
    }
    case Shape::Var:
      switch (in.op) {
        case Op::kSetp:
          RETURN_IF_ERROR(need(3, 4));
          RETURN_IF_ERROR(dst(0));
          RETURN_IF_ERROR(src(1, 0, in.ty));
          RETURN_IF_ERROR(src(2, 1, in.ty));
          if (n == 4) RETURN_IF_ERROR(src(3, 2, Ty::kPred));
          break;
        case Op::kSet:
          RETURN_IF_ERROR(need(3, 4));
          RETURN_IF_ERROR(dst(0));
          RETURN_IF_ERROR(src(1, 0, in.ty2));
          RETURN_IF_ERROR(src(2, 1, in.ty2));
          if (n == 4) RETURN_IF_ERROR(src(3, 2, Ty::kPred));
          break;
        case Op::kBra:
          RETURN_IF_ERROR(need(1, 1));
          if (ops[0].kind != RawOp::kSym) return Err("bra needs a label");
          label_fixups_.push_back({uint32_t(P.code.size()), ops[0].sym, label_block_});
          break;
        case Op::kCall:
          return DecodeCall(f, ops, in, false);
        case Op::kMembar:
        case Op::kFence:
          break;
        case Op::kNanosleep:
        case Op::kPmevent:
          RETURN_IF_ERROR(need(1, 1));
          break;
        case Op::kAlloca:  // alloca.type ptr, size{, immAlign}: in.off the alignment
          RETURN_IF_ERROR(need(2, 3));
          RETURN_IF_ERROR(dst(0));
          RETURN_IF_ERROR(src(1, 0, in.ty));
          in.off = 8;
          if (n == 3) {
            if (ops[2].kind != RawOp::kImm || ops[2].imm <= 0 || (ops[2].imm & (ops[2].imm - 1)) ||
                ops[2].imm > (int64_t(1) << 23))
              return Err("alloca's alignment must be a power of 2 up to 2^23");
            in.off = std::max<int64_t>(ops[2].imm, 8);
          }
          P.uses_alloca = true;
          break;
        case Op::kStackrestore:
          RETURN_IF_ERROR(need(1, 1));
          RETURN_IF_ERROR(src(0, 0, in.ty));
          break;
        case Op::kBrx:  // brx.idx index, tlist: the list's pcs once the function has ended
          RETURN_IF_ERROR(need(2, 2));
          RETURN_IF_ERROR(src(0, 0, Ty::kU32));
          if (ops[1].kind != RawOp::kSym) return Err("brx.idx needs a .branchtargets list");
          brx_fixups_.push_back({uint32_t(P.code.size()), ops[1].sym, label_block_});
          break;
        case Op::kCreatepolicy:  // d, then a fraction; [a], sizes; or (.cvt) a policy
          RETURN_IF_ERROR(need(2, 4));
          RETURN_IF_ERROR(dst(0));
          break;
        case Op::kDiscard:
        case Op::kApplypriority:
          RETURN_IF_ERROR(need(2, 2));
          RETURN_IF_ERROR(DecodeAddress(ops[0], in));
          break;
        case Op::kBar:
        case Op::kBarrier:
          if (in.op == Op::kBarrier && mnemonic.starts_with("barrier.cluster")) {
            // Every launch here is clusters of one CTA (the device has no cluster launch):
            // arrive only orders memory, and wait is the CTA's barrier 0 over all its threads.
            RETURN_IF_ERROR(need(0, 0));
            if (in.flags & kFlagArrive) {
              in.op = Op::kFence;
              in.flags &= ~kFlagArrive;
              break;
            }
            ops.emplace_back();  // the immediate 0
            RETURN_IF_ERROR(src(0, 0, Ty::kU32));
            break;
          }
          if (in.sub2 == Sub::kUni) {  // bar.warp.sync membermask
            RETURN_IF_ERROR(need(1, 1));
            RETURN_IF_ERROR(src(0, 0, Ty::kU32));
            break;
          }
          if (in.flags & kFlagPredOut) {  // bar.red.op.type d, a{, b}, {!}c
            RETURN_IF_ERROR(need(3, 4));
            RETURN_IF_ERROR(dst(0));
            RETURN_IF_ERROR(src(1, 0, Ty::kU32));
            if (n == 4) {
              RETURN_IF_ERROR(src(2, 1, Ty::kU32));
              RETURN_IF_ERROR(src(3, 2, Ty::kPred));
            } else {
              RETURN_IF_ERROR(src(2, 2, Ty::kPred));
            }
            break;
          }
          RETURN_IF_ERROR(need(1, 2));
          RETURN_IF_ERROR(src(0, 0, Ty::kU32));
          if (n == 2) RETURN_IF_ERROR(src(1, 1, Ty::kU32));
          break;
        case Op::kShfl:
          RETURN_IF_ERROR(need(5, 5));
          RETURN_IF_ERROR(dst(0));
          for (int k = 1; k < 5; ++k) RETURN_IF_ERROR(src(k, k - 1, Ty::kB32));
          break;
        case Op::kVote:
        case Op::kRedux:
        case Op::kMatch:
          RETURN_IF_ERROR(need(3, 3));
          RETURN_IF_ERROR(dst(0));
          RETURN_IF_ERROR(src(1, 0, in.op == Op::kVote ? Ty::kPred : in.ty));
          RETURN_IF_ERROR(src(2, 1, Ty::kB32));
          break;
        default:
          return Err("no decoder for '" + mnemonic + "'");
      }
      break;
  }
  SelectFn sel = FindSelect(in.op);
  in.fn = sel ? sel(in) : nullptr;
  if (in.rnd == Rnd::kRna && in.op != Op::kCvt) in.fn = nullptr;  // .rna is cvt's alone
  if (in.sub == Sub::kSatfinite && in.op != Op::kCvt) in.fn = nullptr;
  if (!in.fn) in.fn = &exec_unimplemented;
  return OkStatus();
}

// mma, ldmatrix, movmatrix and wmma.*: DecodeMatrixForm reads the modifiers; the register
// vectors go to a MatrixOp of P.matrix (in.target). A form it does not implement is refused
// when reached, without its operands being looked at: they differ between forms (.sp, block
// scaling) and a module using one elsewhere must still load.
Status Parser::DecodeMatrix(const std::string& mnemonic, std::string_view mods,
                            std::vector<RawOp>& ops, Inst& in) {
  MatrixOp m;
  DecodeMatrixForm(in.op, mods, &m, &in.space);
  // A vector operand of `count` registers (a lone register where count is 1: movmatrix).
  auto regs = [&](const RawOp& o, int count, uint32_t* out, bool dst, Ty ty) -> Status {
    bool vec = o.kind == RawOp::kVec;
    size_t have = vec ? o.elems.size() : 1;
    if (have != size_t(count) || (!vec && m.kind != MatrixOp::kMovmatrix))
      return Err("'" + mnemonic + "' takes a vector of " + std::to_string(count) + " registers");
    for (int k = 0; k < count; ++k) {
      const RawOp& e = vec ? o.elems[k] : o;
      if (dst) {
        ASSIGN_OR_RETURN(out[k], DstSlot(e));
      } else {
        ASSIGN_OR_RETURN(out[k], SrcSlot(e, ty));
      }
    }
    return OkStatus();
  };
  auto need = [&](size_t lo, size_t hi) { return NeedOperands(mnemonic, ops.size(), lo, hi); };
  if (m.supported) {
    switch (m.kind) {
      case MatrixOp::kMma:
      case MatrixOp::kWmmaMma:
        RETURN_IF_ERROR(need(4, 4));
        RETURN_IF_ERROR(regs(ops[0], m.nd, m.d, true, m.td));
        RETURN_IF_ERROR(regs(ops[1], m.na, m.a, false, m.ta));
        RETURN_IF_ERROR(regs(ops[2], m.nb, m.b, false, m.tb));
        RETURN_IF_ERROR(regs(ops[3], m.nc, m.c, false, m.tc));
        break;
      case MatrixOp::kLdmatrix:
        RETURN_IF_ERROR(need(2, 2));
        RETURN_IF_ERROR(regs(ops[0], m.nd, m.d, true, m.td));
        RETURN_IF_ERROR(DecodeAddress(ops[1], in));
        break;
      case MatrixOp::kMovmatrix:
        RETURN_IF_ERROR(need(2, 2));
        RETURN_IF_ERROR(regs(ops[0], 1, m.d, true, m.td));
        RETURN_IF_ERROR(regs(ops[1], 1, m.a, false, m.ta));
        break;
      case MatrixOp::kWmmaLoad:
      case MatrixOp::kWmmaStore: {
        RETURN_IF_ERROR(need(2, 3));
        bool load = m.kind == MatrixOp::kWmmaLoad;
        RETURN_IF_ERROR(DecodeAddress(ops[load ? 1 : 0], in));
        RETURN_IF_ERROR(regs(ops[load ? 0 : 1], m.nd, m.d, load, m.td));
        if (ops.size() == 3) {
          ASSIGN_OR_RETURN(in.a[0], SrcSlot(ops[2], Ty::kU32));
          in.na = 1;
        }
        break;
      }
    }
  }
  in.target = uint32_t(P.matrix.size());
  P.matrix.push_back(m);
  in.fn = SelectMatrix(m);
  if (!in.fn) in.fn = &exec_unimplemented;
  return OkStatus();
}

Status Parser::DecodeCall(Function& f, std::vector<RawOp>& ops, Inst& in, bool) {
  (void)f;
  PendingCall pc;
  pc.line = in.line;
  pc.module = module_;
  size_t k = 0;
  auto frame_of = [&](const RawOp& o, std::vector<FrameSym>& out) -> Status {
    if (o.kind != RawOp::kSym) return Err("call arguments must be .param names");
    for (auto it = frame_syms_.rbegin(); it != frame_syms_.rend(); ++it) {
      if (it->name == o.sym) {
        out.push_back(*it);
        return OkStatus();
      }
    }
    return Err("call argument " + o.sym + " is not a .param in scope");
  };
  if (k < ops.size() && ops[k].kind == RawOp::kList) {
    for (auto& e : ops[k].elems) RETURN_IF_ERROR(frame_of(e, pc.rets));
    ++k;
  }
  if (k < ops.size() && ops[k].kind == RawOp::kReg) return DecodeIndirectCall(ops, in, k, pc);
  if (k >= ops.size() || ops[k].kind != RawOp::kSym) return Err("expected a function to call");
  pc.callee = ops[k].sym;
  ++k;
  if (k < ops.size() && ops[k].kind == RawOp::kList) {
    for (auto& e : ops[k].elems) RETURN_IF_ERROR(frame_of(e, pc.args));
    ++k;
  }
  if (k != ops.size()) return Err("unexpected operands after call arguments");
  pc.site = uint32_t(P.calls.size());
  P.calls.emplace_back();
  func_sites_.resize(std::max<size_t>(func_sites_.size(), cur_fidx_ + 1));
  func_sites_[cur_fidx_].push_back(pc.site);
  in.target = pc.site;
  pending_calls_.push_back(std::move(pc));
  in.fn = select_Call(in);
  return OkStatus();
}

Result<uint64_t> Parser::TakeAddress(uint32_t func) {
  // A kernel's address is what a device-side launch names it by; it is no call target.
  (P.funcs[func].is_entry ? kernels_taken_ : addr_taken_).push_back(func);
  return FuncAddress(P, func);
}

// An initialiser element naming a symbol: a global's address is written at load (a
// relocation), a function's is known now.
Status Parser::InitRef(Global& g, uint64_t pos, uint32_t esize, const std::string& s, int64_t add) {
  if (uint32_t t = LookupGlobal(s); t != kNoReg) {
    g.relocs.push_back({pos, t, add, int(esize)});
    return OkStatus();
  }
  uint32_t f = LookupFunc(s);
  if (f == kNoReg) return Err("initialiser names unknown symbol " + s);
  if (esize != 8) return Err("the address of function " + s + " in a narrower initialiser");
  ASSIGN_OR_RETURN(uint64_t addr, TakeAddress(f));
  addr += uint64_t(add);
  std::memcpy(g.init.data() + pos, &addr, 8);
  return OkStatus();
}

// label: .callprototype {(.param ret)} _ {(.param args)};
Status Parser::ParsePrototype() {
  std::string name(Next().text);
  Next();  // :
  Next();  // .callprototype
  Function proto;
  if (IsP("(")) RETURN_IF_ERROR(ParseParamList(proto, proto.rets, false));
  if (!IsW("_")) return Err("expected '_' in .callprototype");
  Next();
  if (IsP("(")) RETURN_IF_ERROR(ParseParamList(proto, proto.params, false));
  if (IsW(".noreturn")) Next();
  RETURN_IF_ERROR(Expect(";"));
  protos_[name] = std::move(proto);
  return OkStatus();
}

// call (rets), %reg, (args), prototype: the prototype fixes the sizes; the callee, found from
// the register at run time, must declare the same (exec_ctl.cc checks).
Status Parser::DecodeIndirectCall(std::vector<RawOp>& ops, Inst& in, size_t k, PendingCall& pc) {
  in.a[0] = ops[k].reg;
  in.na = 1;
  ++k;
  for (; k < ops.size() && ops[k].kind == RawOp::kList; ++k) {
    for (auto& e : ops[k].elems) {
      auto it = std::find_if(frame_syms_.rbegin(), frame_syms_.rend(),
                             [&](const FrameSym& f) { return f.name == e.sym; });
      if (e.kind != RawOp::kSym || it == frame_syms_.rend())
        return Err("call argument " + e.sym + " is not a .param in scope");
      pc.args.push_back(*it);
    }
  }
  if (k + 1 != ops.size() || ops[k].kind != RawOp::kSym) return Err("expected a .callprototype");
  auto proto = protos_.find(ops[k].sym);
  if (proto == protos_.end())
    return Err("indirect call through " + ops[k].sym +
               ", which is not a .callprototype (.calltargets lists are not supported)");
  const Function& f = proto->second;
  if (pc.args.size() != f.params.size() || pc.rets.size() != f.rets.size())
    return Err("indirect call with the wrong number of arguments for " + ops[k].sym);
  CallSite site;
  site.callee = kNoReg;
  site.indirect = true;
  for (size_t i = 0; i < pc.args.size(); ++i) {
    if (pc.args[i].size != f.params[i].size) return Err("argument size differs from prototype");
    site.args.push_back({pc.args[i].offset, 0, f.params[i].size});
  }
  for (size_t i = 0; i < pc.rets.size(); ++i) {
    if (pc.rets[i].size != f.rets[i].size) return Err("return size differs from prototype");
    site.rets.push_back({0, pc.rets[i].offset, f.rets[i].size});
  }
  in.target = uint32_t(P.calls.size());
  P.calls.push_back(std::move(site));
  func_sites_.resize(std::max<size_t>(func_sites_.size(), cur_fidx_ + 1));
  func_sites_[cur_fidx_].push_back(in.target);
  in.fn = select_Call(in);
  return OkStatus();
}

Status Parser::DecodeCvtPack(const std::string& mnemonic, std::string_view mods,
                             std::vector<RawOp>& ops, Inst& in) {
  static constexpr struct {
    std::string_view text;
    uint32_t bits;
    bool is_signed;
  } kKinds[] = {{"u16", 16, false}, {"s16", 16, true}, {"u8", 8, false}, {"s8", 8, true},
                {"u4", 4, false},   {"s4", 4, true},   {"u2", 2, false}, {"s2", 2, true}};
  std::vector<std::string_view> words;
  for (size_t at = 0; at <= mods.size();) {
    const size_t d = std::min(mods.find('.', at), mods.size());
    words.push_back(mods.substr(at, d - at));
    at = d + 1;
  }
  const auto kind = words.size() >= 3
                        ? std::find_if(std::begin(kKinds), std::end(kKinds),
                                       [&](const auto& k) { return k.text == words[2]; })
                        : std::end(kKinds);
  const bool with_c = kind != std::end(kKinds) && kind->bits < 16;
  if (kind == std::end(kKinds) || words.size() != (with_c ? 5u : 4u) || words[1] != "sat" ||
      words[3] != "s32" || (with_c && words[4] != "b32")) {
    in.fn = &exec_unimplemented;  // another form: refused if reached, as any unknown modifier
    return OkStatus();
  }
  RETURN_IF_ERROR(NeedOperands(mnemonic, ops.size(), with_c ? 4 : 3, with_c ? 4 : 3));
  ASSIGN_OR_RETURN(in.d[0], DstSlot(ops[0]));
  in.nd = 1;
  for (size_t k = 1; k < ops.size(); ++k) {
    ASSIGN_OR_RETURN(in.a[k - 1], SrcSlot(ops[k], k < 3 ? Ty::kS32 : Ty::kB32));
  }
  in.na = uint8_t(ops.size() - 1);
  in.ty = Ty::kB32;
  in.ty2 = Ty::kS32;
  in.target = kind->bits | (kind->is_signed ? kCvtPackSigned : 0);
  in.fn = select_cvt_pack_int(in);
  if (!in.fn) in.fn = &exec_unimplemented;
  return OkStatus();
}

// vadd ... vset: operands d{.dsel}, {-}a{.asel}, {-}b{.bsel}{, {-}c}; the rest from
// DecodeScalarVideo (exec_video.cc).
Status Parser::DecodeScalarVideo(const std::string& mnemonic, std::string_view mods,
                                 std::vector<RawOp>& ops, Inst& in) {
  RETURN_IF_ERROR(NeedOperands(mnemonic, ops.size(), 3, 4));
  uint32_t negated = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].kind == RawOp::kVec || ops[k].kind == RawOp::kAddr)
      return Err("'" + mnemonic + "' takes scalar operands");
    if (k == 3 && !ops[k].sel.empty()) return Err("c takes no selector in '" + mnemonic + "'");
    if (ops[k].neg) return Err("'!' on an operand of '" + mnemonic + "'");
    if (k > 0 && ops[k].minus) negated |= 1u << (k - 1);
    if (k == 0 && ops[k].minus) return Err("a negated destination in '" + mnemonic + "'");
  }
  std::string why = ::remora::emu::ptx::DecodeScalarVideo(in, mods, ops[0].sel, ops[1].sel,
                                                          ops[2].sel, negated, ops.size());
  if (!why.empty()) return Err(why + " in '" + mnemonic + "'");
  ASSIGN_OR_RETURN(in.d[0], DstSlot(ops[0]));
  in.nd = 1;
  for (size_t k = 1; k < ops.size(); ++k) {
    ASSIGN_OR_RETURN(in.a[k - 1], SrcSlot(ops[k], Ty::kB32));
  }
  in.na = uint8_t(ops.size() - 1);
  in.fn = FindSelect(in.op)(in);
  return OkStatus();
}

// cp.async, cp.async.bulk, mbarrier: the form from DecodeAsyncModifiers, operands as async.h
// lays them out.
Status Parser::DecodeAsync(const std::string& mnemonic, std::vector<RawOp>& ops, Inst& in) {
  bool cache_hint = false;
  if (std::string why = DecodeAsyncModifiers(mnemonic, in, &cache_hint); !why.empty())
    return Err(why);
  const size_t n = ops.size();
  auto need = [&](size_t lo, size_t hi) { return NeedOperands(mnemonic, n, lo, hi); };
  auto value = [&](size_t k, int slot) -> Status {
    if (ops[k].kind == RawOp::kAddr) return Err("unexpected address operand");
    ASSIGN_OR_RETURN(in.a[slot], SrcSlot(ops[k], Ty::kU64));
    if (ops[k].neg) in.src_neg |= uint8_t(1u << slot);
    in.na = uint8_t(std::max<int>(in.na, slot + 1));
    return OkStatus();
  };
  auto pair = [&](size_t k, int slot) -> Status {  // [reg+imm] or [static shared var+imm]
    const RawOp& o = ops[k];
    if (o.kind != RawOp::kAddr) return Err("expected an address operand [..]");
    in.a[slot] = o.has_base ? o.reg : kNoReg;
    if (o.sym.empty()) {
      in.a[slot + 1] = ConstSlot(uint64_t(o.imm));
    } else {
      auto sh = scope().shared.find(o.sym);
      if (sh == scope().shared.end())
        return Err("address " + o.sym + " must be a register or a static .shared variable here");
      in.a[slot + 1] = SharedConstSlot(sh->second, o.imm);
    }
    in.na = uint8_t(std::max<int>(in.na, slot + 2));
    return OkStatus();
  };
  auto dst = [&]() -> Status {
    ASSIGN_OR_RETURN(in.d[0], DstSlot(ops[0]));
    in.nd = 1;
    return OkStatus();
  };
  const size_t hint = cache_hint ? 1 : 0;
  switch (AsyncForm(in.target)) {
    case AsyncForm::kCpAsyncCa:
    case AsyncForm::kCpAsyncCg: {
      RETURN_IF_ERROR(need(3 + hint, 4 + hint));
      RETURN_IF_ERROR(pair(0, 0));
      RETURN_IF_ERROR(DecodeAddress(ops[1], in));
      const int64_t size = ops[2].kind == RawOp::kImm ? ops[2].imm : 0;
      const bool ca = AsyncForm(in.target) == AsyncForm::kCpAsyncCa;
      if (size != 16 && !(ca && (size == 4 || size == 8)))
        return Err("cp-size of '" + mnemonic + "' must be 16 (or 4, 8 with .ca)");
      in.vec = uint8_t(size);
      if (n == 4 + hint) {  // src-size, or the ignore-src predicate
        const bool pred = ops[3].kind == RawOp::kReg && SlotBytes(ops[3].reg) == 1;
        RETURN_IF_ERROR(value(3, pred ? 3 : 2));
      }
      if (hint) RETURN_IF_ERROR(value(n - 1, 4));
      break;
    }
    case AsyncForm::kCpCommit:
    case AsyncForm::kCpWaitAll:
    case AsyncForm::kBulkCommit:
      RETURN_IF_ERROR(need(0, 0));
      break;
    case AsyncForm::kCpWaitGroup:
    case AsyncForm::kBulkWait:
      RETURN_IF_ERROR(need(1, 1));
      if (ops[0].kind != RawOp::kImm) return Err("'" + mnemonic + "' needs an immediate");
      break;
    case AsyncForm::kCpMbarArrive:
    case AsyncForm::kCpMbarArriveNoinc:
    case AsyncForm::kMbInval:
      RETURN_IF_ERROR(need(1, 1));
      RETURN_IF_ERROR(DecodeAddress(ops[0], in));
      break;
    case AsyncForm::kBulkG2S:
    case AsyncForm::kBulkS2S:
      RETURN_IF_ERROR(need(4 + hint, 4 + hint));
      RETURN_IF_ERROR(pair(0, 0));
      RETURN_IF_ERROR(DecodeAddress(ops[1], in));
      RETURN_IF_ERROR(value(2, 2));
      RETURN_IF_ERROR(pair(3, 3));
      break;
    case AsyncForm::kBulkS2G:
      RETURN_IF_ERROR(need(3 + hint, 3 + hint));
      RETURN_IF_ERROR(DecodeAddress(ops[0], in));
      RETURN_IF_ERROR(pair(1, 0));
      RETURN_IF_ERROR(value(2, 2));
      break;
    case AsyncForm::kMbInit:
    case AsyncForm::kMbExpectTx:
    case AsyncForm::kMbCompleteTx:
      RETURN_IF_ERROR(need(2, 2));
      RETURN_IF_ERROR(DecodeAddress(ops[0], in));
      RETURN_IF_ERROR(value(1, 0));
      break;
    case AsyncForm::kMbArrive:
    case AsyncForm::kMbArriveDrop:
      RETURN_IF_ERROR(need(2, 3));
      RETURN_IF_ERROR(dst());
      RETURN_IF_ERROR(DecodeAddress(ops[1], in));
      if (n == 3) RETURN_IF_ERROR(value(2, 0));
      break;
    case AsyncForm::kMbTryWait:
    case AsyncForm::kMbTryWaitParity:
      RETURN_IF_ERROR(need(3, 4));
      RETURN_IF_ERROR(dst());
      RETURN_IF_ERROR(DecodeAddress(ops[1], in));
      RETURN_IF_ERROR(value(2, 0));
      if (n == 4) RETURN_IF_ERROR(value(3, 1));  // suspend-time hint: a limit we may undercut
      break;
    case AsyncForm::kMbPendingCount:
      RETURN_IF_ERROR(need(2, 2));
      RETURN_IF_ERROR(dst());
      RETURN_IF_ERROR(value(1, 0));
      break;
    default:  // the .noComplete / .expect_tx arrivals, test_wait: d, [mbar], operand
      RETURN_IF_ERROR(need(3, 3));
      RETURN_IF_ERROR(dst());
      RETURN_IF_ERROR(DecodeAddress(ops[1], in));
      RETURN_IF_ERROR(value(2, 0));
      break;
  }
  in.fn = in.op == Op::kCp ? select_Cp(in) : select_Mbarrier(in);
  if (!in.fn) in.fn = &exec_unimplemented;
  return OkStatus();
}

// tex, tld4, txq, suld, sust, suq, sured: the form from DecodeTexModifiers, operands as
// texture.h lays them out. A refused form's operands are not looked at (it faults when reached);
// operands the interpreter does not implement (texel offsets, depth compare, a residency
// predicate, a .texref name) refuse the form the same way.
Status Parser::DecodeTexture(const std::string& mnemonic, std::vector<RawOp>& ops, Inst& in) {
  TexForm f = DecodeTexModifiers(mnemonic, in);
  auto unsupported = [&] { f.refusal = TexRefusal::kOperands; };
  // [handle, {coordinates}]: a[0] the handle, a[1..] the first `want` coordinates.
  auto handle = [&](const RawOp& o, int coords, Ty cty) -> Status {
    if (o.kind != RawOp::kAddr) return Err("'" + mnemonic + "' needs a [handle, ...] operand");
    if (!o.has_base || !o.sym.empty() || o.imm != 0) {
      unsupported();  // a .texref/.surfref name (the texture reference API)
      return OkStatus();
    }
    in.a[0] = o.reg;
    in.na = 1;
    if (o.has_coords != (coords > 0))
      return Err("'" + mnemonic + "' takes " + std::to_string(coords) + " coordinates");
    if (coords == 0) return OkStatus();
    if (o.elems.size() != size_t(coords) && !(coords == 4 && o.elems.size() == 3))
      return Err("'" + mnemonic + "' takes " + std::to_string(coords) + " coordinates, got " +
                 std::to_string(o.elems.size()));
    const size_t keep = std::min<size_t>(o.elems.size(), 3);  // .3d's fourth is ignored
    for (size_t k = 0; k < keep; ++k) {
      ASSIGN_OR_RETURN(in.a[1 + k], SrcSlot(o.elems[k], cty));
    }
    in.na = uint8_t(1 + keep);
    return OkStatus();
  };
  // A vector of `count` registers (or one register where count is 1) into slots[].
  auto regs = [&](const RawOp& o, int count, uint32_t* slots, bool dst) -> Status {
    const bool vec = o.kind == RawOp::kVec;
    if (o.reg2 != kNoReg) {
      unsupported();
      return OkStatus();
    }
    if ((vec ? o.elems.size() : 1) != size_t(count))
      return Err("'" + mnemonic + "' takes a vector of " + std::to_string(count) + " registers");
    for (int k = 0; k < count; ++k) {
      const RawOp& e = vec ? o.elems[k] : o;
      if (dst) {
        ASSIGN_OR_RETURN(slots[k], DstSlot(e));
      } else {
        ASSIGN_OR_RETURN(slots[k], SrcSlot(e, in.ty));
      }
    }
    return OkStatus();
  };
  const size_t n = ops.size();
  if (f.refusal == TexRefusal::kNone) {
    const int coords = TexCoordCount(f.geom);
    switch (in.op) {
      case Op::kTex:
      case Op::kTld4: {
        // d, [a, c] plus .level's lod or .grad's two gradient vectors, neither kept.
        const size_t extra = in.op == Op::kTex && TexLod(f.mode) == TexLod::kLevel  ? 1
                             : in.op == Op::kTex && TexLod(f.mode) == TexLod::kGrad ? 2
                                                                                    : 0;
        if (n < 2) return Err("'" + mnemonic + "' takes a destination and [handle, coordinates]");
        if (n != 2 + extra) {
          unsupported();  // texel offsets, depth compare value
          break;
        }
        RETURN_IF_ERROR(regs(ops[0], 4, in.d, true));
        in.nd = 4;
        RETURN_IF_ERROR(handle(ops[1], coords, in.ty2));
        break;
      }
      case Op::kSuld:
        RETURN_IF_ERROR(NeedOperands(mnemonic, n, 2, 2));
        RETURN_IF_ERROR(regs(ops[0], in.vec, in.d, true));
        in.nd = in.vec;
        RETURN_IF_ERROR(handle(ops[1], coords, Ty::kS32));
        break;
      case Op::kSust:
        RETURN_IF_ERROR(NeedOperands(mnemonic, n, 2, 2));
        RETURN_IF_ERROR(handle(ops[0], coords, Ty::kS32));
        RETURN_IF_ERROR(regs(ops[1], in.vec, in.d, false));
        break;
      default: {  // txq, suq: d, [a]{, lod}
        RETURN_IF_ERROR(NeedOperands(mnemonic, n, f.level ? 3 : 2, f.level ? 3 : 2));
        ASSIGN_OR_RETURN(in.d[0], DstSlot(ops[0]));
        in.nd = 1;
        RETURN_IF_ERROR(handle(ops[1], 0, Ty::kNone));
        if (f.level) {
          ASSIGN_OR_RETURN(in.a[1], SrcSlot(ops[2], Ty::kS32));
          in.na = 2;
        }
        break;
      }
    }
  }
  in.target = f.Pack();
  SelectFn sel = FindSelect(in.op);
  in.fn = sel ? sel(in) : nullptr;
  if (!in.fn) in.fn = &exec_unimplemented;
  return OkStatus();
}

Status Parser::ParseModule(std::string_view src, int module) {
  module_ = module;
  scopes_[module];
  std::vector<Token> toks = Tokenize(src);
  toks_ = std::move(toks);
  i_ = 0;
  // Every instruction ends at a ';': room for all of them at once, not a copy per doubling
  // (a library's module holds millions).
  const size_t statements = size_t(std::count_if(toks_.begin(), toks_.end(), [](const Token& t) {
    return t.text.size() == 1 && t.text[0] == ';';
  }));
  P.code.reserve(P.code.size() + statements);
  P.code_text.reserve(P.code_text.size() + statements);
  while (Peek().kind != Token::kEnd) {
    bool is_extern = false, is_visible = false;
    cur_weak_ = false;
    if (IsW(".version") || IsW(".target") || IsW(".address_size") || IsW(".file") || IsW(".loc")) {
      SkipLine();
      continue;
    }
    if (IsW(".pragma")) {
      Next();
      Next();
      RETURN_IF_ERROR(Expect(";"));
      continue;
    }
    if (IsW(".section")) {
      Next();
      Next();
      RETURN_IF_ERROR(SkipBalanced());
      continue;
    }
    while (IsW(".visible") || IsW(".extern") || IsW(".weak") || IsW(".common")) {
      if (IsW(".extern"))
        is_extern = true;
      else
        is_visible = true;
      cur_weak_ |= IsW(".weak") || IsW(".common");
      Next();
    }
    if (IsW(".entry") || IsW(".func")) {
      RETURN_IF_ERROR(ParseFunction(IsW(".entry"), is_extern, is_visible));
    } else if (IsW(".global") || IsW(".const") || IsW(".shared") || IsW(".local")) {
      RETURN_IF_ERROR(ParseModuleVar(is_extern, is_visible));
    } else {
      return Err("unknown directive");
    }
  }
  return OkStatus();
}

// Lays out each kernel's static shared memory as a GPU does: only the .shared variables a kernel
// reaches (named in its body or, transitively, in a function it calls) take space in its CTAs. A
// variable has one offset for every kernel reaching it (they share its code), placed after all
// that is already placed for each of those kernels, so no kernel's variables overlap.
Status Parser::LayOutShared() {
  const size_t nk = P.kernels.size(), nv = shared_vars_.size();
  std::vector<std::vector<uint32_t>> kernels_of(nv);
  for (uint32_t k = 0; k < nk; ++k) {
    std::vector<bool> func_seen(P.funcs.size()), var_seen(nv);
    std::vector<uint32_t> stack{P.kernel_func[k]};
    while (!stack.empty()) {
      uint32_t f = stack.back();
      stack.pop_back();
      if (func_seen[f]) continue;
      func_seen[f] = true;
      if (f < func_shared_.size()) {
        for (uint32_t v : func_shared_[f]) {
          if (!var_seen[v]) kernels_of[v].push_back(k);
          var_seen[v] = true;
        }
      }
      if (f < func_sites_.size()) {
        for (uint32_t site : func_sites_[f]) {
          if (P.calls[site].indirect)
            stack.insert(stack.end(), addr_taken_.begin(), addr_taken_.end());
          else
            stack.push_back(P.calls[site].callee);
        }
      }
    }
  }
  std::vector<uint32_t> end(nk, 0), offset(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    uint64_t at = 0;
    for (uint32_t k : kernels_of[v]) at = std::max<uint64_t>(at, end[k]);
    at = AlignUp(uint32_t(at), shared_vars_[v].align);
    if (at + shared_vars_[v].size > kMaxStaticShared)
      return Error(err::kInvalidPtx, "static .shared memory of a kernel exceeds 48 KiB");
    offset[v] = uint32_t(at);
    for (uint32_t k : kernels_of[v]) end[k] = uint32_t(at) + shared_vars_[v].size;
  }
  for (size_t k = 0; k < nk; ++k) P.kernels[k].static_shared_bytes = end[k];
  for (Inst& in : P.code) {
    if (in.symkind != SymKind::kShared) continue;
    in.off += offset[in.sym];
    in.symkind = SymKind::kNone;
    in.sym = 0;
  }
  for (const SharedConst& c : shared_consts_)
    std::fill_n(P.consts.begin() + ptrdiff_t(c.slot) * 32, 32, offset[c.var] + uint64_t(c.imm));
  return OkStatus();
}

Status Parser::Link() {
  auto lerr = [](const PendingCall& c, const std::string& what) {
    return Error(err::kInvalidPtx, "PTX module " + std::to_string(c.module) + " line " +
                                       std::to_string(c.line) + ": " + what);
  };
  for (PendingCall& c : pending_calls_) {
    const ModuleScope& sc = scopes_[c.module];
    uint32_t fi = kNoReg;
    if (auto it = sc.funcs.find(c.callee); it != sc.funcs.end()) fi = it->second;
    if (auto it = P.func_by_name.find(c.callee); it != P.func_by_name.end()) {
      if (fi == kNoReg || !P.funcs[fi].defined) fi = it->second;
    }
    if (fi == kNoReg) return lerr(c, "call to unknown function " + c.callee);
    Function& callee = P.funcs[fi];
    if (!callee.defined) {
      if (c.callee == "vprintf")
        callee.builtin = Builtin::kVprintf;
      else if (c.callee == "__assertfail")
        callee.builtin = Builtin::kAssertfail;
      else if (c.callee == "malloc")
        callee.builtin = Builtin::kMalloc;
      else if (c.callee == "free")
        callee.builtin = Builtin::kFree;
      else if (RuntimeCall rc = RuntimeCallNamed(c.callee); rc != RuntimeCall::kNone) {
        callee.builtin = Builtin::kDeviceRuntime;
        callee.runtime_call = rc;
        P.uses_device_runtime = true;
      } else if (c.callee.starts_with("__cudaCDP2"))
        return lerr(c, "call to " + c.callee +
                           ", a part of CUDA's device runtime the emulated GPU does not serve");
      else if (c.callee == "cudaGraphSetConditional")
        callee.builtin = Builtin::kSetConditional;
      else if (c.callee.starts_with("cudaGraph"))
        callee.builtin = Builtin::kUnserved;  // the module's other kernels still run
      else
        return lerr(c, "call to " + c.callee + ", which no loaded module defines");
    }
    CallSite& site = P.calls[c.site];
    site.callee = fi;
    if (c.args.size() != callee.params.size() || c.rets.size() != callee.rets.size())
      return lerr(c, "call to " + c.callee + " with the wrong number of arguments");
    for (size_t k = 0; k < c.args.size(); ++k)
      site.args.push_back({c.args[k].offset, callee.params[k].offset,
                           std::min(c.args[k].size, callee.params[k].size)});
    for (size_t k = 0; k < c.rets.size(); ++k)
      site.rets.push_back(
          {callee.rets[k].offset, c.rets[k].offset, std::min(c.rets[k].size, callee.rets[k].size)});
  }
  for (const Global& g : P.globals)
    if (!g.defined)
      return Error(err::kInvalidPtx, "extern variable " + g.name + " is defined by no module");
  for (uint32_t f : kernels_taken_)
    if (!P.funcs[f].defined)
      return Error(err::kInvalidPtx, "the address of kernel " + P.funcs[f].name +
                                         " is taken, but no module defines it");
  for (uint32_t f : addr_taken_)
    if (!P.funcs[f].defined)
      return Error(err::kInvalidPtx,
                   "the address of " + P.funcs[f].name + " is taken, but no module defines it");
  if (P.funcs.size() > kMaxFuncs)
    return Error(err::kInvalidPtx, "more than 2^20 functions in one program");
  // The dynamic shared array is a pseudo-global one past the real ones (see LaunchCtx::gaddr).
  uint32_t dyn_index = uint32_t(P.globals.size());
  for (Inst& in : P.code)
    if (in.symkind == SymKind::kGlobal && in.sym == kNoReg) in.sym = dyn_index;
  for (size_t fi = 0; fi < P.funcs.size(); ++fi) {
    Function& f = P.funcs[fi];
    if (!f.is_entry || !f.defined) continue;
    KernelInfo k;
    k.name = f.name;
    for (auto& p : f.params) k.params.push_back({p.offset, p.size});
    k.param_bytes = f.params.empty() ? 0 : f.params.back().offset + f.params.back().size;
    k.local_bytes = f.frame_bytes;
    uint32_t m = f.maxntid[0]
                     ? f.maxntid[0] * std::max(1u, f.maxntid[1]) * std::max(1u, f.maxntid[2])
                     : 1024;
    k.max_threads_per_block = m;
    std::copy(std::begin(f.cluster), std::end(f.cluster), k.cluster);
    k.explicit_cluster = f.explicit_cluster;
    // PTX registers are virtual and unbounded; ptxas would allocate far fewer.
    // Report a count that lets any block nvcc accepts (<= 1024 threads) launch,
    // so the emulator is never stricter than a GPU on register pressure.
    k.num_regs = std::clamp<uint32_t>(f.nregs, 16, 64);
    f.kernel_index = uint32_t(P.kernels.size());
    P.kernels.push_back(std::move(k));
    P.kernel_func.push_back(uint32_t(fi));
  }
  RETURN_IF_ERROR(LayOutShared());
  for (const Global& g : P.globals) {
    GlobalInfo gi;
    gi.name = g.name;
    gi.is_const = g.space == Space::kConst;
    gi.managed = g.managed;
    gi.size = g.size;
    gi.align = g.align;
    gi.init = g.init;
    P.global_info.push_back(std::move(gi));
  }
  return OkStatus();
}

}  // namespace

const char* OpName(Op op) {
  for (const OpRow& r : kOpRows)
    if (r.op == op) return r.mnemonic;
  return "?";
}

Status ParseProgram(std::span<const std::string> sources, ProgramImpl& P) {
  static std::atomic<uint32_t> next_tag{1};
  P.func_tag = next_tag.fetch_add(1, std::memory_order_relaxed);  // unique only: no ordering
  Parser parser(P);
  for (size_t m = 0; m < sources.size(); ++m)
    RETURN_IF_ERROR(parser.ParseModule(sources[m], int(m)));
  return parser.Link();
}

}  // namespace remora::emu::ptx
