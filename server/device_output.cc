// server/device_output.cc - printf text routed to its tenant.
#include "server/device_output.h"

namespace remora::server {

void DeviceOutput::Map(CUstream s) {
  std::lock_guard lock(mu_);
  mapped_.insert(s);
}

void DeviceOutput::Unmap(CUstream s) {
  std::lock_guard lock(mu_);
  mapped_.erase(s);
}

void DeviceOutput::UnmapAll() {
  std::lock_guard lock(mu_);
  mapped_.clear();
}

bool DeviceOutput::Owns(CUstream s) const {
  std::lock_guard lock(mu_);
  return mapped_.count(s) > 0;
}

void DeviceOutput::Append(std::string_view text) {
  std::lock_guard lock(mu_);
  text_.append(text);
  any_.store(true, std::memory_order_release);
}

std::string DeviceOutput::Take() {
  std::string out;
  if (!any_.load(std::memory_order_acquire)) return out;
  std::lock_guard lock(mu_);
  out.swap(text_);
  any_.store(false, std::memory_order_relaxed);
  return out;
}

}  // namespace remora::server
