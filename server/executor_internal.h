// server/executor_internal.h - the executor's private types, shared by its files
// (executor.cc: queues and polling; executor_meter.cc: GPU time). Not for other modules.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/executor.h"
#include "server/gpu_time.h"

namespace remora::server {

struct Executor::Poll {
  uint64_t epoch = 0;
  CUevent event = nullptr;  // null: already complete with `status`
  bool marker = false;      // a pooled marker to give back when done
  bool lazy = false;        // accounting only: nobody waits for it
  // A wait somebody is blocked in that no doorbell announces (a GPU waiter's long spin, an
  // event synchronize), begun at `since` (NowNs): polled at a fraction of its age.
  bool unannounced = false;
  uint64_t since = 0;
  Completion done;
  std::string observer;  // whose work, for the fault log
  Status status;

  // A poll of `event` (a pooled marker when `marker`).
  static Poll Of(uint64_t epoch, CUevent event, bool marker, Completion done, std::string who) {
    Poll p;
    p.epoch = epoch;
    p.event = event;
    p.marker = marker;
    p.done = std::move(done);
    p.observer = std::move(who);
    return p;
  }
  // A completion already decided: it runs with `status` on the executor's thread.
  static Poll Decided(uint64_t epoch, Completion done, std::string who, Status status) {
    Poll p = Of(epoch, nullptr, false, std::move(done), std::move(who));
    p.status = std::move(status);
    return p;
  }
};

// A gate's two halves (Tenant::Gate): its stream reached it, and it was opened. Whichever
// comes second releases the hold.
struct GateState {
  std::mutex mu;
  bool reached = false, opened = false;
  // Records one half; true if the other had come already.
  bool Arrive(bool reached_now) {
    std::lock_guard lock(mu);
    (reached_now ? reached : opened) = true;
    return reached && opened;
  }
};

struct Executor::Tenant::Item {
  enum class Kind { kIssue, kLaunch, kRecord, kWaitEvent, kHostFunc, kWait };
  Kind kind = Kind::kIssue;
  Issue issue;
  bool idles = false;  // kIssue: may hold the stream idle on the device (Submit)
  CUevent event = nullptr;
  uint64_t host_id = 0;
  std::shared_ptr<GateState> gate;  // kHostFunc: a gate (Tenant::Gate), not the tenant's function
  Completion done;
  std::vector<Completion> waiters;  // kRecord: WhenEventDone calls made while it was queued
  // kLaunch: the launch; its views point at the request until Keep() copies them here.
  LaunchArgs launch;
  bool kept = false;
  std::string params;
  std::vector<uint32_t> offsets;

  static Item Of(Kind kind) {
    Item i;
    i.kind = kind;
    return i;
  }
  // The launch outlives the request it came in: it owns its parameters from now on.
  void Keep() {
    if (kind != Kind::kLaunch || kept) return;
    params.assign(launch.params);
    if (launch.cooperative) offsets.assign(launch.cooperative->begin(), launch.cooperative->end());
    kept = true;
  }
  // The launch's arguments, wherever its bytes live now.
  LaunchArgs Args() const {
    LaunchArgs a = launch;
    if (kept) {
      a.params = params;
      if (a.cooperative) a.cooperative = std::span<const uint32_t>(offsets);
    }
    return a;
  }
};

// A stream's device side; its queue and order are in Tenant::ordering_.
struct Executor::Tenant::Stream {
  uint64_t id = 0;
  CUstream s = nullptr;
  CUevent order_marker = nullptr;  // recorded when another stream must follow this one
  // GPU-time accounting (executor_meter.cc): the stream's charge groups, and its
  // busy clock where the device reports one.
  ChargeGroups groups;
  BusyClock busy;
  // Timing events (Executor::timing_events_): the open group's segments, each
  // bracketed by a start and an end event and ended by a wait for another
  // stream (the wait is not the tenant's GPU time) or by a hold (the stream may
  // run dry: the idle time is nobody's); the open segment's start; whether a
  // timing event failed, so the group is charged by wall time.
  std::vector<std::pair<CUevent, CUevent>> group_done;
  CUevent group_start = nullptr;
  bool group_wall = false;
  uint64_t group_epoch = 0;
};

}  // namespace remora::server
