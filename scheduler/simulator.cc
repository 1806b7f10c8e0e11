// scheduler/simulator.cc - a discrete-event model of executor, queue and device.
#include "scheduler/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <unordered_map>

#include "scheduler/shares.h"

namespace remora::sched {

namespace {

// The most of the device `t` could use, in device widths: closed loop without
// think time, unbounded; open, rate x mean / width.
double Demand(const SimTenant& t, uint32_t width) {
  const double mean_s = static_cast<double>(t.cost.mean_ns) * 1e-9;
  if (t.outstanding == 0) return t.arrivals_per_s * mean_s / width;
  if (t.think_ns > 0)
    return t.outstanding * mean_s / (mean_s + static_cast<double>(t.think_ns) * 1e-9) / width;
  return 1;
}

struct Item {
  uint32_t tenant = 0;
  uint64_t cost = 0;
  uint64_t arrival = 0;
  uint64_t lower_starts = 0;   // lower-class starts before this item arrived
  uint32_t lower_running = 0;  // lower-class items running when it arrived
};

enum class Ev : uint8_t { kArrival, kFinish, kWake };
struct Event {
  uint64_t time;
  uint64_t seq;
  Ev kind;
  Item item;
  bool operator>(const Event& o) const { return time > o.time || (time == o.time && seq > o.seq); }
};

class Sim {
 public:
  explicit Sim(const SimConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {
    if (cfg.fifo) {
      q_ = std::make_unique<FifoQueue>();
    } else {
      q_ = std::make_unique<FairQueue>(cfg.queue);
    }
    for (const auto& [p, share] : cfg.projects) q_->ConfigureProject(p, share);
    const size_t n = cfg.tenants.size();
    pending_.resize(n);
    used_.assign(n, 0);
    items_.assign(n, 0);
    max_cost_.assign(n, 0);
    windows_.resize(n);
    const uint64_t span = cfg.duration_ns > cfg.warmup_ns ? cfg.duration_ns - cfg.warmup_ns : 0;
    const size_t bins = cfg.cap_window_ns ? span / cfg.cap_window_ns : 0;
    for (size_t i = 0; i < n; ++i) {
      const SimTenant& t = cfg.tenants[i];
      index_[t.id] = static_cast<uint32_t>(i);
      q_->Configure(t.id, t.share);
      if (t.share.limit > 0) windows_[i].assign(bins, 0);
      if (t.outstanding > 0) {
        for (uint32_t k = 0; k < t.outstanding; ++k) Push(t.start_ns, Ev::kArrival, Arrive(i));
      } else if (t.arrivals_per_s > 0) {
        Push(t.start_ns + Gap(t), Ev::kArrival, Arrive(i));
      }
    }
  }

  SimResult Run() {
    while (!events_.empty()) {
      Event e = events_.top();
      if (e.time > cfg_.duration_ns) break;
      events_.pop();
      const uint64_t now = e.time;
      switch (e.kind) {
        case Ev::kArrival:
          OnArrival(e.item, now);
          break;
        case Ev::kFinish:
          OnFinish(e.item, now);
          break;
        case Ev::kWake:
          break;
      }
      Pump(now);
    }
    return Report();
  }

 private:
  Item Arrive(size_t i) {
    Item it;
    it.tenant = static_cast<uint32_t>(i);
    return it;
  }
  void Push(uint64_t t, Ev kind, Item item) { events_.push(Event{t, ++seq_, kind, item}); }

  uint64_t Gap(const SimTenant& t) {
    std::exponential_distribution<double> d(t.arrivals_per_s);
    return static_cast<uint64_t>(d(rng_) * 1e9) + 1;
  }

  uint64_t Draw(const Cost& c) {
    const double mean = static_cast<double>(c.mean_ns);
    double x = mean;
    std::uniform_real_distribution<double> u(std::numeric_limits<double>::min(), 1.0);
    switch (c.kind) {
      case Cost::Kind::kConstant:
        break;
      case Cost::Kind::kExponential:
        x = -std::log(u(rng_)) * mean;
        break;
      case Cost::Kind::kPareto: {
        const double a = std::max(c.alpha, 1.01);
        x = std::min(mean * (a - 1) / a / std::pow(u(rng_), 1 / a), 1000 * mean);
        break;
      }
    }
    return std::max<uint64_t>(1, static_cast<uint64_t>(x));
  }

  static int ClassOf(const SimTenant& t) { return static_cast<int>(t.share.priority); }

  void OnArrival(Item item, uint64_t now) {
    const SimTenant& t = cfg_.tenants[item.tenant];
    if (now >= t.stop_ns) return;
    if (t.outstanding == 0) Push(now + Gap(t), Ev::kArrival, Arrive(item.tenant));
    item.cost = Draw(t.cost);
    item.arrival = now;
    const int c = ClassOf(t);
    for (int k = c + 1; k < kPriorities; ++k) {
      item.lower_starts += starts_[k];
      item.lower_running += running_class_[k];
    }
    std::deque<Item>& pend = pending_[item.tenant];
    if (pend.empty() && q_->IssueNow(t.id, now)) {
      device_.push_back(item);
      return;
    }
    const bool was_empty = pend.empty();
    pend.push_back(item);
    if (was_empty) q_->Ready(t.id, now);
  }

  void OnFinish(const Item& item, uint64_t now) {
    const SimTenant& t = cfg_.tenants[item.tenant];
    --running_;
    --running_class_[ClassOf(t)];
    q_->Done(t.id, item.cost, now);
    if (now >= cfg_.warmup_ns) ++items_[item.tenant];
    if (t.outstanding > 0) Push(now + t.think_ns, Ev::kArrival, Arrive(item.tenant));
  }

  void Pump(uint64_t now) {
    while (std::optional<TenantId> id = q_->Next(now)) {
      const uint32_t i = index_.at(*id);
      std::deque<Item>& pend = pending_[i];
      if (pend.empty()) continue;
      device_.push_back(pend.front());
      pend.pop_front();
      if (!pend.empty()) q_->Ready(*id, now);
    }
    while (running_ < cfg_.width && !device_.empty()) {
      Start(device_.front(), now);
      device_.pop_front();
    }
    if (std::optional<uint64_t> at = q_->NextEligibleAt(now); at && *at > now) {
      if (next_wake_ <= now || *at < next_wake_) {
        next_wake_ = *at;
        Push(*at, Ev::kWake, Item());
      }
    }
  }

  void Start(const Item& item, uint64_t now) {
    const SimTenant& t = cfg_.tenants[item.tenant];
    const int c = ClassOf(t);
    ++running_;
    ++running_class_[c];
    ++starts_[c];
    const uint64_t end = now + item.cost;
    Push(end, Ev::kFinish, item);
    max_cost_[item.tenant] = std::max(max_cost_[item.tenant], item.cost);
    if (item.arrival >= cfg_.warmup_ns) {
      waits_[c].push_back(now - item.arrival);
      uint64_t lower = 0;
      for (int k = c + 1; k < kPriorities; ++k) lower += starts_[k];
      max_ahead_[c] =
          std::max<uint64_t>(max_ahead_[c], lower - item.lower_starts + item.lower_running);
    }
    const uint64_t s = std::max(now, cfg_.warmup_ns), e = std::min(end, cfg_.duration_ns);
    if (s >= e) return;
    used_[item.tenant] += e - s;
    busy_ += e - s;
    std::vector<double>& w = windows_[item.tenant];
    const uint64_t W = cfg_.cap_window_ns;
    for (uint64_t a = s; a < e && W;) {
      const uint64_t bin = (a - cfg_.warmup_ns) / W;
      const uint64_t bin_end = cfg_.warmup_ns + (bin + 1) * W;
      const uint64_t b = std::min(e, bin_end);
      if (bin < w.size()) w[bin] += static_cast<double>(b - a);
      a = b;
    }
  }

  // Checks the windows of the limit tenant `i` is under: its own, or its
  // account's, whose sessions' windows add up (counted once, at the first).
  void CheckCap(size_t i, TenantResult& tr, SimResult& r) const {
    const SimTenant& t = cfg_.tenants[i];
    std::vector<double> used = windows_[i];
    uint64_t max_cost = max_cost_[i], members = 1;
    bool first = true;
    if (t.share.account != kNoAccount) {
      members = 0;
      for (size_t j = 0; j < cfg_.tenants.size(); ++j) {
        const SimTenant& o = cfg_.tenants[j];
        if (o.share.account != t.share.account || o.share.priority != t.share.priority ||
            o.share.project != t.share.project)
          continue;
        first = first && j >= i;
        if (j != i)
          for (size_t w = 0; w < used.size() && w < windows_[j].size(); ++w)
            used[w] += windows_[j][w];
        max_cost = std::max(max_cost, max_cost_[j]);
        ++members;
      }
    }
    const double W = static_cast<double>(cfg_.cap_window_ns);
    const double slack = t.share.limit * static_cast<double>(cfg_.queue.limit_burst_ns) +
                         static_cast<double>(members * cfg_.queue.tenant_in_flight_ns + max_cost);
    for (double u : used) {
      tr.max_window_share = std::max(tr.max_window_share, u / W);
      if (u > t.share.limit * W + slack) ++tr.cap_violations;
    }
    if (first) r.cap_violations += tr.cap_violations;
  }

  SimResult Report() {
    SimResult r;
    const std::vector<double> expected = ExpectedShares(cfg_);
    const double span = static_cast<double>(cfg_.duration_ns - cfg_.warmup_ns) * cfg_.width;
    std::vector<double> normalized;
    for (size_t i = 0; i < cfg_.tenants.size(); ++i) {
      const SimTenant& t = cfg_.tenants[i];
      TenantResult tr;
      tr.id = t.id;
      tr.share = static_cast<double>(used_[i]) / span;
      tr.expected = expected[i];
      tr.items = items_[i];
      if (t.share.limit > 0) CheckCap(i, tr, r);
      if (tr.expected > 0) {
        normalized.push_back(tr.share / tr.expected);
        const double abs_err = std::fabs(tr.share - tr.expected);
        r.max_abs_error = std::max(r.max_abs_error, abs_err);
        r.max_rel_error = std::max(r.max_rel_error, abs_err / tr.expected);
      }
      r.tenants.push_back(tr);
    }
    r.jain = JainIndex(normalized);
    r.utilization = static_cast<double>(busy_) / span;
    for (int c = 0; c < kPriorities; ++c) {
      std::vector<uint64_t>& w = waits_[c];
      ClassLatency& l = r.latency[c];
      l.items = w.size();
      l.max_lower_ahead = static_cast<uint32_t>(max_ahead_[c]);
      if (w.empty()) continue;
      auto pct = [&](double p) {
        size_t k = std::min(w.size() - 1, static_cast<size_t>(p * static_cast<double>(w.size())));
        std::nth_element(w.begin(), w.begin() + static_cast<ptrdiff_t>(k), w.end());
        return w[k];
      };
      l.p50_ns = pct(0.5);
      l.p99_ns = pct(0.99);
      l.max_ns = *std::max_element(w.begin(), w.end());
    }
    return r;
  }

  const SimConfig& cfg_;
  std::mt19937_64 rng_;
  std::unique_ptr<DispatchQueue> q_;
  std::unordered_map<TenantId, uint32_t> index_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  std::vector<std::deque<Item>> pending_;
  std::deque<Item> device_;
  uint32_t running_ = 0;
  uint32_t running_class_[kPriorities] = {};
  uint64_t starts_[kPriorities] = {};
  uint64_t next_wake_ = 0;
  std::vector<uint64_t> used_, items_, max_cost_;
  std::vector<std::vector<double>> windows_;
  uint64_t busy_ = 0;
  std::vector<uint64_t> waits_[kPriorities];
  uint64_t max_ahead_[kPriorities] = {};
};

}  // namespace

SimResult Simulate(const SimConfig& config) {
  return Sim(config).Run();
}

std::vector<double> ExpectedShares(const SimConfig& cfg) {
  std::vector<Contender> contenders;
  for (const SimTenant& t : cfg.tenants) contenders.push_back({t.share, Demand(t, cfg.width)});
  return TargetShares(contenders, {cfg.projects.begin(), cfg.projects.end()}, 1.0 / cfg.width);
}

double JainIndex(const std::vector<double>& x) {
  if (x.empty()) return 1;
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq > 0 ? sum * sum / (static_cast<double>(x.size()) * sq) : 1;
}

}  // namespace remora::sched
