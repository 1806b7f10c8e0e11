// emu/ptx/program.cc - Program and Load; how a fault names its instruction.
#include <algorithm>
#include <cstdio>
#include <string>

#include "emu/ptx/exec.h"
#include "emu/ptx/regalloc.h"
#include "emu/ptx/sched.h"

namespace remora::emu::ptx {

Status ParseProgram(std::span<const std::string> sources, ProgramImpl& P);
// OK if this CPU runs what the interpreter was built for (host_cpu.cc); kNotSupported naming
// what it lacks if not.
Status CheckHostCpu();
const char* SpaceName(Space s);

Program::Program(std::unique_ptr<ProgramImpl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;
const std::vector<KernelInfo>& Program::kernels() const {
  return impl_->kernels;
}
const std::vector<GlobalInfo>& Program::globals() const {
  return impl_->global_info;
}
std::optional<size_t> Program::FindKernel(std::string_view name) const {
  for (size_t i = 0; i < impl_->kernels.size(); ++i)
    if (impl_->kernels[i].name == name) return i;
  return std::nullopt;
}
std::optional<size_t> Program::FindGlobal(std::string_view name) const {
  for (size_t i = 0; i < impl_->global_info.size(); ++i)
    if (impl_->global_info[i].name == name) return i;
  return std::nullopt;
}

namespace {

void ApplyRelocs(const ProgramImpl& P, const uint64_t* addr) {
  for (size_t g = 0; g < P.globals.size(); ++g) {
    for (const Global::Reloc& r : P.globals[g].relocs) {
      uint64_t v = addr[r.target] + uint64_t(r.addend);
      std::memcpy(reinterpret_cast<uint8_t*>(addr[g]) + r.at, &v, size_t(r.size));
    }
  }
}

// Why the code each function reaches by direct calls cannot run (empty if it can), found once
// per function: KernelInfo::unrunnable of every kernel. An indirect call's targets are not known
// until it runs, so they still fault when reached; so may a function on a call cycle.
class UnrunnableFinder {
 public:
  explicit UnrunnableFinder(const ProgramImpl& P)
      : P_(P), state_(P.funcs.size(), kNew), why_(P.funcs.size()) {
    for (const Function& f : P.funcs)
      if (f.defined) starts_.push_back(f.entry_pc);
    std::sort(starts_.begin(), starts_.end());
  }

  const std::string& Why(uint32_t fi) {
    if (state_[fi] != kNew) return why_[fi];  // done, or on the current call path
    state_[fi] = kWalking;
    const Function& f = P_.funcs[fi];
    auto next = std::upper_bound(starts_.begin(), starts_.end(), f.entry_pc);
    const uint32_t end = next == starts_.end() ? uint32_t(P_.code.size()) : *next;
    std::string why;
    for (uint32_t pc = f.entry_pc; pc < end && why.empty(); ++pc) {
      const Inst& in = P_.code[pc];
      if (in.fn == &exec_unimplemented) {
        why = "instruction form not implemented at " + Describe(P_, in);
      } else if (in.op == Op::kCall && !P_.calls[in.target].indirect) {
        const uint32_t c = P_.calls[in.target].callee;
        if (P_.funcs[c].builtin == Builtin::kUnserved)
          why = "call to " + P_.funcs[c].name + " (device-side control of a CUDA graph)";
        else if (P_.funcs[c].defined)
          why = Why(c);
      }
    }
    why_[fi] = std::move(why);
    state_[fi] = kDone;
    return why_[fi];
  }

 private:
  enum State : uint8_t { kNew, kWalking, kDone };
  const ProgramImpl& P_;
  std::vector<uint32_t> starts_;  // each defined function's code is one run (regalloc.cc)
  std::vector<State> state_;
  std::vector<std::string> why_;
};

void FindUnrunnable(ProgramImpl& P) {
  UnrunnableFinder finder(P);
  for (size_t k = 0; k < P.kernels.size(); ++k)
    P.kernels[k].unrunnable = finder.Why(P.kernel_func[k]);
}

}  // namespace

void ApplyRelocations(const Program& program, std::span<const uint64_t> global_addresses) {
  ApplyRelocs(program.impl(), global_addresses.data());
}

Result<std::shared_ptr<const Program>> Load(std::span<const std::string> ptx_sources) {
  RETURN_IF_ERROR(CheckHostCpu());
  auto impl = std::make_unique<ProgramImpl>();
  RETURN_IF_ERROR(ParseProgram(ptx_sources, *impl));
  ProgramImpl& P = *impl;
  PackRegisters(P);
  PlanTogether(P);
  FindUnrunnable(P);
  for (const Global& g : P.globals) {
    P.own_storage.emplace_back((g.size + 7) / 8 + 1, 0);
    if (!g.init.empty())  // a zero-length array has no initializer to copy
      std::memcpy(P.own_storage.back().data(), g.init.data(), g.init.size());
    P.own_addresses.push_back(reinterpret_cast<uint64_t>(P.own_storage.back().data()));
  }
  ApplyRelocs(P, P.own_addresses.data());
  return std::shared_ptr<const Program>(std::make_shared<Program>(std::move(impl)));
}

const char* TyName(Ty t) {
  static const char* kNames[] = {"",      ".pred",  ".b8",    ".b16",    ".b32",    ".b64", ".b128",
                                 ".u8",   ".u16",   ".u32",   ".u64",    ".s8",     ".s16", ".s32",
                                 ".s64",  ".f16",   ".f16x2", ".bf16",   ".bf16x2", ".f32", ".f64",
                                 ".tf32", ".u16x2", ".s16x2", ".e4m3x2", ".e5m2x2"};
  return kNames[size_t(t)];
}

std::string Describe(const ProgramImpl& P, const Inst& in) {
  size_t pc = size_t(&in - P.code.data());
  if (pc < P.code_text.size())
    return P.code_text[pc] + " (PTX line " + std::to_string(in.line) + ")";
  std::string s = OpName(in.op);
  if (in.space != Space::kGeneric) s += std::string(".") + SpaceName(in.space);
  s += TyName(in.ty);
  s += TyName(in.ty2);
  return s + " (PTX line " + std::to_string(in.line) + ")";
}

int Fault(Exec& x, int32_t code, std::string message) {
  LaunchCtx& L = const_cast<LaunchCtx&>(*x.L);
  std::lock_guard<std::mutex> lock(*L.fault_mu);
  if (L.fault->ok()) *L.fault = Error(code, "kernel " + L.kernel->name + ": " + message);
  L.failed->store(true, std::memory_order_relaxed);  // read by workers between CTAs only
  return kFault;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Where(const Exec& x, int lane) {
  char buf[96];
  const Warp& w = *x.w;
  std::snprintf(buf, sizeof buf, " in block (%u,%u,%u) thread (%u,%u,%u)", x.cta->ctaid[0],
                x.cta->ctaid[1], x.cta->ctaid[2], w.tid[0][lane], w.tid[1][lane], w.tid[2][lane]);
  return buf;
}

int FaultAt(Exec& x, int32_t code, const Inst& in, const std::string& what) {
  return Fault(x, code, what + " at " + Describe(*x.L->P, in));
}

}  // namespace remora::emu::ptx
