// scheduler/shares.cc - hierarchical water-filling of the device's time.
#include "scheduler/shares.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace remora::sched {

namespace {

// Splits `capacity` among children by weight, none above its ceiling; what a
// capped child leaves is split again among the rest.
std::vector<double> WaterFill(const std::vector<double>& weight, const std::vector<double>& ceiling,
                              double capacity) {
  const size_t n = weight.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return ceiling[a] / weight[a] < ceiling[b] / weight[b]; });
  double w = 0;
  for (double x : weight) w += x;
  std::vector<double> out(n, 0);
  for (size_t i : order) {
    const double give = w > 0 ? std::min(ceiling[i], capacity * weight[i] / w) : 0;
    out[i] = give;
    capacity -= give;
    w -= weight[i];
  }
  return out;
}

// A node of the share hierarchy: a project, an account, or a tenant (leaf).
struct Tree {
  double weight = 1;
  double cap = 1;  // the node's own ceiling; its demand is its children's
  size_t leaf = SIZE_MAX;
  std::map<std::pair<int, uint64_t>, Tree> kids;  // ordered: deterministic

  double Ceiling(const std::vector<double>& leaf_ceiling) const {
    if (leaf != SIZE_MAX) return leaf_ceiling[leaf];
    double sum = 0;
    for (const auto& [key, kid] : kids) sum += kid.Ceiling(leaf_ceiling);
    return std::min(cap, sum);
  }
  void Fill(double capacity, const std::vector<double>& leaf_ceiling,
            std::vector<double>& out) const {
    if (leaf != SIZE_MAX) {
      out[leaf] = capacity;
      return;
    }
    std::vector<double> w, m;
    for (const auto& [key, kid] : kids) {
      w.push_back(kid.weight);
      m.push_back(kid.Ceiling(leaf_ceiling));
    }
    std::vector<double> got = WaterFill(w, m, capacity);
    size_t k = 0;
    for (const auto& [key, kid] : kids) kid.Fill(got[k++], leaf_ceiling, out);
  }
};

// A limit as a ceiling: none (0) or the whole device is no ceiling.
double Cap(double limit, double scale) {
  return limit > 0 && limit < 1 ? limit * scale : 1;
}

}  // namespace

std::vector<double> TargetShares(std::span<const Contender> contenders,
                                 const std::map<ProjectId, double>& projects, double limit_scale) {
  const size_t n = contenders.size();
  std::vector<double> out(n, 0), ceiling(n);
  for (size_t i = 0; i < n; ++i) {
    const Share& s = contenders[i].share;
    ceiling[i] = std::clamp(contenders[i].demand, 0.0, 1.0);
    // An account's limit caps its sessions together (in the tree), not each.
    if (s.account == kNoAccount) ceiling[i] = std::min(ceiling[i], Cap(s.limit, limit_scale));
  }
  enum Kind { kProject, kAccount, kTenant };
  double capacity = 1;
  for (int c = 0; c < kPriorities; ++c) {
    // Projects, then accounts, then tenants, as the queue nests them.
    Tree root;
    for (size_t i = 0; i < n; ++i) {
      const Share& s = contenders[i].share;
      if (static_cast<int>(s.priority) != c) continue;
      Tree* at = &root;
      if (s.project != kNoProject) {
        auto [it, fresh] = at->kids.try_emplace({kProject, s.project});
        if (fresh) {
          auto p = projects.find(s.project);
          it->second.weight = p == projects.end() ? 1.0 : p->second;
        }
        at = &it->second;
      }
      if (s.account != kNoAccount) {
        Tree& a = at->kids[{kAccount, s.account}];
        a.weight = s.request;
        a.cap = Cap(s.limit, limit_scale);
        at = &a;
      }
      Tree& leaf = at->kids[{kTenant, i}];
      leaf.leaf = i;
      leaf.weight = s.account != kNoAccount ? 1 : s.request;
    }
    if (root.kids.empty()) continue;
    const double used = std::min(capacity, root.Ceiling(ceiling));
    root.Fill(used, ceiling, out);
    capacity -= used;
    if (capacity < 1e-9) capacity = 0;  // rounding: a saturated class leaves nothing
  }
  return out;
}

std::vector<double> ListedTargets(std::span<const Share> shares, std::span<const double> achieved,
                                  const std::map<ProjectId, double>& projects) {
  std::vector<double> out(shares.size(), 0);
  std::vector<Contender> contenders;
  std::vector<size_t> index;
  for (int c = 0; c < kPriorities; ++c) {
    contenders.clear();
    index.clear();
    for (size_t i = 0; i < shares.size(); ++i) {
      const int k = static_cast<int>(shares[i].priority);
      if (k > c) continue;
      contenders.push_back({shares[i], k < c ? achieved[i] : 1.0});
      index.push_back(i);
    }
    const std::vector<double> target = TargetShares(contenders, projects);
    for (size_t j = 0; j < index.size(); ++j)
      if (static_cast<int>(contenders[j].share.priority) == c) out[index[j]] = target[j];
  }
  return out;
}

}  // namespace remora::sched
