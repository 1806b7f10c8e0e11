// deploy/device_plugin/main.cc - remora-device-plugin: flags, then serve until SIGINT/SIGTERM.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "deploy/device_plugin/plugin.h"

int main(int argc, char** argv) {
  using namespace remora::device_plugin;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  remora::Result<Options> opts = ParseOptions(args, std::getenv("REMORA_ADMIN_TOKEN"));
  if (!opts.ok()) {
    std::fprintf(stderr, "remora-device-plugin: %s\n%s", opts.status().message().c_str(), kUsage);
    return 2;
  }
  // Signals wait for the main thread; gRPC's threads never see them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Plugin plugin(*opts);
  if (remora::Status st = plugin.Start(); !st.ok()) {
    std::fprintf(stderr, "remora-device-plugin: %s\n", st.message().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  plugin.Stop();
  return 0;
}
