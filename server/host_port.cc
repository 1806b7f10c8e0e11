// server/host_port.cc - parsing HOST:PORT.
#include "server/host_port.h"

namespace remora::server {

std::optional<HostPort> ParseHostPort(std::string_view addr) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = addr.substr(0, colon), port = addr.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != port.npos)
    return std::nullopt;
  HostPort hp;
  for (char c : port) hp.port = hp.port * 10 + (c - '0');
  if (hp.port > 65535) return std::nullopt;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  hp.host = std::string(host);
  return hp;
}

}  // namespace remora::server
