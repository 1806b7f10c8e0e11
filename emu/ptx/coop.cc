// emu/ptx/coop.cc - blocks all resident at once, the workers taking turns: cooperative launches,
// and the blocks of an ordinary grid whose started blocks wait on them (dispatch.cc).
//
// cooperative_groups' grid.sync() has one thread per block add to a counter in the grid
// workspace and spin until the last block's arrival flips it, so a block that waits there
// only finishes once every other block has run up to the same point. An ordinary launch runs
// each block to its end and would never start the blocks that waiter needs. Here each block
// keeps its own Cta for the whole launch; a worker takes any block no other worker holds,
// runs it until it ends or a warp has used its slice of instructions (RunCtaSlice), puts it
// back, and moves on to the next. No block belongs to a worker, so the launch completes even
// if only the launching thread ever runs (the helpers are busy with other launches).
#include <atomic>
#include <memory>
#include <thread>

#include "emu/ptx/sched.h"

namespace remora::emu::ptx {

namespace {

enum BlockState : uint8_t { kWaiting, kHeld, kEnded };

struct Block {
  // kWaiting -> kHeld by the worker whose compare-exchange won (acquire: pairs with the
  // release that put the block back, so the Cta it left is visible); back to kWaiting or on
  // to kEnded by that worker.
  std::atomic<uint8_t> state{kWaiting};
  bool started = false;  // written by the holder only
  Cta cta;
};

}  // namespace

void RunResident(const LaunchCtx& L, uint64_t first, uint64_t nblocks, unsigned workers,
                 uint64_t* warp_n, uint64_t* thread_n) {
  auto blocks = std::make_unique<Block[]>(nblocks);
  std::atomic<uint64_t> ended{0};  // blocks that ran to their end; relaxed: a count only
  std::atomic<uint64_t> total_warp{0}, total_thread{0};
  auto work = [&](unsigned worker) {
    uint64_t misses = 0;  // blocks in a row that other workers held
    for (uint64_t i = worker % nblocks;; i = i + 1 == nblocks ? 0 : i + 1) {
      if (ended.load(std::memory_order_relaxed) == nblocks) break;
      if (L.failed->load(std::memory_order_relaxed)) break;
      if (Cancelled(L)) [[unlikely]]
        break;
      Block& b = blocks[i];
      uint8_t waiting = kWaiting;
      if (!b.state.compare_exchange_strong(waiting, kHeld, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
        // A full pass found nothing to take: let the holders' threads have the core.
        if (++misses >= nblocks) {
          misses = 0;
          std::this_thread::yield();
        }
        continue;
      }
      misses = 0;
      if (!b.started) {
        PrepareCta(L, b.cta, worker);
        StartCta(L, b.cta, first + i);
        b.started = true;
      }
      b.cta.worker = worker;  // %smid: the core it runs on now
      const CtaEnd end = RunCtaSlice(L, b.cta);
      if (end == CtaEnd::kYielded) {
        b.state.store(kWaiting, std::memory_order_release);  // pairs with the acquire above
        continue;
      }
      CountInstructions(L, b.cta, total_warp, total_thread);
      b.cta = Cta();  // its buffers are not needed again
      b.state.store(kEnded, std::memory_order_relaxed);
      if (end == CtaEnd::kFailed) break;  // L.failed stops the other workers
      ended.fetch_add(1, std::memory_order_relaxed);
    }
  };
  RunOnWorkers(workers, L.cfg->priority, work);
  *warp_n += total_warp.load();
  *thread_n += total_thread.load();
}

}  // namespace remora::emu::ptx
