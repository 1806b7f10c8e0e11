// tests/emu_ptx/cuda_programs_test.cc - every CUDA test program's PTX loads, nothing refused.
//
// The build compiles each tests/cuda/kernels/*.cu with nvcc -ptx for compute_75/80/86/90 (see
// CMakeLists.txt; rdc_*.cu with -rdc=true, loaded together as one linked program). Each arch
// that compiled must load through ptx::Load, and no instruction may decode to a form the
// interpreter refuses at launch; failures name the program, arch and construct.
#include <filesystem>
#include <map>
#include <set>

#include "emu/ptx/exec.h"
#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

namespace fs = std::filesystem;

const char* const kArches[] = {"75", "80", "86", "90"};

// Program name -> PTX sources for one arch ("rdc" gathers every rdc_*.ptx).
std::map<std::string, std::vector<std::string>> ProgramsFor(const std::string& arch) {
  std::map<std::string, std::vector<std::string>> out;
  fs::path dir = fs::path(REMORA_CUDA_PTX_DIR) / arch;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".ptx") continue;
    std::string stem = e.path().stem().string();
    std::string text = ReadFile(e.path().string());
    if (text.empty()) continue;  // did not compile for this arch (see <name>.ptx.failed)
    out[stem.starts_with("rdc_") ? "rdc" : stem].push_back(std::move(text));
  }
  return out;
}

// The decoded forms of `prog` that would fail when reached, as "mnemonic (PTX line N)".
std::vector<std::string> Refused(const Program& prog) {
  std::vector<std::string> out;
  const ProgramImpl& P = prog.impl();
  for (const Inst& in : P.code)
    if (in.fn == &exec_unimplemented) out.push_back(Describe(P, in));
  return out;
}

class CudaPrograms : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaPrograms, LoadWithNothingRefused) {
  auto programs = ProgramsFor(GetParam());
  if (std::string(GetParam()) == "75") {
    EXPECT_GE(programs.size(), 10u) << "PTX not built?";
  }
  // What the emulated GPU refuses by design (README: what it does not run), at load, by name.
  const std::map<std::string, std::string> refused_by_design = {
      {"hopper", "cp.async.bulk.tensor"},  // the tensor memory accelerator (sm_90 PTX only)
  };
  for (auto& [name, sources] : programs) {
    SCOPED_TRACE("compute_" + std::string(GetParam()) + " " + name);
    auto r = Load(sources);
    auto by_design = refused_by_design.find(name);
    if (!r.ok() && by_design != refused_by_design.end()) {
      EXPECT_NE(r.status().ToString().find(by_design->second), std::string::npos)
          << name << ": " << r.status().ToString();
      continue;
    }
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    for (const std::string& what : Refused(**r)) {
      if (name == "error_paths" && what.starts_with("mad.hi.sat.s32")) continue;  // its subject
      ADD_FAILURE() << name << " (compute_" << GetParam() << "): refused " << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, CudaPrograms, ::testing::ValuesIn(kArches),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string("compute_") + i.param;
                         });

// A program that compiles for no arch at all is a broken build, not a skip.
TEST(CudaProgramsBuild, EveryProgramCompilesForSomeArch) {
  std::map<std::string, bool> compiled;
  for (const char* arch : kArches) {
    fs::path dir = fs::path(REMORA_CUDA_PTX_DIR) / arch;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".ptx") continue;
      compiled[e.path().stem().string()] |= fs::file_size(e.path()) > 0;
    }
  }
  EXPECT_FALSE(compiled.empty());
  for (auto& [name, ok] : compiled) {
    std::string why =
        ReadFile((fs::path(REMORA_CUDA_PTX_DIR) / "75" / (name + ".ptx.failed")).string());
    EXPECT_TRUE(ok) << name << " compiled for no arch: " << why;
  }
}

}  // namespace
}  // namespace remora::emu::ptx::testing
