// scheduler/fair_queue.cc - hierarchical start-time fair queueing with caps and classes.
#include "scheduler/fair_queue.h"

#include <algorithm>
#include <cmath>

namespace remora::sched {

namespace {

int ClassOf(const Share& s) {
  return std::clamp(static_cast<int>(s.priority), 0, kPriorities - 1);
}

Share Sanitized(Share s) {
  if (!(s.request > 0)) s.request = 1e-6;  // also NaN
  if (!(s.limit > 0)) s.limit = 0;
  s.limit = std::min(s.limit, 1.0);
  if (s.limit >= 1.0) s.limit = 0;  // a cap of the whole GPU is no cap
  return s;
}

}  // namespace

FairQueue::FairQueue(FairOptions options) : opt_(options) {}
FairQueue::~FairQueue() = default;

double FairQueue::Burst(const Tenant& tn) const {
  return tn.share.limit * static_cast<double>(opt_.limit_burst_ns);
}

FairQueue::Tenant& FairQueue::Get(TenantId t) {
  auto [it, fresh] = tenants_.try_emplace(t);
  if (fresh) {
    it->second = std::make_unique<Tenant>();
    Tenant& tn = *it->second;
    tn.id = t;
    tn.node.tenant = &tn;
    tn.predicted_ns = std::max(opt_.initial_cost_ns, opt_.min_cost_ns);
    tn.refilled_at = now_;
    Attach(tn);
  }
  return *it->second;
}

// Hooks a detached tenant into its class and project by its share. A new
// project starts at its class's virtual time.
void FairQueue::Attach(Tenant& tn) {
  const int c = ClassOf(tn.share);
  Class& cls = classes_[c];
  ++cls.present;
  tn.node.weight = tn.share.request;
  if (tn.share.project != kNoProject) {
    auto [it, fresh] = projects_.try_emplace({c, tn.share.project});
    if (fresh) {
      it->second = std::make_unique<Project>();
      Project& p = *it->second;
      p.id = tn.share.project;
      p.cls = c;
      p.node.project = &p;
      p.node.parent = &cls.root;
      p.node.tag = cls.root.vtime;
      auto s = project_shares_.find(p.id);
      p.node.weight = s == project_shares_.end() ? 1.0 : s->second;
    }
    tn.project = it->second.get();
    ++tn.project->members;
    tn.node.parent = &tn.project->group;
  } else {
    tn.project = nullptr;
    tn.node.parent = &cls.root;
  }
  cls.in_flight += tn.in_flight;
  cls.in_flight_ns += tn.in_flight_ns;
}

// Undoes Attach; the tenant must be idle (not ready).
void FairQueue::Detach(Tenant& tn) {
  Class& cls = classes_[ClassOf(tn.share)];
  --cls.present;
  cls.in_flight -= tn.in_flight;
  cls.in_flight_ns -= tn.in_flight_ns;
  if (Project* p = tn.project) {
    tn.project = nullptr;
    if (--p->members == 0) projects_.erase({p->cls, p->id});
  }
  tn.node.parent = nullptr;
}

void FairQueue::Enqueue(Node& n) {
  n.seq = ++seq_;
  n.parent->eligible.insert(Key{n.tag, n.seq, &n});
  n.queued = true;
  if (n.tenant && n.tenant->project) {
    Project& p = *n.tenant->project;
    if (!p.node.queued) Enqueue(p.node);
  }
}

void FairQueue::Dequeue(Node& n) {
  n.parent->eligible.erase(Key{n.tag, n.seq, &n});
  n.queued = false;
  if (n.tenant && n.tenant->project) {
    Project& p = *n.tenant->project;
    if (p.group.eligible.empty() && p.node.queued) Dequeue(p.node);
  }
}

void FairQueue::Retag(Node& n, double tag) {
  if (!n.queued) {
    n.tag = tag;
    return;
  }
  n.parent->eligible.erase(Key{n.tag, n.seq, &n});
  n.tag = tag;
  n.parent->eligible.insert(Key{n.tag, n.seq, &n});
}

void FairQueue::Refill(Tenant& tn, uint64_t now) {
  if (now <= tn.refilled_at) return;
  if (tn.share.limit > 0) {
    tn.tokens =
        std::min(Burst(tn), tn.tokens + tn.share.limit * static_cast<double>(now - tn.refilled_at));
  }
  tn.refilled_at = now;
}

// A tenant coming back from idle (or from being held by its limit) starts at
// its group's virtual time: whatever it did not use meanwhile is gone.
void FairQueue::Wake(Tenant& tn) {
  Retag(tn.node, std::max(tn.node.tag, tn.node.parent->vtime));
}

// Files a ready tenant as eligible, blocked by its in-flight bound (until a
// Done), or held by its limit (until held_until).
void FairQueue::Place(Tenant& tn, uint64_t now) {
  Refill(tn, now);
  State want = State::kEligible;
  if (tn.share.limit > 0 && tn.tokens < 0)
    want = State::kHeld;
  else if (tn.in_flight >= opt_.min_in_flight &&
           tn.in_flight_ns + tn.predicted_ns > opt_.tenant_in_flight_ns)
    want = State::kBlocked;

  if (tn.state == State::kHeld) held_.erase({tn.held_until, tn.id});
  if (tn.state == State::kEligible && want != State::kEligible) Dequeue(tn.node);
  if (want == State::kHeld) {
    const double wait = std::ceil(-tn.tokens / tn.share.limit);
    tn.held_until = now + std::max<uint64_t>(1, static_cast<uint64_t>(wait));
    held_.insert({tn.held_until, tn.id});
  } else if (want == State::kEligible && tn.state != State::kEligible) {
    if (tn.state == State::kHeld) Wake(tn);
    Enqueue(tn.node);
  }
  tn.state = want;
}

void FairQueue::MakeIdle(Tenant& tn) {
  if (tn.state == State::kIdle) return;
  if (tn.state == State::kEligible) Dequeue(tn.node);
  if (tn.state == State::kHeld) held_.erase({tn.held_until, tn.id});
  tn.state = State::kIdle;
  --classes_[ClassOf(tn.share)].ready;
  --ready_;
  if (tn.project) --tn.project->ready;
}

void FairQueue::AddInFlight(Tenant& tn, int64_t n, int64_t ns) {
  Class& cls = classes_[ClassOf(tn.share)];
  tn.in_flight += static_cast<uint32_t>(n);
  cls.in_flight += static_cast<uint32_t>(n);
  in_flight_ += static_cast<uint32_t>(n);
  tn.in_flight_ns += static_cast<uint64_t>(ns);
  cls.in_flight_ns += static_cast<uint64_t>(ns);
  in_flight_ns_ += static_cast<uint64_t>(ns);
}

// The device bound and the priority rules, for the next item of `tn`.
bool FairQueue::Allowed(const Tenant& tn) const {
  const uint64_t pred = tn.predicted_ns;
  const int c = ClassOf(tn.share);
  // The device bound counts the tenant's class and those above it: lower classes'
  // work, bounded by the priority rules below, never holds a higher class back.
  uint32_t dev_n = 0;
  uint64_t dev_ns = 0;
  for (int k = 0; k <= c; ++k) {
    dev_n += classes_[k].in_flight;
    dev_ns += classes_[k].in_flight_ns;
  }
  if (opt_.device_in_flight_ns && dev_n >= opt_.min_in_flight &&
      dev_ns + pred > opt_.device_in_flight_ns)
    return false;
  int top_present = kPriorities, top_ready = kPriorities;
  for (int k = kPriorities - 1; k >= 0; --k) {
    if (classes_[k].present > 0) top_present = k;
    if (classes_[k].ready > 0) top_ready = k;
  }
  auto below = [&](int top, uint32_t* n) {
    uint64_t ns = 0;
    *n = 0;
    for (int k = top + 1; k < kPriorities; ++k) {
      *n += classes_[k].in_flight;
      ns += classes_[k].in_flight_ns;
    }
    return ns;
  };
  uint32_t n = 0;
  if (top_present < c) {
    uint64_t ns = below(top_present, &n);
    if (n > 0 && ns + pred > opt_.lower_in_flight_ns) return false;
  }
  if (top_ready < c) {
    (void)below(top_ready, &n);
    if (n > 0) return false;
  }
  return true;
}

// The tenant's own limit and in-flight bound, whether or not it is ready.
bool FairQueue::WithinOwnBounds(Tenant& tn, uint64_t now) {
  Refill(tn, now);
  if (tn.share.limit > 0 && tn.tokens < 0) return false;
  return tn.in_flight < opt_.min_in_flight ||
         tn.in_flight_ns + tn.predicted_ns <= opt_.tenant_in_flight_ns;
}

// Hands one item of `tn` out: advances the virtual times, charges the
// predicted cost, counts it in flight.
void FairQueue::Dispatch(Tenant& tn, uint64_t now, bool leaves_ready) {
  const double pred = static_cast<double>(tn.predicted_ns);
  if (Project* p = tn.project) {
    p->node.parent->vtime = std::max(p->node.parent->vtime, p->node.tag);
    p->group.vtime = std::max(p->group.vtime, tn.node.tag);
    Retag(p->node, p->node.tag + pred / p->node.weight);
  } else {
    tn.node.parent->vtime = std::max(tn.node.parent->vtime, tn.node.tag);
  }
  Retag(tn.node, tn.node.tag + pred / tn.node.weight);
  AddInFlight(tn, 1, static_cast<int64_t>(tn.predicted_ns));
  if (tn.share.limit > 0) tn.tokens -= pred;
  if (leaves_ready)
    MakeIdle(tn);
  else if (tn.state != State::kIdle)
    Place(tn, now);
}

void FairQueue::Ready(TenantId t, uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  Tenant& tn = Get(t);
  if (tn.state != State::kIdle) return;
  ++classes_[ClassOf(tn.share)].ready;
  ++ready_;
  if (Project* p = tn.project; p && p->ready++ == 0)
    Retag(p->node, std::max(p->node.tag, p->node.parent->vtime));
  Wake(tn);
  tn.state = State::kBlocked;  // not in any set yet; Place files it
  Place(tn, now_ns);
}

std::optional<TenantId> FairQueue::Next(uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  while (!held_.empty() && held_.begin()->first <= now_ns)
    Place(*tenants_.at(held_.begin()->second), now_ns);
  for (Class& cls : classes_) {
    if (cls.root.eligible.empty()) continue;
    Node* top = cls.root.eligible.begin()->node;
    if (top->project) top = top->project->group.eligible.begin()->node;
    Tenant& tn = *top->tenant;
    if (!Allowed(tn)) return std::nullopt;
    Dispatch(tn, now_ns, /*leaves_ready=*/true);
    return tn.id;
  }
  return std::nullopt;
}

void FairQueue::Done(TenantId t, uint32_t items, uint64_t gpu_ns, uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  auto it = tenants_.find(t);
  if (it == tenants_.end() || items == 0) return;
  Tenant& tn = *it->second;
  const double gpu = static_cast<double>(gpu_ns);
  // Items may finish out of order: each takes back the average charge in
  // flight, so the last Done takes back exactly what is left. Items beyond
  // those in flight only train the prediction.
  if (const uint32_t k = std::min(items, tn.in_flight); k > 0) {
    const uint64_t back = tn.in_flight_ns * k / tn.in_flight;
    AddInFlight(tn, -static_cast<int64_t>(k), -static_cast<int64_t>(back));
    const double delta = gpu * k / items - static_cast<double>(back);
    if (Project* p = tn.project) Retag(p->node, p->node.tag + delta / p->node.weight);
    Retag(tn.node, tn.node.tag + delta / tn.node.weight);
    if (tn.share.limit > 0) {
      Refill(tn, now_ns);
      tn.tokens = std::min(Burst(tn), tn.tokens - delta);
    }
  }
  // The moving average over `items` items of equal cost, in one step.
  const double each = gpu / items;
  double pred = tn.trained ? static_cast<double>(tn.predicted_ns) : each;
  pred = each + (pred - each) * std::pow(1 - opt_.cost_ewma, static_cast<double>(items));
  tn.trained = true;
  tn.predicted_ns = std::max(static_cast<uint64_t>(pred), opt_.min_cost_ns);
  if (tn.state != State::kIdle) Place(tn, now_ns);
}

void FairQueue::Remove(TenantId t) {
  auto it = tenants_.find(t);
  if (it == tenants_.end()) return;
  Tenant& tn = *it->second;
  MakeIdle(tn);
  AddInFlight(tn, -static_cast<int64_t>(tn.in_flight), -static_cast<int64_t>(tn.in_flight_ns));
  Detach(tn);
  tenants_.erase(it);
}

bool FairQueue::IssueNow(TenantId t, uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  Tenant& tn = Get(t);
  if (ready_ - (tn.state != State::kIdle ? 1 : 0) > 0) return false;
  if (!WithinOwnBounds(tn, now_ns) || !Allowed(tn)) return false;
  if (tn.state == State::kIdle) {
    if (Project* p = tn.project; p && p->ready == 0)
      Retag(p->node, std::max(p->node.tag, p->node.parent->vtime));
    Wake(tn);
  }
  Dispatch(tn, now_ns, /*leaves_ready=*/false);
  return true;
}

void FairQueue::Configure(TenantId t, const Share& share) {
  Tenant& tn = Get(t);
  const bool was_ready = tn.state != State::kIdle;
  MakeIdle(tn);
  Detach(tn);
  const double old_limit = tn.share.limit;
  tn.share = Sanitized(share);
  if (tn.share.limit != old_limit) tn.tokens = Burst(tn);  // a new cap starts full
  Attach(tn);
  if (was_ready) Ready(t, std::max(now_, tn.refilled_at));
}

void FairQueue::ConfigureProject(ProjectId p, double share) {
  if (!(share > 0)) share = 1e-6;
  project_shares_[p] = share;
  for (int c = 0; c < kPriorities; ++c)
    if (auto it = projects_.find({c, p}); it != projects_.end()) it->second->node.weight = share;
}

std::optional<uint64_t> FairQueue::NextEligibleAt(uint64_t) const {
  if (held_.empty()) return std::nullopt;
  return held_.begin()->first;
}

std::optional<FairQueue::TenantView> FairQueue::View(TenantId t) const {
  auto it = tenants_.find(t);
  if (it == tenants_.end()) return std::nullopt;
  const Tenant& tn = *it->second;
  TenantView v;
  v.ready = tn.state != State::kIdle;
  v.held = tn.state == State::kHeld;
  v.in_flight = tn.in_flight;
  v.in_flight_ns = tn.in_flight_ns;
  v.predicted_ns = tn.predicted_ns;
  v.budget_ns = tn.tokens;
  return v;
}

}  // namespace remora::sched
