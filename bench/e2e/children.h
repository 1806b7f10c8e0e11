// bench/e2e/children.h - the child modes of remora_e2e_bench (re-executed with --e2e_child=MODE).
//
// Some measurements cannot share the parent's process: the stub connects once
// per process (so a gRPC tenant needs its own), and the in-process launch
// baseline must not run the emulator beside the stub. The parent re-executes
// itself with --e2e_child=MODE and reads key=value results from the child's stdout.
//
//   remora_e2e_bench --e2e_child=grpc_rt 20000          (REMORA_SERVER=grpc://...)
//   remora_e2e_bench --e2e_child=emu_launch 10000 5
//   remora_e2e_bench --e2e_child=emu_sync 1            (blocks on request from stdin)
//   remora_e2e_bench --e2e_child=emu_sync 3 1000       (the same)
//   remora_e2e_bench --e2e_child=wait 1000 0           (REMORA_SERVER=unix:...; stdin)
//   remora_e2e_bench --e2e_child=emu_sgemm 1024        (blocks on request from stdin)
//   remora_e2e_bench --e2e_child=emu_conv              (blocks on request from stdin)
//   remora_e2e_bench --e2e_child=fault                 (REMORA_SERVER=unix:...)
//   remora_e2e_bench --e2e_child=fresh                 (REMORA_SERVER=unix:...)
//   remora_e2e_bench --e2e_child=stub_launch 10000     (REMORA_SERVER=unix:...; stdin)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace remora::bench::e2e {

// Samples per block of the added-latency benchmark (floor, remote and in-process blocks).
inline constexpr size_t kSyncBlock = 1000;

// Round trips of cudaStreamQuery on an idle created stream through the stub over
// whatever REMORA_SERVER names, `iters` samples after a warm-up. Prints
// mean_ns, p50_ns, p99_ns, n. Returns the process exit code.
int RunRoundTripChild(int iters);

// The in-process launch baseline (emu_launch.cc); batches == 0 serves batches on
// request from stdin (see emu_launch.cc).
int RunEmuLaunchChild(int launches, int batches);

// The added-latency baseline (emu_sync.cc): `which` 0 = cuStreamQuery, 1 = a 4-byte
// cuMemcpyDtoH, 2 = an empty launch + cuStreamSynchronize, on the emulated driver
// in-process, kSyncBlock calls per stdin line; 3 and 4 = bench_wait.cc's baseline, a kernel
// of `wait_us` and cuStreamSynchronize (3) or cuEventSynchronize (4), kWaitBlock per line.
int RunEmuSyncChild(int which, int wait_us);

// Samples per block of the wait benchmark (bench_wait.cc).
inline constexpr size_t kWaitBlock = 20;
// The host's CLOCK_REALTIME in ns: the clock the emulated GPU's %globaltimer reads.
uint64_t RealtimeNs();
// One wait of the wait benchmark: a kernel that runs until `deadline_ns` (RealtimeNs), then a
// synchronization; *late_ns = how long after the kernel ended the synchronization returned.
// False if a call failed.
using WaitLateness = std::function<bool(uint64_t deadline_ns, uint64_t* late_ns)>;
// Serves blocks of waits of `wait_us` each: "ready" after a warm-up, then per stdin line
// kWaitBlock waits and "ok"; at EOF mean_ns, p50_ns, p99_ns, n of every lateness. Returns the
// process exit code.
int ServeWaitBlocks(const WaitLateness& wait, int wait_us);
// A tenant of whatever REMORA_SERVER names serving ServeWaitBlocks through the stub: the kernel
// on a created stream, then cudaStreamSynchronize (`how` 0) or cudaEventSynchronize of an
// event recorded after it (1).
int RunWaitChild(int wait_us, int how);

// The library baseline (emu_blas.cc): an n x n x n SGEMM on the emulated GPU's
// libcublas.so.13 in-process, one call per stdin line.
int RunEmuSgemmChild(int n);

// The convolution baseline (emu_dnn.cc): conv_problem.h's convolution on the emulated GPU's
// libcudnn.so.9 in-process, one call per stdin line.
int RunEmuConvChild();

// The fault benchmark's tenants (bench_fault.cc): a tenant whose kernel writes through a
// null pointer, and a brand-new tenant whose first calls are timed.
int RunFaultChild();
int RunFreshTenantChild();

// A tenant of whatever REMORA_SERVER names launching the empty kernel `n` times and
// synchronizing, per stdin line (bench_launch.cc): prints "ready", then "s=SECONDS".
int RunStubLaunchChild(int n);

// If argv names a child mode, runs it and stores its exit code in *rc; false otherwise.
bool MaybeRunChild(int argc, char** argv, int* rc);

}  // namespace remora::bench::e2e
