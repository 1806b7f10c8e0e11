// scheduler/shares.h - TargetShares: what each tenant's share of GPU time comes to.
//
// The reference answer to "what should each tenant get of the GPU's time", from
// the same rules FairQueue enforces (fair_queue.h), computed directly rather
// than by running the queue: strict priority classes, then water-filling by
// project share, then by request (an account's sessions evenly within its
// request), each tenant or account capped by its limit and by its demand. The
// simulator checks the queue against it; `remora list` shows it as the target.
//
//   std::vector<Contender> c = {{ComputeShare(1)}, {ComputeShare(3)}};
//   TargetShares(c, {});  // {0.25, 0.75}
#pragma once

#include <map>
#include <span>
#include <vector>

#include "scheduler/dispatch.h"

namespace remora::sched {

struct Contender {
  Share share;
  // The most of the device it could use (its demand), before its limit; in
  // [0, 1]. 1: saturating.
  double demand = 1;
};

// Each contender's share of the device, in input order. `projects` holds the
// projects' shares (a project not in it has share 1). Limits are fractions of
// the device, scaled by `limit_scale` first (the simulator's devices run
// several items at once). What a higher class leaves under its limits and
// demands goes to the next; the shares add up to at most 1.
std::vector<double> TargetShares(std::span<const Contender> contenders,
                                 const std::map<ProjectId, double>& projects,
                                 double limit_scale = 1);

// The target `remora list` shows for each tenant (input order): its
// TargetShares share were every tenant of its class busy, after what the
// classes above use now (`achieved`, each tenant's share of the device over a
// recent window: an idle high-priority tenant takes nothing from the rest).
// REQUIRES: achieved.size() == shares.size().
std::vector<double> ListedTargets(std::span<const Share> shares, std::span<const double> achieved,
                                  const std::map<ProjectId, double>& projects);

}  // namespace remora::sched
