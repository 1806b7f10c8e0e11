// emu/ptx/regalloc.h - a kernel's register slots packed by liveness, once at load.
#pragma once

#include "emu/ptx/ir.h"

namespace remora::emu::ptx {

// Renumbers the register slots of every kernel without calls so that registers never live at
// the same point share a slot. nvcc's PTX names a fresh virtual register per value (the scan
// sample's block scan declares 59 where 17 are ever live at once), and a block's warps touch
// 256 bytes per slot each: packed, a block's registers stay in the host's L1 cache.
//
// A register's interval is the span of code, in program order, from the first to the last
// point where it is defined, read or live; registers whose intervals overlap (one read where
// the other is written included) never share a slot, so no instruction's destination aliases
// one of its sources that PTX kept apart. A guarded instruction also reads its destinations
// (the lanes it skips keep their values). Lanes at different points of divergent code each see
// only their own values, so per-lane liveness is the scalar thread's.
//
// A kernel keeps its slots if it has an instruction whose operands are not all in Inst's
// d/a/base/guard fields (calls, matrix, async-copy, mbarrier, texture and surface forms).
// KernelInfo::num_regs, the count programs see, stays as declared.
void PackRegisters(ProgramImpl& P);

}  // namespace remora::emu::ptx
