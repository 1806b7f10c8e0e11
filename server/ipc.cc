// server/ipc.cc - the registry of exported device memory.
#include "server/ipc.h"

#include <cstring>
#include <vector>

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
  exports_[h] = Exported{
      .session = owner_session, .owner = owner, .base = base, .size = size, .event = nullptr};
  handle_of_[{owner_session, base}] = h;
  return h;
}

Result<const IpcRegistry::Exported*> IpcRegistry::FindLocked(const std::string& handle,
                                                             uint64_t session,
                                                             const std::string& owner) const {
  // The tenant's handle is 64 bytes: the token, then zeros.
  auto it = exports_.find(handle.substr(0, kHandleBytes));
  if (it == exports_.end())
    return Error(err::kInvalidResourceHandle,
                 "the IPC handle names nothing exported (never exported, or its exporter "
                 "freed or destroyed it, or ended)");
  const Exported& e = it->second;
  if (e.session == session)
    return Error(err::kDeviceUninitialized,
                 "an IPC handle cannot be opened by the process that exported it");
  if (e.owner != owner)
    return Error(err::kNotPermitted,
                 "the IPC handle was exported by another tenant (" + e.owner + ")");
  return &e;
}

Result<IpcRegistry::Opened> IpcRegistry::Open(const std::string& handle, uint64_t session,
                                              const std::string& owner) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(const Exported* found, FindLocked(handle, session, owner));
  const Exported& e = *found;
  if (e.event) return Error(err::kInvalidResourceHandle, "the IPC handle names an event");
  const std::string key = handle.substr(0, kHandleBytes);
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
  for (auto* by : {&handle_of_, &event_handle_of_}) {
    auto it = by->lower_bound({owner_session, 0});
    while (it != by->end() && it->first.first == owner_session) {
      exports_.erase(it->second);
      it = by->erase(it);
    }
  }
}

std::string IpcRegistry::ExportEvent(uint64_t owner_session, const std::string& owner,
                                     uint64_t event, std::shared_ptr<IpcEvent> state) {
  std::lock_guard lock(mu_);
  auto known = event_handle_of_.find({owner_session, event});
  if (known != event_handle_of_.end()) return known->second;
  std::string h = NewHandleLocked();
  exports_[h] =
      Exported{.session = owner_session, .owner = owner, .base = event, .size = 0, .event = state};
  event_handle_of_[{owner_session, event}] = h;
  return h;
}

Result<std::shared_ptr<IpcEvent>> IpcRegistry::OpenEvent(const std::string& handle,
                                                         uint64_t session,
                                                         const std::string& owner) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(const Exported* e, FindLocked(handle, session, owner));
  if (!e->event) return Error(err::kInvalidResourceHandle, "the IPC handle names memory");
  return e->event;
}

void IpcRegistry::RevokeEvent(uint64_t owner_session, uint64_t event) {
  std::lock_guard lock(mu_);
  auto it = event_handle_of_.find({owner_session, event});
  if (it == event_handle_of_.end()) return;
  exports_.erase(it->second);
  event_handle_of_.erase(it);
}

// ---- IpcEvent ----------------------------------------------------------------------

uint64_t IpcEvent::Recorded() {
  std::lock_guard lock(mu_);
  pending_.insert(++recorded_);
  return recorded_;
}

void IpcEvent::Done(uint64_t record) {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard lock(mu_);
    pending_.erase(record);
    auto [first, last] = waiters_.equal_range(record);
    for (auto it = first; it != last; ++it) run.push_back(std::move(it->second));
    waiters_.erase(first, last);
  }
  for (auto& then : run) then();
}

uint64_t IpcEvent::latest() const {
  std::lock_guard lock(mu_);
  return recorded_;
}

bool IpcEvent::Pending(uint64_t n) const {
  std::lock_guard lock(mu_);
  return !gone_ && pending_.count(n) > 0;
}

void IpcEvent::WhenDone(uint64_t n, std::function<void()> then) {
  {
    std::lock_guard lock(mu_);
    if (!gone_ && pending_.count(n)) {
      waiters_.emplace(n, std::move(then));
      return;
    }
  }
  then();
}

void IpcEvent::Gone() {
  std::multimap<uint64_t, std::function<void()>> run;
  {
    std::lock_guard lock(mu_);
    gone_ = true;
    pending_.clear();
    run.swap(waiters_);
  }
  for (auto& [n, then] : run) then();
}

void IpcRegistry::CloseAll(uint64_t session) {
  std::lock_guard lock(mu_);
  opened_.erase(opened_.lower_bound({session, 0}), opened_.lower_bound({session + 1, 0}));
}

}  // namespace remora::server
