// emu/ptx/async.h - cp.async, cp.async.bulk and mbarrier: the forms the decoder and the
// scheduler share with exec_async.cc.
//
// Copies run when they are issued, which is one of the executions the asynchronous semantics
// allow: a later wait (cp.async.wait_group, an mbarrier phase) finds them done. What a program
// can observe is the mbarrier's phases, and those are exact: arrivals, transaction counts and
// parity as PTX specifies, with try_wait parking the lane until its phase completes.
#pragma once

#include <string>
#include <string_view>

#include "emu/ptx/exec.h"

namespace remora::emu::ptx {

// One per instruction form; kept in Inst::target. Operands (the decoder's layout):
//   pair = two source slots a[i], a[i+1]: base register (or kNoReg) and offset constant;
//   mem  = the Inst's address (base, off, symkind).
enum class AsyncForm : uint32_t {
  kCpAsyncCa,          // cp.async.ca.shared.global pair, mem, cp-size{, src-size | ignore-src}
  kCpAsyncCg,          //   a[2] src-size (or kNoReg), a[3] ignore-src predicate (or kNoReg)
  kCpCommit,           // cp.async.commit_group
  kCpWaitGroup,        // cp.async.wait_group N
  kCpWaitAll,          // cp.async.wait_all
  kCpMbarArrive,       // cp.async.mbarrier.arrive.shared.b64 mem
  kCpMbarArriveNoinc,  // cp.async.mbarrier.arrive.noinc.shared.b64 mem
  kBulkG2S,            // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
  kBulkS2S,            //   (or .shared::cta source): pair dst, mem src, a[2] size, a[3..4] mbar
  kBulkS2G,     // cp.async.bulk.global.shared::cta.bulk_group mem dst, a[0..1] src, a[2] size
  kBulkCommit,  // cp.async.bulk.commit_group
  kBulkWait,    // cp.async.bulk.wait_group{.read} N
  kMbInit,      // mbarrier.init mem, a[0] count
  kMbInval,     // mbarrier.inval mem
  kMbArrive,    // mbarrier.arrive d state, mem{, a[0] count}
  kMbArriveNoComplete,  // mbarrier.arrive.noComplete d, mem, a[0] count
  kMbArriveExpectTx,    // mbarrier.arrive.expect_tx d, mem, a[0] tx-count
  kMbArriveDrop,        // mbarrier.arrive_drop d, mem{, a[0] count}
  kMbArriveDropNoComplete,
  kMbArriveDropExpectTx,
  kMbExpectTx,        // mbarrier.expect_tx mem, a[0] tx-count
  kMbCompleteTx,      // mbarrier.complete_tx mem, a[0] tx-count
  kMbTestWait,        // mbarrier.test_wait d, mem, a[0] state
  kMbTestWaitParity,  //   .parity: a[0] phase parity
  kMbTryWait,         // mbarrier.try_wait d, mem, a[0] state{, a[1] suspend-time hint}
  kMbTryWaitParity,
  kMbPendingCount,  // mbarrier.pending_count.b64 d, a[0] state
};

// Decodes the words after the base mnemonic of a cp/mbarrier instruction into `in`: the form
// (in.target), the state space of its mem operand (in.space). Sets *cache_hint when the form
// takes a trailing cache-policy operand. Returns an empty string, or why the form is refused
// ("cp.async.bulk.tensor is not supported").
std::string DecodeAsyncModifiers(std::string_view mnemonic, Inst& in, bool* cache_hint);

// Resumes a lane parked in mbarrier.try_wait: its predicate gets `complete`, it moves past
// the instruction and runs again. RunCta calls it with false when nothing else in the CTA can
// run (PTX lets try_wait return false after a time limit of its own choosing).
void ResumeMbarWaiter(const ProgramImpl& P, Warp& w, int lane, bool complete);

}  // namespace remora::emu::ptx
