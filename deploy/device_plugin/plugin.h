// deploy/device_plugin/plugin.h - the Kubernetes device plugin: two DevicePlugin
// gRPC services (remora.io/gpu-memory, remora.io/gpu-compute) kept registered
// with kubelet, their device health refreshed from each GPU's remora-server.
//
//   ASSIGN_OR_RETURN(Options o, ParseOptions(args, std::getenv("REMORA_ADMIN_TOKEN")));
//   Plugin p(o);
//   RETURN_IF_ERROR(p.Start());  // serves until p.Stop() or destruction
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "deploy/device_plugin/policy.h"
#include "proto/status.h"

namespace remora::device_plugin {

struct Options {
  std::string socket_dir = "/run/remora";  // GPUs: its gpu<N>.sock files
  std::vector<std::string> servers;        // or these (unix:PATH), if any
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string token;  // admin token for the servers
  std::chrono::milliseconds poll{2000};
  std::string container_socket_dir = "/run/remora";
  std::string stub_dir = "/usr/local/lib/remora/stub";
  uint32_t memory_unit_mib = 1;  // MiB per remora.io/gpu-memory device
};

// The plugin's own socket for `r` in kubelet's directory, by file name.
inline const char* SocketName(Resource r) {
  return r == Resource::kMemory ? "remora-gpu-memory.sock" : "remora-gpu-compute.sock";
}

// Usage text for --help and for refused flags.
extern const char* const kUsage;

// The flags after the program name; `token_env` is REMORA_ADMIN_TOKEN (may be
// null), which --token overrides. Errors: kInvalidValue naming the flag.
Result<Options> ParseOptions(const std::vector<std::string>& args, const char* token_env);

// The GPUs `o` names: its --server addresses (index from a gpu<N>.sock name,
// else the position), or the gpu<N>.sock sockets in its socket directory.
std::vector<Gpu> DiscoverGpus(const Options& o);

class Plugin {
 public:
  explicit Plugin(Options options);
  ~Plugin();  // Stop()
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // Polls the servers once, serves both sockets in the kubelet directory, then
  // keeps polling every `poll` on a thread of its own: refreshing health, and
  // registering with kubelet whenever its kubelet.sock is new (a restarted
  // kubelet) or one of the plugin's sockets went missing. Errors:
  // kInitializationError if a socket cannot be served.
  Status Start();

  // Ends the streams, the servers and the thread; removes the sockets. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace remora::device_plugin
