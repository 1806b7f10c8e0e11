// server/supervisor.h - keeps a worker process serving the GPU across device faults.
//
// NVIDIA's driver cannot rebuild a context in a process whose context took a
// sticky fault (an illegal address, a trap): every later retain or create in that
// process fails with the fault's code, other contexts included (seen on driver
// 580 with an H100). So remora-server's first process never touches CUDA: it
// binds the listeners once, forks a worker that serves on them, and when the
// worker exits with kExitDeviceLost forks a fresh one on the same sockets.
// Tenants that connect meanwhile wait in the Unix socket's backlog.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "proto/status.h"

namespace remora::server {

// The exit status of a worker whose GPU context cannot be rebuilt in process
// (EX_TEMPFAIL): the supervisor starts another.
inline constexpr int kExitDeviceLost = 75;

// Listening addresses bound once, by the supervisor, for every worker.
struct Endpoints {
  std::vector<std::string> unix_paths;
  std::vector<int> unix_fds;            // listening sockets, one per path
  std::vector<std::string> grpc_addrs;  // ":0" replaced by the port reserved for it
  std::string metrics_addr;             // likewise
  std::vector<int> reserved;            // bound, not listening: keeps those ports ours
};

// Binds every Unix path (ShmListener::Bind) and pins every gRPC port 0 (and the
// metrics port 0) to a free port, reserved with SO_REUSEPORT so each worker's
// server binds it again.
// Errors: kInvalidValue for an address that does not parse; kInitializationError
// when a socket cannot be bound (a live server holds the path, the port is taken).
Result<Endpoints> BindEndpoints(const std::vector<std::string>& unix_paths,
                                const std::vector<std::string>& grpc_addrs,
                                const std::string& metrics_addr = "");

// Closes the descriptors and removes the socket files.
void ReleaseEndpoints(Endpoints& e);

// Runs `worker` in a child process and starts another whenever one exits with
// kExitDeviceLost or is killed by a signal the supervisor did not pass on (a crash),
// after a pause that grows while restarts come quickly; each end is logged.
// SIGINT, SIGTERM and SIGHUP are passed on to the worker; should the supervisor
// die (even by SIGKILL), the kernel kills the worker. Returns the exit
// status of the worker that ended for another reason (128 + signal if it was
// killed by one passed on).
// The calling process must not have started threads.
int Supervise(const std::function<int()>& worker);

}  // namespace remora::server
