// emu/ptx_fallback.cc - stands in for emu/ptx until it builds: refuses all PTX.
#include "emu/ptx/ptx.h"

namespace remora::emu::ptx {

class ProgramImpl {};

Program::Program(std::unique_ptr<ProgramImpl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;

const std::vector<KernelInfo>& Program::kernels() const {
  static const std::vector<KernelInfo> none;
  return none;
}

const std::vector<GlobalInfo>& Program::globals() const {
  static const std::vector<GlobalInfo> none;
  return none;
}

std::optional<size_t> Program::FindKernel(std::string_view) const {
  return std::nullopt;
}
std::optional<size_t> Program::FindGlobal(std::string_view) const {
  return std::nullopt;
}

Result<std::shared_ptr<const Program>> Load(std::span<const std::string>) {
  return Error(err::kInvalidPtx, "emu/ptx is not built yet");
}

void ApplyRelocations(const Program&, std::span<const uint64_t>) {}

Status Launch(const Program&, size_t, const LaunchConfig&) {
  return Error(err::kLaunchFailure, "emu/ptx is not built yet");
}

}  // namespace remora::emu::ptx
