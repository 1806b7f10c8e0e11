// server/ipc.cc - the registry of exported device memory.
#include "server/ipc.h"

#include <cstring>

#include "server/handlers/util.h"

namespace remora::server {

namespace {
constexpr char kPrefix[8] = {'r', 'e', 'm', 'o', 'r', 'a', 'I', 'P'};
}  // namespace

std::string IpcRegistry::NewHandleLocked() {
  std::string h(kHandleBytes, '\0');
  std::memcpy(h.data(), kPrefix, sizeof kPrefix);
  for (size_t at = sizeof kPrefix; at < kHandleBytes; at += 8) {
    const uint64_t r = rng_();
    std::memcpy(h.data() + at, &r, 8);
  }
  return h;
}

std::string IpcRegistry::Export(uint64_t owner_session, const std::string& owner, uint64_t base,
                                uint64_t size) {
  std::lock_guard lock(mu_);
  auto known = handle_of_.find({owner_session, base});
  if (known != handle_of_.end()) return known->second;
  std::string h = NewHandleLocked();
  exports_[h] = Exported{.session = owner_session, .owner = owner, .base = base, .size = size};
  handle_of_[{owner_session, base}] = h;
  return h;
}

Result<IpcRegistry::Opened> IpcRegistry::Open(const std::string& handle, uint64_t session,
                                              const std::string& owner) {
  std::lock_guard lock(mu_);
  // The tenant's handle is 64 bytes: the token, then zeros.
  const std::string key = handle.substr(0, kHandleBytes);
  auto it = exports_.find(key);
  if (it == exports_.end())
    return Error(err::kInvalidResourceHandle,
                 "the IPC handle names no exported memory (never exported, or its exporter "
                 "freed it or ended)");
  const Exported& e = it->second;
  if (e.session == session)
    return Error(err::kDeviceUninitialized,
                 "an IPC handle cannot be opened by the process that exported it");
  if (e.owner != owner)
    return Error(err::kNotPermitted,
                 "the IPC handle was exported by another tenant (" + e.owner + ")");
  Opening& o = opened_[{session, e.base}];
  o.handle = key;
  ++o.refs;
  return Opened{.base = e.base, .size = e.size};
}

Status IpcRegistry::Close(uint64_t session, uint64_t base) {
  std::lock_guard lock(mu_);
  auto it = opened_.find({session, base});
  if (it == opened_.end())
    return Error(err::kInvalidValue, Hex(base) + " is not memory this process opened by IPC");
  if (--it->second.refs == 0) opened_.erase(it);
  return OkStatus();
}

bool IpcRegistry::Covers(uint64_t session, uint64_t p, uint64_t n) const {
  std::lock_guard lock(mu_);
  auto it = opened_.upper_bound({session, p});
  if (it == opened_.begin()) return false;
  --it;
  if (it->first.first != session) return false;
  auto e = exports_.find(it->second.handle);
  if (e == exports_.end()) return false;  // revoked
  const uint64_t off = p - e->second.base;
  return p >= e->second.base && off < e->second.size && n <= e->second.size - off;
}

void IpcRegistry::Revoke(uint64_t owner_session, uint64_t base) {
  std::lock_guard lock(mu_);
  auto it = handle_of_.find({owner_session, base});
  if (it == handle_of_.end()) return;
  exports_.erase(it->second);
  handle_of_.erase(it);
}

void IpcRegistry::RevokeAll(uint64_t owner_session) {
  std::lock_guard lock(mu_);
  auto it = handle_of_.lower_bound({owner_session, 0});
  while (it != handle_of_.end() && it->first.first == owner_session) {
    exports_.erase(it->second);
    it = handle_of_.erase(it);
  }
}

void IpcRegistry::CloseAll(uint64_t session) {
  std::lock_guard lock(mu_);
  opened_.erase(opened_.lower_bound({session, 0}), opened_.lower_bound({session + 1, 0}));
}

}  // namespace remora::server
