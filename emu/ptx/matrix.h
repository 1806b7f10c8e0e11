// emu/ptx/matrix.h - decoding and selection of the warp-level matrix instructions.
//
// mma, ldmatrix, movmatrix and wmma carry register vectors longer than Inst's operand slots, so
// the parser decodes them into a MatrixOp (ir.h) kept in ProgramImpl::matrix and selects their
// exec function here (exec_mma.cc) rather than through the ops.def row's select_ function:
//
//   MatrixOp m;
//   DecodeMatrixForm(Op::kMma, "sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", &m, &space);
//   // ... the parser fills m.d/a/b/c with m.nd/na/nb/nc register slots ...
//   ExecFn fn = SelectMatrix(m);  // nullptr: refused when reached, naming the form
#pragma once

#include <string_view>

#include "emu/ptx/ir.h"

namespace remora::emu::ptx {

// Decodes the modifiers after the base mnemonic (`mods`, '.'-separated) of mnemonic `op` (kMma,
// kLdmatrix, kMovmatrix or kWmma) into `m`, with the register count of each vector operand, and
// the state space into `*space`. A modifier or combination it does not implement leaves
// m->supported false instead of failing: the instruction is refused only if it runs.
void DecodeMatrixForm(Op op, std::string_view mods, MatrixOp* m, Space* space);

// Returns the exec function for a decoded matrix instruction, or nullptr if its form is not
// implemented.
ExecFn SelectMatrix(const MatrixOp& m);

}  // namespace remora::emu::ptx
