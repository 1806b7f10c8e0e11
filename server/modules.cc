// server/modules.cc - the fat-binary cache.
#include "server/modules.h"

namespace remora::server {

std::shared_ptr<const FatbinImages> ModuleCache::Put(const std::string& hash,
                                                     std::shared_ptr<const FatbinImages> images) {
  std::lock_guard lock(mu_);
  auto& slot = by_hash_[hash];
  if (!slot) slot = std::move(images);
  return slot;
}

std::shared_ptr<const FatbinImages> ModuleCache::Get(const std::string& hash) const {
  std::lock_guard lock(mu_);
  auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? nullptr : it->second;
}

size_t ModuleCache::size() const {
  std::lock_guard lock(mu_);
  return by_hash_.size();
}

}  // namespace remora::server
