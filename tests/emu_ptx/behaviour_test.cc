// tests/emu_ptx/behaviour_test.cc - the interpreter beyond single instructions: warp
// collectives together, errors at load and when reached, shared-memory layout, kernel
// priorities, and vector accesses that are not torn across blocks.
#include <algorithm>
#include <array>
#include <atomic>
#include <cfenv>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "emu/ptx/dispatch.h"
#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

// Runs kernel `k` of `ptx`, whose one parameter points at a u32 per thread, on one block of
// `n` threads: the values, or none (a failure recorded) if it did not load or run.
std::vector<uint32_t> RunPerThreadOut(const std::string& ptx, uint32_t n) {
  auto prog = MustLoad({ptx});
  if (!prog) return {};
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(n);
  Status s = RunKernel(
      *prog, "k", {1}, {n}, [&](Params& p) { p.Add(out); }, &mem);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return {};
  return std::vector<uint32_t>(out, out + n);
}

// A kernel `k` in which thread t (%r1 = %tid.x) leaves a value in %r15, stored to out[t] (its
// one parameter); `body` may use %r2-%r14, %f1-%f7 and %p1-%p3.
std::string PerThread(const std::string& body) {
  return R"(.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out) {
  .reg .b32 %r<16>; .reg .f32 %f<8>; .reg .b64 %rd<4>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
)" + body +
         R"(
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r15;
  ret;
})";
}

// Warp and CTA collectives on one 64-thread block: inputs in[t], outputs out[t*2..].
TEST(Collectives, ReduxMatchBarRedShflIdx) {
  const std::string ptx = Wrap(R"(
  and.b32 %r6, %r1, 7;
  redux.sync.add.u32 %r4, %r6, 0xffffffff;
  match.any.sync.b32 %r7, %r6, 0xffffffff;
  setp.ne.u32 %p1, %r6, 0;
  bar.red.popc.u32 %r8, 0, %p1;
  shfl.sync.idx.b32 %r10, %r6, 3, 0x181f, 0xffffffff;
  vote.sync.uni.pred %p2, %p1, 0xffffffff;
  selp.u32 %r11, 1000000, 0, %p2;
  add.s32 %r5, %r8, %r11;
  shl.b32 %r10, %r10, 24;
  xor.b32 %r5, %r5, %r10;
  xor.b32 %r5, %r5, %r7;)");
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  const int n = 64;
  std::mt19937 rng(5);
  std::vector<uint32_t> in(n * 3);
  for (auto& v : in) v = rng();
  TestMemory mem;
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(n * 2);
  Status s = RunKernel(
      *prog, "k", {1}, {n}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto v = [&](int t) { return in[t * 3] & 7; };
  uint32_t popc = 0;
  for (int t = 0; t < n; ++t) popc += v(t) != 0;
  for (int t = 0; t < n; ++t) {
    int w = t / 32 * 32, l = t % 32;
    uint32_t sum = 0, match = 0;
    bool all = true, any = false;
    for (int k = 0; k < 32; ++k) {
      sum += v(w + k);
      match |= uint32_t(v(w + k) == v(t)) << k;
      all &= v(w + k) != 0;
      any |= v(w + k) != 0;
    }
    int src = (l & 0x18) | 3;  // width 8 segments: c = ((32-8)<<8) | 31
    uint32_t uni = (all || !any) ? 1000000u : 0u;
    EXPECT_EQ(out[t * 2], sum) << t;
    EXPECT_EQ(out[t * 2 + 1], ((popc + uni) ^ (v(w + src) << 24)) ^ match) << t;
  }
}

TEST(Errors, UnknownInstructionIsRefusedAtLoad) {
  auto r = Load(std::vector<std::string>{Wrap("frobnicate.b32 %r4, %r1;")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), err::kInvalidPtx);
  EXPECT_NE(r.status().message().find("frobnicate"), std::string::npos) << r.status().message();
}

// A __managed__ variable (what nvcc and libNVVM emit for it) loads: the module's kernels run,
// and the variable is marked for the driver. Before, the module was refused as invalid PTX.
TEST(Globals, ManagedVariablesLoadAndAreMarked) {
  auto prog = MustLoad({R"(.version 8.0
.target sm_80
.address_size 64
.global .attribute(.managed) .align 4 .u32 counter = 10;
.global .attribute(.unified(19, 95)) .align 8 .b8 other[8];
.visible .global .align 4 .u32 plain;
.visible .entry k(.param .u64 out) {
  .reg .b32 %r<3>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r1, [counter];
  add.u32 %r2, %r1, 32;
  st.global.u32 [%rd1], %r2;
  ret;
}
)"});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(1);
  Status ok = RunKernel(
      *prog, "k", {1}, {1}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  EXPECT_EQ(*out, 42u);
  EXPECT_TRUE(prog->globals()[*prog->FindGlobal("counter")].managed);
  EXPECT_FALSE(prog->globals()[*prog->FindGlobal("other")].managed);
  EXPECT_FALSE(prog->globals()[*prog->FindGlobal("plain")].managed);
}

// All 32 lanes execute redux.sync and vote.sync together, each passing the mask of its own
// group of 8 (cooperative groups' tiles do): each group gets its own answer, not the warp's.
TEST(WarpCollectives, EachLanesOwnMemberMaskMakesItsGroup) {
  auto prog = MustLoad({R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out) {
  .reg .b32 %r<10>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 24;
  mov.u32 %r3, 255;
  shl.b32 %r4, %r3, %r2;
  redux.sync.add.u32 %r5, %r1, %r4;
  redux.sync.max.u32 %r6, %r1, %r4;
  and.b32 %r7, %r1, 1;
  setp.ne.u32 %p1, %r7, 0;
  vote.sync.ballot.b32 %r8, %p1, %r4;
  match.any.sync.b32 %r9, %r7, %r4;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r5, %r6, %r8, %r9};
  ret;
}
)"});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(32 * 4);
  Status ok = RunKernel(
      *prog, "k", {1}, {32}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  for (uint32_t l = 0; l < 32; ++l) {
    const uint32_t base = l & 24;
    EXPECT_EQ(out[l * 4], 8 * base + 28) << "lane " << l;  // sum of the group's lane ids
    EXPECT_EQ(out[l * 4 + 1], base + 7) << "lane " << l;
    EXPECT_EQ(out[l * 4 + 2], 0xaau << base) << "lane " << l;  // the group's odd lanes
    EXPECT_EQ(out[l * 4 + 3], (l & 1 ? 0xaau : 0x55u) << base) << "lane " << l;
  }
}

// A parameter's type joined to its directive (.param.f32 x), in a parameter list (ZLUDA's
// call_rnd test) and in a body (its call test's `.param.u64 incr_in;`), as hand-written PTX
// declares it: ptxas takes it, and so does the emulated GPU.
TEST(Globals, ParameterTypesJoinedToTheDirectiveDeclare) {
  auto prog = MustLoad({R"(.version 8.0
.target sm_80
.address_size 64
.func (.param.f32 r) twice (.param.f32 x)
{
  .reg .f32 %f<3>;
  ld.param.f32 %f1, [x];
  add.rn.f32 %f2, %f1, %f1;
  st.param.f32 [r], %f2;
  ret;
}
.visible .entry k(.param .u64 out) {
  .reg .f32 %f<3>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.f32 %f1, 0f40400000;
  {
  .param .f32 a;
  st.param.f32 [a], %f1;
  .param.f32 b;
  call.uni (b), twice, (a);
  ld.param.f32 %f2, [b];
  }
  .local.f32 spill;
  st.local.f32 [spill], %f2;
  ld.local.f32 %f2, [spill];
  st.global.f32 [%rd1], %f2;
  ret;
}
)"});
  ASSERT_TRUE(prog);
  TestMemory mem;
  float* out = mem.Alloc<float>(1);
  Status ok = RunKernel(
      *prog, "k", {1}, {1}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  EXPECT_EQ(*out, 6.0f);
}

// An operand the instruction cannot take names that instruction, not the next one.
// stacksave and stackrestore (LLVM's lowering of a variable-length array in a loop): each turn
// of the loop gets the same stack back; a lane's 32-bit forms agree with its 64-bit ones; a
// restore outside the stack fails the launch.
TEST(Stack, SaveAndRestoreGiveEachTurnTheSameStack) {
  const std::string ptx = R"(.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_out, .param .u32 k_bad) {
  .reg .pred %p<3>; .reg .b32 %r<10>; .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [k_out];
  ld.param.u32 %r9, [k_bad];
  mov.u32 %r1, %tid.x;
  stacksave.u64 %rd2;
  stacksave.u32 %r2;
  mov.u32 %r3, 0;
LOOP:
  stacksave.u64 %rd3;
  add.u32 %r4, %r1, 8;
  cvt.u64.u32 %rd4, %r4;
  alloca.u64 %rd5, %rd4, 16;
  st.local.u32 [%rd5], %r3;
  ld.local.u32 %r5, [%rd5];
  stackrestore.u64 %rd3;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, 4;
  @%p1 bra LOOP;
  stacksave.u64 %rd6;
  setp.ne.u32 %p2, %r9, 0;
  @%p2 stackrestore.u64 %rd1;
  sub.u64 %rd7, %rd2, %rd5;
  sub.u64 %rd8, %rd2, %rd6;
  cvt.u64.u32 %rd9, %r2;
  sub.u64 %rd9, %rd2, %rd9;
  mul.wide.u32 %rd10, %r1, 24;
  add.s64 %rd11, %rd1, %rd10;
  st.global.u64 [%rd11], %rd7;
  st.global.u64 [%rd11+8], %rd8;
  st.global.u64 [%rd11+16], %rd9;
  ret;
}
)";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint64_t* out = mem.Alloc<uint64_t>(32 * 3);
  ASSERT_TRUE(RunKernel(
                  *prog, "k", {1}, {32}, [&](Params& p) { p.Add(out).Add(0u); }, &mem)
                  .ok());
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(out[t * 3], (t + 8 + 15) / 16 * 16) << t;  // the last turn's alloca, aligned
    EXPECT_EQ(out[t * 3 + 1], 0u) << t;                  // every turn's stack given back
    EXPECT_EQ(out[t * 3 + 2], 0u) << t;
  }
  const Status s = RunKernel(
      *prog, "k", {1}, {32}, [&](Params& p) { p.Add(out).Add(1u); }, &mem);
  EXPECT_EQ(s.code(), err::kLaunchFailure);
  EXPECT_NE(s.message().find("outside the stack"), std::string::npos) << s.message();
}

// brx.idx through a .branchtargets list (LLVM's jump tables): each lane takes the entry its
// index names, lanes of one warp apart and back together after; an index past the list's end
// fails the launch, naming the instruction.
TEST(Branches, BrxIdxTakesEachLanesEntry) {
  const std::string ptx = R"(.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_out, .param .u32 k_cases) {
  .reg .pred %p<3>; .reg .b32 %r<10>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_out];
  ld.param.u32 %r9, [k_cases];
  mov.u32 %r1, %tid.x;
  rem.u32 %r2, %r1, %r9;
  mov.u32 %r3, 7;
  TABLE: .branchtargets CASE0, CASE1, CASE2, CASE3;
  brx.idx %r2, TABLE;
CASE2:
  mul.lo.u32 %r3, %r1, 3;
  bra.uni JOIN;
CASE0:
  add.u32 %r3, %r1, 100;
  bra.uni JOIN;
CASE3:
  xor.b32 %r3, %r1, 0x55;
CASE1:
  add.u32 %r3, %r3, 1000;
JOIN:
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}
)";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(64);
  ASSERT_TRUE(RunKernel(
                  *prog, "k", {1}, {64}, [&](Params& p) { p.Add(out).Add(4u); }, &mem)
                  .ok());
  for (uint32_t t = 0; t < 64; ++t) {
    const uint32_t want[4] = {t + 100, 7 + 1000, t * 3, (t ^ 0x55) + 1000};
    EXPECT_EQ(out[t], want[t % 4]) << t;
  }
  const Status s = RunKernel(
      *prog, "k", {1}, {64}, [&](Params& p) { p.Add(out).Add(5u); }, &mem);
  EXPECT_EQ(s.code(), err::kLaunchFailure);
  EXPECT_NE(s.message().find("brx.idx to entry 4 of a 4-entry list"), std::string::npos)
      << s.message();
}

// Labels are local to the { } block declaring them, as inline assembly copied by inlining or
// unrolling repeats its own (CUTLASS's barrier-wait loops, a brx.idx table): each copy's
// branches stay within it, and a label of an enclosing block is found from inside. Labels
// were one table per function, the last copy's, so the first copy's branches jumped into it.
TEST(Branches, LabelsAreLocalToTheirBlock) {
  const std::string ptx = R"(.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_out) {
  .reg .pred %p<3>; .reg .b32 %r<10>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_out];
  mov.u32 %r1, 0;
  mov.u32 %r2, 1;
  {
  .reg .pred q;
  LOOP:
  add.u32 %r1, %r1, 1;
  setp.lt.u32 q, %r1, 3;
  @q bra LOOP;
  TS: .branchtargets T0, T1;
  brx.idx %r2, TS;
  T0:
  mov.u32 %r3, 100;
  bra.uni OUT;
  T1:
  mov.u32 %r3, 11;
  OUT:
  }
  {
  .reg .pred q;
  LOOP:
  add.u32 %r1, %r1, 10;
  setp.lt.u32 q, %r1, 40;
  @q bra LOOP;
  TS: .branchtargets T0, T1;
  brx.idx %r2, TS;
  T0:
  mov.u32 %r4, 200;
  bra.uni OUT;
  T1:
  mov.u32 %r4, 22;
  OUT:
  bra.uni END;
  }
END:
  st.global.u32 [%rd1], %r1;
  st.global.u32 [%rd1+4], %r3;
  st.global.u32 [%rd1+8], %r4;
  ret;
}
)";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(3);
  ASSERT_TRUE(RunKernel(
                  *prog, "k", {1}, {1}, [&](Params& p) { p.Add(out); }, &mem)
                  .ok());
  EXPECT_EQ(out[0], 43u);  // the first loop to 3, the second on by tens past 40
  EXPECT_EQ(out[1], 11u);
  EXPECT_EQ(out[2], 22u);
}

TEST(Errors, ABadOperandNamesItsOwnInstruction) {
  auto r = Load(std::vector<std::string>{Wrap("add.s32 %r4, %tid.x, %r2;\n  mov.u32 %r5, 1;")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(in 'add.s32')"), std::string::npos) << r.status().message();
}

// A form the interpreter does not run loads: threads that never reach it run, and reaching it is
// a launch failure naming the instruction. mad.hi.sat.s32 decodes (known mnemonic and modifiers)
// but has no exec function; setmaxnreg is PTX it does not implement, and so are 4- and 6-bit
// float conversions, stochastic rounding and elect. prefetchu, a hint, runs as nothing.
TEST(Errors, UnimplementedFormFailsWhenReached) {
  struct Form {
    const char* body;
    const char* named;
  };
  for (const Form& form :
       {Form{"mad.hi.sat.s32 %r4, %r1, %r1, %r1;", "mad.hi.sat.s32"},
        Form{"mov.b32 %f1, %r1; cvt.rs.satfinite.f16x2.f32 %r4, %f1, %f1, %r1;", "cvt.rs"},
        Form{"setmaxnreg.inc.sync.aligned.u32 64;", "setmaxnreg"},
        // Unknown modifiers with operands shaped otherwise than the known forms'.
        Form{"mov.b32 %f1, %r1; cvt.rn.satfinite.e2m1x2.f32 %h1, %f1, %f1;",
             "cvt.rn.satfinite.e2m1x2.f32"},
        Form{"mov.b32 %f1, %r1; cvt.rn.satfinite.e3m2x2.f32 %h1, %f1, %f1;",
             "cvt.rn.satfinite.e3m2x2.f32"},
        Form{"elect.sync %r4|%p2, 0xffffffff;", "elect.sync"}}) {
    auto prog = MustLoad({Wrap(std::string("prefetchu.L1 [%rd4]; setp.gt.u32 %p1, %r9, 40; "
                                           "@!%p1 bra SKIP; ") +
                               form.body + " SKIP: add.u32 %r5, %r1, %r2;")});
    ASSERT_TRUE(prog) << form.body;
    TestMemory mem;
    std::vector<uint32_t> in(64 * 3, 5);
    uint32_t* din = mem.Upload(in);
    uint32_t* out = mem.Alloc<uint32_t>(64 * 2);
    Status ok = RunKernel(
        *prog, "k", {1}, {32}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
    EXPECT_TRUE(ok.ok()) << ok.ToString();
    EXPECT_EQ(out[1], 10u);
    Status s = RunKernel(
        *prog, "k", {1}, {64}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
    EXPECT_EQ(s.code(), err::kLaunchFailure);
    EXPECT_NE(s.message().find(form.named), std::string::npos) << s.message();
  }
}

// L2 cache policies and eviction hints (libcu++'s annotated_ptr, CUTLASS) run as the plain
// accesses they qualify: createpolicy's forms make a policy, ld/st/atom/red take it as a last
// operand, prefetch, discard and applypriority leave memory as it was.
TEST(CacheHints, PoliciesAndHintedAccessesRunAsPlainOnes) {
  const std::string ptx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_out) {
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [k_out];
  discard.global.L2 [%rd1], 128;
  applypriority.global.L2::evict_normal [%rd1], 128;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %rd4, 1.0;
  createpolicy.range.L2::evict_last.L2::evict_unchanged.b64 %rd5, [%rd1], 256, 512;
  createpolicy.cvt.L2.b64 %rd6, %rd4;
  mul.lo.s32 %r2, %r1, 7;
  st.global.L2::cache_hint.u32 [%rd3], %r2, %rd4;
  prefetch.global.L2::evict_last [%rd3];
  ld.global.L2::cache_hint.u32 %r3, [%rd3], %rd5;
  atom.global.add.L2::cache_hint.u32 %r4, [%rd3], 1, %rd6;
  red.global.add.L2::cache_hint.u32 [%rd3], 2, %rd4;
  ld.global.u32 %r5, [%rd3];
  add.s32 %r6, %r3, %r4;
  add.s32 %r6, %r6, %r5;
  st.global.u32 [%rd3], %r6;
  ret;
})";
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 64);
  ASSERT_EQ(out.size(), 64u);
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], 21 * t + 3) << t;
}

// Programmatic dependent launch's instructions: the emulated GPU runs a stream's grids in turn,
// so both do nothing and the kernel around them runs as without them; another action is not PTX.
TEST(GridDependency, WaitAndLaunchDependentsRunAsNothing) {
  const std::string ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_out) {
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_out];
  mov.u32 %r1, %tid.x;
  griddepcontrol.wait;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mul.lo.s32 %r2, %r1, 5;
  st.global.u32 [%rd3], %r2;
  griddepcontrol.launch_dependents;
  ret;
})";
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 64);
  ASSERT_EQ(out.size(), 64u);
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], 5 * t) << t;
  std::string bad = ptx;
  bad.replace(bad.find("griddepcontrol.wait"), 19, "griddepcontrol.stop");
  EXPECT_FALSE(Load(std::vector<std::string>{bad}).ok());
}

TEST(Errors, GenericSharedAndLocalWindowsRoundTrip) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_out) {
  .local .align 8 .b8 depot[16];
  .shared .align 4 .b32 sm[64];
  .reg .b32 %r<8>; .reg .b64 %rd<12>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [k_out];
  mov.u32 %r1, %tid.x;
  mov.u64 %rd2, sm;
  cvta.shared.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  mul.lo.s32 %r2, %r1, 3;
  st.u32 [%rd5], %r2;
  bar.sync 0;
  mov.u64 %rd6, depot;
  cvta.local.u64 %rd7, %rd6;
  add.s32 %r3, %r1, 100;
  st.u32 [%rd7+4], %r3;
  ld.local.u32 %r4, [depot+4];
  isspacep.shared %p1, %rd5;
  xor.b32 %r5, %r1, 1;
  mul.wide.u32 %rd8, %r5, 4;
  add.s64 %rd9, %rd2, %rd8;
  ld.shared.u32 %r6, [%rd9];
  add.s32 %r6, %r6, %r4;
  @!%p1 mov.u32 %r6, 0;
  add.s64 %rd10, %rd1, %rd4;
  st.global.u32 [%rd10], %r6;
  ret;
})";
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 64);
  ASSERT_EQ(out.size(), 64u);
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], (t ^ 1) * 3 + t + 100) << t;
}

// A warp whose lanes read and write elements side by side takes one bounds check (exec_mem.cc's
// contiguous path): exactly at the end of shared memory and of an allocation it works, one
// element past either it faults, and a load whose address register is its destination reads
// the right values.
TEST(Memory, SideBySideAccessesAreCheckedAtTheEdges) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u32 k_shift) {
  .shared .align 4 .b32 sm[64];
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  ld.param.u32 %r1, [k_shift];
  mov.u32 %r2, %tid.x;
  add.s32 %r3, %r2, %r1;
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r4, [%rd4];
  shl.b32 %r5, %r3, 2;
  mov.u32 %r6, sm;
  add.s32 %r5, %r6, %r5;
  st.shared.u32 [%r5], %r4;
  bar.sync 0;
  ld.shared.u32 %r5, [%r5];
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r5;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* in = mem.Alloc<uint32_t>(64);
  uint32_t* out = mem.Alloc<uint32_t>(32);
  for (uint32_t i = 0; i < 64; ++i) in[i] = i * 7 + 1;
  auto run = [&](uint32_t shift) {
    return RunKernel(
        *prog, "k", {1}, {32}, [&](Params& p) { p.Add(in).Add(out).Add(shift); }, &mem);
  };
  Status s = run(32);  // lanes read in[32..63] and write sm[32..63]: both end at the last element
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], (t + 32) * 7 + 1) << t;
  s = run(33);  // one element past the end of `in` (and of sm)
  EXPECT_EQ(s.code(), err::kIllegalAddress) << s.ToString();
}

// An access whose address is not a multiple of its size (a vector's whole size) faults with
// cudaErrorMisalignedAddress on a GPU, naming nothing else; the emulated GPU's fast paths (lanes
// side by side, a warp in one allocation, a uniform address) and its lane loop all check it, for
// global, shared and local memory and for atomics. Aligned, the same kernel computes.
TEST(Memory, MisalignedAccessesFaultAsOnAGpu) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u32 k_skew, .param .u32 k_what,
                  .param .u32 k_lane) {
  .shared .align 16 .b8 sm[1024];
  .local .align 16 .b8 depot[64];
  .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .f32 %f<8>; .reg .pred %p<8>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  ld.param.u32 %r1, [k_skew];
  ld.param.u32 %r2, [k_what];
  ld.param.u32 %r9, [k_lane];
  mov.u32 %r3, %tid.x;
  // Only lane k_lane is skewed unless k_lane is 32 (every lane).
  setp.eq.u32 %p1, %r3, %r9;
  setp.eq.u32 %p2, %r9, 32;
  or.pred %p1, %p1, %p2;
  selp.u32 %r4, %r1, 0, %p1;
  mul.wide.u32 %rd3, %r3, 16;
  cvt.u64.u32 %rd4, %r4;
  add.s64 %rd5, %rd3, %rd4;
  add.s64 %rd6, %rd1, %rd5;
  add.s64 %rd7, %rd2, %rd3;
  setp.eq.u32 %p3, %r2, 0;
  @%p3 bra GLOBAL;
  setp.eq.u32 %p3, %r2, 1;
  @%p3 bra SHARED;
  setp.eq.u32 %p3, %r2, 2;
  @%p3 bra LOCAL;
  setp.eq.u32 %p3, %r2, 3;
  @%p3 bra ATOM;
  // 4: a uniform address (every lane the same), 8 bytes.
  add.s64 %rd8, %rd1, %rd4;
  ld.global.u64 %rd9, [%rd8];
  st.global.u64 [%rd7], %rd9;
  ret;
GLOBAL:
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd6];
  st.global.v4.f32 [%rd7], {%f1, %f2, %f3, %f4};
  ret;
SHARED:
  mov.u32 %r5, sm;
  cvt.u32.u64 %r6, %rd5;
  add.s32 %r6, %r5, %r6;
  st.shared.v2.u32 [%r6], {%r3, %r3};
  ld.shared.v2.u32 {%r7, %r8}, [%r6];
  st.global.v2.u32 [%rd7], {%r7, %r8};
  ret;
LOCAL:
  mov.u64 %rd10, depot;
  cvta.local.u64 %rd10, %rd10;
  add.s64 %rd10, %rd10, %rd4;
  st.u32 [%rd10], %r3;
  ld.u32 %r7, [%rd10];
  st.global.u32 [%rd7], %r7;
  ret;
ATOM:
  atom.global.add.u32 %r7, [%rd6], 1;
  st.global.u32 [%rd7], %r7;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* in = mem.Alloc<uint32_t>(32 * 4 + 8);
  uint32_t* out = mem.Alloc<uint32_t>(32 * 4);
  for (uint32_t i = 0; i < 32 * 4 + 8; ++i) in[i] = i * 3 + 1;
  auto run = [&](uint32_t skew, uint32_t what, uint32_t lane) {
    return RunKernel(
        *prog, "k", {1}, {32}, [&](Params& p) { p.Add(in).Add(out).Add(skew).Add(what).Add(lane); },
        &mem);
  };
  const char* names[] = {"global v4", "shared v2", "local via generic", "atomic", "uniform"};
  // Aligned (a skew of the access's size, or none): each computes.
  for (uint32_t what = 0; what < 5; ++what) {
    const uint32_t size[] = {16, 8, 4, 4, 8};
    for (uint32_t lane : {0u, 32u}) {
      Status s = run(what == 2 || what == 4 ? size[what] : 0, what, lane);
      ASSERT_TRUE(s.ok()) << names[what] << ": " << s.ToString();
      if (what == 0) {
        for (uint32_t i = 0; i < 32 * 4; ++i) ASSERT_EQ(out[i], in[i]) << i;
      }
    }
  }
  // Misaligned in one lane (the lane loop) and in every lane (the fast paths).
  for (uint32_t what = 0; what < 5; ++what) {
    for (uint32_t lane : {5u, 32u}) {
      if (what == 4 && lane != 32) continue;  // a uniform address is every lane's
      Status s = run(4 + (what == 1 || what == 4 ? 0 : 2), what, lane);
      EXPECT_EQ(s.code(), err::kMisalignedAddress)
          << names[what] << ", lane " << lane << ": " << s.ToString();
      EXPECT_NE(s.message().find("misaligned address"), std::string::npos) << s.message();
      if (lane == 5) {
        EXPECT_NE(s.message().find("thread (5,0,0)"), std::string::npos) << s.message();
      }
    }
  }
}

// atom.add.f32 and red.add.f32 on global memory flush subnormal inputs and results to
// sign-preserving zero; on shared memory they keep them (PTX ISA, atom; NVIDIA's forums measured
// the same). A NaN sum is the GPU's canonical 0x7fffffff either way.
TEST(Atomics, FloatAddFlushesSubnormalsOnGlobalMemoryOnly) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_in, .param .u64 k_out) {
  .shared .align 4 .b32 sm[32];
  .reg .b32 %r<8>; .reg .b64 %rd<16>; .reg .f32 %f<8>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  ld.global.f32 %f2, [%rd4+128];
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f1;
  atom.global.add.f32 %f3, [%rd5], %f2;
  st.global.f32 [%rd5+384], %f3;
  st.global.f32 [%rd5+256], %f1;
  red.global.add.f32 [%rd5+256], %f2;
  mov.u32 %r2, sm;
  shl.b32 %r3, %r1, 2;
  add.s32 %r2, %r2, %r3;
  st.shared.f32 [%r2], %f1;
  atom.shared.add.f32 %f4, [%r2], %f2;
  ld.shared.f32 %f5, [%r2];
  st.global.f32 [%rd5+128], %f5;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  struct Case {
    uint32_t a, b, global, shared;
  };
  const Case cases[] = {
      {0x00000100, 0x00400000, 0x00000000, 0x00400100},  // subnormals: gone on global
      {0x00400000, 0x00400000, 0x00000000, 0x00800000},  // their normal sum too
      {0x3f800000, 0x00000001, 0x3f800000, 0x3f800000},  // 1 + tiny rounds to 1 anyway
      {0x80000000, 0x80000001, 0x80000000, 0x80000001},  // -0 + -tiny: the sign stays
      {0x00800001, 0x80800000, 0x00000000, 0x00000001},  // a subnormal result
      {0x7f800000, 0xff800000, 0x7fffffff, 0x7fffffff},  // inf - inf: the canonical NaN
      {0x40400000, 0x3fc00000, 0x40900000, 0x40900000},  // 3 + 1.5
  };
  const uint32_t n = sizeof cases / sizeof cases[0];
  TestMemory mem;
  uint32_t* in = mem.Alloc<uint32_t>(64);
  uint32_t* out = mem.Alloc<uint32_t>(128);
  for (uint32_t t = 0; t < n; ++t) {
    in[t] = cases[t].a;
    in[32 + t] = cases[t].b;
  }
  Status s = RunKernel(
      *prog, "k", {1}, {n}, [&](Params& p) { p.Add(in).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint32_t t = 0; t < n; ++t) {
    EXPECT_EQ(out[t], cases[t].global) << "atom.global, case " << t;
    EXPECT_EQ(out[64 + t], cases[t].global) << "red.global, case " << t;
    EXPECT_EQ(out[32 + t], cases[t].shared) << "atom.shared, case " << t;
    EXPECT_EQ(out[96 + t], cases[t].a) << "atom.global returns what memory held, case " << t;
  }
}

// A block whose warps are whole and converged runs them together (launch.cc, Lockstep): a scan
// with guarded loads and two barriers a step, a branch that splits the warps but not a warp,
// named barriers between them (bar.arrive / bar.sync with a count), and a faulting lane all
// give what a GPU gives, for blocks of 1 to 8 warps and a block with a partial warp.
// Then the same with the scan's add in a called function that starts with a barrier: calls and
// returns run apart, and the warps run together again in the callee's frame after it.
TEST(Lockstep, ScanSplitWarpsNamedBarriersAndAFault) {
  const std::string plus = R"(
.func (.param .b32 r) plus(.param .b32 a, .param .b32 b) {
  .reg .b32 %t<4>;
  bar.sync 0;
  ld.param.b32 %t1, [a];
  ld.param.b32 %t2, [b];
  add.s32 %t3, %t1, %t2;
  st.param.b32 [r], %t3;
  ret;
})";
  const std::string call = R"(
  {
  .param .b32 pa;
  .param .b32 pb;
  .param .b32 pr;
  st.param.b32 [pa], %r10;
  st.param.b32 [pb], %r7;
  call.uni (pr), plus, (pa, pb);
  ld.param.b32 %r10, [pr];
  })";
  for (bool calls : {false, true}) {
    const std::string ptx = std::string(R"(.version 9.0
.target sm_75
.address_size 64
)") + (calls ? plus : "") + R"(
.visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u32 k_bad) {
  .shared .align 4 .b32 sm[256];
  .reg .b32 %r<20>; .reg .b64 %rd<10>; .reg .pred %p<6>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  ld.param.u32 %r15, [k_bad];
  mov.u32 %r1, %tid.x;
  mov.u32 %r14, %ntid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r2, [%rd4];
  shl.b32 %r3, %r1, 2;
  mov.u32 %r4, sm;
  add.s32 %r5, %r4, %r3;
  st.shared.u32 [%r5], %r2;
  mov.u32 %r6, 1;
STEP:
  bar.sync 0;
  setp.ge.u32 %p1, %r1, %r6;
  mov.u32 %r7, 0;
  shl.b32 %r9, %r6, 2;
  sub.s32 %r8, %r5, %r9;
  @%p1 ld.shared.u32 %r7, [%r8];
  ld.shared.u32 %r10, [%r5];
)" + (calls ? call : "  add.s32 %r10, %r10, %r7;") +
                            R"(
  barrier.sync 0;
  st.shared.u32 [%r5], %r10;
  shl.b32 %r6, %r6, 1;
  setp.lt.u32 %p2, %r6, %r14;
  @%p2 bra STEP;
  shr.u32 %r11, %r1, 5;
  and.b32 %r11, %r11, 1;
  setp.eq.u32 %p3, %r11, 1;
  @!%p3 bra EVEN;
  add.s32 %r10, %r10, 1000;
  bar.sync 1, %r14;
  ld.shared.u32 %r12, [%r5+-128];
  add.s32 %r10, %r10, %r12;
  bra.uni DONE;
EVEN:
  add.s32 %r18, %r10, 7;
  st.shared.u32 [%r5], %r18;
  bar.arrive 1, %r14;
DONE:
  bar.sync 0;
  add.s64 %rd5, %rd2, %rd3;
  setp.eq.u32 %p4, %r1, %r15;
  selp.b64 %rd6, 0, %rd5, %p4;
  st.global.u32 [%rd6], %r10;
  ret;
})";
    auto prog = MustLoad({ptx});
    ASSERT_TRUE(prog);
    std::mt19937 rng(21);
    for (uint32_t n : {32u, 64u, 96u, 128u, 256u, 100u}) {
      std::vector<uint32_t> in(n);
      for (auto& v : in) v = rng() % 1000;
      TestMemory mem;
      uint32_t* din = mem.Upload(in);
      uint32_t* out = mem.Alloc<uint32_t>(n);
      Status s = RunKernel(
          *prog, "k", {3}, {n}, [&](Params& p) { p.Add(din).Add(out).Add(~0u); }, &mem);
      ASSERT_TRUE(s.ok()) << n << (calls ? " with calls: " : ": ") << s.ToString();
      // The odd warps add 1000 and read what the even warp below them left before arriving.
      std::vector<uint32_t> scan(n);
      for (uint32_t t = 0, acc = 0; t < n; ++t) scan[t] = acc += in[t];
      for (uint32_t t = 0; t < n; ++t) {
        const bool odd = (t / 32) % 2 == 1;
        const uint32_t want = odd ? scan[t] + 1000 + scan[t - 32] + 7 : scan[t];
        ASSERT_EQ(out[t], want) << "block of " << n << ", thread " << t << ", calls " << calls;
      }
      // One lane's store to address 0: an illegal address naming that thread.
      const uint32_t bad = n - 30;
      s = RunKernel(
          *prog, "k", {3}, {n}, [&](Params& p) { p.Add(din).Add(out).Add(bad); }, &mem);
      EXPECT_EQ(s.code(), err::kIllegalAddress) << n << ": " << s.ToString();
      EXPECT_NE(s.message().find("thread (" + std::to_string(bad) + ",0,0)"), std::string::npos)
          << s.message();
    }
  }
}

// Warps running together compute what reads only values every warp holds alike (parameters,
// %ctaid, %laneid, constants, a loop counter) once and share it, with each warp when it reads
// one (an address, a guard) or when they part; what reads %tid or a value a guard changed in
// some warps only is computed in each.
TEST(Lockstep, ValuesAlikeInEveryWarpAreSharedAndNothingElse) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_out, .param .u32 k_n, .param .u64 k_in) {
  .reg .b32 %r<20>; .reg .b64 %rd<8>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [k_out];
  ld.param.u32 %r1, [k_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %laneid;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r6, %r2, %r1, %r3;
  mul.lo.s32 %r7, %r4, 3;
  setp.lt.u32 %p1, %r4, 40;
  mov.u32 %r8, %r6;
  @%p1 mov.u32 %r8, 7;
  add.s32 %r9, %r8, %r6;
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
LOOP:
  add.s32 %r11, %r11, %r6;
  add.s32 %r10, %r10, 1;
  bar.sync 0;
  setp.lt.u32 %p2, %r10, %r1;
  @%p2 bra LOOP;
  add.s32 %r12, %r9, %r11;
  add.s32 %r12, %r12, %r7;
  ld.param.u64 %rd4, [k_in];
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd5, %rd4, %rd5;
  ld.global.u32 %r15, [%rd5];
  add.s32 %r12, %r12, %r15;
  setp.lt.u32 %p3, %r3, 5;
  @%p3 add.s32 %r12, %r12, 1000;
  add.s32 %r17, %r6, 77;
  shr.u32 %r16, %r4, 5;
  and.b32 %r16, %r16, 1;
  setp.eq.u32 %p0, %r16, 1;
  @%p0 bra ODD;
  bra.uni JOIN;
ODD:
  add.s32 %r12, %r12, %r17;
JOIN:
  mov.u32 %r13, %ntid.x;
  mad.lo.s32 %r14, %r2, %r13, %r4;
  mul.wide.u32 %rd2, %r14, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r12;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  for (uint32_t threads : {96u, 100u, 256u}) {
    const uint32_t blocks = 3, n = 5;
    TestMemory mem;
    uint32_t* out = mem.Alloc<uint32_t>(blocks * threads);
    const std::vector<uint32_t> per_block = {100000, 200000, 300000};
    uint32_t* in = mem.Upload(per_block);
    Status s = RunKernel(
        *prog, "k", {blocks}, {threads}, [&](Params& p) { p.Add(out).Add(n).Add(in); }, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (uint32_t b = 0; b < blocks; ++b) {
      for (uint32_t t = 0; t < threads; ++t) {
        const uint32_t alike = b * n + t % 32, r8 = t < 40 ? 7 : alike;
        const uint32_t lane_bonus = t % 32 < 5 ? 1000 : 0, odd = (t / 32) % 2 ? alike + 77 : 0;
        ASSERT_EQ(out[b * threads + t],
                  r8 + alike + n * alike + 3 * t + per_block[b] + lane_bonus + odd)
            << "block " << b << " thread " << t << " of " << threads;
      }
    }
  }
}

// A kernel's registers are packed into fewer slots by liveness at load (regalloc.h), and every
// value still reaches its reader: one live across a loop and both sides of a branch that splits
// each warp, a guarded write whose skipped lanes keep the older value, short-lived temporaries,
// 32-bit halves packed into a 64-bit register and back (the destination of a cross-type move
// never shares its source's slot), a shuffle reading a neighbour's register, and a value that
// lives through a block placed after its last reader in the code, on its way to a guarded write
// that keeps it in the lanes it skips. A kernel that calls keeps its slots.
TEST(Registers, PackedByLivenessKeepEveryValue) {
  const std::string ptx = R"(.version 9.0
.target sm_80
.address_size 64
.func (.param .b32 r) twice(.param .b32 a) {
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [a];
  add.u32 %r2, %r1, %r1;
  st.param.u32 [r], %r2;
  ret;
}
.visible .entry packed(.param .u64 in, .param .u64 out, .param .u32 n) {
  .reg .pred %p<6>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<20>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r3, [%rd4];
  mul.lo.u32 %r5, %r2, 3;
  and.b32 %r6, %r3, 1;
  setp.eq.u32 %p1, %r6, 0;
  @%p1 add.u32 %r5, %r3, 100;
  mov.u32 %r7, 0;
  mov.u32 %r8, 0;
LOOP:
  xor.b32 %r9, %r3, %r7;
  shl.b32 %r10, %r9, 1;
  add.u32 %r11, %r10, %r7;
  add.u32 %r8, %r8, %r11;
  add.u32 %r7, %r7, 1;
  setp.lt.u32 %p2, %r7, %r1;
  @%p2 bra LOOP;
  rem.u32 %r12, %r3, 3;
  setp.eq.u32 %p3, %r12, 0;
  @%p3 bra THREE;
  mul.lo.u32 %r13, %r3, 7;
  add.u32 %r14, %r13, %r5;
  bra.uni JOIN;
THREE:
  sub.u32 %r15, %r5, %r3;
  mov.u32 %r14, %r15;
JOIN:
  mov.b64 %rd5, {%r8, %r14};
  add.s64 %rd6, %rd5, %rd5;
  mov.b64 {%r16, %r17}, %rd6;
  shfl.sync.bfly.b32 %r18, %r17, 1, 31, -1;
  mul.wide.u32 %rd8, %r2, 24;
  add.s64 %rd9, %rd2, %rd8;
  st.global.v2.u32 [%rd9], {%r16, %r17};
  st.global.u32 [%rd9+8], %r18;
  st.global.u32 [%rd9+12], %r5;
  mov.u32 %r20, %tid.x;
  and.b32 %r21, %r20, 1;
  setp.eq.u32 %p4, %r21, 0;
  bra.uni FAR;
BACK:
  @%p4 mov.u32 %r20, 7;
  st.global.u32 [%rd9+16], %r20;
  ret;
FAR:
  mul.lo.u32 %r22, %r3, 5;
  add.u32 %r23, %r22, 1;
  xor.b32 %r24, %r23, %r3;
  st.global.u32 [%rd9+20], %r24;
  bra.uni BACK;
}
.visible .entry calls(.param .u64 out) {
  .reg .b32 %r<40>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 a;
  st.param.b32 [a], %r1;
  .param .b32 r;
  call.uni (r), twice, (a);
  ld.param.b32 %r2, [r];
  }
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd2, %rd1, %rd2;
  st.global.u32 [%rd2], %r2;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  auto slots = [&](const char* name) {
    for (const Function& f : prog->impl().funcs)
      if (f.name == name) return f.nregs;
    return 0u;
  };
  EXPECT_LT(slots("packed"), 20u) << "66 registers declared, a dozen live at once";
  for (const Inst& in : prog->impl().code) {
    if (in.op != Op::kMov || in.sub != Sub::kDown) continue;
    EXPECT_TRUE(in.d[0] != in.a[0] && in.d[1] != in.a[0]) << "unpack into its own source";
  }
  EXPECT_GT(slots("calls"), 40u) << "a kernel that calls keeps its slots";

  const uint32_t threads = 64, n = 5;
  std::mt19937 rng(2024);
  std::vector<uint32_t> in(threads);
  for (uint32_t& v : in) v = rng() % 100000;
  TestMemory mem;
  const uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(threads * 6);
  Status s = RunKernel(
      *prog, "packed", {1}, {threads}, [&](Params& p) { p.Add(din).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto lanes = [&](uint32_t t) {
    const uint32_t x = in[t];
    const uint32_t r5 = x % 2 == 0 ? x + 100 : t * 3;
    uint32_t acc = 0;
    for (uint32_t i = 0; i < n; ++i) acc += ((x ^ i) << 1) + i;
    const uint32_t r14 = x % 3 == 0 ? r5 - x : x * 7 + r5;
    const uint64_t rd6 = ((uint64_t(r14) << 32) | acc) * 2;
    return std::array<uint32_t, 6>{uint32_t(rd6),      uint32_t(rd6 >> 32), 0, r5,
                                   t % 2 == 0 ? 7 : t, ((x * 5) + 1) ^ x};
  };
  for (uint32_t t = 0; t < threads; ++t) {
    SCOPED_TRACE(t);
    std::array<uint32_t, 6> want = lanes(t);
    want[2] = lanes(t ^ 1)[1];
    for (int k = 0; k < 6; ++k) EXPECT_EQ(out[t * 6 + k], want[k]) << "output " << k;
  }
  uint32_t* twice = mem.Alloc<uint32_t>(threads);
  s = RunKernel(
      *prog, "calls", {1}, {threads}, [&](Params& p) { p.Add(twice); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint32_t t = 0; t < threads; ++t) EXPECT_EQ(twice[t], 2 * t);
}

// Each kernel's static shared memory holds only the .shared variables it reaches (directly or
// through the functions it calls), as ptxas lays it out; a variable two kernels reach is at the
// same offset in both.
TEST(SharedLayout, PerKernelAndReachable) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.shared .align 4 .b8 big_a[40960];
.shared .align 4 .b8 big_b[40960];
.shared .align 8 .b8 common[128];
.func (.param .b32 r) twice(.param .b32 x) {
  .reg .b32 %r<6>;
  ld.param.b32 %r1, [x];
  mov.u32 %r2, %tid.x;
  shl.b32 %r2, %r2, 2;
  mov.u32 %r3, common;
  add.u32 %r3, %r3, %r2;
  st.shared.u32 [%r3], %r1;
  ld.shared.u32 %r4, [%r3];
  add.u32 %r4, %r4, %r4;
  st.param.b32 [r], %r4;
  ret;
}
.visible .entry ka(.param .u64 out) {
  .reg .b32 %r<8>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  mov.u64 %rd3, big_a;
  add.s64 %rd4, %rd3, %rd2;
  mul.lo.s32 %r2, %r1, 3;
  st.shared.u32 [%rd4], %r2;
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 r0;
  call.uni (r0), twice, (p0);
  ld.param.b32 %r3, [r0];
  }
  ld.shared.u32 %r4, [%rd4];
  add.s32 %r5, %r4, %r3;
  add.s64 %rd5, %rd1, %rd2;
  st.global.u32 [%rd5], %r5;
  ret;
}
.visible .entry kb(.param .u64 out) {
  .reg .b32 %r<8>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  st.shared.u32 [big_b+40956], %r1;
  ld.shared.u32 %r2, [big_b+40956];
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 r0;
  call.uni (r0), twice, (p0);
  ld.param.b32 %r3, [r0];
  }
  add.s32 %r4, %r3, 5;
  add.s64 %rd5, %rd1, %rd2;
  st.global.u32 [%rd5], %r4;
  ret;
}
.visible .entry kc(.param .u64 out) {
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], 7;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  auto shared_of = [&](const char* name) {
    return prog->kernels()[*prog->FindKernel(name)].static_shared_bytes;
  };
  EXPECT_EQ(shared_of("ka"), 40960u + 128u);
  EXPECT_EQ(shared_of("kb"), 40960u + 128u);
  EXPECT_EQ(shared_of("kc"), 0u);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(32);
  Status ska = RunKernel(
      *prog, "ka", {2}, {32}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(ska.ok()) << ska.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], 3 * t + 2 * t) << t;
  Status skb = RunKernel(
      *prog, "kb", {2}, {32}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(skb.ok()) << skb.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], 2 * t + 5) << t;
  // With dynamic shared memory past the static part, 48 KiB in all per CTA.
  Status s = RunKernel(
      *prog, "ka", {1}, {32}, [&](Params& p) { p.Add(out); }, &mem, 49152 - 41088);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// A 32-bit shared address is computed modulo 2^32, as on a GPU: nvcc strength-reduces
// `t[m - tx][tx]` to a register that goes below zero and an offset that brings it back (Rodinia's
// nw). Shared and local addresses wrap; a generic one, 64 bits wide, does not need to.
TEST(SharedLayout, ThirtyTwoBitAddressesWrap) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out) {
  .reg .b32 %r<10>; .reg .b64 %rd<6>;
  .shared .align 4 .b8 s[132];
  .local .align 4 .b8 l[8];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, s;
  shl.b32 %r3, %r1, 2;
  add.u32 %r4, %r2, %r3;
  mul.lo.u32 %r9, %r1, 7;
  st.shared.u32 [%r4], %r9;
  bar.sync 0;
  add.u32 %r5, %r4, -65536;
  ld.shared.u32 %r6, [%r5+65540];
  mov.u32 %r7, l;
  add.u32 %r7, %r7, -16;
  st.local.u32 [%r7+20], %r1;
  ld.local.u32 %r8, [%r7+20];
  add.u32 %r6, %r6, %r8;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
})";
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 32);
  ASSERT_EQ(out.size(), 32u);
  for (uint32_t t = 0; t < 31; ++t) EXPECT_EQ(out[t], (t + 1) * 7 + t) << t;
}

// The carry flag after sub.cc is the carry-out of a + ~b + 1: 1 when nothing was borrowed, as a
// GPU leaves it (nvcc's 128-bit division reads it with addc; with the flag as a borrow every
// __int128 quotient came out wrong).
TEST(Registers, SubtractionLeavesTheCarryOutNotTheBorrow) {
  const std::string ptx = PerThread(R"(
  mul.lo.u32 %r2, %r1, -1640531535;
  xor.b32 %r3, %r1, 23130;
  mul.lo.u32 %r3, %r3, 40503;
  sub.cc.u32 %r4, %r2, %r3;
  addc.u32 %r5, 0, 0;
  subc.u32 %r6, %r2, %r3;
  sub.u32 %r7, %r4, %r6;
  shl.b32 %r7, %r7, 1;
  or.b32 %r5, %r5, %r7;
  mov.u32 %r15, %r5;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 64);
  ASSERT_EQ(out.size(), 64u);
  int borrows = 0;
  for (uint32_t t = 0; t < 64; ++t) {
    const uint32_t a = t * 0x9E3779B1u, b = (t ^ 23130u) * 40503u;
    // Bit 0: the flag; above it, sub.cc's result less subc's with that flag (subc takes one
    // more after a borrow, so multi-word subtractions chain).
    EXPECT_EQ(out[t], uint32_t(a >= b) | (a >= b ? 0u : 2u)) << t;
    borrows += a < b;
  }
  EXPECT_GT(borrows, 0);
  EXPECT_LT(borrows, 64);
}

// A signed cvt into a register wider than its type sign-extends to the register (PTX ISA,
// destination operands; ZLUDA's cvt_s16_s8 test reads 0xFFFFFFC2 on NVIDIA's GPUs); an unsigned
// one zero-extends.
TEST(Registers, SignedConversionsSignExtendToTheRegister) {
  const std::string ptx = PerThread(R"(
  mul.lo.u32 %r2, %r1, 37;
  cvt.s16.s8 %r3, %r2;
  cvt.u16.u8 %r4, %r2;
  and.b32 %r4, %r4, 255;
  xor.b32 %r15, %r3, %r4;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 64);
  ASSERT_EQ(out.size(), 64u);
  for (uint32_t t = 0; t < 64; ++t) {
    const uint8_t byte = uint8_t(t * 37);
    EXPECT_EQ(out[t], uint32_t(int32_t(int8_t(byte))) ^ byte) << t;
  }
}

// cvt reads a special register as mov does (ptxas takes `cvt.s32.u16 %r, %ctaid.x`, which the
// public sample matrixMulDynlinkJIT's PTX holds), guarded too.
TEST(Registers, ConversionsReadSpecialRegisters) {
  const std::string ptx = PerThread(R"(
  cvt.s32.u16 %r2, %tid.x;
  cvt.u64.u32 %rd2, %ntid.x;
  cvt.u32.u64 %r3, %rd2;
  setp.lt.u32 %p1, %r1, 32;
  mov.u32 %r4, 0;
  @%p1 cvt.u32.u16 %r4, %tid.x;
  mad.lo.u32 %r15, %r3, 1000, %r2;
  add.u32 %r15, %r15, %r4;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 64);
  ASSERT_EQ(out.size(), 64u);
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], 64000 + t + (t < 32 ? t : 0)) << t;
}

// A register declared in a { } block hides an enclosing block's of the same name until the
// block closes (PTX ISA, scope of variables; ZLUDA's `block` test reads 2 on NVIDIA's GPUs),
// nested blocks too; a name a closed block declared is free for the next block to declare.
TEST(Registers, ABlocksDeclarationHidesTheEnclosingRegister) {
  const std::string ptx = PerThread(R"(
  mul.lo.u32 %r3, %r1, 3;
  {
    .reg .b32 %r3;
    mov.u32 %r3, 99;
    {
      .reg .b32 %r3;
      mov.u32 %r3, 7;
      mov.u32 %r4, %r3;
    }
    add.u32 %r4, %r4, %r3;
  }
  {
    .reg .b32 t;
    add.u32 t, %r1, 1;
    add.u32 %r4, %r4, t;
  }
  {
    .reg .b32 t;
    mov.u32 t, 5;
    add.u32 %r4, %r4, t;
  }
  mad.lo.u32 %r15, %r4, 1000, %r3;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 32);
  ASSERT_EQ(out.size(), 32u);
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], (7 + 99 + t + 1 + 5) * 1000 + 3 * t) << t;
}

// setp.ftz and set.ftz compare an .f32 subnormal as a zero (fast-math builds compare so).
TEST(Registers, FtzComparesSubnormalsAsZeros) {
  const std::string ptx = PerThread(R"(
  add.u32 %r2, %r1, 1;
  setp.ge.u32 %p1, %r1, 16;
  @%p1 add.u32 %r2, %r2, 8388608;
  mov.b32 %f1, %r2;
  setp.ftz.gt.f32 %p1, %f1, 0f00000000;
  setp.gt.f32 %p2, %f1, 0f00000000;
  selp.u32 %r3, 1, 0, %p1;
  selp.u32 %r4, 2, 0, %p2;
  set.ftz.eq.u32.f32 %r5, %f1, 0f00000000;
  and.b32 %r5, %r5, 4;
  or.b32 %r3, %r3, %r4;
  or.b32 %r3, %r3, %r5;
  mov.u32 %r15, %r3;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 32);
  ASSERT_EQ(out.size(), 32u);
  // Threads 0-15 hold subnormals (1 to 16 ulps), 16-31 normals.
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], t < 16 ? 2u | 4u : 1u | 2u) << t;
}

// fns (coalesced groups' shuffles are built on it), dp2a and dp4a, against the ISA's definitions.
TEST(Registers, FnsDp2aAndDp4aMatchTheirDefinitions) {
  auto ptx = [](const char* body) {
    return PerThread(std::string(R"(
  and.b32 %r3, %r1, 31;
  mul.lo.u32 %r2, %r1, -1640531535;
  shr.u32 %r2, %r2, %r3;
  shr.u32 %r4, %r1, 5;
  add.s32 %r4, %r4, -4;
  mul.lo.u32 %r5, %r1, 40503;
  xor.b32 %r5, %r5, -559038737;
  )") + body + "\n  mov.u32 %r15, %r6;");
  };
  const uint32_t n = 288;  // offsets -4..4 over every base
  auto in = [](uint32_t t) {
    struct {
      uint32_t mask, base;
      int32_t offset;
      uint32_t a, b;
    } v{(t * 0x9E3779B1u) >> (t & 31), t & 31, int32_t(t >> 5) - 4, t * 0x9E3779B1u,
        (t * 40503u) ^ 0xDEADBEEFu};
    return v;
  };
  const std::vector<uint32_t> fns = RunPerThreadOut(ptx("fns.b32 %r6, %r2, %r3, %r4;"), n);
  ASSERT_EQ(fns.size(), n);
  for (uint32_t t = 0; t < n; ++t) {
    const auto v = in(t);
    uint32_t want = 0xffffffffu;
    if (v.offset == 0) {
      if ((v.mask >> v.base) & 1) want = v.base;
    } else {
      int count = std::abs(v.offset) - 1;
      for (int pos = int(v.base); pos >= 0 && pos<32; pos += v.offset> 0 ? 1 : -1)
        if (((v.mask >> pos) & 1) && count-- == 0) {
          want = uint32_t(pos);
          break;
        }
    }
    EXPECT_EQ(fns[t], want) << "fns " << t;
  }
  for (const bool hi : {false, true}) {
    const std::vector<uint32_t> dp = RunPerThreadOut(
        ptx(hi ? "dp2a.hi.u32.s32 %r6, %r2, %r5, %r1;" : "dp2a.lo.s32.u32 %r6, %r2, %r5, %r1;"), n);
    ASSERT_EQ(dp.size(), n);
    for (uint32_t t = 0; t < n; ++t) {
      const auto v = in(t);
      const uint32_t a = v.mask;  // %r2
      uint32_t want = t;
      for (int k = 0; k < 2; ++k) {
        const uint32_t ah = (a >> (16 * k)) & 0xffff, bb = (v.b >> (8 * ((hi ? 2 : 0) + k))) & 0xff;
        const int32_t av = hi ? int32_t(ah) : int32_t(int16_t(ah));
        const int32_t bv = hi ? int32_t(int8_t(bb)) : int32_t(bb);
        want += uint32_t(av * bv);
      }
      EXPECT_EQ(dp[t], want) << (hi ? "dp2a.hi " : "dp2a.lo ") << t;
    }
  }
  const std::vector<uint32_t> dp4 = RunPerThreadOut(ptx("dp4a.s32.u32 %r6, %r2, %r5, %r1;"), n);
  ASSERT_EQ(dp4.size(), n);
  for (uint32_t t = 0; t < n; ++t) {
    const auto v = in(t);
    uint32_t want = t;
    for (int k = 0; k < 4; ++k)
      want += uint32_t(int32_t(int8_t(v.mask >> (8 * k))) * int32_t((v.b >> (8 * k)) & 0xff));
    EXPECT_EQ(dp4[t], want) << "dp4a " << t;
  }
}

// min/max.NaN: a NaN operand gives the canonical NaN, in f32 and in each half of an f16x2.
TEST(Registers, MinMaxNaNPropagates) {
  const std::string ptx = PerThread(R"(
  cvt.rn.f32.u32 %f1, %r1;
  mov.f32 %f2, 0f40400000;
  setp.eq.u32 %p1, %r1, 1;
  @%p1 mov.f32 %f2, 0f7fc00001;
  max.NaN.f32 %f3, %f1, %f2;
  mov.b32 %r2, %f3;
  min.f32 %f3, %f1, %f2;
  mov.b32 %r3, %f3;
  mov.b32 %r4, 0x7e014000;
  mov.b32 %r5, 0x3c003c00;
  max.NaN.f16x2 %r6, %r4, %r5;
  min.NaN.f16x2 %r7, %r5, %r4;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mov.b32 %r2, %r6;
  @%p1 mov.b32 %r3, %r7;
  xor.b32 %r2, %r2, %r3;
  mov.u32 %r15, %r2;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 8);
  ASSERT_EQ(out.size(), 8u);
  // Thread 0: f16x2 max(NaN:2.0, 1.0:1.0) = 7fff:4000, min = 7fff:3c00.
  EXPECT_EQ(out[0], 0x7fff4000u ^ 0x7fff3c00u);
  // Thread 1: max.NaN(1, NaN) canonical, min(1, NaN) = 1.
  EXPECT_EQ(out[1], 0x7fffffffu ^ std::bit_cast<uint32_t>(1.0f));
  for (uint32_t t = 2; t < 8; ++t)
    EXPECT_EQ(out[t], std::bit_cast<uint32_t>(std::max(float(t), 3.0f)) ^
                          std::bit_cast<uint32_t>(std::min(float(t), 3.0f)))
        << t;
}

// div.approx.f32 gives a zero for 2^126 < |b| < 2^128 (NaN for an infinite a), as __fdividef
// is documented to; elsewhere the quotient.
TEST(Registers, ApproximateDivisionByHugeDivisorsIsZero) {
  const std::string ptx = PerThread(R"(
  mov.f32 %f1, 0f7149F2CA;
  mov.f32 %f2, 0f7F61B1E6;
  setp.eq.u32 %p1, %r1, 1;
  @%p1 mov.f32 %f1, 0f7F800000;
  setp.eq.u32 %p2, %r1, 2;
  @%p2 mov.f32 %f2, 0f40000000;
  div.approx.f32 %f3, %f1, %f2;
  mov.b32 %r2, %f3;
  mov.u32 %r15, %r2;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], 0u);                                  // 1e30 / 3e38
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(out[1])));  // inf / 3e38
  EXPECT_EQ(std::bit_cast<float>(out[2]), 1e30f / 2.0f);  // 1e30 / 2
}

// `.reg.b32 t;` (type joined to the directive) declares as `.reg .b32 t;` does: ptxas takes
// both, and CUDA's half and bfloat16 headers write the first (hexp, hsqrt, h2log, ...).
TEST(Registers, TypeJoinedToTheDirectiveDeclares) {
  const std::string ptx = PerThread(R"(
  {
  .reg.b32 t;
  .reg.pred q;
  .reg.b16 h, g;
  add.u32 t, %r1, 40;
  setp.gt.u32 q, %r1, 3;
  cvt.u16.u32 h, t;
  add.u16 g, h, h;
  cvt.u32.u16 %r2, g;
  @q add.u32 %r2, %r2, 1000;
  }
  mov.u32 %r15, %r2;
)");
  const std::vector<uint32_t> out = RunPerThreadOut(ptx, 32);
  ASSERT_EQ(out.size(), 32u);
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], 2 * (t + 40) + (t > 3 ? 1000 : 0)) << t;
}

TEST(SharedLayout, MoreThan48KiBStaticIsRefused) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out) {
  .shared .align 4 .b8 big[49156];
  st.shared.u32 [big+49152], 1;
  ret;
})";
  auto r = Load(std::vector<std::string>{ptx});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), err::kInvalidPtx);
}

// Declared sizes come from an untrusted module: one past what the emulator materialises
// (or one that overflows 64 bits) is refused at load, never allocated or enumerated.
TEST(Errors, OversizedDeclarationsAreRefusedAtLoad) {
  const std::string head = ".version 9.0\n.target sm_75\n.address_size 64\n";
  const std::string entry = ".visible .entry k() { ret; }\n";
  const std::vector<std::string> bad = {
      ".global .align 4 .b32 g[4611686018427387904];\n",         // 2^62 elements: overflows
      ".global .b8 g[65536][65536][65536];\n",                   // 2^48 bytes by products
      ".global .b8 a[200000000];\n.global .b8 b[100000000];\n",  // 300 MB of statics together
      ".global .align 3 .b8 g[4];\n",                            // not a power of two
      ".global .b8 g[-4];\n",
      ".visible .entry f() { .local .b8 x[600000]; ret; }\n",          // a frame past 512 KiB
      ".visible .entry r() { .reg .b64 %rd<1555555555555>; ret; }\n",  // registers
      ".visible .entry s() { .reg .b32 %r<40000>; .reg .b32 %q<40000>; ret; }\n",
      ".visible .entry p(.param .align 4 .b8 x[400000], .param .align 4 .b8 y[400000]) { ret; }\n",
  };
  for (const std::string& decl : bad) {
    auto r = Load(std::vector<std::string>{head + decl + entry});
    ASSERT_FALSE(r.ok()) << decl;
    EXPECT_EQ(r.status().code(), err::kInvalidPtx) << decl;
  }
  // A megabyte of statics loads, zeroed.
  auto ok = Load(std::vector<std::string>{head + ".global .b8 g[1048576];\n" + entry});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ((*ok)->globals().size(), 1u);
  const auto& g = (*ok)->globals()[0];
  ASSERT_EQ(g.size, 1048576u);
  EXPECT_EQ(std::count(g.init.begin(), g.init.end(), std::byte{0}), 1048576);
}

// Stream priorities, as a GPU's block dispatcher honours them: while a higher-priority kernel
// holds every core with blocks that never end, a lower-priority one starts a block only once
// per 20 ms that no block ended (residency), and it still finishes. With equal priorities the
// waiting kernel, resident, runs all its blocks beside the spinning ones.
TEST(Priorities, AHigherPriorityKernelHoldsBackALowerOnesBlocks) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry spin(.param .u64 flag, .param .u64 started) {
  .reg .pred %p;
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [started];
  atom.global.add.u32 %r1, [%rd2], 1;
WAIT:
  ld.volatile.global.u32 %r2, [%rd1];
  setp.eq.u32 %p, %r2, 0;
  @%p bra WAIT;
  ret;
}
.visible .entry count(.param .u64 counter) {
  .reg .b32 %r1;
  .reg .b64 %rd1;
  ld.param.u64 %rd1, [counter];
  atom.global.add.u32 %r1, [%rd1], 1;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_NE(prog, nullptr);
  TestMemory mem;
  uint32_t* flag = mem.Alloc<uint32_t>(1);
  uint32_t* started = mem.Alloc<uint32_t>(1);
  uint32_t* counter = mem.Alloc<uint32_t>(1);
  auto load = [](uint32_t* p) { return std::atomic_ref<uint32_t>(*p).load(); };
  constexpr uint32_t kBlocks = 20000;
  // Starts the spinner at `priority` (64 blocks: enough to ask for every core) and waits until
  // it runs.
  auto spin = [&](int priority) {
    std::atomic_ref<uint32_t>(*flag).store(0);
    std::atomic_ref<uint32_t>(*started).store(0);
    std::thread t([&, priority] {
      Status s = RunKernel(
          *prog, "spin", {64}, {1}, [&](Params& p) { p.Add(flag).Add(started); }, &mem, 0, nullptr,
          nullptr, 0, priority);
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    while (load(started) == 0) std::this_thread::yield();
    return t;
  };
  auto count = [&] {
    Status s = RunKernel(
        *prog, "count", {kBlocks}, {1}, [&](Params& p) { p.Add(counter); }, &mem, 0, nullptr,
        nullptr, 0, /*priority=*/0);
    EXPECT_TRUE(s.ok()) << s.ToString();
  };

  // Equal priorities: the counting kernel runs to its end while the spinner spins.
  std::thread spinner = spin(0);
  const auto t0 = std::chrono::steady_clock::now();
  count();
  const auto alongside = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(load(counter), kBlocks);
  std::atomic_ref<uint32_t>(*flag).store(1);
  spinner.join();

  // A higher-priority spinner: over twice that time (3 s at most: a host too busy to give the
  // device's idle-priority threads their share can stretch it) the counting kernel gets a block
  // per bounded wait at most, far from all of them; released, it finishes.
  std::atomic_ref<uint32_t>(*counter).store(0);
  spinner = spin(-5);
  std::thread counting(count);
  std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
      2 * alongside + std::chrono::milliseconds(20), std::chrono::seconds(3)));
  const uint32_t held = load(counter);
  std::atomic_ref<uint32_t>(*flag).store(1);
  spinner.join();
  counting.join();
  EXPECT_LT(held, kBlocks / 2) << "the lower-priority kernel was not held back";
  EXPECT_EQ(load(counter), kBlocks);
}

// The device's block dispatcher, as a GPU's: each block takes a ticket when it starts, then
// spins `n` steps; two grids launched from two threads share one ticket counter.
class Dispatch : public ::testing::Test {
 protected:
  static constexpr uint32_t kBlocks = 64;
  void SetUp() override {
    prog_ = MustLoad({R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry work(.param .u64 ticket, .param .u64 order, .param .u32 n) {
  .reg .pred %p;
  .reg .b32 %r<5>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [ticket];
  ld.param.u64 %rd2, [order];
  ld.param.u32 %r1, [n];
  atom.global.add.u32 %r2, [%rd1], 1;
  mov.u32 %r3, %ctaid.x;
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r2;
  mov.u32 %r4, 0;
LOOP:
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p, %r4, %r1;
  @%p bra LOOP;
  ret;
})"});
    ASSERT_TRUE(prog_);
    ticket_ = mem_.Alloc<uint32_t>(1);
  }
  // Launches kBlocks blocks of `steps` at `priority`, each recording its ticket in `order`.
  void Launch(uint32_t* order, int priority, uint32_t steps) {
    Status s = RunKernel(
        *prog_, "work", {kBlocks}, {1}, [&](Params& p) { p.Add(ticket_).Add(order).Add(steps); },
        &mem_, 0, nullptr, nullptr, 0, priority);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  // Launches the first grid on a thread, waits until its first block started, then the
  // second on this one. The first's blocks are longer, so that it has blocks left to start
  // when the second comes even on a loaded host.
  void LaunchBoth(uint32_t* first, int first_priority, uint32_t* second, int second_priority) {
    std::thread t([&] { Launch(first, first_priority, 50000); });
    while (std::atomic_ref<uint32_t>(*ticket_).load() == 0) std::this_thread::yield();
    Launch(second, second_priority, 5000);
    t.join();
  }
  // Blocks of `order` that started between tickets lo and hi (exclusive).
  static uint32_t StartedBetween(const uint32_t* order, uint32_t lo, uint32_t hi) {
    return uint32_t(
        std::count_if(order, order + kBlocks, [&](uint32_t t) { return t > lo && t < hi; }));
  }
  std::shared_ptr<const Program> prog_;
  TestMemory mem_;
  uint32_t* ticket_ = nullptr;
};

// Two streams' saturating grids of equal priority take the device in turns, as on a GPU: the
// later one starts on the cores the earlier one's last blocks leave, so it does not run at full
// speed beside it. (Side by side, as each launch once had its own threads, they interleave.)
TEST_F(Dispatch, ALaterGridOfEqualPriorityStartsBehindTheEarlierOnesBlocks) {
  uint32_t* a = mem_.Alloc<uint32_t>(kBlocks);
  uint32_t* b = mem_.Alloc<uint32_t>(kBlocks);
  LaunchBoth(a, 0, b, 0);
  const uint32_t a_last = *std::max_element(a, a + kBlocks);
  // Only blocks racing for the same instant (one per core) may take tickets out of order.
  EXPECT_LE(StartedBetween(b, 0, a_last), DeviceCores())
      << "the later grid's blocks started among the earlier one's";
  EXPECT_EQ(std::atomic_ref<uint32_t>(*ticket_).load(), 2 * kBlocks);
}

// A grid of higher priority takes every core at the running blocks' next boundary: none of the
// lower grid's blocks starts until its blocks have all started.
TEST_F(Dispatch, AHigherPriorityGridsBlocksAllStartBeforeALowerOnesNext) {
  uint32_t* low = mem_.Alloc<uint32_t>(kBlocks);
  uint32_t* high = mem_.Alloc<uint32_t>(kBlocks);
  LaunchBoth(low, 0, high, -5);
  const uint32_t high_first = *std::min_element(high, high + kBlocks);
  const uint32_t high_last = *std::max_element(high, high + kBlocks);
  EXPECT_LE(StartedBetween(low, high_first, high_last), DeviceCores())
      << "the lower grid kept starting blocks";
  EXPECT_LT(high_first, *std::max_element(low, low + kBlocks)) << "the higher grid came last";
  EXPECT_EQ(std::atomic_ref<uint32_t>(*ticket_).load(), 2 * kBlocks);
}

// A vector access of 8 or 16 bytes is seen whole by a thread of another CTA, as on a GPU (CUB's
// decoupled look-back publishes {status, value} with one st.relaxed.v2 and polls with one ld):
// block 0 stores (i, ~i) pairs while block 1 loads them and counts the torn ones.
TEST(Memory, VectorAccessIsNotTornAcrossCtas) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry pairs32(.param .u64 cell, .param .u64 out, .param .u32 n) {
  .reg .b32 %r<12>; .reg .b64 %rd<4>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [cell];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, 0;
  mov.u32 %r9, 0;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra READ;
WRITE:
  add.u32 %r3, %r3, 1;
  not.b32 %r4, %r3;
  st.relaxed.gpu.v2.u32 [%rd1], {%r3, %r4};
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra WRITE;
  ret;
READ:
  ld.relaxed.gpu.v2.u32 {%r5, %r6}, [%rd1];
  not.b32 %r7, %r6;
  setp.ne.u32 %p3, %r5, %r7;
  selp.u32 %r8, 1, 0, %p3;
  add.u32 %r9, %r9, %r8;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra READ;
  st.global.u32 [%rd2], %r9;
  ret;
}
.visible .entry pairs64(.param .u64 cell, .param .u64 out, .param .u32 n) {
  .reg .b32 %r<12>; .reg .b64 %rd<12>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [cell];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, 0;
  mov.u32 %r9, 0;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra READ;
WRITE:
  add.u32 %r3, %r3, 1;
  cvt.u64.u32 %rd3, %r3;
  not.b64 %rd4, %rd3;
  st.relaxed.gpu.v2.u64 [%rd1], {%rd3, %rd4};
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra WRITE;
  ret;
READ:
  ld.relaxed.gpu.v2.u64 {%rd5, %rd6}, [%rd1];
  not.b64 %rd7, %rd6;
  setp.ne.u64 %p3, %rd5, %rd7;
  selp.u32 %r8, 1, 0, %p3;
  add.u32 %r9, %r9, %r8;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra READ;
  st.global.u32 [%rd2], %r9;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  for (const char* kernel : {"pairs32", "pairs64"}) {
    SCOPED_TRACE(kernel);
    TestMemory mem;
    // Whole in both views before the first store: u32 {0, ~0} and u64 {A, ~A}, so that reads
    // racing ahead of the writer's first store are not counted as torn.
    uint64_t* cell = mem.Upload(std::vector<uint64_t>{0xffffffff00000000ull, 0xffffffffull});
    uint32_t* torn = mem.Alloc<uint32_t>(1);
    auto args = [&](Params& p) { p.Add(cell).Add(torn).Add(uint32_t{2000000}); };
    Status s = RunKernel(*prog, kernel, {2}, {1}, args, &mem, 0, nullptr, nullptr, 2);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(*torn, 0u);
  }
}

// Converged lanes whose .v2/.v4 elements lie side by side (float2/float4/uint4 arrays, read
// and written whole by each thread) take a path of their own: every element lands in its
// register and its place, through global and shared memory, with an ignored element (`_`)
// left alone and a partial warp taking the lane-by-lane path beside it.
TEST(Memory, SideBySideVectorsReachEveryElement) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry vectors(.param .u64 in, .param .u64 out) {
  .reg .b32 %r<16>; .reg .b64 %rd<8>;
  .shared .align 16 .b8 tile[1024];
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4];
  shl.b32 %r6, %r1, 4;
  mov.u32 %r7, tile;
  add.u32 %r7, %r7, %r6;
  st.shared.v4.u32 [%r7], {%r5, %r4, %r3, %r2};
  ld.shared.v4.u32 {%r8, %r9, _, %r10}, [%r7];
  ld.shared.v2.u32 {%r11, %r12}, [%r7+8];
  mov.u32 %r13, 7;
  add.u32 %r13, %r13, %r1;
  st.global.v2.u32 [%rd5], {%r11, %r8};
  st.global.v2.u32 [%rd5+8], {%r13, %r12};
  ld.global.v2.u32 {%r14, %r15}, [%rd5];
  add.u32 %r14, %r14, %r10;
  st.global.v2.u32 [%rd5], {%r14, %r15};
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  for (uint32_t threads : {64u, 40u}) {  // whole warps, then a partial last warp
    SCOPED_TRACE(threads);
    TestMemory mem;
    std::mt19937 rng(threads);
    std::vector<uint32_t> in(4 * threads);
    for (uint32_t& v : in) v = rng();
    const uint32_t* d_in = mem.Upload(in);
    uint32_t* d_out = mem.Alloc<uint32_t>(4 * threads);
    auto args = [&](Params& p) { p.Add(d_in).Add(d_out); };
    Status s = RunKernel(*prog, "vectors", {1}, {threads}, args, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (uint32_t t = 0; t < threads; ++t) {
      const uint32_t* x = &in[4 * t];  // the shared copy holds x[3], x[2], x[1], x[0]
      const uint32_t want[4] = {x[1] + x[0], x[3], 7 + t, x[0]};
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(d_out[4 * t + k], want[k]) << "thread " << t << " element " << k;
    }
  }
}

// A device heap over TestMemory: every block its own allocation, never reused.
class TestHeap : public DeviceHeap {
 public:
  explicit TestHeap(TestMemory& mem) : mem_(mem) {}
  uint64_t Malloc(uint64_t bytes) override {
    std::lock_guard lock(mu_);
    return bytes == 0 ? 0 : reinterpret_cast<uint64_t>(mem_.Alloc<uint8_t>(bytes));
  }
  bool Free(uint64_t) override { return true; }

 private:
  std::mutex mu_;
  TestMemory& mem_;
};

// A kernel launching itself one level deeper, from its own code, until the device runtime
// refuses: level k writes out[k] = 1; the refused launch's error lands in out[50].
constexpr const char* kDeepPtx = R"(.version 9.0
.target sm_75
.address_size 64
.extern .func (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2(.param .b64 p0,
    .param .align 4 .b8 p1[12], .param .align 4 .b8 p2[12], .param .b32 p3);
.extern .func (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2(.param .b64 p0, .param .b64 p1);
.visible .entry deep(.param .u64 deep_out, .param .u32 deep_level) {
  .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<3>;
  ld.param.u64 %rd1, [deep_out];
  ld.param.u32 %r1, [deep_level];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], 1;
  mov.u64 %rd4, deep;
  {
  .param .b64 a0;
  st.param.b64 [a0], %rd4;
  .param .align 4 .b8 a1[12];
  st.param.b32 [a1], 1; st.param.b32 [a1+4], 1; st.param.b32 [a1+8], 1;
  .param .align 4 .b8 a2[12];
  st.param.b32 [a2], 1; st.param.b32 [a2+4], 1; st.param.b32 [a2+8], 1;
  .param .b32 a3;
  st.param.b32 [a3], 0;
  .param .b64 r0;
  call.uni (r0), __cudaCDP2GetParameterBufferV2, (a0, a1, a2, a3);
  ld.param.b64 %rd5, [r0];
  }
  st.u64 [%rd5], %rd1;
  add.s32 %r2, %r1, 1;
  st.u32 [%rd5+8], %r2;
  {
  .param .b64 b0;
  st.param.b64 [b0], %rd5;
  .param .b64 b1;
  st.param.b64 [b1], 0;
  .param .b32 r1;
  call.uni (r1), __cudaCDP2LaunchDeviceV2, (b0, b1);
  ld.param.b32 %r3, [r1];
  }
  setp.eq.s32 %p1, %r3, 0;
  @%p1 ret;
  st.global.u32 [%rd1+200], %r3;
  ret;
}
)";

// Launches deep at level 0 over `words` words of fresh memory, with a heap for the device
// runtime; the launch's status, and the memory in *out.
Status LaunchDeep(TestMemory& mem, size_t words, uint32_t** out) {
  auto prog = MustLoad({kDeepPtx});
  if (!prog) return Error(err::kInvalidPtx, "deep did not load");
  TestHeap heap(mem);
  *out = mem.Alloc<uint32_t>(words);
  std::fill_n(*out, words, 0u);
  Params p(prog->kernels()[0]);
  p.Add(reinterpret_cast<uint64_t>(*out)).Add(uint32_t{0});
  LaunchConfig cfg;
  cfg.params = p.span();
  cfg.memory = &mem;
  cfg.heap = &heap;
  return Launch(*prog, 0, cfg);
}

TEST(DeviceRuntime, NestedLaunchesRunToCudasDepthLimitThenFailTheLaunchCall) {
  TestMemory mem;
  uint32_t* out = nullptr;
  ASSERT_TRUE(LaunchDeep(mem, 64, &out).ok());
  for (int level = 0; level < 24; ++level) EXPECT_EQ(out[level], 1u) << "level " << level;
  EXPECT_EQ(out[24], 0u);
  EXPECT_EQ(out[50], 65u);  // cudaErrorLaunchMaxDepthExceeded
}

TEST(DeviceRuntime, AChildsFaultFailsTheParentsLaunch) {
  // One word: level 0 writes it, its child at level 1 writes past the allocation's end.
  TestMemory mem;
  uint32_t* out = nullptr;
  Status st = LaunchDeep(mem, 1, &out);
  EXPECT_EQ(st.code(), err::kIllegalAddress) << st.ToString();
  EXPECT_EQ(out[0], 1u);
}

TEST(DeviceRuntime, AnUnservedDeviceRuntimeCallIsRefusedAtLoadByName) {
  auto r = Load(std::vector<std::string>{R"(.version 9.0
.target sm_75
.address_size 64
.extern .func (.param .b32 func_retval0) __cudaCDP2DeviceGetLimit(.param .b64 p0, .param .b32 p1);
.visible .entry k(.param .u64 k_out) {
  .reg .b64 %rd<4>;
  .reg .b32 %r<2>;
  {
  .param .b64 a0;
  st.param.b64 [a0], 0;
  .param .b32 a1;
  st.param.b32 [a1], 1;
  .param .b32 r0;
  call.uni (r0), __cudaCDP2DeviceGetLimit, (a0, a1);
  ld.param.b32 %r1, [r0];
  }
  ret;
}
)"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("__cudaCDP2DeviceGetLimit, a part of CUDA's device runtime"),
            std::string::npos)
      << r.status().ToString();
}

// A kernel steering a conditional graph node stores the value to the handle's word (the client's
// conditional nodes read it there); a kernel launching a graph from the device loads, so its
// module's other kernels run, and a thread that makes that call fails its launch, naming it.
TEST(DeviceRuntime, ConditionalValuesAreStoredAndDeviceGraphLaunchesRefusedByName) {
  auto prog = MustLoad({R"(.version 9.0
.target sm_75
.address_size 64
.extern .func cudaGraphSetConditional(.param .b64 p0, .param .b32 p1);
.extern .func (.param .b32 r) cudaGraphLaunch(.param .b64 p0, .param .b64 p1);
.visible .entry steer(.param .u64 handle, .param .u32 value) {
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [handle];
  ld.param.u32 %r1, [value];
  {
  .param .b64 a0;
  st.param.b64 [a0], %rd1;
  .param .b32 a1;
  st.param.b32 [a1], %r1;
  call.uni cudaGraphSetConditional, (a0, a1);
  }
  ret;
}
.visible .entry relaunch(.param .u64 exec) {
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [exec];
  {
  .param .b64 a0;
  st.param.b64 [a0], %rd1;
  .param .b64 a1;
  st.param.b64 [a1], 0;
  .param .b32 r0;
  call.uni (r0), cudaGraphLaunch, (a0, a1);
  ld.param.b32 %r1, [r0];
  }
  ret;
}
)"});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* word = mem.Alloc<uint32_t>(1);
  const uint32_t value = 0x9e3779b9u ^ static_cast<uint32_t>(reinterpret_cast<uintptr_t>(word));
  Status ok = RunKernel(
      *prog, "steer", {1}, {1},
      [&](Params& p) {
        p.Add(word);
        p.Add(value);
      },
      &mem);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  EXPECT_EQ(*word, value);
  Status s = RunKernel(
      *prog, "relaunch", {1}, {1}, [&](Params& p) { p.Add(uint64_t{1}); }, &mem);
  EXPECT_EQ(s.code(), err::kLaunchFailure);
  EXPECT_NE(s.message().find("cudaGraphLaunch, device-side control of a CUDA graph"),
            std::string::npos)
      << s.message();
  // What the driver reads to refuse such a launch before it runs (module_test.cc).
  EXPECT_EQ(prog->kernels()[*prog->FindKernel("steer")].unrunnable, "");
  EXPECT_NE(prog->kernels()[*prog->FindKernel("relaunch")].unrunnable.find("cudaGraphLaunch"),
            std::string::npos);
}

// Block b of an ordinary grid of n spins until block b + 1 has set its flag (flags[b] = b + 1).
constexpr const char* kChainPtx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry chain(.param .u64 flags, .param .u32 n) {
  .reg .b32 %r<6>; .reg .b64 %rd<6>; .reg .pred %p<3>;
  ld.param.u64 %rd1, [flags];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  add.u32 %r3, %r2, 1;
  setp.ge.u32 %p1, %r3, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd1, %rd2;
SPIN:
  ld.volatile.global.u32 %r4, [%rd3];
  setp.eq.u32 %p2, %r4, 0;
  @%p2 bra SPIN;
DONE:
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.volatile.global.u32 [%rd5], %r3;
  ret;
}
)";

// Block b of one ordinary grid spins until block b + 1 has set its flag: the first blocks hold
// every core while they wait on blocks not yet started, which a GPU keeps resident beside them.
TEST(Scheduling, BlocksOfOneGridSpinningOnLaterBlocksAllEnd) {
  auto prog = MustLoad({kChainPtx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  const uint32_t n = 4 * DeviceCores() + 3;
  uint32_t* flags = mem.Alloc<uint32_t>(n);
  for (uint32_t b = 0; b < n; ++b) flags[b] = 0;
  ASSERT_TRUE(RunKernel(
                  *prog, "chain", {n}, {32},
                  [&](Params& p) { p.Add(reinterpret_cast<uint64_t>(flags)).Add(n); }, &mem)
                  .ok());
  for (uint32_t b = 0; b < n; ++b) EXPECT_EQ(flags[b], b + 1) << b;
}

// The same beside another grid's stream of short kernels, whose blocks keep ending: the chain's
// blocks still get to run resident (a GPU keeps them so whatever else it runs), while the other
// stream is still launching.
TEST(Scheduling, BlocksSpinningOnLaterBlocksEndBesideABusyStream) {
  auto chain = MustLoad({kChainPtx});
  auto busy = MustLoad({Wrap("add.u32 %r4, %r1, %r2;")});
  ASSERT_TRUE(chain && busy);
  TestMemory mem;
  const uint32_t n = 4 * DeviceCores() + 3;
  uint32_t* flags = mem.Alloc<uint32_t>(n);
  for (uint32_t b = 0; b < n; ++b) flags[b] = 0;
  std::vector<uint32_t> in(64 * 3, 1);
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(64 * 2);
  std::atomic<bool> chain_done{false}, gave_up{false};
  std::atomic<uint64_t> launches{0};
  std::thread other([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!chain_done.load()) {
      if (std::chrono::steady_clock::now() > until) {
        gave_up = true;  // the chain waited on this stream's end: what a GPU never does
        return;
      }
      ASSERT_TRUE(
          RunKernel(
              *busy, "k", {2 * DeviceCores()}, {32}, [&](Params& p) { p.Add(din).Add(out); }, &mem)
              .ok());
      ++launches;
    }
  });
  while (launches.load() == 0) std::this_thread::yield();  // the other stream runs first
  const Status s = RunKernel(
      *chain, "chain", {n}, {32},
      [&](Params& p) { p.Add(reinterpret_cast<uint64_t>(flags)).Add(n); }, &mem);
  chain_done = true;
  other.join();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(gave_up.load());
  for (uint32_t b = 0; b < n; ++b) EXPECT_EQ(flags[b], b + 1) << b;
}

// Once a block's warps run apart they keep one pace, as a GPU's schedulers issuing from each warp
// in turn keep them: the emulated GPU orders their accesses to memory the others see by how many
// instructions each warp has issued. CUDA promises no such order (these kernels race); it is the
// order a GPU nearly always gives, and programs tuned on one (Parboil's bfs and tpacf) rely on it.

// Every warp reads a shared flag after the barrier and thread 0 sets it just after its own read,
// with no barrier between: on a GPU the other warps' reads come first. Warp-at-a-time running
// gave warps 1-7 the later value every time.
TEST(Scheduling, WarpsApartReadASharedFlagBeforeOneWarpsLaterStore) {
  const std::string ptx = R"(.version 9.0
.target sm_80
.address_size 64
.visible .entry flag(.param .u64 flag_out, .param .u64 flag_tick) {
  .shared .align 4 .u32 x;
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [flag_out];
  ld.param.u64 %rd2, [flag_tick];
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra ZEROED;
  st.shared.u32 [x], 0;
ZEROED:
  bar.sync 0;
  and.b32 %r4, %r1, 31;
  setp.ne.s32 %p2, %r4, 0;
  @%p2 bra TICKED;
  atom.global.add.u32 %r5, [%rd2], 1;
TICKED:
  ld.shared.u32 %r2, [x];
  @%p1 bra STORE;
  st.shared.u32 [x], 1;
STORE:
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6], %r2;
  ret;
}
)";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(256);
  uint32_t* tick = mem.Alloc<uint32_t>(1);
  for (uint32_t t = 0; t < 256; ++t) out[t] = 7;
  tick[0] = 0;
  ASSERT_TRUE(RunKernel(
                  *prog, "flag", {1}, {256}, [&](Params& p) { p.Add(out).Add(tick); }, &mem)
                  .ok());
  EXPECT_EQ(tick[0], 8u);
  for (uint32_t t = 0; t < 256; ++t) EXPECT_EQ(out[t], 0u) << "thread " << t;
}

// Lane 0 of each of 8 warps counts its iterations into shared memory and reads the next warp's
// count: how far apart they drift. Warp-at-a-time running let warp 0 finish its 1,000 before
// warp 1 began (or run 4,096 instructions ahead).
TEST(Scheduling, WarpsApartKeepOnePace) {
  const std::string ptx = R"(.version 9.0
.target sm_80
.address_size 64
.visible .entry pace(.param .u64 pace_out, .param .u32 pace_n) {
  .shared .align 4 .u32 progress[8];
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pace_out];
  ld.param.u32 %r9, [pace_n];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  add.u32 %r4, %r2, 1;
  and.b32 %r4, %r4, 7;
  mov.u32 %r5, progress;
  shl.b32 %r6, %r2, 2;
  add.u32 %r6, %r5, %r6;
  shl.b32 %r7, %r4, 2;
  add.u32 %r7, %r5, %r7;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra CLEARED;
  st.shared.u32 [%r6], 0;
CLEARED:
  bar.sync 0;
  mov.u32 %r8, 0;
  mov.u32 %r10, 0;
LOOP:
  @%p1 bra NEXT;
  add.u32 %r11, %r8, 1;
  st.volatile.shared.u32 [%r6], %r11;
  ld.volatile.shared.u32 %r12, [%r7];
  sub.s32 %r13, %r11, %r12;
  abs.s32 %r13, %r13;
  max.u32 %r10, %r10, %r13;
NEXT:
  add.u32 %r8, %r8, 1;
  setp.lt.u32 %p2, %r8, %r9;
  @%p2 bra LOOP;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r10;
DONE:
  ret;
}
)";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(8);
  for (uint32_t w = 0; w < 8; ++w) out[w] = 12345;
  ASSERT_TRUE(RunKernel(
                  *prog, "pace", {1}, {256}, [&](Params& p) { p.Add(out).Add(1000u); }, &mem)
                  .ok());
  for (uint32_t w = 0; w < 8; ++w) EXPECT_LE(out[w], 1u) << "warp " << w;
}

TEST(Scheduling, AWarpSpinningOnAnotherWarpOfItsBlockLetsItRun) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry spin(.param .u64 spin_out) {
  .shared .align 4 .u32 flag;
  .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [spin_out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra READY;
  st.shared.u32 [flag], 0;
READY:
  bar.sync 0;
  setp.lt.u32 %p2, %r1, 32;
  @%p2 bra WAIT;
  setp.ne.u32 %p3, %r1, 32;
  @%p3 bra DONE;
  atom.shared.exch.b32 %r2, [flag], 1;
  bra.uni DONE;
WAIT:
  mov.u32 %r3, 0;
LOOP:
  add.u32 %r3, %r3, 1;
  atom.shared.or.b32 %r4, [flag], 0;
  setp.eq.u32 %p3, %r4, 0;
  @%p3 bra LOOP;
  setp.ne.u32 %p3, %r1, 0;
  @%p3 bra DONE;
  st.global.u32 [%rd1], %r3;
DONE:
  ret;
}
)";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(1);
  out[0] = 0;
  ASSERT_TRUE(RunKernel(
                  *prog, "spin", {1}, {64},
                  [&](Params& p) { p.Add(reinterpret_cast<uint64_t>(out)); }, &mem)
                  .ok());
  EXPECT_GE(out[0], 1u);  // the spins warp 0 made before warp 1's store reached it
}

}  // namespace
}  // namespace remora::emu::ptx::testing
