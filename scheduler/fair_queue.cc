// scheduler/fair_queue.cc - hierarchical start-time fair queueing with caps and classes.
#include "scheduler/fair_queue.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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

double FairQueue::Burst(const Bucket& b) const {
  return b.limit * static_cast<double>(opt_.limit_burst_ns);
}

FairQueue::Tenant& FairQueue::Get(TenantId t) {
  auto [it, fresh] = tenants_.try_emplace(t);
  if (fresh) {
    it->second = std::make_unique<Tenant>();
    Tenant& tn = *it->second;
    tn.id = t;
    tn.node.tenant = &tn;
    tn.node.uid = ++uids_;
    tn.predicted_ns = std::max(opt_.initial_cost_ns, opt_.min_cost_ns);
    tn.cap.refilled_at = now_;
    Attach(tn);
  }
  return *it->second;
}

// The project or account `key` under `parent`, made at the parent's virtual
// time if new, with one more member.
FairQueue::Inner& FairQueue::InnerFor(const InnerKey& key, Group* parent, double weight) {
  auto [it, fresh] = inners_.try_emplace(key);
  if (fresh) {
    it->second = std::make_unique<Inner>();
    Inner& in = *it->second;
    in.key = key;
    in.node.inner = &in;
    in.node.uid = ++uids_;
    in.node.parent = parent;
    in.node.tag = parent->vtime;
    in.node.weight = weight;
    in.group.owner = &in;
    in.cap.refilled_at = now_;
  }
  ++it->second->members;
  return *it->second;
}

// One member fewer; the last takes the project or account with it.
void FairQueue::Release(Inner* in) {
  if (in == nullptr || --in->members > 0) return;
  if (in->held) held_.erase({in->cap.held_until, in->node.uid, &in->node});
  inners_.erase(in->key);
}

// Hooks a detached tenant into its class, project and account by its share.
void FairQueue::Attach(Tenant& tn) {
  const int c = ClassOf(tn.share);
  Class& cls = classes_[c];
  ++cls.present;
  Group* parent = &cls.root;
  tn.project = nullptr;
  if (const ProjectId p = tn.share.project; p != kNoProject) {
    auto s = project_shares_.find(p);
    tn.project =
        &InnerFor({c, p, kNoAccount}, parent, s == project_shares_.end() ? 1.0 : s->second);
    parent = &tn.project->group;
  }
  tn.account = nullptr;
  const double old_limit = tn.cap.limit;
  if (tn.share.account != kNoAccount) {
    tn.account = &InnerFor({c, tn.share.project, tn.share.account}, parent, tn.share.request);
    Inner& a = *tn.account;
    a.node.weight = tn.share.request;  // the latest Configure says what the account has
    if (a.cap.limit != tn.share.limit) {
      a.cap.limit = tn.share.limit;
      a.cap.tokens = Burst(a.cap);  // a new cap starts full
      a.cap.refilled_at = now_;
    }
    parent = &a.group;
    tn.node.weight = 1;
    tn.cap.limit = 0;
  } else {
    tn.node.weight = tn.share.request;
    tn.cap.limit = tn.share.limit;
  }
  if (tn.cap.limit != old_limit) tn.cap.tokens = Burst(tn.cap);
  tn.node.parent = parent;
  cls.in_flight += tn.in_flight;
  cls.in_flight_ns += tn.in_flight_ns;
  if (Inner* a = tn.account) {
    a->in_flight += tn.in_flight;
    a->in_flight_ns += tn.in_flight_ns;
  }
}

// Undoes Attach; the tenant must be idle (not ready).
void FairQueue::Detach(Tenant& tn) {
  Class& cls = classes_[ClassOf(tn.share)];
  --cls.present;
  if (cls.owner == &tn || (cls.owner != nullptr && cls.owner == tn.account))
    cls.owner = cls.owner_tenant = nullptr;
  if (cls.last() != nullptr && cls.last() == SliceKey(tn)) {
    cls.last_tenant = nullptr;
    cls.last_account = nullptr;
  }
  cls.in_flight -= tn.in_flight;
  cls.in_flight_ns -= tn.in_flight_ns;
  if (Inner* a = tn.account) {
    a->in_flight -= tn.in_flight;
    a->in_flight_ns -= tn.in_flight_ns;
    if (a->members > 1) PlaceBlockedSessions(a, now_);  // its work in flight left with it
  }
  Release(
      std::exchange(tn.account, nullptr));  // before its project: it lives in the project's group
  Release(std::exchange(tn.project, nullptr));
  tn.node.parent = nullptr;
}

FairQueue::Node* FairQueue::Up(const Node& n) {
  return n.parent->owner ? &n.parent->owner->node : nullptr;
}

// Files `n` in its parent's set, and the parent in its own while not held.
void FairQueue::Enqueue(Node& n) {
  n.seq = ++seq_;
  n.parent->eligible.insert(Key{n.tag, n.seq, &n});
  n.queued = true;
  if (Inner* up = n.parent->owner; up && !up->node.queued && !up->held) Enqueue(up->node);
}

// Takes `n` out of its parent's set, and the parent out of its own if that
// left it empty.
void FairQueue::Dequeue(Node& n) {
  n.parent->eligible.erase(Key{n.tag, n.seq, &n});
  n.queued = false;
  if (Inner* up = n.parent->owner; up && up->group.eligible.empty() && up->node.queued)
    Dequeue(up->node);
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

// A node coming back from idle (or from being held by a limit) starts at its
// group's virtual time: whatever it did not use meanwhile is gone.
void FairQueue::Wake(Node& n) {
  Retag(n, std::max(n.tag, n.parent->vtime));
}

// The tenant becomes ready: so do its account and project if they were idle.
void FairQueue::WakeAncestors(Tenant& tn) {
  for (Inner* in : {tn.project, tn.account})
    if (in && in->ready++ == 0 && !(opt_.slice_ns && in == tn.account && in->in_flight > 0))
      Wake(in->node);
}

void FairQueue::Refill(Bucket& b, uint64_t now) const {
  if (now <= b.refilled_at) return;
  if (b.limit > 0)
    b.tokens = std::min(Burst(b), b.tokens + b.limit * static_cast<double>(now - b.refilled_at));
  b.refilled_at = now;
}

// Takes `ns` of GPU time (< 0: gives it back) from a capped bucket.
void FairQueue::Charge(Bucket& b, double ns, uint64_t now) const {
  if (b.limit <= 0) return;
  Refill(b, now);
  b.tokens = std::min(Burst(b), b.tokens - ns);
}

// When a bucket in debt will have paid it off, at its refill rate.
uint64_t FairQueue::HeldUntil(const Bucket& b, uint64_t now) const {
  const double wait = std::ceil(-b.tokens / b.limit);
  return now + std::max<uint64_t>(1, static_cast<uint64_t>(wait));
}

// Files a ready tenant as eligible, blocked by its in-flight bound (until a
// Done), or held by its own limit (until cap.held_until).
void FairQueue::Place(Tenant& tn, uint64_t now) {
  Refill(tn.cap, now);
  State want = State::kEligible;
  if (tn.cap.limit > 0 && tn.cap.tokens < 0)
    want = State::kHeld;
  else if (AtOwnBound(tn))
    want = State::kBlocked;

  if (tn.state == State::kHeld) held_.erase({tn.cap.held_until, tn.node.uid, &tn.node});
  if (tn.stall_due != 0) held_.erase({std::exchange(tn.stall_due, 0), tn.node.uid, &tn.node});
  if (tn.state == State::kEligible && want != State::kEligible) Dequeue(tn.node);
  if (want == State::kHeld) {
    tn.cap.held_until = HeldUntil(tn.cap, now);
    held_.insert({tn.cap.held_until, tn.node.uid, &tn.node});
  } else if (want == State::kBlocked) {
    // Rule 3: a Done places it again; if none comes, the stall does.
    if ((tn.stall_due = BlockedUntil(tn)) != 0) held_.insert({tn.stall_due, tn.node.uid, &tn.node});
  } else if (want == State::kEligible && tn.state != State::kEligible) {
    if (tn.state == State::kHeld) Wake(tn.node);
    Enqueue(tn.node);
  }
  SetState(tn, want);
}

// Holds an account in debt back, with every session in it, or lets it go.
void FairQueue::PlaceAccount(Inner& a, uint64_t now) {
  Refill(a.cap, now);
  const bool hold = a.cap.limit > 0 && a.cap.tokens < 0;
  if (a.held) held_.erase({a.cap.held_until, a.node.uid, &a.node});
  if (hold) {
    if (a.node.queued) Dequeue(a.node);
    a.cap.held_until = HeldUntil(a.cap, now);
    held_.insert({a.cap.held_until, a.node.uid, &a.node});
  } else if (a.held) {
    a.held = false;
    Wake(a.node);
    if (!a.group.eligible.empty()) Enqueue(a.node);
  }
  a.held = hold;
}

void FairQueue::SetState(Tenant& tn, State s) {
  blocked_ += (s == State::kBlocked) - (tn.state == State::kBlocked);
  if (Inner* a = tn.account) {
    if (s == State::kBlocked)
      a->blocked.emplace(tn.node.uid, &tn);
    else
      a->blocked.erase(tn.node.uid);
  }
  tn.state = s;
}

// Files again the sessions of account `a` that wait for a Done: one of their
// siblings' may be what lets them go.
void FairQueue::PlaceBlockedSessions(Inner* a, uint64_t now) {
  if (a == nullptr || a->blocked.empty()) return;
  std::vector<Tenant*> waiting;
  waiting.reserve(a->blocked.size());
  for (const auto& [uid, tn] : a->blocked) waiting.push_back(tn);
  for (Tenant* tn : waiting) Place(*tn, now);
}

void FairQueue::MakeIdle(Tenant& tn) {
  if (tn.state == State::kIdle) return;
  if (tn.state == State::kEligible) Dequeue(tn.node);
  if (tn.state == State::kHeld) held_.erase({tn.cap.held_until, tn.node.uid, &tn.node});
  if (tn.stall_due != 0) held_.erase({std::exchange(tn.stall_due, 0), tn.node.uid, &tn.node});
  SetState(tn, State::kIdle);
  --classes_[ClassOf(tn.share)].ready;
  --ready_;
  for (Inner* in : {tn.project, tn.account})
    if (in) --in->ready;
}

void FairQueue::AddInFlight(Tenant& tn, int64_t n, int64_t ns) {
  Class& cls = classes_[ClassOf(tn.share)];
  tn.in_flight += static_cast<uint32_t>(n);
  cls.in_flight += static_cast<uint32_t>(n);
  if (cls.in_flight == 0) cls.waiting_since = 0;  // rule 5: nothing left to wait for
  in_flight_ += static_cast<uint32_t>(n);
  tn.in_flight_ns += static_cast<uint64_t>(ns);
  cls.in_flight_ns += static_cast<uint64_t>(ns);
  in_flight_ns_ += static_cast<uint64_t>(ns);
  if (Inner* a = tn.account) {
    a->in_flight += static_cast<uint32_t>(n);
    a->in_flight_ns += static_cast<uint64_t>(ns);
  }
}

// The device bound and the priority rules, for the next item of `tn`.
// The device bound counts the tenant's class and those above it: lower classes'
// work, bounded by the priority rules, never holds a higher class back.
bool FairQueue::DeviceBinds(const Tenant& tn) const {
  uint32_t dev_n = 0;
  uint64_t dev_ns = 0;
  for (int k = 0; k <= ClassOf(tn.share); ++k) {
    dev_n += classes_[k].in_flight;
    dev_ns += classes_[k].in_flight_ns;
  }
  return opt_.device_in_flight_ns && dev_n >= opt_.min_in_flight &&
         dev_ns + tn.predicted_ns > opt_.device_in_flight_ns;
}

bool FairQueue::Allowed(const Tenant& tn) const {
  const uint64_t pred = tn.predicted_ns;
  const int c = ClassOf(tn.share);
  if (DeviceBinds(tn) && !Stalled(progress_, in_flight_, in_flight_ns_)) return false;
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
  // Rule 5: not during the turn of another that paused a moment (it is synchronizing, and
  // comes back).
  if (opt_.slice_ns && PauseHolds(classes_[c], tn) && !FillsPause(classes_[c], tn)) {
    pausing_ = true;
    return false;
  }
  // Rule 5: not while another tenant's work of this class is on the device, for two slices.
  if (opt_.slice_ns && classes_[c].in_flight > SliceInFlight(tn)) {
    Class& cls = classes_[c];
    if (cls.waiting_since == 0) cls.waiting_since = std::max<uint64_t>(now_, 1);
    if (now_ < cls.waiting_since + 2 * opt_.slice_ns) {
      switching_ = true;
      return false;
    }
  }
  return true;
}

const void* FairQueue::SliceKey(const Tenant& tn) {
  return tn.account ? static_cast<const void*>(tn.account) : &tn;
}

uint32_t FairQueue::SliceInFlight(const Tenant& tn) {
  return tn.account ? tn.account->in_flight : tn.in_flight;
}

bool FairQueue::PauseHolds(const Class& cls, const Tenant& tn) const {
  if (opt_.slice_idle_ns == 0 || cls.last() == nullptr || cls.last() == SliceKey(tn) ||
      cls.last_quiet_since == 0 || now_ >= cls.last_quiet_since + opt_.slice_idle_ns)
    return false;
  const Node* back = nullptr;
  if (const Tenant* o = cls.last_tenant) {
    if (o->in_flight > 0 || o->state != State::kIdle) return false;
    back = &o->node;
  } else if (const Inner* a = cls.last_account) {
    if (a->in_flight > 0 || a->ready > 0) return false;
    back = &a->node;
  } else {
    return false;
  }
  if (cls.owner == cls.last()) return true;
  return Top(*back)->tag <= Top(tn.node)->tag;  // rule 2 among the two
}

const FairQueue::Node* FairQueue::Top(const Node& n) {
  const Node* top = &n;
  for (const Node* u = Up(n); u != nullptr; u = Up(*u)) top = u;
  return top;
}

bool FairQueue::FillsPause(const Class& cls, const Tenant& tn) const {
  if (cls.in_flight > 0 || !tn.trained || tn.predicted_ns > opt_.slice_idle_ns) return false;
  // Not ahead of the owner by rule 2: fills follow the shares, never a share of the pauses.
  const Node* owner = cls.last_tenant    ? &cls.last_tenant->node
                      : cls.last_account ? &cls.last_account->node
                                         : nullptr;
  return owner != nullptr && Top(tn.node)->tag <= Top(*owner)->tag;
}

// The tenant's own limit (and its account's) and in-flight bound, whether or
// not it is ready.
bool FairQueue::WithinOwnBounds(Tenant& tn, uint64_t now) {
  for (Bucket* b : {&tn.cap, tn.account ? &tn.account->cap : nullptr}) {
    if (b == nullptr) continue;
    Refill(*b, now);
    if (b->limit > 0 && b->tokens < 0) return false;
  }
  return !AtOwnBound(tn);
}

// Whether `tn`'s next item would pass its in-flight bound. Before its first
// Done nothing is known of its items' cost: only min_in_flight go, so a
// tenant that opens with a burst of long kernels cannot queue them all ahead
// of the others on a guess.
// A session is also held to its account's bound: a tenant running several
// processes queues no more ahead of the others than one that runs one.
bool FairQueue::AtOwnBound(const Tenant& tn) const {
  if (TenantBinds(tn) && !Stalled(tn.progress, tn.in_flight, tn.in_flight_ns)) return true;
  const Inner* a = tn.account;
  return AccountBinds(tn) && !Stalled(a->progress, a->in_flight, a->in_flight_ns);
}

bool FairQueue::TenantBinds(const Tenant& tn) const {
  return tn.in_flight >= opt_.min_in_flight &&
         (!tn.trained || tn.in_flight_ns + tn.predicted_ns > opt_.tenant_in_flight_ns);
}

bool FairQueue::AccountBinds(const Tenant& tn) const {
  const Inner* a = tn.account;
  return a != nullptr && a->in_flight >= opt_.min_in_flight &&
         a->in_flight_ns + tn.predicted_ns > opt_.tenant_in_flight_ns;
}

uint64_t FairQueue::StallDue(const Progress& p, uint64_t ns) const {
  return p.at + (opt_.stall_ns << std::min<uint32_t>(p.stalls, 16)) + 2 * ns;
}

bool FairQueue::Stalled(const Progress& p, uint32_t n, uint64_t ns) const {
  return opt_.stall_ns > 0 && n > 0 && now_ >= StallDue(p, ns);
}

uint64_t FairQueue::BlockedUntil(const Tenant& tn) const {
  if (opt_.stall_ns == 0) return 0;
  uint64_t due = 0;
  if (TenantBinds(tn)) due = StallDue(tn.progress, tn.in_flight_ns);
  if (AccountBinds(tn))
    due = std::max(due, StallDue(tn.account->progress, tn.account->in_flight_ns));
  return due;
}

void FairQueue::Went(Progress& p, uint32_t n, uint64_t ns, bool binds, uint64_t now) {
  if (n == 0) {
    p = {now, 0};
  } else if (binds && Stalled(p, n, ns)) {
    p = {now, p.stalls + 1};
    ++stall_releases_;
  }
}

// Hands one item of `tn` out: advances the virtual times at every level,
// charges the predicted cost, counts it in flight.
void FairQueue::Dispatch(Tenant& tn, uint64_t now, bool leaves_ready) {
  const double pred = static_cast<double>(tn.predicted_ns);
  for (Node* n = &tn.node; n != nullptr; n = Up(*n)) {
    n->parent->vtime = std::max(n->parent->vtime, n->tag);
    Retag(*n, n->tag + pred / n->weight);
  }
  // Rule 3: the first item in flight starts a bound's clock; one past a stalled bound
  // restarts it, twice as long.
  Went(tn.progress, tn.in_flight, tn.in_flight_ns, TenantBinds(tn), now);
  if (Inner* a = tn.account)
    Went(a->progress, a->in_flight, a->in_flight_ns, AccountBinds(tn), now);
  Went(progress_, in_flight_, in_flight_ns_, DeviceBinds(tn), now);
  AddInFlight(tn, 1, static_cast<int64_t>(tn.predicted_ns));
  Charge(tn.cap, pred, now);
  if (opt_.slice_ns) {
    // Rule 5: this tenant's turn, begun or going on; once it has had its slice the next
    // turn is rule 2's choice again. An item that fills another's pause leaves the turn be.
    Class& cls = classes_[ClassOf(tn.share)];
    if (!PauseHolds(cls, tn)) {
      if (cls.owner != SliceKey(tn)) {
        cls.owner = SliceKey(tn);
        cls.owner_tenant = tn.account ? nullptr : &tn;
        cls.owner_ns = 0;
      }
      cls.last_tenant = cls.owner_tenant;
      cls.last_account = tn.account;
      cls.last_quiet_since = 0;
      cls.owner_ns += tn.predicted_ns;
      if (cls.owner_ns >= opt_.slice_ns) cls.owner = cls.owner_tenant = nullptr;
    }
    cls.waiting_since = 0;
    switching_ = false;
  }
  if (leaves_ready)
    MakeIdle(tn);
  else if (tn.state != State::kIdle)
    Place(tn, now);
  if (Inner* a = tn.account) {
    Charge(a->cap, pred, now);
    PlaceAccount(*a, now);
  }
}

void FairQueue::Ready(TenantId t, uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  Tenant& tn = Get(t);
  if (tn.state != State::kIdle) return;
  ++classes_[ClassOf(tn.share)].ready;
  ++ready_;
  WakeAncestors(tn);
  // With time slices a tenant waits out others' turns between its items, and may be
  // between two of its own when it asks again: with work still on the device it was
  // never idle, and keeps the credit the others' turns gave it.
  // Nor was one that paused a moment between its items (it synchronized).
  const bool paused =
      opt_.slice_idle_ns > 0 && tn.paused_at != 0 && now_ns < tn.paused_at + opt_.slice_idle_ns;
  if (!(opt_.slice_ns && (SliceInFlight(tn) > 0 || paused))) Wake(tn.node);
  SetState(tn, State::kBlocked);  // not in any set yet; Place files it
  Place(tn, now_ns);
}

std::optional<TenantId> FairQueue::Next(uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  switching_ = pausing_ = false;  // Allowed says so again if an item still waits
  while (!held_.empty() && std::get<0>(*held_.begin()) <= now_ns) {
    Node* n = std::get<2>(*held_.begin());
    if (n->tenant)
      Place(*n->tenant, now_ns);
    else
      PlaceAccount(*n->inner, now_ns);
  }
  for (;;) {
    Tenant* pick = nullptr;
    for (Class& cls : classes_) {
      if (cls.root.eligible.empty()) continue;
      // Rule 5: the tenant whose turn it is goes first while it has work ready.
      // (An account's turn goes by rule 2 among its sessions.)
      if (Tenant* owner = cls.owner_tenant;
          owner != nullptr && owner->state == State::kEligible && !AtOwnBound(*owner)) {
        pick = owner;
        break;
      }
      Node* top = cls.root.eligible.begin()->node;
      while (top->inner) top = top->inner->group.eligible.begin()->node;
      pick = top->tenant;
      break;
    }
    if (pick == nullptr) return std::nullopt;
    // A sibling's dispatch may have filled its account's bound since it was
    // filed: it waits for a Done now, and the next in line is asked.
    if (AtOwnBound(*pick)) {
      Place(*pick, now_ns);
      continue;
    }
    if (!Allowed(*pick)) return std::nullopt;
    Dispatch(*pick, now_ns, /*leaves_ready=*/true);
    return pick->id;
  }
}

void FairQueue::Settle(Tenant& tn, uint32_t items, double gpu, uint64_t now_ns) {
  // Items may finish out of order: each takes back the average charge in
  // flight, so the last Done takes back exactly what is left. Items beyond
  // those in flight only train the prediction.
  if (const uint32_t k = std::min(items, tn.in_flight); k > 0) {
    const uint64_t back = tn.in_flight_ns * k / tn.in_flight;
    AddInFlight(tn, -static_cast<int64_t>(k), -static_cast<int64_t>(back));
    // Rule 5: its last item finished; its pause (if it is one) starts now.
    if (Class& cls = classes_[ClassOf(tn.share)]; opt_.slice_ns && tn.in_flight == 0) {
      tn.paused_at = std::max<uint64_t>(now_ns, 1);
      if (cls.last() == SliceKey(tn) && SliceInFlight(tn) == 0) cls.last_quiet_since = tn.paused_at;
    }
    const double delta = gpu * k / items - static_cast<double>(back);
    for (Node* n = &tn.node; n != nullptr; n = Up(*n)) Retag(*n, n->tag + delta / n->weight);
    Charge(tn.cap, delta, now_ns);
    if (Inner* a = tn.account) {
      Charge(a->cap, delta, now_ns);
      PlaceAccount(*a, now_ns);
    }
  }
}

void FairQueue::Done(TenantId t, uint32_t items, uint64_t gpu_ns, uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  auto it = tenants_.find(t);
  if (it == tenants_.end() || items == 0) return;
  Tenant& tn = *it->second;
  const double gpu = static_cast<double>(gpu_ns);
  Settle(tn, items, gpu, now_ns);
  for (Progress* p : {&tn.progress, tn.account ? &tn.account->progress : nullptr, &progress_})
    if (p != nullptr) *p = {now_ns, 0};
  // The moving average over `items` items of equal cost, in one step. The
  // first measurement only raises the initial guess: one short item must not
  // let a tenant of long ones put dozens in flight on its word.
  const double each = gpu / items;
  const double pred = tn.trained
                          ? each + (static_cast<double>(tn.predicted_ns) - each) *
                                       std::pow(1 - opt_.cost_ewma, static_cast<double>(items))
                          : std::max(each, static_cast<double>(tn.predicted_ns));
  tn.trained = true;
  tn.predicted_ns = std::max(static_cast<uint64_t>(pred), opt_.min_cost_ns);
  if (tn.state != State::kIdle) Place(tn, now_ns);
  PlaceBlockedSessions(tn.account, now_ns);
}

void FairQueue::Return(TenantId t, uint32_t items) {
  auto it = tenants_.find(t);
  if (it == tenants_.end() || items == 0) return;
  Tenant& tn = *it->second;
  Settle(tn, items, 0, now_);
  if (tn.state != State::kIdle) Place(tn, now_);
  PlaceBlockedSessions(tn.account, now_);
}

void FairQueue::Remove(TenantId t) {
  auto it = tenants_.find(t);
  if (it == tenants_.end()) return;
  Tenant& tn = *it->second;
  MakeIdle(tn);
  AddInFlight(tn, -static_cast<int64_t>(tn.in_flight), -static_cast<int64_t>(tn.in_flight_ns));
  Detach(tn);  // files its account's blocked sessions again
  tenants_.erase(it);
}

bool FairQueue::IsReady(TenantId t) const {
  auto it = tenants_.find(t);
  return it != tenants_.end() && it->second->state != State::kIdle;
}

bool FairQueue::HasTurn(const Tenant& tn) const {
  if (!opt_.slice_ns) return false;
  const int c = ClassOf(tn.share);
  if (classes_[c].owner_tenant != &tn) return false;
  for (int k = 0; k < c; ++k)
    if (classes_[k].ready > 0) return false;
  return true;
}

bool FairQueue::IssueNow(TenantId t, uint64_t now_ns) {
  now_ = std::max(now_, now_ns);
  Tenant& tn = Get(t);
  // Next serves classes in order: only tenants of `t`'s class and above contend with it.
  const int self = tn.state != State::kIdle ? 1 : 0;
  int contending = -self;
  for (int k = 0; k <= ClassOf(tn.share); ++k) contending += classes_[k].ready;
  if (contending > 0 && !HasTurn(tn)) return false;
  if (!WithinOwnBounds(tn, now_ns) || !Allowed(tn)) return false;
  if (ready_ - self > 0 && tn.state == State::kIdle) {
    // Others wait (below it, or for its turn to end): placed as Ready places it (between two
    // items of its turn it keeps its credit), handed out as Next would.
    Ready(t, now_ns);
    Dispatch(tn, now_ns, /*leaves_ready=*/true);
    return true;
  }
  if (tn.state == State::kIdle) {
    for (Inner* in : {tn.project, tn.account})
      if (in && in->ready == 0) Wake(in->node);
    Wake(tn.node);
  }
  Dispatch(tn, now_ns, /*leaves_ready=*/false);
  return true;
}

void FairQueue::Configure(TenantId t, const Share& share) {
  Tenant& tn = Get(t);
  const bool was_ready = tn.state != State::kIdle;
  MakeIdle(tn);
  Detach(tn);
  tn.share = Sanitized(share);
  Attach(tn);
  if (was_ready) Ready(t, std::max(now_, tn.cap.refilled_at));
}

void FairQueue::ConfigureProject(ProjectId p, double share) {
  if (!(share > 0)) share = 1e-6;
  project_shares_[p] = share;
  for (int c = 0; c < kPriorities; ++c)
    if (auto it = inners_.find({c, p, kNoAccount}); it != inners_.end())
      it->second->node.weight = share;
}

std::optional<uint64_t> FairQueue::NextEligibleAt(uint64_t now_ns) const {
  std::optional<uint64_t> at;
  if (!held_.empty()) at = std::get<0>(*held_.begin());
  // Rule 3: a ready tenant may wait for the device's bound to count as stalled.
  if (const uint64_t t = StallDue(progress_, in_flight_ns_);
      opt_.stall_ns && opt_.device_in_flight_ns && ready_ > 0 && in_flight_ > 0 && t > now_ns)
    at = at ? std::min(*at, t) : t;
  if (pausing_)  // rule 5: an item that waits for a pausing owner goes when the pause is long
    for (const Class& cls : classes_)
      // Even if the pause is over by now: the item that waited goes at the next Next.
      if (const uint64_t t = cls.last_quiet_since + opt_.slice_idle_ns; cls.last_quiet_since != 0)
        at = at ? std::min(*at, std::max(t, now_ns)) : std::max(t, now_ns);
  if (switching_)  // rule 5: an item that waited two slices for the device goes anyway
    for (const Class& cls : classes_)
      if (const uint64_t t = cls.waiting_since + 2 * opt_.slice_ns;
          cls.waiting_since != 0 && t > now_ns)
        at = at ? std::min(*at, t) : t;
  return at;
}

std::optional<FairQueue::TenantView> FairQueue::View(TenantId t) const {
  auto it = tenants_.find(t);
  if (it == tenants_.end()) return std::nullopt;
  const Tenant& tn = *it->second;
  TenantView v;
  v.ready = tn.state != State::kIdle;
  v.held = tn.state == State::kHeld || (v.ready && tn.account && tn.account->held);
  v.in_flight = tn.in_flight;
  v.in_flight_ns = tn.in_flight_ns;
  v.predicted_ns = tn.predicted_ns;
  v.budget_ns = tn.account ? tn.account->cap.tokens : tn.cap.tokens;
  return v;
}

}  // namespace remora::sched
