// emu/ptx/interp.h - launch entry point with counters, for benchmarks and the emulator's clock.
#pragma once

#include <cstdint>

#include "emu/ptx/ptx.h"

namespace remora::emu::ptx {

struct LaunchStats {
  uint64_t thread_instructions = 0;  // sum over executed instructions of active lanes
  uint64_t warp_instructions = 0;    // decoded instructions issued (including fully predicated off)
};

// Launch, also filling `stats` (may be null). Same contract as Launch in ptx.h.
Status LaunchWithStats(const Program& program, size_t kernel, const LaunchConfig& config,
                       LaunchStats* stats);

}  // namespace remora::emu::ptx
