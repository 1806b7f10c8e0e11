// bench/emu_ptx/ptx_bench.cc - interpreter thread-instructions per second vs native C++.
//
// Counters: thread_instructions_per_second (all workers), per_core (one worker per core used),
// ratio = interpreter time / native time for the same work (the slowdown).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "emu/ptx/interp.h"
#include "emu/ptx/ptx.h"

namespace remora::emu::ptx {
namespace {

class VectorMemory : public AddressSpace {
 public:
  std::vector<std::vector<float>> bufs;
  bool Lookup(uint64_t addr, uint64_t* base, uint64_t* size) const override {
    for (const auto& b : bufs) {
      uint64_t lo = reinterpret_cast<uint64_t>(b.data());
      if (addr >= lo && addr < lo + b.size() * 4) {
        *base = lo;
        *size = b.size() * 4;
        return true;
      }
    }
    return false;
  }
};

// Converged ALU loop: per iteration 4 fma + integer add + setp + bra (7 instructions).
const char* kAluPtx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry alu(.param .u64 out, .param .u32 iters) {
  .reg .b32 %r<6>; .reg .f32 %f<6>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  cvt.rn.f32.u32 %f1, %r2;
  mov.f32 %f2, 0f3F800000;
  mov.f32 %f3, 0f3F000000;
  mov.f32 %f4, 0f00000000;
  mov.u32 %r3, 0;
LOOP:
  fma.rn.f32 %f2, %f2, 0f3F7FFFFE, %f1;
  fma.rn.f32 %f3, %f3, 0f3F7FFFFE, %f2;
  fma.rn.f32 %f4, %f4, 0f3F7FFFFE, %f3;
  fma.rn.f32 %f1, %f1, 0f3F7FFFFE, %f4;
  add.s32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra LOOP;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %ntid.x;
  mad.lo.s32 %r4, %r4, %r5, %r2;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f1;
  ret;
})";

const char* kVecAddPtx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry vadd(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n) {
  .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<10>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.f32 %f3, %f1, %f2;
  add.s64 %rd7, %rd3, %rd4;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
})";

template <class T>
void Put(std::vector<std::byte>& buf, size_t off, T v) {
  std::memcpy(buf.data() + off, &v, sizeof(T));
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The least time of five runs of `native`, the C++ a benchmark's ratio is taken against: one
// cold or preempted pass must not set the ratio.
template <class F>
double BestOfFive(F&& native) {
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    native();
    best = std::min(best, Seconds(std::chrono::steady_clock::now() - t0));
  }
  return best;
}

// What the timed launches of a benchmark added up to.
struct Timed {
  uint64_t thread_instructions = 0;
  double seconds = 0;
};

// Launches kernel 0 of `program` once per benchmark iteration, adding up its time and thread
// instructions; false (the benchmark skipped with the error) if a launch failed.
bool TimeLaunches(benchmark::State& state, const Program& program, const LaunchConfig& cfg,
                  Timed* timed) {
  for (auto _ : state) {
    LaunchStats st;
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = LaunchWithStats(program, 0, cfg, &st);
    timed->seconds += Seconds(std::chrono::steady_clock::now() - t0);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return false;
    }
    timed->thread_instructions += st.thread_instructions;
  }
  return true;
}

// The counters of the rate benchmarks: thread_instructions_per_second (all workers), per_core
// and ratio (interpreter time per launch / native_s, the same work in native C++).
void SetRateCounters(benchmark::State& state, const Timed& timed, unsigned workers,
                     double native_s) {
  const double rate = double(timed.thread_instructions) / timed.seconds;
  state.counters["thread_instructions_per_second"] = rate;
  state.counters["per_core"] = rate / workers;
  state.counters["ratio"] = timed.seconds / double(state.iterations()) / native_s;
}

void BM_ConvergedAlu(benchmark::State& state) {
  unsigned workers = unsigned(state.range(0));
  auto prog = Load(std::vector<std::string>{kAluPtx});
  if (!prog.ok()) return state.SkipWithError(prog.status().ToString().c_str());
  const uint32_t blocks = 8 * workers, threads = 256, iters = 2000;
  VectorMemory mem;
  mem.bufs.emplace_back(blocks * threads);
  const auto& k = (*prog)->kernels()[0];
  std::vector<std::byte> params(k.param_bytes);
  Put(params, k.params[0].offset, mem.bufs[0].data());
  Put(params, k.params[1].offset, iters);
  LaunchConfig cfg;
  cfg.grid[0] = blocks;
  cfg.block[0] = threads;
  cfg.params = params;
  cfg.memory = &mem;
  cfg.workers = workers;
  // Native baseline: the same arithmetic per thread in a plain loop (vectorizable).
  auto native_start = std::chrono::steady_clock::now();
  std::vector<float> nat(blocks * threads);
  for (uint32_t t = 0; t < blocks * threads; ++t) {
    float f1 = float(t % threads), f2 = 1, f3 = 0.5f, f4 = 0, m = std::bit_cast<float>(0x3F7FFFFEu);
    for (uint32_t i = 0; i < iters; ++i) {
      f2 = std::fma(f2, m, f1);
      f3 = std::fma(f3, m, f2);
      f4 = std::fma(f4, m, f3);
      f1 = std::fma(f1, m, f4);
    }
    nat[t] = f1;
  }
  benchmark::DoNotOptimize(nat.data());
  double native_s = Seconds(std::chrono::steady_clock::now() - native_start);
  Timed timed;
  if (!TimeLaunches(state, **prog, cfg, &timed)) return;
  if (mem.bufs[0][5] != nat[5])
    return state.SkipWithError("interpreter result differs from native");
  SetRateCounters(state, timed, workers, native_s);
}
BENCHMARK(BM_ConvergedAlu)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_VectorAdd(benchmark::State& state) {
  unsigned workers = unsigned(state.range(0));
  auto prog = Load(std::vector<std::string>{kVecAddPtx});
  if (!prog.ok()) return state.SkipWithError(prog.status().ToString().c_str());
  const uint32_t n = 1u << 22;
  VectorMemory mem;
  mem.bufs.emplace_back(n, 1.5f);
  mem.bufs.emplace_back(n, 2.25f);
  mem.bufs.emplace_back(n, 0.0f);
  const auto& k = (*prog)->kernels()[0];
  std::vector<std::byte> params(k.param_bytes);
  for (int i = 0; i < 3; ++i) Put(params, k.params[i].offset, mem.bufs[i].data());
  Put(params, k.params[3].offset, n);
  LaunchConfig cfg;
  cfg.grid[0] = (n + 255) / 256;
  cfg.block[0] = 256;
  cfg.params = params;
  cfg.memory = &mem;
  cfg.workers = workers;
  std::vector<float> out(n);
  const double native_s = BestOfFive([&] {
    for (uint32_t i = 0; i < n; ++i) out[i] = mem.bufs[0][i] + mem.bufs[1][i];
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  });
  Timed timed;
  if (!TimeLaunches(state, **prog, cfg, &timed)) return;
  if (mem.bufs[2][n - 1] != 3.75f) return state.SkipWithError("wrong result");
  SetRateCounters(state, timed, workers, native_s);
  state.SetBytesProcessed(int64_t(state.iterations()) * n * 12);
}
BENCHMARK(BM_VectorAdd)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Warps apart (kernels/parted.cu): 2^16 threads in blocks of state.range(1), each walking the
// Collatz sequence of its seed (up to 2^20), binary-searching a shared table and walking it,
// checked against the same loops on the CPU. The block's warps part at once and run paced by
// their instruction clocks, as a GPU issues them (launch.cc). Counters as BM_ConvergedAlu's.
void BM_PartedWarps(benchmark::State& state) {
  unsigned workers = unsigned(state.range(0));
  std::ifstream f(REMORA_PARTED_PTX);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto prog = Load(std::vector<std::string>{text});
  if (!prog.ok()) return state.SkipWithError(prog.status().ToString().c_str());
  const uint32_t n = 1u << 16, table_n = 256;
  VectorMemory mem;
  mem.bufs.emplace_back(n);        // seeds
  mem.bufs.emplace_back(table_n);  // sorted table
  mem.bufs.emplace_back(n);        // out
  auto* seeds = reinterpret_cast<uint32_t*>(mem.bufs[0].data());
  auto* table = reinterpret_cast<uint32_t*>(mem.bufs[1].data());
  uint32_t seed = 7;
  for (uint32_t i = 0; i < n; ++i) seeds[i] = 1 + ((seed = seed * 1664525u + 1013904223u) >> 12);
  for (uint32_t i = 0; i < table_n; ++i) table[i] = i * 2;
  const auto& k = (*prog)->kernels()[0];
  std::vector<std::byte> params(k.param_bytes);
  for (int i = 0; i < 3; ++i) Put(params, k.params[i].offset, mem.bufs[i].data());
  Put(params, k.params[3].offset, n);
  LaunchConfig cfg;
  const uint32_t block = uint32_t(state.range(1));
  cfg.grid[0] = n / block;
  cfg.block[0] = block;
  cfg.params = params;
  cfg.memory = &mem;
  cfg.workers = workers;
  std::vector<uint32_t> want(n);
  const double native_s = BestOfFive([&] {
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t x = seeds[i];
      uint32_t steps = 0;
      for (; x > 1; ++steps) x = (x & 1) ? 3 * x + 1 : x >> 1;
      uint32_t lo = 0, hi = table_n;
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (table[mid] < steps)
          lo = mid + 1;
        else
          hi = mid;
      }
      uint32_t acc = lo;
      for (uint32_t k = 0; k < (steps & 63); ++k) acc += table[(acc + k) % table_n];
      want[i] = steps << 16 | (acc & 0xffff);
    }
    benchmark::DoNotOptimize(want.data());
  });
  Timed timed;
  if (!TimeLaunches(state, **prog, cfg, &timed)) return;
  if (std::memcmp(mem.bufs[2].data(), want.data(), n * 4) != 0)
    return state.SkipWithError("interpreter result differs from native");
  SetRateCounters(state, timed, workers, native_s);
}
BENCHMARK(BM_PartedWarps)
    ->Args({1, 256})
    ->Args({2, 256})
    ->Args({1, 1024})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The prefix-sum sample's shape (kernels/scan.cu): one scan_shared launch over 2^20 elements in
// arrays of state.range(0), 256 threads of 4 elements per block, checked against a CPU scan.
// Counters: elements_per_second, ratio = interpreter time / native exclusive scan, and
// sample_seconds = the 1,500 scans of 6.8M elements such a sample runs, at this rate.
void BM_Scan(benchmark::State& state) {
  unsigned workers = unsigned(state.range(1));
  std::ifstream f(REMORA_SCAN_PTX);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto prog = Load(std::vector<std::string>{text});
  if (!prog.ok()) return state.SkipWithError(prog.status().ToString().c_str());
  const uint32_t n = 1u << 20, size = uint32_t(state.range(0));
  VectorMemory mem;
  mem.bufs.emplace_back(n);
  mem.bufs.emplace_back(n);
  std::vector<uint32_t> in(n);
  uint32_t seed = 12345;
  for (auto& v : in) v = (seed = seed * 1664525u + 1013904223u) >> 24;
  std::memcpy(mem.bufs[1].data(), in.data(), n * 4);
  const auto& k = (*prog)->kernels()[0];
  std::vector<std::byte> params(k.param_bytes);
  Put(params, k.params[0].offset, mem.bufs[0].data());
  Put(params, k.params[1].offset, mem.bufs[1].data());
  Put(params, k.params[2].offset, size);
  LaunchConfig cfg;
  cfg.grid[0] = n / 4 / 256;
  cfg.block[0] = 256;
  cfg.params = params;
  cfg.memory = &mem;
  cfg.workers = workers;
  std::vector<uint32_t> want(n);
  const double native_s = BestOfFive([&] {
    for (uint32_t a = 0; a < n; a += size) {
      uint32_t acc = 0;
      for (uint32_t i = a; i < a + size; ++i) {
        want[i] = acc;
        acc += in[i];
      }
    }
    benchmark::DoNotOptimize(want.data());
  });
  double emu_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    Status s = Launch(**prog, 0, cfg);
    emu_s += Seconds(std::chrono::steady_clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  if (std::memcmp(mem.bufs[0].data(), want.data(), n * 4) != 0)
    return state.SkipWithError("interpreter result differs from the CPU scan");
  double per_iter = emu_s / double(state.iterations());
  state.counters["elements_per_second"] = n / per_iter;
  state.counters["ratio"] = per_iter / native_s;
  state.counters["sample_seconds"] = 1500.0 * (13 * 1048576 / 2) / (n / per_iter);
}
BENCHMARK(BM_Scan)
    ->Args({4, 2})
    ->Args({16, 2})
    ->Args({1024, 1})
    ->Args({1024, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The prefix-sum sample's whole run over its 6.8M elements (27 MB arrays, past the host's
// caches as the sample's are; over 2^20 elements the run was 20% faster per element): one
// scan of every array length it tries (short arrays of 4 to 1,024 elements, one scan_shared
// launch each; large ones of 2,048 to 262,144, a scan_shared launch over arrays of 1,024, the
// block sums' scan and a uniform_add), each checked against a CPU scan. Counter
// sample_seconds = the sample's 101 scans of each length at this rate, on DeviceCores()
// workers.
void BM_ScanSample(benchmark::State& state) {
  std::ifstream f(REMORA_SCAN_PTX);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto prog = Load(std::vector<std::string>{text});
  if (!prog.ok()) return state.SkipWithError(prog.status().ToString().c_str());
  const Program& P = **prog;
  auto kernel = [&](const char* name) {
    for (size_t i = 0; i < P.kernels().size(); ++i)
      if (P.kernels()[i].name == name) return i;
    return size_t(0);
  };
  const size_t scan = kernel("scan_shared"), add = kernel("uniform_add");
  const uint32_t n = 13u * 1048576 / 2, block_elems = 1024;
  VectorMemory mem;
  mem.bufs.emplace_back(n);                // 0: output
  mem.bufs.emplace_back(n);                // 1: input
  mem.bufs.emplace_back(n / block_elems);  // 2: the block sums' exclusive scan
  auto* out = reinterpret_cast<uint32_t*>(mem.bufs[0].data());
  auto* in = reinterpret_cast<uint32_t*>(mem.bufs[1].data());
  auto* sums = reinterpret_cast<uint32_t*>(mem.bufs[2].data());
  uint32_t seed = 99;
  for (uint32_t i = 0; i < n; ++i) in[i] = (seed = seed * 1664525u + 1013904223u) >> 24;
  auto launch = [&](size_t k, uint32_t blocks, std::vector<std::pair<void*, uint32_t>> args) {
    const KernelInfo& info = P.kernels()[k];
    std::vector<std::byte> params(info.param_bytes);
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].first)
        Put(params, info.params[i].offset, args[i].first);
      else
        Put(params, info.params[i].offset, args[i].second);
    }
    LaunchConfig cfg;
    cfg.grid[0] = blocks;
    cfg.block[0] = 256;
    cfg.params = params;
    cfg.memory = &mem;
    return Launch(P, k, cfg);
  };
  // A CPU scan of arrays of `len` elements of `in`, compared with `out`.
  auto right = [&](uint32_t len) {
    for (uint32_t a = 0; a < n; a += len) {
      uint32_t acc = 0;
      for (uint32_t i = a; i < a + len; ++i) {
        if (out[i] != acc) return false;
        acc += in[i];
      }
    }
    return true;
  };
  double emu_s = 0;
  for (auto _ : state) {
    for (uint32_t len = 4; len <= 262144; len <<= 1) {
      auto t0 = std::chrono::steady_clock::now();
      Status s =
          launch(scan, n / block_elems, {{out, 0}, {in, 0}, {nullptr, std::min(len, block_elems)}});
      if (s.ok() && len > block_elems) {
        // Each block's total (its last exclusive prefix and last element), scanned per array
        // of len / 1,024 blocks on the host (6,656 values: the sample's one-block launch
        // for them is a rounding error here), then added to every element of its block.
        uint32_t acc = 0;
        for (uint32_t b = 0; b < n / block_elems; ++b) {
          if (b % (len / block_elems) == 0) acc = 0;
          sums[b] = acc;
          acc += out[(b + 1) * block_elems - 1] + in[(b + 1) * block_elems - 1];
        }
        s = launch(add, n / block_elems, {{out, 0}, {sums, 0}});
      }
      emu_s += Seconds(std::chrono::steady_clock::now() - t0);
      if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
      if (!right(len)) return state.SkipWithError("interpreter result differs from the CPU scan");
    }
  }
  const double per_iter = emu_s / double(state.iterations());
  state.counters["sample_seconds"] = per_iter * 101.0 * (13.0 * 1048576 / 2) / n;
}
BENCHMARK(BM_ScanSample)->Unit(benchmark::kMillisecond)->UseRealTime();

const char* kEmptyPtx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry empty() {
  ret;
})";

// Launch overhead: an empty kernel, grid state.range(0) x 128 threads, default workers.
// Counters: ns_per_launch, ns_per_block, and ratio = launch time / the time to create and join
// one std::thread (measured here), the cost a launch pays if it spawns its workers.
void BM_EmptyLaunch(benchmark::State& state) {
  auto prog = Load(std::vector<std::string>{kEmptyPtx});
  if (!prog.ok()) return state.SkipWithError(prog.status().ToString().c_str());
  const uint32_t blocks = uint32_t(state.range(0));
  LaunchConfig cfg;
  cfg.grid[0] = blocks;
  cfg.block[0] = 128;
  auto t0 = std::chrono::steady_clock::now();
  const int spawns = 200;
  for (int i = 0; i < spawns; ++i) std::thread([] {}).join();
  double spawn_s = Seconds(std::chrono::steady_clock::now() - t0) / spawns;
  double emu_s = 0;
  for (auto _ : state) {
    auto t1 = std::chrono::steady_clock::now();
    Status s = Launch(**prog, 0, cfg);
    emu_s += Seconds(std::chrono::steady_clock::now() - t1);
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  double per = emu_s / double(state.iterations());
  state.counters["ns_per_launch"] = per * 1e9;
  state.counters["ns_per_block"] = per * 1e9 / blocks;
  state.counters["launches_per_second"] = 1.0 / per;
  state.counters["ratio"] = per / spawn_s;
}
BENCHMARK(BM_EmptyLaunch)->Arg(1)->Arg(1024)->UseRealTime();

}  // namespace
}  // namespace remora::emu::ptx

BENCHMARK_MAIN();
