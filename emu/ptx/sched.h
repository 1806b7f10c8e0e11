// emu/ptx/sched.h - the block scheduler's pieces that launch.cc shares with coop.cc.
//
// An ordinary launch runs each block to its end on one of the device's cores (dispatch.h). A
// cooperative launch (coop.cc) keeps every block's state alive and lets the workers take turns over
// them, so blocks that wait on each other (grid.sync) all progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "emu/ptx/exec.h"

namespace remora::emu::ptx {

// How a call that runs a block's warps ended.
enum class CtaEnd : uint8_t {
  kDone,     // every thread exited
  kFailed,   // a fault (or cancellation) was recorded in the launch; stop
  kYielded,  // cooperative only: a warp ran its slice; call RunCtaSlice again later
};

// Fills P.together, one entry per instruction of P.code, for the warps that run together.
void PlanTogether(ProgramImpl& P);
// Sizes `cta` for L's kernel and block shape and zeroes its shared and local memory.
void PrepareCta(const LaunchCtx& L, Cta& cta, unsigned worker);
// Sets up block `linear` (row-major over the grid) in a prepared `cta`: every lane at entry.
void StartCta(const LaunchCtx& L, Cta& cta, uint64_t linear);
// Starts block `linear` in a prepared `cta` and runs it to its end; false after a fault.
bool RunCta(const LaunchCtx& L, Cta& cta, uint64_t linear);
// Adds what `cta`'s warps ran since they were last counted to `warp_n` and `thread_n` (a
// launch's totals, shared by its workers), and starts their counts again.
void CountInstructions(const LaunchCtx& L, Cta& cta, std::atomic<uint64_t>& warp_n,
                       std::atomic<uint64_t>& thread_n);
// After a launch: keeps a worker's buffers for the next one unless they are large.
void TrimCta(Cta& cta);
// Runs a started block until it ends or one of its warps used its slice of instructions; then
// the worker may run another block (RunResident).
CtaEnd RunCtaSlice(const LaunchCtx& L, Cta& cta);

// True once LaunchConfig::cancel has turned true, after recording the launch's fault
// (kLaunchTimeout, "cancelled"); every place that stops a cancelled launch asks here.
bool Cancelled(const LaunchCtx& L);

// Runs fn(0) on the calling thread and fn(1..n-1) on the shared helper threads of `priority`;
// returns when all have returned.
void RunOnWorkers(unsigned n, int priority, const std::function<void(unsigned)>& fn);

// Runs blocks [first, first + nblocks) of L's grid, all resident at once, over `workers` threads:
// every block of a cooperative launch, or an ordinary grid's blocks that its running ones wait
// on. Faults and cancellation are recorded in L as for an ordinary launch. Adds the
// instructions run to *warp_n and *thread_n.
void RunResident(const LaunchCtx& L, uint64_t first, uint64_t nblocks, unsigned workers,
                 uint64_t* warp_n, uint64_t* thread_n);

}  // namespace remora::emu::ptx
