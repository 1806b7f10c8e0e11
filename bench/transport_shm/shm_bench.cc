// bench/transport_shm/shm_bench.cc - the shm transport against floors measured in the same run.
//
//   BM_PingPongFloor  two threads bounce a counter on one cache line: the cheapest possible
//                     cross-core round trip on this machine.
//   BM_ShmRoundTrip   client Send (64 B body) + Receive of the echo from a server thread,
//                     over a ShmChannel; ratio = mean round trip / ping-pong floor, both
//                     measured here, with the two threads pinned to different cores.
//   BM_ShmSendReceiveOneThread  Send + Receive on one thread: the software cost per frame,
//                     as a ratio to copying header+body into a buffer and back out.
//   BM_ArenaCopy      64 MiB memcpy into the shared arena; ratio = its time / a plain
//                     memcpy into private memory, interleaved iteration by iteration.
//   BM_StagingCopy/<dir>  64 MiB in 4 MiB pieces into (0) or out of (1) the arena with the
//                     stub's staging copy (client_stub::StreamCopy, non-temporal stores);
//                     ratio = its bytes/s / memcpy's over the same pieces, interleaved.
// Per-iteration times come from rdtsc (calibrated against steady_clock) for p50/p99.
// On a loaded machine the two threads are rarely on-CPU together and both numbers measure
// the scheduler; run it alone or under `chrt -f 10` for the hardware floor.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bench/common/timing.h"
#include "client_stub/stream_copy.h"
#include "transport/shm/shm_channel.h"

namespace remora::transport {
namespace {

using bench::Clock;
using bench::PingPong;
using bench::PinTo;
using bench::SpinUntil;
using bench::Stats;
using bench::Summarize;
using bench::TickClock;

void BM_PingPongFloor(benchmark::State& state) {
  constexpr size_t kBlock = 1000;
  std::vector<uint64_t> ticks;
  TickClock clock;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    PingPong(kBlock, ticks);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  const Stats s = Summarize(ticks, clock.NsPerTick());
  state.counters["rt_ns"] = s.mean_ns;
  state.counters["p50_ns"] = s.p50_ns;
  state.counters["p99_ns"] = s.p99_ns;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBlock));
}
BENCHMARK(BM_PingPongFloor)->UseManualTime()->MinTime(1.0);

std::string BenchSocketPath() {
  return "/tmp/remora-shm-bench-" + std::to_string(::getpid()) + ".sock";
}

// A listener and both ends of one channel to it, connected from this thread.
struct Connected {
  std::unique_ptr<ShmListener> listener;
  std::unique_ptr<Channel> server, client;
};
// Connects a client with an arena of `arena_bytes`; null (and *err) on failure.
std::unique_ptr<Connected> Connect(size_t arena_bytes, std::string* err) {
  ShmOptions opts;
  opts.arena_bytes = arena_bytes;
  const std::string path = BenchSocketPath();
  auto listener = ShmListener::Listen(path, opts);
  if (!listener.ok()) {
    *err = listener.status().ToString();
    return nullptr;
  }
  Result<std::unique_ptr<Channel>> server = Status(err::kUnknown, "not accepted");
  std::thread acceptor([&] {
    PeerInfo who;
    server = (*listener)->Accept(who, Deadline::In(std::chrono::seconds(10)));
  });
  auto client = ShmConnect(path, Deadline::In(std::chrono::seconds(10)));
  acceptor.join();
  if (!client.ok() || !server.ok()) {
    *err = "shm connect failed";
    return nullptr;
  }
  auto c = std::make_unique<Connected>();
  c->listener = std::move(listener).value();
  c->server = std::move(server).value();
  c->client = std::move(client).value();
  return c;
}

// Blocks of 1000 shm round trips alternate with blocks of 1000 ping-pongs, so the floor
// and the transport see the same conditions on this shared 2-core machine.
void BM_ShmRoundTrip(benchmark::State& state) {
  constexpr size_t kBlock = 1000;
  const size_t body_bytes = static_cast<size_t>(state.range(0));
  ShmOptions opts;
  opts.arena_bytes = 64 << 20;
  const std::string path = BenchSocketPath();
  auto listener = ShmListener::Listen(path, opts);
  if (!listener.ok()) return state.SkipWithError(listener.status().ToString().c_str());
  PinTo(1);  // the server thread inherits CPU 1 at creation
  std::thread server([&] {
    PeerInfo who;
    auto ch = (*listener)->Accept(who, Deadline::In(std::chrono::seconds(10)));
    if (!ch.ok()) return;
    Frame f;
    while ((*ch)->Receive(f, Deadline::Never()).ok()) {
      if (!(*ch)->Send(f.header, f.body).ok()) break;
    }
  });
  PinTo(0);
  auto client = ShmConnect(path, Deadline::In(std::chrono::seconds(10)));
  if (!client.ok()) {
    (*listener)->Shutdown();
    server.join();
    return state.SkipWithError(client.status().ToString().c_str());
  }
  Channel& ch = **client;
  const std::vector<std::byte> body(body_bytes, std::byte{0x42});
  Frame reply;
  reply.body.reserve(body_bytes);
  for (int i = 0; i < 10'000; ++i) {  // warm the rings and the caches
    (void)ch.Send({.call = 1, .seq = 0}, body);
    (void)ch.Receive(reply, Deadline::Never());
  }

  std::vector<uint64_t> floor_ticks, rt_ticks;
  TickClock clock;
  uint64_t seq = 0;
  for (auto _ : state) {
    PingPong(kBlock, floor_ticks);
    const auto start = Clock::now();
    for (size_t k = 0; k < kBlock; ++k) {
      const uint64_t t0 = __rdtsc();
      Status s = ch.Send({.call = 1, .seq = ++seq}, body);
      if (s.ok()) s = ch.Receive(reply, Deadline::Never());
      if (!s.ok() || reply.header.seq != seq) [[unlikely]] {
        state.SkipWithError(s.ok() ? "reply out of order" : s.ToString().c_str());
        break;
      }
      rt_ticks.push_back(__rdtsc() - t0);
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const double ns_per_tick = clock.NsPerTick();
  ch.Close();
  server.join();
  const Stats floor = Summarize(floor_ticks, ns_per_tick);
  const Stats rt = Summarize(rt_ticks, ns_per_tick);
  state.counters["floor_ns"] = floor.mean_ns;
  state.counters["floor_p50_ns"] = floor.p50_ns;
  state.counters["rt_ns"] = rt.mean_ns;
  state.counters["p50_ns"] = rt.p50_ns;
  state.counters["p99_ns"] = rt.p99_ns;
  state.counters["ratio"] = floor.mean_ns > 0 ? rt.mean_ns / floor.mean_ns : 0;
  state.counters["ratio_p50"] = floor.p50_ns > 0 ? rt.p50_ns / floor.p50_ns : 0;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBlock));
}
BENCHMARK(BM_ShmRoundTrip)->Arg(64)->Arg(1024)->UseManualTime()->MinTime(2.0);

// Software cost alone: one thread sends a frame and receives it on the other end of the
// same channel (no second core involved, so scheduling noise stays out). Baseline: the two
// copies any transport makes, header+body into a buffer and back out.
void BM_ShmSendReceiveOneThread(benchmark::State& state) {
  const size_t body_bytes = static_cast<size_t>(state.range(0));
  std::string err;
  std::unique_ptr<Connected> c = Connect(4 << 20, &err);
  if (!c) return state.SkipWithError(err.c_str());
  Channel& tx = *c->client;
  Channel& rx = *c->server;
  const std::vector<std::byte> body(body_bytes, std::byte{7});
  Frame f;
  f.body.reserve(body_bytes);

  constexpr int kBase = 1'000'000;
  std::vector<std::byte> staging(sizeof(FrameHeader) + body_bytes), out(body_bytes);
  FrameHeader h{.call = 1}, h_out;
  const auto b0 = Clock::now();
  for (int i = 0; i < kBase; ++i) {
    h.seq = static_cast<uint64_t>(i);
    std::memcpy(staging.data(), &h, sizeof h);
    std::memcpy(staging.data() + sizeof h, body.data(), body_bytes);
    benchmark::ClobberMemory();
    std::memcpy(&h_out, staging.data(), sizeof h_out);
    std::memcpy(out.data(), staging.data() + sizeof h, body_bytes);
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(h_out);
  }
  const double base_ns =
      std::chrono::duration<double, std::nano>(Clock::now() - b0).count() / kBase;

  uint64_t seq = 0;
  const auto t0 = Clock::now();
  for (auto _ : state) {
    Status s = tx.Send({.call = 1, .seq = ++seq}, body);
    if (s.ok()) s = rx.Receive(f, Deadline::Never());
    if (!s.ok() || f.header.seq != seq) [[unlikely]] {
      state.SkipWithError("send/receive failed");
      break;
    }
  }
  const double per_iter = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                          static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  state.counters["copy_baseline_ns"] = base_ns;
  state.counters["ratio"] = base_ns > 0 ? per_iter / base_ns : 0;
}
BENCHMARK(BM_ShmSendReceiveOneThread)->Arg(64)->Arg(4096);

void BM_ArenaCopy(benchmark::State& state) {
  constexpr size_t kBytes = 64 << 20;
  std::string err;
  std::unique_ptr<Connected> c = Connect(128 << 20, &err);
  if (!c) return state.SkipWithError(err.c_str());
  Arena* arena = c->client->arena();

  std::vector<std::byte> src(kBytes), plain(kBytes);
  for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<std::byte>(i * 131);
  std::memset(plain.data(), 1, kBytes);   // fault in the private destination
  std::memset(arena->base(), 1, kBytes);  // and the shared one
  double arena_s = 0, plain_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    std::memcpy(plain.data(), src.data(), kBytes);
    benchmark::DoNotOptimize(plain.data());
    auto t1 = Clock::now();
    std::memcpy(arena->base(), src.data(), kBytes);
    benchmark::DoNotOptimize(arena->base());
    benchmark::ClobberMemory();
    auto t2 = Clock::now();
    plain_s += std::chrono::duration<double>(t1 - t0).count();
    const double a = std::chrono::duration<double>(t2 - t1).count();
    arena_s += a;
    state.SetIterationTime(a);
  }
  if (std::memcmp(arena->base() + kBytes / 2, src.data() + kBytes / 2, 4096) != 0)
    state.SkipWithError("arena copy mismatch");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
  state.counters["memcpy_GBps"] =
      plain_s > 0 ? static_cast<double>(state.iterations()) * kBytes / plain_s / 1e9 : 0;
  state.counters["ratio"] = plain_s > 0 ? arena_s / plain_s : 0;
}
BENCHMARK(BM_ArenaCopy)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

void BM_StagingCopy(benchmark::State& state) {
  constexpr size_t kBytes = 64 << 20, kPiece = 4 << 20;  // the server's staging slots
  const bool into = state.range(0) == 0;
  state.SetLabel(into ? "pageable -> arena (H2D)" : "arena -> pageable (D2H)");
  std::string err;
  std::unique_ptr<Connected> c = Connect(128 << 20, &err);
  if (!c) return state.SkipWithError(err.c_str());
  std::byte* arena = c->client->arena()->base();
  std::vector<std::byte> user(kBytes);
  for (size_t i = 0; i < kBytes; ++i) user[i] = static_cast<std::byte>(i * 131);
  std::memset(arena, 1, kBytes);
  // 64 MiB through the arena's first 16 pieces, as a pageable copy uses the slots.
  auto pass = [&](void (*copy)(void*, const void*, size_t)) {
    const auto t0 = Clock::now();
    for (size_t o = 0; o < kBytes; o += kPiece) {
      if (into)
        copy(arena + o, user.data() + o, kPiece);
      else
        copy(user.data() + o, arena + o, kPiece);
    }
    benchmark::ClobberMemory();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto plain = [](void* d, const void* s, size_t n) { std::memcpy(d, s, n); };
  double plain_s = 0, stream_s = 0;
  for (auto _ : state) {
    plain_s += pass(plain);
    const double t = pass(client_stub::StreamCopy);
    stream_s += t;
    state.SetIterationTime(t);
  }
  if (std::memcmp(arena + kBytes / 2, user.data() + kBytes / 2, 4096) != 0)
    state.SkipWithError("staging copy mismatch");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
  state.counters["memcpy_GBps"] =
      plain_s > 0 ? static_cast<double>(state.iterations()) * kBytes / plain_s / 1e9 : 0;
  state.counters["ratio"] = stream_s > 0 ? plain_s / stream_s : 0;
}
BENCHMARK(BM_StagingCopy)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::transport

BENCHMARK_MAIN();
