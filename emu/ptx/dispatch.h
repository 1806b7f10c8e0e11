// emu/ptx/dispatch.h - the device's block dispatcher: the blocks of every running grid, from
// every stream and every tenant, share the device's cores, block by block, as a GPU's
// multiprocessors are shared.
//
// The rules, as a GPU's dispatcher follows them:
//  - A core runs one block at a time, to its end. When it frees, it takes the next block of the
//    first grid in the device's order: higher stream priority first (CUDA's order: lower is
//    higher), then the grid launched first. A grid launched later therefore starts on the cores
//    the earlier one's last blocks leave, and two saturating streams' kernels take turns rather
//    than running each at full speed: they slow each other down, as on a GPU.
//  - A grid of higher priority starts its blocks at once: a lower-priority block already
//    running finishes beside them (no new one starts), on a host thread of lower priority, so
//    the host hands the core over at once where a GPU would at the block's end.
//  - Residency, which a GPU has and two cores lack: when no block has ended on the device for
//    kStuck while a grid has had no core (its blocks spin on another grid's progress, say), that
//    grid's launching thread runs its blocks beside the stuck ones (all of them if no grid of
//    higher priority waits, else one per kStuck), so a kernel waiting on another always
//    progresses. And when a grid's own running blocks hold every core and wait on its blocks
//    not yet started (blocks of one grid spinning on each other, as a GPU keeps them all
//    resident), no block having ended for kStuckWithin (none of its own for kStuckAmongOthers
//    while other grids' blocks go on ending: another tenant's busy stream must not keep a GPU's
//    co-resident blocks apart), a thread of the device's runs those blocks, a window at a time,
//    all resident at once and taking turns.
//  - The same when a core is free but no block ended for kStuck (the first grid's helper, at the
//    host's idle priority, starves behind busy host threads): the waiting grid takes the core,
//    so a starved thread never holds the device still.
// Cooperative launches do not come here: their blocks are all resident at once (coop.cc).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>

#include "emu/ptx/exec.h"

namespace remora::emu::ptx {

// An ordinary launch's grid, from its launching thread to the dispatcher.
struct Grid {
  const LaunchCtx* L = nullptr;
  int priority = 0;
  uint64_t nblocks = 0;
  unsigned max_running = 0;  // LaunchConfig::workers, or 0: as many as the device has cores
  // Instructions its blocks ran (LaunchStats).
  std::atomic<uint64_t> warp_n{0}, thread_n{0};

  // The dispatcher's; the launching thread leaves them alone.
  uint64_t seq = 0;                      // launch order
  std::atomic<uint64_t> next{0};         // the next block to start; >= nblocks: none left
  unsigned running = 0;                  // blocks started and not ended
  bool resident = false;                 // a thread runs its blocks not yet started, all resident
  std::atomic<uint64_t> last_end_ns{0};  // when one of its blocks last ended, or it was launched
  std::condition_variable wake;          // its launching thread: a core, its end, or kStuck
  bool Left() const { return next.load(std::memory_order_relaxed) < nblocks; }
};

// The device's cores (the host's hardware threads, 2 at least): %nsmid, and how many blocks run
// at once outside residency.
unsigned DeviceCores();

// Runs every block of `g` on the device's cores, beside every other grid dispatched meanwhile,
// in the order above; returns once each block has ended, or the launch failed or was cancelled
// (L's fault says which). The calling thread runs some of the blocks itself.
void DispatchGrid(Grid& g);

}  // namespace remora::emu::ptx
