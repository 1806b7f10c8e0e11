// tests/fuzz/ptx_fuzz.cc - the emulated GPU's PTX loader (emu/ptx/ptx.h: Load) on any text.
//
// The input is one or more PTX modules separated by NUL bytes (PTX never holds one), as
// an -rdc program hands several to Load; at most four. Load parses, decodes and links
// them, so all three run on tenant-chosen text. It must refuse bad text with
// kInvalidPtx (or another error code), never crash, and what it accepts must describe
// itself consistently: parameters inside the packed buffer in declaration order,
// initialisers exactly as long as their globals, every kernel and global found by name.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emu/ptx/ptx.h"
#include "tests/fuzz/input.h"

namespace {

namespace ptx = remora::emu::ptx;
using remora::fuzz::Check;

constexpr size_t kMaxModules = 4;

void CheckProgram(const ptx::Program& p) {
  for (size_t k = 0; k < p.kernels().size(); ++k) {
    const ptx::KernelInfo& info = p.kernels()[k];
    uint64_t end = 0;
    for (const ptx::ParamInfo& param : info.params) {
      Check(param.offset >= end);
      end = uint64_t{param.offset} + param.size;
      Check(end <= info.param_bytes);
    }
    auto found = p.FindKernel(info.name);
    Check(found.has_value() && p.kernels()[*found].name == info.name);
  }
  for (const ptx::GlobalInfo& g : p.globals()) {
    Check(g.init.size() == g.size);
    auto found = p.FindGlobal(g.name);
    Check(found.has_value() && p.globals()[*found].name == g.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> modules;
  while (modules.size() + 1 < kMaxModules) {
    const size_t nul = text.find('\0');
    if (nul == std::string_view::npos) break;
    modules.emplace_back(text.substr(0, nul));
    text.remove_prefix(nul + 1);
  }
  modules.emplace_back(text);

  auto program = ptx::Load(modules);
  if (program.ok()) CheckProgram(**program);
  return 0;
}
