// server/modules.h - fat binaries tenants registered, deduplicated by hash.
//
// A tenant ships a fat binary once; any later session registering the same
// hash while a session still uses it may send the hash alone. Each session
// still loads its own module, so __device__ variables are never shared
// between tenants. The cache holds no images itself: an entry lives as long
// as a session's module was loaded from it, so nothing stays once the last
// session using a program has gone.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace remora::server {

struct FatbinImages {
  std::vector<std::string> images;  // [0] whole-program fatbin, or -rdc per-TU fatbins
  bool rdc = false;
};

class ModuleCache {
 public:
  // Stores `images` under `hash` (a live first copy wins) and returns the
  // stored copy; the caller keeps it alive while it uses it. Thread-safe.
  std::shared_ptr<const FatbinImages> Put(const std::string& hash,
                                          std::shared_ptr<const FatbinImages> images);
  // The images stored under `hash` and still in use, or null. Thread-safe.
  std::shared_ptr<const FatbinImages> Get(const std::string& hash) const;
  // Programs some session still uses. Thread-safe.
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::weak_ptr<const FatbinImages>> by_hash_;
};

}  // namespace remora::server
