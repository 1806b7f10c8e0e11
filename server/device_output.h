// server/device_output.h - device printf text bound for one tenant.
//
// The emulated GPU hands the server what a kernel printed with the CUstream it ran on; the
// server gives it to the session that owns that stream, which sends it with its next reply.
// Thread-safe: text arrives on the driver's threads.
#pragma once

#include <cuda.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace remora::server {

class DeviceOutput {
 public:
  // `s` is (or is no longer) one of the tenant's streams.
  void Map(CUstream s);
  void Unmap(CUstream s);
  // Forgets every stream (their context is gone).
  void UnmapAll();
  bool Owns(CUstream s) const;
  void Append(std::string_view text);
  // The text so far, taken; empty if none. Lock-free while there is none.
  std::string Take();

 private:
  mutable std::mutex mu_;
  std::string text_;
  std::atomic<bool> any_{false};  // text_ is not empty
  std::set<CUstream> mapped_;
};

}  // namespace remora::server
