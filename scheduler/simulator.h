// scheduler/simulator.h - Simulate: a DispatchQueue driven in virtual time.
//
// Pure logic, deterministic for a seed: tenants submit synthetic kernels
// (constant, exponential or heavy-tailed Pareto lengths), closed-loop (each
// keeps `outstanding` items submitted) or as open Poisson arrivals; an
// executor model hands them to the queue exactly as server/executor.cc does
// (IssueNow when a tenant's first item arrives, else Ready; Next until it says
// no; Done when an item finishes; a wake-up at NextEligibleAt); a device runs
// `width` items at a time in the order they were issued. It reports each
// tenant's share of device time against the share the policy promises, Jain's
// fairness index, dispatch latency per priority class and cap violations.
//
//   SimConfig cfg;
//   cfg.tenants.push_back(SimTenant::Closed(1, ComputeShare(2), Cost::Constant(100'000)));
//   cfg.tenants.push_back(SimTenant::Closed(2, ComputeShare(1), Cost::Constant(100'000)));
//   SimResult r = Simulate(cfg);   // r.tenants[0].share ~ 2/3
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "scheduler/fair_queue.h"

namespace remora::sched {

// A kernel-length distribution.
struct Cost {
  enum class Kind : uint8_t { kConstant, kExponential, kPareto };
  Kind kind = Kind::kConstant;
  uint64_t mean_ns = 100'000;
  double alpha = 1.5;  // Pareto shape (> 1); the tail is cut at 1000 x mean

  static Cost Constant(uint64_t ns) { return {Kind::kConstant, ns, 0}; }
  static Cost Exponential(uint64_t mean) { return {Kind::kExponential, mean, 0}; }
  static Cost Pareto(uint64_t mean, double alpha) { return {Kind::kPareto, mean, alpha}; }
};

struct SimTenant {
  TenantId id = 0;
  Share share;
  Cost cost;
  uint32_t outstanding = 2;   // closed loop: items kept submitted; 0: open arrivals
  uint64_t think_ns = 0;      // closed loop: pause after a completion
  double arrivals_per_s = 0;  // open: Poisson rate
  uint64_t start_ns = 0;      // submits only inside [start_ns, stop_ns)
  uint64_t stop_ns = std::numeric_limits<uint64_t>::max();

  static SimTenant Closed(TenantId id, Share share, Cost cost, uint32_t outstanding = 2) {
    SimTenant t;
    t.id = id;
    t.share = share;
    t.cost = cost;
    t.outstanding = outstanding;
    return t;
  }
  static SimTenant Open(TenantId id, Share share, Cost cost, double per_s) {
    SimTenant t;
    t.id = id;
    t.share = share;
    t.cost = cost;
    t.outstanding = 0;
    t.arrivals_per_s = per_s;
    return t;
  }
};

struct SimConfig {
  std::vector<SimTenant> tenants;
  std::vector<std::pair<ProjectId, double>> projects;  // project shares (default 1)
  FairOptions queue;
  bool fifo = false;   // FifoQueue instead: the baseline
  uint32_t width = 1;  // items the device runs at once
  uint64_t duration_ns = 2'000'000'000;
  uint64_t warmup_ns = 100'000'000;  // shares count from here to duration_ns
  uint64_t cap_window_ns = 100'000'000;
  uint64_t seed = 1;
};

struct TenantResult {
  TenantId id = 0;
  double share = 0;     // of device time (width x measured span)
  double expected = 0;  // what the policy promises, from ExpectedShares
  uint64_t items = 0;   // completed in the measured span
  // Capped tenants: the busiest cap window, and windows over limit x window +
  // slack. For a session of a capped account, the account's (all its sessions).
  double max_window_share = 0;
  uint32_t cap_violations = 0;
};

struct ClassLatency {
  uint64_t items = 0;
  uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;  // submission to device start
  uint32_t max_lower_ahead = 0;                 // most lower-class items one item waited behind
};

struct SimResult {
  std::vector<TenantResult> tenants;  // in SimConfig order
  double jain = 0;                    // over share / expected, tenants with expected > 0
  double max_rel_error = 0;           // max |share - expected| / expected
  double max_abs_error = 0;           // max |share - expected|
  double utilization = 0;             // device busy fraction in the measured span
  uint32_t cap_violations = 0;
  ClassLatency latency[kPriorities];
};

// Runs the scenario. Device time in the measured span is split exactly among
// tenants; an item running across its edges counts its overlap.
SimResult Simulate(const SimConfig& config);

// The share of device time each tenant should get (SimConfig order): strict
// priority, then water-filling by project share, then by request (an
// account's sessions evenly within its request), each tenant or account
// capped by its limit / width and by its demand (closed loop without think
// time: unbounded; open: rate x mean / width).
std::vector<double> ExpectedShares(const SimConfig& config);

// Jain's fairness index of `x`: (sum x)^2 / (n sum x^2); 1 when all are equal.
double JainIndex(const std::vector<double>& x);

}  // namespace remora::sched
