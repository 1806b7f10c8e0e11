// tests/emu_ptx/kernels_test.cc - nvcc-built kernels run by the interpreter vs CPU references.
#include <cmath>
#include <map>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

class Kernels : public ::testing::Test {
 protected:
  static std::shared_ptr<const Program> Get(const std::string& name) {
    static std::map<std::string, std::shared_ptr<const Program>> cache;
    auto& p = cache[name];
    if (!p) p = MustLoad({KernelPtx(name)});
    return p;
  }
  std::mt19937 rng{12345};
  TestMemory mem;
};

TEST_F(Kernels, VectorAdd) {
  auto prog = Get("basic");
  ASSERT_TRUE(prog);
  const int n = 50000;
  std::uniform_real_distribution<float> u(-100, 100);
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = u(rng), b[i] = u(rng);
  float* da = mem.Upload(a);
  float* db = mem.Upload(b);
  float* dc = mem.Alloc<float>(n);
  Status s = RunKernel(
      *prog, "vecAdd", {(n + 255) / 256}, {256},
      [&](Params& p) { p.Add(da).Add(db).Add(dc).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) ASSERT_EQ(dc[i], a[i] + b[i]) << i;
}

}  // namespace
}  // namespace remora::emu::ptx::testing
