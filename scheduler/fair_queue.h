// scheduler/fair_queue.h - FairQueue: GPU time shared by weight, capped, by priority.
//
// The DispatchQueue the server uses for multi-tenancy (Run:ai's model for
// compute). Each tenant has a Share: a request (a weight), an optional limit (a
// cap on its fraction of GPU time, even on an idle GPU), a priority class and
// an optional project. Ordering, in decreasing precedence:
//
//  1. Priority classes are strict: a ready kHigh tenant goes before any kNormal
//     one, kNormal before kLow. While a higher class has a tenant at all, the
//     classes below it keep at most lower_in_flight_ns of predicted GPU time in
//     flight (one item by default); while a higher class has work ready, they
//     issue only when nothing of theirs is in flight. So a high-priority item
//     waits behind at most one lower-priority item.
//  2. Within a class, start-time fair queueing over measured GPU time, up to
//     three levels: projects (and what stands alone) by project share, then
//     accounts and tenants by request, then an account's sessions evenly (a
//     tenant with several processes is one account; Share::account). An item is charged its
//     predicted cost (an EWMA of the tenant's Done costs) when handed out and corrected to the
//     measured cost at Done. A tenant or project that was idle starts at the current virtual time:
//     no credit is banked while idle. Unused share goes to the others.
//  3. Bounds on work in flight: a tenant may have at most tenant_in_flight_ns of
//     predicted time handed out and not yet Done (min_in_flight items always
//     may go; before its first Done, only they), an account the same over all
//     its sessions together, the device at most
//     device_in_flight_ns (likewise), counting the tenant's class and those
//     above it (lower classes' work, bounded by rule 1, never holds a higher
//     class's item back). The fair order is decided only among tenants that
//     contend at dispatch, so keep the device bound <= the tenant bound and
//     small (a few ms): it is what makes the weights bite.
//     Work that makes no progress holds nothing back forever: when a bound's in-flight work
//     (a tenant's, an account's, the device's) has had no Done for stall_ns plus twice its
//     predicted cost, one more item goes past that bound, and again after twice as long while
//     none comes. So a kernel waiting for what another stream of its tenant writes, or a
//     stream waiting for a value in memory, never deadlocks behind the bound it fills (a GPU
//     runs the other stream's work beside it).
//  4. Limits: a token bucket per capped tenant or account, refilled at limit x
//     wall time, holding at most limit x limit_burst_ns; one in debt is held
//     back (an account with all its sessions) until NextEligibleAt.
//  5. Time slices (slice_ns > 0): within a class, tenants (accounts as one) take
//     the device in turns. The tenant that dispatched last owns the device for
//     slice_ns of predicted time and is served first while ready; another's item
//     goes only once nothing of the others of its class is in flight, so the
//     kernels of two tenants never share the device and each is charged only
//     for time it had the device alone. Who has the next slice is rule 2's
//     choice, so slices follow the shares. A kernel cannot be stopped: when the
//     others' work has not left the device two slices after an item began to
//     wait for it (a long kernel), that item goes beside it. The owner keeps its turn
//     through pauses of up to slice_idle_ns with nothing of its own ready or in flight
//     (a tenant that synchronizes between batches: without this the turn would pass at
//     every synchronization and the shares would come out even). The device does not idle
//     through such a pause: another tenant of the class that rule 2 puts no later than the
//     owner may run one item at a time in it, each known to be shorter than slice_idle_ns,
//     without taking the turn; the owner, back, waits for that item (as for any other's) and
//     goes on. Off by default.
//
// Cost: O(log n) per call in the number of tenants (ordered sets keyed by
// virtual time), plus O(log n) per capped tenant or account whose hold-back
// expires.
// Not thread-safe: the executor calls it under its own lock.
//
//   FairQueue q;                                  // or FairQueue(options)
//   q.ConfigureProject(1, 0.5);
//   q.Configure(7, ComputeShare(/*request=*/0.25, /*limit=*/0.5, Priority::kHigh, 1));
//   q.Ready(7, now);
//   if (auto t = q.Next(now)) { issue one item of *t; later q.Done(*t, gpu_ns, now); }
//   else if (auto at = q.NextEligibleAt(now)) { wake at *at unless a Done comes first; }
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "scheduler/dispatch.h"

namespace remora::sched {

struct FairOptions {
  uint64_t tenant_in_flight_ns = 2'000'000;  // per tenant; one item always may go
  uint64_t device_in_flight_ns = 2'000'000;  // whole device; 0: unbounded
  uint64_t lower_in_flight_ns = 0;           // classes below a present higher one; 0: one item
  uint64_t limit_burst_ns = 20'000'000;      // a capped tenant may save limit x this
  uint64_t stall_ns = 5'000'000;             // rule 3: no Done this long lets one more go; 0: never
  // Items a tenant, and the device, may always have in flight whatever the ns
  // bounds: 1 is the strictest order; 2 lets the next item wait in the
  // device's queue while one runs, so the device never idles between items
  // for as long as a completion takes to be noticed (the server's choice).
  uint32_t min_in_flight = 1;
  uint64_t slice_ns = 0;              // rule 5: > 0, the length of a tenant's turn on the device
  uint64_t slice_idle_ns = 0;         // rule 5: how long an owner that paused keeps its turn
  uint64_t initial_cost_ns = 50'000;  // charged per item before any Done; the first only raises it
  uint64_t min_cost_ns = 1'000;       // predictions never go below this
  double cost_ewma = 0.125;           // weight of the newest Done in the prediction
};

class FairQueue final : public DispatchQueue {
 public:
  explicit FairQueue(FairOptions options = FairOptions());
  ~FairQueue() override;
  FairQueue(const FairQueue&) = delete;
  FairQueue& operator=(const FairQueue&) = delete;

  // The DispatchQueue contract (dispatch.h), plus: Next and IssueNow count the
  // item as in flight at the tenant's predicted cost until its Done; Done with
  // nothing in flight only trains the prediction; Done for an unknown tenant
  // is ignored. Remove drops the tenant's in-flight work from the bounds at once.
  void Ready(TenantId t, uint64_t now_ns) override;
  std::optional<TenantId> Next(uint64_t now_ns) override;
  using DispatchQueue::Done;
  void Done(TenantId t, uint32_t items, uint64_t gpu_ns, uint64_t now_ns) override;
  void Remove(TenantId t) override;
  // True only when Next would hand `t` out first: no other tenant of its class or a higher
  // one is ready, or `t` has its class's turn (rule 5) and no higher class is ready; and `t`
  // is within its limit, its in-flight bound, the device bound and the priority rules. So a
  // high-priority tenant beside busy lower ones, and the tenant whose turn it is, issue from
  // their own threads while the others wait, not one item per Next.
  bool IssueNow(TenantId t, uint64_t now_ns) override;
  void Return(TenantId t, uint32_t items) override;
  bool IsReady(TenantId t) const override;
  bool WaitsForDone() const override { return blocked_ > 0 || switching_; }
  bool WaitsForDrain() const override { return switching_ || pausing_; }
  void Configure(TenantId t, const Share& share) override;
  void ConfigureProject(ProjectId p, double share) override;
  std::optional<uint64_t> NextEligibleAt(uint64_t now_ns) const override;
  uint64_t stall_releases() const override { return stall_releases_; }

  // What the queue knows of a tenant, for tests, the simulator and `remora top`.
  struct TenantView {
    bool ready = false;      // between Ready and the Next that hands it out
    bool held = false;       // ready but held back by its (or its account's) limit
    uint32_t in_flight = 0;  // items handed out, not yet Done
    uint64_t in_flight_ns = 0;
    uint64_t predicted_ns = 0;  // the cost the next item will be charged
    double budget_ns = 0;       // its limit's token bucket (its account's); < 0: in debt
  };
  // Returns nullopt for a tenant the queue does not know.
  std::optional<TenantView> View(TenantId t) const;
  uint64_t in_flight_ns() const { return in_flight_ns_; }
  size_t tenants() const { return tenants_.size(); }

 private:
  struct Node;
  struct Inner;
  struct Tenant;
  // An entry of a group's ordered set: the node with the least tag goes next.
  struct Key {
    double tag;
    uint64_t seq;  // FIFO among equal tags
    Node* node;
    bool operator<(const Key& o) const { return tag < o.tag || (tag == o.tag && seq < o.seq); }
  };
  // Where nodes compete: a class root, a project or an account.
  struct Group {
    double vtime = 0;  // SFQ virtual time: the tag of the last node served here
    std::set<Key> eligible;
    Inner* owner = nullptr;  // nullptr for a class root
  };
  struct Node {
    double weight = 1;
    double tag = 0;  // service received / weight, in the parent's virtual time
    uint64_t seq = 0;
    bool queued = false;  // in parent->eligible
    uint64_t uid = 0;     // creation order: held_'s tie-break
    Group* parent = nullptr;
    Inner* inner = nullptr;    // set on a project's or an account's node
    Tenant* tenant = nullptr;  // set on a tenant's node
  };
  // A limit's token bucket (a tenant standing alone, or an account).
  struct Bucket {
    double limit = 0;  // 0: none
    double tokens = 0;
    uint64_t refilled_at = 0;
    uint64_t held_until = 0;
  };
  // Rule 3's stall: when a bound's in-flight work last made progress (a Done, or its first
  // item), and how many items have gone past the bound since.
  struct Progress {
    uint64_t at = 0;
    uint32_t stalls = 0;
  };
  // A project (account == kNoAccount) or an account: a node whose own group
  // holds its members' nodes.
  using InnerKey = std::tuple<int, ProjectId, AccountId>;
  struct Inner {
    Node node;
    Group group;
    InnerKey key;
    Bucket cap;
    bool held = false;  // in debt: out of its parent's set, in held_
    int members = 0;    // tenants below it
    int ready = 0;      // of which ready (held back or not)
    // An account's: its sessions' work in flight, and those blocked (by uid).
    uint32_t in_flight = 0;
    uint64_t in_flight_ns = 0;
    Progress progress;
    std::map<uint64_t, Tenant*> blocked;
  };
  enum class State : uint8_t { kIdle, kEligible, kBlocked, kHeld };
  struct Tenant {
    Node node;
    TenantId id = 0;
    Share share;
    Inner* account = nullptr;
    Inner* project = nullptr;
    State state = State::kIdle;
    bool trained = false;
    uint32_t in_flight = 0;
    uint64_t in_flight_ns = 0;
    uint64_t predicted_ns = 0;
    uint64_t paused_at = 0;  // rule 5: its last item in flight finished then
    Bucket cap;              // its own limit; unused in an account
    Progress progress;
    uint64_t stall_due = 0;  // blocked: when its bound's work counts as stalled (in held_)
  };
  struct Class {
    Group root;
    int present = 0;
    int ready = 0;
    uint32_t in_flight = 0;
    uint64_t in_flight_ns = 0;
    // Rule 5: whose turn it is (a tenant, or an account), and what it has had of it.
    const void* owner = nullptr;
    Tenant* owner_tenant = nullptr;  // the owner, when it is a tenant of its own
    uint64_t owner_ns = 0;
    // The last owner (a tenant, or an account), its turn going on or just ended, and when its
    // last item finished (0: it has work on the device).
    Tenant* last_tenant = nullptr;
    Inner* last_account = nullptr;
    uint64_t last_quiet_since = 0;
    const void* last() const {
      return last_account ? static_cast<const void*>(last_account) : last_tenant;
    }
    uint64_t waiting_since = 0;  // an item has waited for the device to drain since (0: none)
  };

  Tenant& Get(TenantId t);
  Inner& InnerFor(const InnerKey& key, Group* parent, double weight);
  void Release(Inner* in);
  void Attach(Tenant& tn);
  void Detach(Tenant& tn);
  static Node* Up(const Node& n);
  void Enqueue(Node& n);
  void Dequeue(Node& n);
  void Retag(Node& n, double tag);
  void Wake(Node& n);
  void WakeAncestors(Tenant& tn);
  void Refill(Bucket& b, uint64_t now) const;
  void Charge(Bucket& b, double ns, uint64_t now) const;
  uint64_t HeldUntil(const Bucket& b, uint64_t now) const;
  void Place(Tenant& tn, uint64_t now);
  void PlaceAccount(Inner& a, uint64_t now);
  void SetState(Tenant& tn, State s);
  void PlaceBlockedSessions(Inner* a, uint64_t now);
  void MakeIdle(Tenant& tn);
  bool Allowed(const Tenant& tn) const;
  bool AtOwnBound(const Tenant& tn) const;
  // Rule 3's stall: when work in flight of `n` items predicted at `ns` that last progressed
  // as `p` says counts as stalled, and whether it does now.
  uint64_t StallDue(const Progress& p, uint64_t ns) const;
  // Whether `tn`'s own (its account's) in-flight work fills its bound, stalled or not.
  bool TenantBinds(const Tenant& tn) const;
  bool AccountBinds(const Tenant& tn) const;
  // Whether the device's work in flight, of `tn`'s class and those above, fills its bound.
  bool DeviceBinds(const Tenant& tn) const;
  // An item goes with `n` items predicted at `ns` in flight under the bound `p` keeps, which
  // `binds` or not: its first item starts the clock, one past it stalled restarts it.
  void Went(Progress& p, uint32_t n, uint64_t ns, bool binds, uint64_t now);
  bool Stalled(const Progress& p, uint32_t n, uint64_t ns) const;
  // When every bound that holds `tn` back counts as stalled; 0: never (stall_ns = 0).
  uint64_t BlockedUntil(const Tenant& tn) const;
  bool WithinOwnBounds(Tenant& tn, uint64_t now);
  void Dispatch(Tenant& tn, uint64_t now, bool leaves_ready);
  void AddInFlight(Tenant& tn, int64_t n, int64_t ns);
  // Takes `items` of `tn` out of flight, corrected to `gpu_ns` of measured time.
  void Settle(Tenant& tn, uint32_t items, double gpu_ns, uint64_t now);
  double Burst(const Bucket& b) const;
  // Rule 5: who takes turns (a tenant, or its account), and its items in flight.
  static const void* SliceKey(const Tenant& tn);
  static uint32_t SliceInFlight(const Tenant& tn);
  // Rule 5: the last owner paused less than slice_idle_ns ago with nothing ready or in
  // flight, and goes before `tn` when it comes back: its turn goes on, or rule 2 would give
  // it the next.
  bool PauseHolds(const Class& cls, const Tenant& tn) const;
  // Rule 5: during such a pause, `tn`'s next item may fill it: nothing of the class is on the
  // device, the item is known to be shorter than a pause (the owner, back, waits for one such
  // item at most, and keeps its turn), and rule 2 puts `tn` no later than the owner.
  bool FillsPause(const Class& cls, const Tenant& tn) const;
  // The ancestor of `n` just below its class's root (or `n`): where two nodes meet.
  static const Node* Top(const Node& n);
  // Rule 5: `tn` (a tenant standing alone) has its class's turn, and no higher class is ready.
  bool HasTurn(const Tenant& tn) const;

  const FairOptions opt_;
  std::unordered_map<TenantId, std::unique_ptr<Tenant>> tenants_;
  std::map<InnerKey, std::unique_ptr<Inner>> inners_;
  std::unordered_map<ProjectId, double> project_shares_;
  mutable Class classes_[kPriorities];  // mutable: Allowed notes when a switch began
  // (until, uid, node): tenants and accounts held back by their limits, and tenants blocked
  // at a bound until its work counts as stalled (rule 3).
  std::set<std::tuple<uint64_t, uint64_t, Node*>> held_;
  uint64_t seq_ = 0;
  uint64_t uids_ = 0;
  uint64_t now_ = 0;  // the latest time seen, for Configure
  int ready_ = 0;
  int blocked_ = 0;  // tenants in State::kBlocked
  // Rule 5: an item waits for another tenant's work to leave the device.
  mutable bool switching_ = false;
  mutable bool pausing_ = false;  // rule 5: an item waits while the owner pauses
  uint32_t in_flight_ = 0;
  uint64_t in_flight_ns_ = 0;
  Progress progress_;  // the device's (rule 3)
  uint64_t stall_releases_ = 0;
};

}  // namespace remora::sched
