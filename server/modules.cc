// server/modules.cc - the fat-binary cache.
#include "server/modules.h"

namespace remora::server {

std::shared_ptr<const FatbinImages> ModuleCache::Put(const std::string& hash,
                                                     std::shared_ptr<const FatbinImages> images) {
  std::lock_guard lock(mu_);
  std::erase_if(by_hash_, [](const auto& kv) { return kv.second.expired(); });
  auto& slot = by_hash_[hash];
  if (auto live = slot.lock()) return live;
  slot = images;
  return images;
}

std::shared_ptr<const FatbinImages> ModuleCache::Get(const std::string& hash) const {
  std::lock_guard lock(mu_);
  auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? nullptr : it->second.lock();
}

size_t ModuleCache::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [hash, images] : by_hash_) n += !images.expired();
  return n;
}

}  // namespace remora::server
