// server/executor_meter.cc - the executor's GPU-time meter: charge groups closed by markers,
// timed by the emulated GPU's busy clock or by timing events, charged to the tenant and its
// dispatch queue. The arithmetic is in gpu_time.h.
#include <algorithm>
#include <utility>

#include "server/executor_internal.h"

namespace remora::server {

// Every item the queue hands out is reported back with Done, once the device
// is past it, with the GPU time it took. Items go in groups (ChargeGroups,
// gpu_time.h), each closed by a charge marker recorded after its last item, so
// Dones come back while the device still has work queued: a tenant held at its
// in-flight bound is given more before the device runs dry, and one marker
// serves many short items. GPU time is what the emulated device measured
// itself running the stream's work; on a GPU, what timing events around the
// group's items measured (StartGroupLocked).
void Executor::Tenant::CountIssuedLocked(Stream& st) {
  if (st.groups.Issued()) ChargeLocked(st);
}

void Executor::Tenant::StartGroupLocked(Stream& st) {
  if (!ex_.timing_events_ || st.group_start != nullptr || st.group_wall) return;
  Result<CUevent> e = ex_.AcquireTimer();
  if (e.ok() && ex_.dev_.drv().cuEventRecord(*e, st.s) == CUDA_SUCCESS) {
    st.group_start = *e;
    st.group_epoch = ex_.dev_.epoch();
    return;
  }
  if (e.ok()) ex_.ReleaseTimer(*e, ex_.dev_.epoch());
  st.group_wall = true;  // this group is charged by wall time
}

void Executor::Tenant::CutGroupLocked(Stream& st) {
  if (st.group_start == nullptr) return;
  Result<CUevent> end = ex_.AcquireTimer();
  if (end.ok() && ex_.dev_.drv().cuEventRecord(*end, st.s) == CUDA_SUCCESS) {
    st.group_done.emplace_back(std::exchange(st.group_start, nullptr), *end);
    return;
  }
  if (end.ok()) ex_.ReleaseTimer(*end, st.group_epoch);
  ex_.ReleaseTimer(std::exchange(st.group_start, nullptr), st.group_epoch);
  st.group_wall = true;  // this group is charged by wall time
}

// A segment ends where the stream may run dry and the tenant knows it: at a
// synchronization, and when the dispatch queue holds the tenant back (a compute
// limit, another tenant's turn). If the stream was still busy, the next segment
// starts where the last one ended and nothing is lost; if it ran dry, the idle
// time between is charged to nobody. Not cut: a pause in the tenant's own issue
// (host work between launches). An end event records when the device reaches
// it, and the device reaches one recorded after the pause only then: the idle
// stream would be charged all the same, for two event records per item.

void Executor::Tenant::PauseGroupsLocked() {
  if (!ex_.timing_events_) return;
  for (auto& [id, st] : streams_) CutGroupLocked(*st);
}

void Executor::Tenant::ChargeLocked(Stream& st) {
  const uint32_t n = st.groups.Close();
  const uint64_t start = ex_.NowNs();
  // The group ran in its segments, each from a start event to an end event: the
  // device's own clock, idle time before the group and waits for other streams
  // left out.
  CutGroupLocked(st);
  Timed timed{.segments = std::exchange(st.group_done, {}),
              .wall = std::exchange(st.group_wall, false) || !ex_.timing_events_,
              .epoch = st.group_epoch};
  WatchStreamLocked(
      st,
      [self = weak_from_this(), id = st.id, n, start, timed = std::move(timed)](const Status&) {
        if (auto t = self.lock()) t->Charged(id, n, start, timed);
      },
      /*lazy=*/true);
}

void Executor::Tenant::Charged(uint64_t stream, uint32_t n, uint64_t start, const Timed& timed) {
  {
    std::lock_guard lock(mu_);
    const uint64_t now = ex_.NowNs();
    bool wall = timed.wall;
    double ms_sum = 0;
    for (auto [a, b] : timed.segments) {
      float ms = 0;
      wall |= timed.epoch != ex_.dev_.epoch() ||
              ex_.dev_.drv().cuEventElapsedTime(&ms, a, b) != CUDA_SUCCESS || ms < 0;
      ms_sum += static_cast<double>(ms);
      ex_.ReleaseTimer(a, timed.epoch);
      ex_.ReleaseTimer(b, timed.epoch);
    }
    uint64_t gpu_ns = wall ? now - start : static_cast<uint64_t>(ms_sum * 1e6);
    if (auto it = streams_.find(stream); it != streams_.end()) {
      Stream& st = *it->second;
      if (std::optional<uint64_t> busy = ex_.timing_events_ ? std::nullopt : ex_.BusyNs(st.s))
        gpu_ns = st.busy.Take(*busy);
      if (st.groups.Charged(n)) ChargeLocked(st);
    }
    std::lock_guard ex_lock(ex_.mu_);
    gpu_ns_ += gpu_ns;
    usage_.Add(gpu_ns, now);
    ex_.order_->Done(id_, n, gpu_ns, now);
    // A grant left over (nothing was ready to use it) would hold room in the
    // bounds the others may want: it comes back with each charge.
    if (!ordering_.AnyReady()) ex_.ReturnGrantLocked(*this);
  }
  ex_.Pump();
}

}  // namespace remora::server
