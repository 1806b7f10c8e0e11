// server/host_port.h - the HOST:PORT form every TCP flag of remora-server takes.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace remora::server {

struct HostPort {
  std::string host;  // as getaddrinfo takes it: brackets of "[::1]" removed
  int port = 0;      // 0: any free port
};

// Splits "HOST:PORT" or "[V6]:PORT"; nullopt unless PORT is a number in [0, 65535].
std::optional<HostPort> ParseHostPort(std::string_view addr);

}  // namespace remora::server
