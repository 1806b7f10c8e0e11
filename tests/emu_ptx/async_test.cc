// tests/emu_ptx/async_test.cc - cp.async and mbarrier: kernels/async.cu (cooperative_groups,
// cuda::barrier, cuda::pipeline, __pipeline_*) at compute_80 and compute_90 against CPU
// references, and hand-written PTX for the mbarrier forms nvcc does not emit and for refusals.
#include <cmath>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

class Async : public ::testing::TestWithParam<const char*> {
 protected:
  std::shared_ptr<const Program> prog = CachedKernel(GetParam());
  std::mt19937 rng{777};
  TestMemory mem;

  std::vector<float> RandomFloats(size_t n) {
    std::uniform_real_distribution<float> u(-8, 8);
    std::vector<float> v(n);
    for (auto& f : v) f = u(rng);
    return v;
  }
};

TEST_P(Async, CooperativeGroupsMemcpyAsync) {
  ASSERT_TRUE(prog);
  for (int chunk : {1000, 333, 4}) {  // 333: pieces that are not 16-byte multiples
    const int blocks = 5;
    std::vector<float> in = RandomFloats(size_t(blocks) * chunk);
    float* din = mem.Upload(in);
    float* dout = mem.Alloc<float>(in.size());
    Status s = RunKernel(
        *prog, "cgCopyReverse", {blocks}, {128},
        [&](Params& p) { p.Add(static_cast<const float*>(din)).Add(dout).Add(chunk); }, &mem,
        uint32_t(chunk * sizeof(float)));
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int b = 0; b < blocks; ++b)
      for (int i = 0; i < chunk; ++i)
        ASSERT_EQ(dout[b * chunk + i], 2.f * in[b * chunk + chunk - 1 - i]) << chunk << " " << i;
  }
}

TEST_P(Async, CooperativeGroupsWaitPrior) {
  const int n = 300, blocks = 3, threads = 64;
  std::vector<int> a(n * blocks), b(n * blocks);
  for (auto& v : a) v = int(rng());
  for (auto& v : b) v = int(rng());
  int* da = mem.Upload(a);
  int* db = mem.Upload(b);
  int* out = mem.Alloc<int>(blocks * threads);
  Status s = RunKernel(
      *prog, "cgCopyTwoBatches", {blocks}, {threads},
      [&](Params& p) {
        p.Add(static_cast<const int*>(da)).Add(static_cast<const int*>(db)).Add(out).Add(n);
      },
      &mem, 2 * n * sizeof(int));
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int blk = 0; blk < blocks; ++blk) {
    for (int t = 0; t < threads; ++t) {
      uint32_t want = 0;
      for (int i = t; i < n; i += threads) want += uint32_t(a[blk * n + i]);
      for (int i = t; i < n; i += threads) want ^= uint32_t(b[blk * n + i]) * 3u;
      ASSERT_EQ(uint32_t(out[blk * threads + t]), want) << blk << " " << t;
    }
  }
}

TEST_P(Async, CudaBarrierMemcpyAsync) {
  const int chunk = 96, blocks = 4, threads = 128;
  std::vector<float> in = RandomFloats(size_t(blocks + 1) * chunk);
  float* din = mem.Upload(in);
  float* out = mem.Alloc<float>(blocks * threads);
  Status s = RunKernel(
      *prog, "barrierCopy", {blocks}, {threads},
      [&](Params& p) { p.Add(static_cast<const float*>(din)).Add(out).Add(chunk); }, &mem,
      chunk * sizeof(float));
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int b = 0; b < blocks; ++b) {
    float sum = 0;
    for (int i = 0; i < chunk; ++i) sum += in[b * chunk + i];
    for (int t = 0; t < threads; ++t) {
      float mine = t < chunk ? in[b * chunk + chunk + chunk - 1 - t] : 0.f;
      ASSERT_EQ(out[b * threads + t], sum + mine) << b << " " << t;
    }
  }
}

TEST_P(Async, MultiStagePipelineMatmul) {
  for (int n : {64, 32, 16}) {  // 4, 2 and 1 k-steps through 3 stages
    std::vector<float> A = RandomFloats(size_t(n) * n), B = RandomFloats(size_t(n) * n);
    float* dA = mem.Upload(A);
    float* dB = mem.Upload(B);
    float* dC = mem.Alloc<float>(size_t(n) * n);
    Status s = RunKernel(
        *prog, "matmulPipeline", {uint32_t(n / 16), uint32_t(n / 16)}, {16, 16},
        [&](Params& p) {
          p.Add(static_cast<const float*>(dA)).Add(static_cast<const float*>(dB)).Add(dC).Add(n);
        },
        &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) {
        float acc = 0;
        for (int k = 0; k < n; ++k) acc = std::fma(A[r * n + k], B[k * n + c], acc);
        ASSERT_EQ(dC[r * n + c], acc) << n << ": " << r << "," << c;
      }
  }
}

TEST_P(Async, BlockPipelineProducerConsumer) {
  const int nchunks = 5, blocks = 3, chunk = 256;
  for (uint32_t threads : {96u, 64u, 160u}) {
    std::vector<float> in = RandomFloats(size_t(blocks) * nchunks * chunk);
    float* din = mem.Upload(in);
    float* out = mem.Alloc<float>(in.size());
    Status s = RunKernel(
        *prog, "pipelineProducerConsumer", {blocks}, {threads},
        [&](Params& p) { p.Add(static_cast<const float*>(din)).Add(out).Add(nchunks); }, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_EQ(out[i], in[i] + float(i / chunk % nchunks)) << threads << " " << i;
  }
}

TEST_P(Async, PipelinePrimitivesAndZeroFill) {
  const int n = 200;
  std::vector<int> in(n * 4), zfill(n);
  for (auto& v : in) v = int(rng() | 1);  // never 0: a zero can only come from zero-fill
  for (auto& z : zfill) z = int(rng() % 17);
  zfill[0] = 0;
  zfill[1] = 16;
  int* din = mem.Upload(in);
  int* dz = mem.Upload(zfill);
  int* out = mem.Alloc<int>(n * 12);
  Status s = RunKernel(
      *prog, "pipelinePrimitives", {2}, {128},
      [&](Params& p) {
        p.Add(static_cast<const void*>(din)).Add(static_cast<void*>(out));
        p.Add(static_cast<const int*>(dz)).Add(n);
      },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    int a[4] = {0, 0, 0, 0};
    std::memcpy(a, &in[i * 4], size_t(16 - zfill[i]));
    for (int k = 0; k < 4; ++k) {
      ASSERT_EQ(out[i * 12 + k], a[k]) << i << " zfill " << zfill[i];
      ASSERT_EQ(out[i * 12 + 4 + k], in[(i + 1) % n * 4 + k]) << i;
    }
    ASSERT_EQ(out[i * 12 + 8], in[(i + 2) % n * 4]) << i;
    ASSERT_EQ(out[i * 12 + 9], in[(i + 2) % n * 4 + 1]) << i;
    ASSERT_EQ(out[i * 12 + 10], in[(i + 3) % n * 4 + 3]) << i;
    ASSERT_EQ(out[i * 12 + 11], 0) << i;
  }
}

TEST_P(Async, BarrierPhasesAcrossWarps) {
  const int rounds = 7, blocks = 2, nt = 192;
  std::vector<int> in(blocks * nt * rounds);
  for (auto& v : in) v = int(rng());
  int* din = mem.Upload(in);
  int* out = mem.Alloc<int>(blocks * nt);
  Status s = RunKernel(
      *prog, "barrierPhases", {blocks}, {nt},
      [&](Params& p) { p.Add(static_cast<const int*>(din)).Add(out).Add(rounds); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < nt; ++t) {
      uint32_t acc = 0;
      for (int r = 0; r < rounds; ++r)
        acc = acc * 31u + uint32_t(in[(b * nt + (t + r + 1) % nt) * rounds + r]);
      ASSERT_EQ(uint32_t(out[b * nt + t]), acc) << b << " " << t;
    }
}

INSTANTIATE_TEST_SUITE_P(Arch, Async, ::testing::Values("async_80", "async_90"));

// ---- hand-written PTX ----

std::string Kernel(const std::string& body) {
  return R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_out, .param .u64 k_in) {
  .reg .b64 %rd<16>; .reg .b32 %r<16>; .reg .pred %p<12>;
  .shared .align 16 .b8 sh[64];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [k_out];
  ld.param.u64 %rd9, [k_in];
)" + body +
         "\n}\n";
}

Status RunOne(const std::string& ptx, uint32_t* out, const uint8_t* in, TestMemory& mem,
              uint32_t threads = 1) {
  auto r = Load(std::vector<std::string>{ptx});
  if (!r.ok()) return r.status();
  return RunKernel(
      **r, "k", {1}, {threads}, [&](Params& p) { p.Add(out).Add(in); }, &mem);
}

TEST(Mbarrier, CountsTransactionsAndParity) {
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(16);
  uint8_t* in = mem.Alloc<uint8_t>(16);
  Status s = RunOne(Kernel(R"(
  mbarrier.init.shared.b64 [bar], 3;
  mbarrier.arrive.shared.b64 %rd2, [bar], 2;
  mbarrier.pending_count.b64 %r1, %rd2;
  mbarrier.test_wait.shared.b64 %p1, [bar], %rd2;
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], 64;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd3, [bar];
  mbarrier.test_wait.parity.shared.b64 %p2, [bar], 0;
  mbarrier.complete_tx.shared.b64 [bar], 64;
  mbarrier.test_wait.shared.b64 %p3, [bar], %rd2;
  mbarrier.try_wait.parity.shared.b64 %p4, [bar], 0, 1000;
  mbarrier.arrive_drop.shared.b64 %rd4, [bar];
  mbarrier.pending_count.b64 %r2, %rd4;
  mbarrier.arrive.noComplete.shared.b64 %rd5, [bar], 1;
  mbarrier.pending_count.b64 %r3, %rd5;
  mbarrier.arrive.expect_tx.shared.b64 %rd6, [bar], 16;
  mbarrier.test_wait.parity.shared.b64 %p5, [bar], 1;
  mbarrier.complete_tx.shared.b64 [bar], 16;
  mbarrier.test_wait.parity.shared.b64 %p6, [bar], 1;
  mbarrier.arrive.shared.b64 %rd7, [bar], 2;
  mbarrier.try_wait.acquire.cta.shared::cta.b64 %p7, [bar], %rd7;
  mbarrier.arrive.shared.b64 _, [bar];
  mbarrier.pending_count.b64 %r4, %rd6;
  mbarrier.inval.shared.b64 [bar];
  st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
  selp.u32 %r5, 1, 0, %p1; st.global.u32 [%rd1+16], %r5;
  selp.u32 %r5, 1, 0, %p2; st.global.u32 [%rd1+20], %r5;
  selp.u32 %r5, 1, 0, %p3; st.global.u32 [%rd1+24], %r5;
  selp.u32 %r5, 1, 0, %p4; st.global.u32 [%rd1+28], %r5;
  selp.u32 %r5, 1, 0, %p5; st.global.u32 [%rd1+32], %r5;
  selp.u32 %r5, 1, 0, %p6; st.global.u32 [%rd1+36], %r5;
  selp.u32 %r5, 1, 0, %p7; st.global.u32 [%rd1+40], %r5;
  ret;)"),
                    out, in, mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const uint32_t want[] = {1, 2, 1, 0, 0, 0, 1, 1, 0, 1, 1};
  for (size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(out[i], want[i]) << i;
}

TEST(Mbarrier, CpAsyncSourceSizeAndIgnoreSrc) {
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(16);
  std::vector<uint8_t> bytes(64);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i + 1);
  uint8_t* in = mem.Upload(bytes);
  Status s = RunOne(Kernel(R"(
  mov.u32 %r8, -1;
  st.shared.v4.u32 [sh], {%r8, %r8, %r8, %r8};
  st.shared.v4.u32 [sh+16], {%r8, %r8, %r8, %r8};
  st.shared.v4.u32 [sh+32], {%r8, %r8, %r8, %r8};
  mov.u32 %r1, 5;
  mov.u32 %r2, sh;
  setp.eq.u32 %p1, %r1, 5;
  setp.ne.u32 %p2, %r1, 5;
  cp.async.cg.shared.global [%r2], [%rd9], 16, %r1;
  cp.async.ca.shared.global [sh+16], [%rd9+16], 8, %p1;
  cp.async.ca.shared.global [sh+24], [%rd9+24], 8, %p2;
  cp.async.ca.shared.global [%r2+32], [%rd9+32], 4, 0;
  cp.async.ca.shared.global.L2::128B [%r2+36], [%rd9+36], 4;
  cp.async.commit_group;
  cp.async.wait_group 0;
  cp.async.wait_all;
  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [sh];
  st.global.v4.u32 [%rd1], {%r4, %r5, %r6, %r7};
  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [sh+16];
  st.global.v4.u32 [%rd1+16], {%r4, %r5, %r6, %r7};
  ld.shared.v2.u32 {%r4, %r5}, [sh+32];
  st.global.v2.u32 [%rd1+32], {%r4, %r5};
  ret;)"),
                    out, in, mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<uint8_t> want(40, 0);
  std::memcpy(want.data(), bytes.data(), 5);            // src-size 5 of 16
  std::memcpy(want.data() + 24, bytes.data() + 24, 8);  // ignore-src false
  std::memcpy(want.data() + 36, bytes.data() + 36, 4);
  EXPECT_EQ(std::memcmp(out, want.data(), want.size()), 0);
}

TEST(Mbarrier, WarpsSpinningOnEachOtherComplete) {
  // Warp 0 runs first and parks in try_wait for bar2, which only warp 1 completes; warp 1 then
  // polls bar with test_wait until warp 0, resumed, completes it.
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(64);
  Status s = RunOne(Kernel(R"(
  .shared .align 8 .b64 bar2;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SYNC;
  mbarrier.init.shared.b64 [bar], 32;
  mbarrier.init.shared.b64 [bar2], 32;
SYNC:
  bar.sync 0;
  setp.lt.u32 %p2, %r1, 32;
  @%p2 bra WARP0;
  mbarrier.arrive.shared.b64 %rd3, [bar2];
W1:
  mbarrier.test_wait.parity.shared.b64 %p3, [bar], 0;
  @!%p3 bra W1;
  bra DONE;
WARP0:
  mbarrier.try_wait.parity.shared.b64 %p3, [bar2], 0;
  @!%p3 bra WARP0;
  mbarrier.arrive.shared.b64 %rd3, [bar];
DONE:
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5], %r1;
  ret;)"),
                    out, nullptr, mem, 64);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], t);
}

TEST(Mbarrier, MisuseFaultsByName) {
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(16);
  uint8_t* in = mem.Alloc<uint8_t>(64);
  struct Case {
    const char* body;
    const char* message;
  } cases[] = {
      {"mbarrier.arrive.shared.b64 %rd2, [bar];", "not initialised"},
      {"mbarrier.init.shared.b64 [bar], 1; mbarrier.arrive.noComplete.shared.b64 %rd2, [bar], 1;",
       "noComplete"},
      {"mbarrier.init.shared.b64 [bar], 1; mbarrier.arrive.shared.b64 %rd2, [bar], 2;",
       "2 arrivals where 1 are pending"},
      {"mbarrier.init.shared.b64 [bar], 0;", "outside [1, 2^20-1]"},
      {"mbarrier.init.shared.b64 [bar], 2; mbarrier.arrive.shared.b64 %rd2, [bar], 0;", "count 0"},
      {"mbarrier.init.b64 [%rd1], 1;", "not shared memory"},
      {"mov.u32 %r1, sh; cp.async.ca.shared.global [%r1+4], [%rd9], 8;", "copy of 8 bytes"},
      {"cp.async.cg.shared.global [sh], [%rd9], 16, 17;", "src-size 17 above cp-size 16"},
      {"cp.async.cg.shared.global [sh], [%rd9+64], 16;", "illegal address"},
      {"mbarrier.init.shared.b64 [bar], 1; cp.async.bulk.shared::cluster.global.mbarrier::"
       "complete_tx::bytes [sh], [%rd9], 24, [bar];",
       "16-byte multiples"},
      {"mbarrier.init.shared.b64 [bar], 1; mbarrier.arrive.shared.b64 %rd2, [bar]; "
       "W: mbarrier.try_wait.parity.shared.b64 %p1, [bar], 1; @!%p1 bra W;",
       "mbarrier deadlock"},
  };
  for (const Case& c : cases) {
    Status s = RunOne(Kernel(std::string(c.body) + " ret;"), out, in, mem);
    ASSERT_FALSE(s.ok()) << c.body;
    EXPECT_NE(s.ToString().find(c.message), std::string::npos) << c.body << ": " << s.ToString();
  }
}

TEST(Mbarrier, BulkCopiesCompleteTransactions) {
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(16);
  std::vector<uint32_t> words(16);
  for (auto& w : words) w = 0x9e3779b9u * uint32_t(&w - words.data() + 1);
  uint8_t* in = reinterpret_cast<uint8_t*>(mem.Upload(words));
  Status s = RunOne(Kernel(R"(
  mbarrier.init.shared.b64 [bar], 1;
  mov.u32 %r1, sh;
  mov.u32 %r2, bar;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd9], 32, [%r2];
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r2], 48;
  mbarrier.arrive.shared::cta.b64 %rd2, [%r2];
  mbarrier.test_wait.shared.b64 %p1, [bar], %rd2;
  cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [sh+32], [sh], 16, [bar];
  mbarrier.test_wait.shared.b64 %p2, [bar], %rd2;
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [sh], 48;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
  selp.u32 %r5, 1, 0, %p1; st.global.u32 [%rd1+48], %r5;
  selp.u32 %r5, 1, 0, %p2; st.global.u32 [%rd1+52], %r5;
  ret;)"),
                    out, in, mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], words[i]) << i;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[8 + i], words[i]) << i;
  EXPECT_EQ(out[12], 0u);  // 32 of the 48 expected bytes had arrived
  EXPECT_EQ(out[13], 1u);
}

TEST(Mbarrier, UnsupportedFormsAreRefusedAtLoadByName) {
  const char* forms[] = {
      "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [sh], [%rd1], "
      "[bar];",
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [sh], "
      "[%rd1], 16, [bar], %r1;",
      "mbarrier.arrive.weird.shared.b64 %rd2, [bar];",
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [sh], 16;",
      "cp.async.cg.shared.global [sh], [%rd1], 8;",
  };
  const char* names[] = {"tensor", "multicast", ".weird", ".reduce", "cp-size"};
  for (size_t i = 0; i < std::size(forms); ++i) {
    auto r = Load(std::vector<std::string>{Kernel(std::string(forms[i]) + " ret;")});
    ASSERT_FALSE(r.ok()) << forms[i];
    EXPECT_NE(r.status().ToString().find(names[i]), std::string::npos) << r.status().ToString();
  }
}

// A launch without cluster dimensions runs each CTA as a cluster of one: %cluster_ctarank is 0,
// %cluster_nctarank 1, barrier.cluster.arrive/wait is a barrier of the CTA's threads (thread 63
// reads what thread 0 stored before it), and mapa to rank 0 is the address itself; mapa to any
// other rank faults, naming it.
TEST(Cluster, OneCtaClustersBarrierAndMapToThemselves) {
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(8);
  uint8_t* in = mem.Alloc<uint8_t>(16);
  const std::string body = R"(
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, %cluster_nctarank;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.shared.u32 [sh], 1234;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  mov.u64 %rd2, sh;
  cvta.shared.u64 %rd3, %rd2;
  mapa.u64 %rd4, %rd3, RANK;
  ld.u32 %r4, [%rd4];
  setp.eq.u32 %p2, %r1, 63;
  @%p2 st.global.v4.u32 [%rd1], {%r2, %r3, %r4, %r1};
  ret;)";
  auto with_rank = [&](const char* rank) {
    std::string b = body;
    b.replace(b.find("RANK"), 4, rank);
    return Kernel(b);
  };
  Status s = RunOne(with_rank("0"), out, in, mem, 64);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out[0], 0u);
  EXPECT_EQ(out[1], 1u);
  EXPECT_EQ(out[2], 1234u);
  EXPECT_EQ(out[3], 63u);
  s = RunOne(with_rank("1"), out, in, mem, 64);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("mapa to CTA rank 1"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace remora::emu::ptx::testing
