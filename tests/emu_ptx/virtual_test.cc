// tests/emu_ptx/virtual_test.cc - virtual functions and function pointers (kernels/virtual.cu)
// whole-program at compute_80 and compute_90, and as an -rdc pair with virtual_rdc.cu, against
// CPU references; calls through addresses that are not functions fault.
#include <cmath>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

std::shared_ptr<const Program> VirtualProgram(const std::string& which) {
  static std::map<std::string, std::shared_ptr<const Program>> cache;
  auto& p = cache[which];
  if (!p)
    p = which == "rdc" ? MustLoad({KernelPtx("virtual_rdc_a"), KernelPtx("virtual_rdc_b")})
                       : MustLoad({KernelPtx(which)});
  return p;
}

// The 8 bytes of a __device__ variable's initial value, as cudaMemcpyFromSymbol reads them.
uint64_t InitialValue(const Program& prog, const std::string& name, size_t index = 0) {
  auto g = prog.FindGlobal(name);
  EXPECT_TRUE(g) << name;
  uint64_t v = 0;
  if (g) std::memcpy(&v, prog.globals()[*g].init.data() + index * 8, 8);
  return v;
}

class Virtual : public ::testing::TestWithParam<const char*> {
 protected:
  std::shared_ptr<const Program> prog = VirtualProgram(GetParam());
  std::mt19937 rng{4242};
  TestMemory mem;

  std::vector<float> RandomFloats(size_t n) {
    std::uniform_real_distribution<float> u(0.25f, 6.f);
    std::vector<float> v(n);
    for (auto& f : v) f = u(rng);
    return v;
  }
  std::vector<int> Destroyed() {
    int* d = mem.Alloc<int>(4);
    Status s = RunKernel(
        *prog, "readDestroyed", {1}, {1}, [&](Params& p) { p.Add(d); }, &mem);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return {d[0], d[1], d[2], d[3]};
  }
};

TEST_P(Virtual, ObjectsBuiltByOneKernelAreCalledByAnother) {
  ASSERT_TRUE(prog);
  const int n = 777;
  const float scale = 1.5f;
  std::vector<int> kinds(n);
  for (auto& k : kinds) k = int(rng() % 3);
  std::vector<float> a = RandomFloats(n), b = RandomFloats(n);
  int* dk = mem.Upload(kinds);
  float* da = mem.Upload(a);
  float* db = mem.Upload(b);
  char* storage = mem.Alloc<char>(size_t(n) * 32);
  float* area = mem.Alloc<float>(n);
  int* kind = mem.Alloc<int>(n);
  float* scaled = mem.Alloc<float>(n);
  Status s = RunKernel(
      *prog, "buildShapes", {(n + 127) / 128}, {128},
      [&](Params& p) {
        p.Add(storage).Add(static_cast<const int*>(dk)).Add(static_cast<const float*>(da));
        p.Add(static_cast<const float*>(db)).Add(n);
      },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = RunKernel(
      *prog, "useShapes", {(n + 127) / 128}, {128},
      [&](Params& p) {
        p.Add(static_cast<const char*>(storage)).Add(area).Add(kind).Add(scaled).Add(scale).Add(n);
      },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  int count[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    ++count[kinds[i]];
    float want_area = kinds[i] == 0 ? a[i] * b[i] : kinds[i] == 1 ? a[i] * a[i] : 3.f * a[i] * a[i];
    float want_scaled = kinds[i] == 1 ? scale * scale * want_area : scale * want_area;
    ASSERT_EQ(area[i], want_area) << i << " kind " << kinds[i];
    ASSERT_EQ(kind[i], kinds[i] + 1) << i;
    ASSERT_EQ(scaled[i], want_scaled) << i;
  }
  // Virtual destructors through Shape*: each runs its bases' destructors too.
  std::vector<int> before = Destroyed();
  s = RunKernel(
      *prog, "destroyShapes", {(n + 127) / 128}, {128}, [&](Params& p) { p.Add(storage).Add(n); },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<int> after = Destroyed();
  EXPECT_EQ(after[0] - before[0], n);
  EXPECT_EQ(after[1] - before[1], count[0] + count[1]);
  EXPECT_EQ(after[2] - before[2], count[1]);
  EXPECT_EQ(after[3] - before[3], count[2]);
}

TEST_P(Virtual, ObjectsInLocalMemory) {
  const int n = 300;
  std::vector<float> a = RandomFloats(n);
  float* da = mem.Upload(a);
  float* out = mem.Alloc<float>(n);
  Status s = RunKernel(
      *prog, "localShapes", {3}, {128},
      [&](Params& p) { p.Add(static_cast<const float*>(da)).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    float want = i % 3 == 0   ? a[i] * 2.f + 1.f
                 : i % 3 == 1 ? a[i] * a[i] + 2.f
                              : 3.f * a[i] * a[i] + 3.f;
    ASSERT_EQ(out[i], want) << i;
  }
}

float Apply(int op, float a, float b) {
  switch (op) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return a * b;
    case 3:
      return std::fmax(a, b);
    default:
      return std::sqrt(std::fma(a, a, b * b));
  }
}

TEST_P(Virtual, FunctionPointerTableDivergesWithinAWarp) {
  const int n = 1000;
  std::vector<int> sel(n);
  for (auto& v : sel) v = int(rng() % 5);
  std::vector<float> a = RandomFloats(n), b = RandomFloats(n);
  int* ds = mem.Upload(sel);
  float* da = mem.Upload(a);
  float* db = mem.Upload(b);
  float* out = mem.Alloc<float>(n);
  Status s = RunKernel(
      *prog, "applyTable", {8}, {128},
      [&](Params& p) {
        p.Add(static_cast<const int*>(ds)).Add(static_cast<const float*>(da));
        p.Add(static_cast<const float*>(db)).Add(out).Add(n);
      },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], Apply(sel[i], a[i], b[i])) << i << " op " << sel[i];
}

TEST_P(Virtual, FunctionPointerFromASymbolAsKernelArgument) {
  const int n = 200;
  std::vector<float> a = RandomFloats(n), b = RandomFloats(n);
  float* da = mem.Upload(a);
  float* db = mem.Upload(b);
  float* out = mem.Alloc<float>(n);
  for (auto [symbol, op] : {std::pair{"g_mul", 2}, std::pair{"g_hypot", 4}}) {
    const uint64_t fn = InitialValue(*prog, symbol);
    ASSERT_NE(fn, 0u);
    Status s = RunKernel(
        *prog, "applyArg", {2}, {128},
        [&](Params& p) {
          p.Add(fn).Add(static_cast<const float*>(da)).Add(static_cast<const float*>(db));
          p.Add(out).Add(n);
        },
        &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], Apply(op, a[i], b[i])) << symbol << " " << i;
  }
  // Addresses taken in a kernel are the ones in the initialisers.
  uint64_t* ops = mem.Alloc<uint64_t>(3);
  Status s = RunKernel(
      *prog, "storeOps", {1}, {1}, [&](Params& p) { p.Add(ops); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ops[0], InitialValue(*prog, "g_ops", 0));
  EXPECT_EQ(ops[1], InitialValue(*prog, "g_ops", 3));
  EXPECT_EQ(ops[2], InitialValue(*prog, "g_ops", 4));
  EXPECT_NE(ops[0], ops[1]);
}

TEST_P(Virtual, CallingWhatIsNotAFunctionIsAnIllegalAddress) {
  float* buf = mem.Alloc<float>(64);
  const uint64_t mul = InitialValue(*prog, "g_mul");
  auto other =
      VirtualProgram(std::string(GetParam()) == "virtual_80" ? "virtual_90" : "virtual_80");
  const uint64_t foreign = InitialValue(*other, "g_mul");  // a function of another program
  const uint64_t past_end = (mul & ~uint64_t(0xfffff0)) | 0xfffff0;  // no such function index
  for (uint64_t bad : {uint64_t(0), uint64_t(0x1234), reinterpret_cast<uint64_t>(buf), past_end,
                       mul + 1, foreign}) {
    Status s = RunKernel(
        *prog, "applyArg", {1}, {32},
        [&](Params& p) {
          p.Add(bad).Add(static_cast<const float*>(buf)).Add(static_cast<const float*>(buf));
          p.Add(buf).Add(32);
        },
        &mem);
    ASSERT_FALSE(s.ok()) << std::hex << bad;
    EXPECT_EQ(s.code(), err::kIllegalAddress) << s.ToString();
    EXPECT_NE(s.ToString().find("not a function"), std::string::npos) << s.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, Virtual, ::testing::Values("virtual_80", "virtual_90", "rdc"));

TEST(VirtualLoad, RdcHalfAloneIsRefused) {
  auto r = Load(std::vector<std::string>{KernelPtx("virtual_rdc_a")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("no module defines it"), std::string::npos)
      << r.status().ToString();
}

TEST(VirtualLoad, PrototypeMismatchesAreRefused) {
  const std::string head = R"(.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 r) f(.param .b32 a) {
  .reg .b32 %r<2>; ld.param.b32 %r1, [a]; st.param.b32 [r], %r1; ret; }
.visible .entry k(.param .u64 p) {
  .reg .b64 %rd<4>; .reg .b32 %r<4>;
  mov.u64 %rd1, f;
  { .param .b64 param0; .param .b32 retval0;
)";
  // A call whose argument is wider than its prototype's.
  auto r = Load(std::vector<std::string>{head + R"(
  proto : .callprototype (.param .b32 _) _ (.param .b32 _);
  call (retval0), %rd1, (param0), proto; }
  ret; })"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("prototype"), std::string::npos) << r.status().ToString();
  // A callee whose parameters differ from the prototype: refused when called.
  auto ok = Load(std::vector<std::string>{head + R"(
  proto : .callprototype (.param .b32 _) _ (.param .b64 _);
  st.param.b64 [param0], %rd1;
  call (retval0), %rd1, (param0), proto; }
  ret; })"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  TestMemory mem;
  Status s = RunKernel(
      **ok, "k", {1}, {1}, [&](Params& p) { p.Add(uint64_t(0)); }, &mem);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("differ from the prototype"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace remora::emu::ptx::testing
