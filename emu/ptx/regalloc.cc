// emu/ptx/regalloc.cc - a kernel's register slots packed by liveness (regalloc.h).
//
// Per kernel: the code reachable from its entry, cut into basic blocks; the registers each
// block reads before writing and writes (bit sets over the kernel's slots); live-in and
// live-out solved backwards to a fixed point; each register's interval taken as the hull of
// its defining and reading points and of the block ends where it is live; then a linear scan
// gives each interval the lowest slot whose last interval has ended.
#include "emu/ptx/regalloc.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace remora::emu::ptx {
namespace {

// True if every register the instruction touches is in in.d, in.a, in.base or in.guard, as the
// decoder's generic forms put them (and its branch target is in.target): any D/A/B/C/E or Mem
// shaped row, and the Var rows decoded the same way.
bool OperandsInFields(Op op) {
  switch (op) {
#define PTX_OP(id, Name, mnemonic, shape, section) \
  case Op::k##Name:                                \
    if (Shape::shape != Shape::Var) return true;   \
    break;
#include "emu/ptx/ops.def"
    default:
      return false;
  }
  switch (op) {
    case Op::kSetp:
    case Op::kSet:
    case Op::kBra:
    case Op::kMembar:
    case Op::kFence:
    case Op::kBar:
    case Op::kBarrier:
    case Op::kShfl:
    case Op::kVote:
    case Op::kRedux:
    case Op::kMatch:
    case Op::kNanosleep:
    case Op::kPmevent:
    case Op::kAlloca:
    case Op::kStackrestore:
    case Op::kCreatepolicy:
    case Op::kDiscard:
    case Op::kApplypriority:
    case Op::kGriddepcontrol:
      return true;
    default:  // calls, matrix, async copies, mbarriers, textures, surfaces
      return false;
  }
}

// True if the instruction, unguarded, never goes on to the next one.
bool EndsFlow(const Inst& in) {
  return in.guard == kNoReg &&
         (in.op == Op::kBra || in.op == Op::kRet || in.op == Op::kExit || in.op == Op::kTrap);
}

// The slots the instruction reads for liveness: its operands', its guard, and under a guard its
// destinations too (the lanes the guard skips keep the old value).
template <class F>
void ForReads(const Inst& in, F&& f) {
  ForOperandReads(in, f);
  if (in.guard != kNoReg) {
    f(in.guard);
    ForOperandWrites(in, f);
  }
}
template <class F>
void ForSlots(Inst& in, F&& f) {
  for (uint32_t& a : in.a)
    if (a != kNoReg && !(a & kConstSlot)) f(a);
  for (uint32_t& d : in.d)
    if (d != kNoReg) f(d);
  if (in.base != kNoReg) f(in.base);
  if (in.guard != kNoReg) f(in.guard);
}

class Bits {
 public:
  Bits(size_t rows, size_t slots) : words_((slots + 63) / 64), bits_(rows * words_, 0) {}
  uint64_t* row(size_t r) { return bits_.data() + r * words_; }
  size_t words() const { return words_; }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
};

// Beyond this many bit-set words per table a kernel keeps its slots (8 MiB a table).
constexpr size_t kMaxWords = size_t(1) << 20;

// `end`: where the code after the kernel's begins (its own ends with a ret before it).
void PackKernel(ProgramImpl& P, Function& f, uint32_t end) {
  const uint32_t nslots = f.nregs, first = f.entry_pc;
  if (nslots < 2 || end <= first) return;
  // The reachable code, and where blocks begin.
  std::vector<uint32_t> pcs;
  std::vector<uint8_t> seen(end - first, 0), leader(end - first, 0);  // by pc - first
  std::vector<uint32_t> work{first};
  seen[0] = 1;
  while (!work.empty()) {
    const uint32_t pc = work.back();
    work.pop_back();
    pcs.push_back(pc);
    const Inst& in = P.code[pc];
    if (!OperandsInFields(in.op)) return;
    bool fits = true;
    auto check = [&](uint32_t s) { fits = fits && s < nslots; };
    ForReads(in, check);
    ForOperandWrites(in, check);
    if (!fits) return;
    auto visit = [&](uint32_t to) {
      if (to < first || to >= end) return false;
      if (!seen[to - first]) {
        seen[to - first] = 1;
        work.push_back(to);
      }
      return true;
    };
    if (in.op == Op::kBra) {
      if (!visit(in.target)) return;
      leader[in.target - first] = 1;
    }
    if (!EndsFlow(in) && !visit(pc + 1)) return;
  }
  std::sort(pcs.begin(), pcs.end());
  // Blocks: runs of consecutive reachable pcs, cut at branch targets and after branches (code
  // after an unguarded ret or exit is reachable only as a target, or not at all).
  struct Block {
    uint32_t first, last;  // indices into pcs
    std::vector<uint32_t> succ;
  };
  std::vector<Block> blocks;
  std::vector<uint32_t> block_of(end - first, kNoReg);
  for (uint32_t i = 0; i < pcs.size(); ++i) {
    const uint32_t pc = pcs[i];
    const bool starts = blocks.empty() || leader[pc - first] || pcs[i - 1] + 1 != pc ||
                        P.code[pcs[i - 1]].op == Op::kBra;
    if (starts) blocks.push_back({i, i, {}});
    blocks.back().last = i;
    block_of[pc - first] = uint32_t(blocks.size() - 1);
  }
  for (Block& b : blocks) {
    const uint32_t pc = pcs[b.last];
    const Inst& in = P.code[pc];
    if (in.op == Op::kBra) b.succ.push_back(block_of[in.target - first]);
    if (!EndsFlow(in)) b.succ.push_back(block_of[pc + 1 - first]);
  }
  const size_t nb = blocks.size();
  if (nb * ((nslots + 63) / 64) > kMaxWords) return;
  Bits gen(nb, nslots), kill(nb, nslots), in_(nb, nslots), out(nb, nslots);
  const size_t W = gen.words();
  auto set = [](uint64_t* r, uint32_t s) { r[s >> 6] |= uint64_t(1) << (s & 63); };
  auto has = [](const uint64_t* r, uint32_t s) { return (r[s >> 6] >> (s & 63)) & 1; };
  for (size_t b = 0; b < nb; ++b) {
    uint64_t *g = gen.row(b), *k = kill.row(b);
    for (uint32_t i = blocks[b].first; i <= blocks[b].last; ++i) {
      const Inst& in = P.code[pcs[i]];
      ForReads(in, [&](uint32_t s) {
        if (!has(k, s)) set(g, s);
      });
      ForOperandWrites(in, [&](uint32_t s) { set(k, s); });
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      uint64_t *o = out.row(b), *li = in_.row(b);
      for (uint32_t s : blocks[b].succ) {
        const uint64_t* si = in_.row(s);
        for (size_t w = 0; w < W; ++w) o[w] |= si[w];
      }
      const uint64_t *g = gen.row(b), *k = kill.row(b);
      for (size_t w = 0; w < W; ++w) {
        const uint64_t v = g[w] | (o[w] & ~k[w]);
        if (v != li[w]) {
          li[w] = v;
          changed = true;
        }
      }
    }
  }
  // Intervals over the reachable code's order (indices into pcs).
  std::vector<uint32_t> lo(nslots, kNoReg), hi(nslots, 0);
  auto cover = [&](uint32_t s, uint32_t i) {
    lo[s] = std::min(lo[s], i);
    hi[s] = std::max(hi[s], i);
  };
  auto cover_row = [&](const uint64_t* r, uint32_t i) {
    for (size_t w = 0; w < W; ++w)
      for (uint64_t m = r[w]; m; m &= m - 1)
        cover(uint32_t(w * 64 + size_t(std::countr_zero(m))), i);
  };
  for (size_t b = 0; b < nb; ++b) {
    cover_row(in_.row(b), blocks[b].first);
    cover_row(out.row(b), blocks[b].last);
    for (uint32_t i = blocks[b].first; i <= blocks[b].last; ++i) {
      const Inst& in = P.code[pcs[i]];
      ForReads(in, [&](uint32_t s) { cover(s, i); });
      ForOperandWrites(in, [&](uint32_t s) { cover(s, i); });
    }
  }
  std::vector<uint32_t> order;
  for (uint32_t s = 0; s < nslots; ++s)
    if (lo[s] != kNoReg) order.push_back(s);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return lo[a] != lo[b] ? lo[a] < lo[b] : a < b; });
  using Ending = std::pair<uint32_t, uint32_t>;  // (hi, slot given)
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> active;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> free_slots;
  std::vector<uint32_t> to(nslots, kNoReg);
  uint32_t used = 0;
  for (uint32_t s : order) {
    while (!active.empty() && active.top().first < lo[s]) {
      free_slots.push(active.top().second);
      active.pop();
    }
    if (free_slots.empty()) {
      to[s] = used++;
    } else {
      to[s] = free_slots.top();
      free_slots.pop();
    }
    active.push({hi[s], to[s]});
  }
  if (used >= nslots) return;
  for (uint32_t pc : pcs) ForSlots(P.code[pc], [&](uint32_t& s) { s = to[s]; });
  f.nregs = std::max(used, 1u);
}

}  // namespace

void PackRegisters(ProgramImpl& P) {
  // Each function's code is one run, in the order the functions were defined.
  std::vector<uint32_t> starts;
  for (const Function& f : P.funcs)
    if (f.defined) starts.push_back(f.entry_pc);
  std::sort(starts.begin(), starts.end());
  for (Function& f : P.funcs) {
    if (!f.is_entry || !f.defined) continue;
    auto next = std::upper_bound(starts.begin(), starts.end(), f.entry_pc);
    PackKernel(P, f, next == starts.end() ? uint32_t(P.code.size()) : *next);
  }
}

}  // namespace remora::emu::ptx
