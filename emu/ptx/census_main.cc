// emu/ptx/census_main.cc - remora-ptx-census: which kernels of a library's PTX the emulated GPU
// cannot run, and why.
//
// Usage: remora-ptx-census [--all-runnable] FILE...
// For each ELF file (a shared library or program) it reads the .nv_fatbin section, picks in each
// fat binary the PTX the emulated GPU would load (as the driver picks it: fatbin::SelectPtx for
// its compute capability, newer PTX up to emu::kNewestPtx), loads it with the interpreter and
// prints the modules, kernels, and each reason a kernel is refused (KernelInfo::unrunnable),
// counted. With --all-runnable it exits 1 when any module fails to load or any kernel is
// unrunnable: a test that NVIDIA's libraries keep running on the emulated GPU.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "emu/device.h"
#include "emu/ptx/ptx.h"
#include "fatbin/fatbin.h"

namespace remora::emu::ptx {
namespace {

// The reason without where: "instruction form not implemented at ld.global.nc.v8.f32 (PTX line
// 11512)" counts as "instruction form not implemented at ld.global.nc.v8.f32".
std::string Reason(const std::string& unrunnable) {
  const size_t line = unrunnable.find(" (PTX line");
  return line == std::string::npos ? unrunnable : unrunnable.substr(0, line);
}

// Prints the census of one file; returns false if any module failed or any kernel is refused.
bool Census(const char* path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> file((std::istreambuf_iterator<char>(in)), {});
  auto sections = fatbin::ElfSections(std::as_bytes(std::span(file)));
  if (!sections.ok()) {
    std::printf("%s: %s\n", path, sections.status().ToString().c_str());
    return false;
  }
  fatbin::Bytes section;
  for (const fatbin::ElfSection& s : *sections)
    if (s.name == ".nv_fatbin") section = s.bytes;
  if (section.empty()) {
    std::printf("%s: no .nv_fatbin section\n", path);
    return true;
  }
  auto fatbins = fatbin::SplitSection(section);
  if (!fatbins.ok()) {
    std::printf("%s: %s\n", path, fatbins.status().ToString().c_str());
    return false;
  }
  int modules = 0, without_ptx = 0, failed = 0, kernels = 0, unrunnable = 0;
  std::map<std::string, int> reasons;
  for (const fatbin::Bytes fb : *fatbins) {
    auto text = fatbin::SelectPtx(fb, kArch, kNewestPtx);
    if (!text.ok()) {
      ++without_ptx;
      continue;
    }
    ++modules;
    const std::string source = std::move(text).value();
    auto program = Load(std::span(&source, 1));
    if (!program.ok()) {
      ++failed;
      std::printf("%s: a module does not load: %s\n", path, program.status().ToString().c_str());
      continue;
    }
    for (const KernelInfo& k : (*program)->kernels()) {
      ++kernels;
      if (k.unrunnable.empty()) continue;
      ++unrunnable;
      ++reasons[Reason(k.unrunnable)];
    }
  }
  std::printf(
      "%s: %d modules with PTX (%d fat binaries without), %d failed to load; %d kernels, "
      "%d unrunnable\n",
      path, modules, without_ptx, failed, kernels, unrunnable);
  for (const auto& [reason, n] : reasons) std::printf("%8d  %s\n", n, reason.c_str());
  return failed == 0 && unrunnable == 0;
}

}  // namespace
}  // namespace remora::emu::ptx

int main(int argc, char** argv) {
  bool all_runnable = false, ok = true;
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--all-runnable") == 0) {
      all_runnable = true;
      continue;
    }
    ++files;
    ok = remora::emu::ptx::Census(argv[i]) && ok;
  }
  if (files == 0) {
    std::fprintf(stderr, "usage: remora-ptx-census [--all-runnable] FILE...\n");
    return 2;
  }
  return all_runnable && !ok ? 1 : 0;
}
