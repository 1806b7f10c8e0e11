// scheduler/sim_main.cc - remora-sched-sim: run a scheduling scenario, print a table.
//
//   remora-sched-sim --scenario=weighted --tenants=2000 --seconds=20
//   remora-sched-sim --scenario=priority --fifo      # the baseline, for contrast
//
// Scenarios, every tenant backlogged unless said otherwise:
//   weighted  requests 1, 2 or 4; constant kernels of 50, 100 or 200 us
//   mixed     requests 1, 2 or 3; 20 us constant, 300 us exponential, Pareto 1.5
//   pareto    equal requests; Pareto(1.5) kernels, mean 100 us
//   projects  two projects 50/50: tenant 1 alone in one, the rest in the other
//   limits    every fourth tenant capped at min(0.2, 0.5 / n)
//   priority  one high tenant, open loop (1000/s, 50 us), among normal and low
//             tenants with 300 us exponential kernels
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "scheduler/simulator.h"

namespace {

using namespace remora::sched;

// Items a closed-loop tenant keeps submitted: enough to stay backlogged behind
// the in-flight bounds, as an application queueing kernels asynchronously is.
constexpr uint32_t kDeep = 64;

struct Flags {
  std::string scenario = "weighted";
  int tenants = 100;
  double seconds = 5;
  bool fifo = false;
  uint32_t width = 1;
  uint64_t seed = 1;
  int rows = 12;
};

bool Parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    auto val = [&](const char* name) -> const char* {
      size_t n = std::strlen(name);
      return std::strncmp(a, name, n) == 0 && a[n] == '=' ? a + n + 1 : nullptr;
    };
    if (const char* v = val("--scenario"))
      f->scenario = v;
    else if (const char* v = val("--tenants"))
      f->tenants = std::atoi(v);
    else if (const char* v = val("--seconds"))
      f->seconds = std::atof(v);
    else if (const char* v = val("--width"))
      f->width = static_cast<uint32_t>(std::atoi(v));
    else if (const char* v = val("--seed"))
      f->seed = std::strtoull(v, nullptr, 10);
    else if (const char* v = val("--rows"))
      f->rows = std::atoi(v);
    else if (std::strcmp(a, "--fifo") == 0)
      f->fifo = true;
    else
      return false;
  }
  return f->tenants > 0 && f->seconds > 0 && f->width > 0;
}

SimConfig Build(const Flags& f, bool* ok) {
  SimConfig cfg;
  cfg.fifo = f.fifo;
  cfg.width = f.width;
  cfg.seed = f.seed;
  cfg.duration_ns = static_cast<uint64_t>(f.seconds * 1e9);
  cfg.warmup_ns = cfg.duration_ns / 20;
  *ok = true;
  const int n = f.tenants;
  if (f.scenario == "weighted") {
    const Cost costs[] = {Cost::Constant(50'000), Cost::Constant(100'000), Cost::Constant(200'000)};
    for (int i = 0; i < n; ++i)
      cfg.tenants.push_back(
          SimTenant::Closed(i + 1, ComputeShare(1 << (i % 3)), costs[(i / 3) % 3], kDeep));
  } else if (f.scenario == "mixed") {
    const Cost costs[] = {Cost::Constant(20'000), Cost::Exponential(300'000),
                          Cost::Pareto(100'000, 1.5)};
    for (int i = 0; i < n; ++i)
      cfg.tenants.push_back(
          SimTenant::Closed(i + 1, ComputeShare(1 + i % 3), costs[(i / 3) % 3], kDeep));
  } else if (f.scenario == "pareto") {
    for (int i = 0; i < n; ++i)
      cfg.tenants.push_back(
          SimTenant::Closed(i + 1, ComputeShare(1), Cost::Pareto(100'000, 1.5), kDeep));
  } else if (f.scenario == "projects") {
    cfg.projects = {{1, 1.0}, {2, 1.0}};
    cfg.tenants.push_back(SimTenant::Closed(1, ComputeShare(1, 0, Priority::kNormal, 1),
                                            Cost::Constant(100'000), kDeep));
    for (int i = 1; i < n; ++i)
      cfg.tenants.push_back(SimTenant::Closed(i + 1, ComputeShare(1, 0, Priority::kNormal, 2),
                                              Cost::Constant(100'000), kDeep));
  } else if (f.scenario == "limits") {
    for (int i = 0; i < n; ++i) {
      const double limit = i % 4 == 0 ? std::min(0.2, 0.5 / n) : 0;
      cfg.tenants.push_back(
          SimTenant::Closed(i + 1, ComputeShare(1, limit), Cost::Exponential(100'000), kDeep));
    }
  } else if (f.scenario == "accounts") {
    // Tenants of three processes each (one mostly idle), requests 1, 2, 4; every
    // fifth tenant capped at what would otherwise be half its share.
    const int accounts = (n + 2) / 3;
    for (int i = 0; i < n; ++i) {
      const int a = i / 3;
      const double limit = a % 5 == 0 ? 0.5 / accounts : 0;
      const Share share = ComputeShare(1 << (a % 3), limit, Priority::kNormal, kNoProject, a + 1);
      cfg.tenants.push_back(
          i % 3 == 2 ? SimTenant::Open(i + 1, share, Cost::Constant(100'000), 2.0)
                     : SimTenant::Closed(i + 1, share, Cost::Exponential(100'000), kDeep));
    }
  } else if (f.scenario == "priority") {
    cfg.tenants.push_back(
        SimTenant::Open(1, ComputeShare(1, 0, Priority::kHigh), Cost::Constant(50'000), 1000));
    for (int i = 1; i < n; ++i)
      cfg.tenants.push_back(
          SimTenant::Closed(i + 1, ComputeShare(1, 0, i % 2 ? Priority::kLow : Priority::kNormal),
                            Cost::Exponential(300'000), kDeep));
  } else {
    *ok = false;
  }
  return cfg;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!Parse(argc, argv, &f)) {
    std::fprintf(
        stderr,
        "usage: remora-sched-sim "
        "[--scenario=weighted|mixed|pareto|projects|limits|accounts|priority]\n"
        "         [--tenants=N] [--seconds=S] [--width=K] [--seed=N] [--rows=N] [--fifo]\n");
    return 2;
  }
  bool ok = false;
  SimConfig cfg = Build(f, &ok);
  if (!ok) {
    std::fprintf(stderr, "unknown scenario %s\n", f.scenario.c_str());
    return 2;
  }
  SimResult r = Simulate(cfg);
  std::printf("scenario %s, %zu tenants, %.1f s, width %u, %s\n", f.scenario.c_str(),
              cfg.tenants.size(), f.seconds, cfg.width, cfg.fifo ? "FIFO" : "fair queue");
  std::printf("jain %.5f  max share error %.2f%% (abs %.3g)  utilization %.3f  cap violations %u\n",
              r.jain, 100 * r.max_rel_error, r.max_abs_error, r.utilization, r.cap_violations);
  std::printf("%-8s %10s %12s %12s %12s %12s\n", "class", "items", "p50 us", "p99 us", "max us",
              "lower ahead");
  for (int c = 0; c < kPriorities; ++c) {
    const ClassLatency& l = r.latency[c];
    if (l.items == 0) continue;
    std::printf("%-8s %10llu %12.1f %12.1f %12.1f %12u\n", PriorityName(static_cast<Priority>(c)),
                static_cast<unsigned long long>(l.items), l.p50_ns / 1e3, l.p99_ns / 1e3,
                l.max_ns / 1e3, l.max_lower_ahead);
  }
  std::printf("%-8s %8s %8s %8s %10s %10s %10s %8s\n", "tenant", "request", "limit", "class",
              "share", "expected", "win max", "items");
  for (size_t i = 0; i < r.tenants.size() && static_cast<int>(i) < f.rows; ++i) {
    const TenantResult& t = r.tenants[i];
    const Share& s = cfg.tenants[i].share;
    std::printf("%-8llu %8.2f %8.3f %8s %10.5f %10.5f %10.5f %8llu\n",
                static_cast<unsigned long long>(t.id), s.request, s.limit, PriorityName(s.priority),
                t.share, t.expected, t.max_window_share, static_cast<unsigned long long>(t.items));
  }
  return 0;
}
