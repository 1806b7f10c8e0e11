// server/ipc.h - device memory a tenant's process exports (cudaIpcGetMemHandle) for the
// tenant's other processes to open (cudaIpcOpenMemHandle).
//
// Every process of every tenant shares the server's one context, so an opened handle is the
// exporter's own device address: what this registry adds is who may use it. A handle is an
// unguessable token naming one allocation of the exporting session's; it opens only in
// another session of the same owner (the tenants file's tenant, or in open mode the same user
// on the same host), never in the session that exported it. The memory stays the exporter's
// (charged to it); when the exporter frees it or goes, every opening of it is revoked at once,
// so an importer's later calls on it are refused instead of reaching memory that may already
// be another tenant's.
//
// Events created with cudaEventInterprocess are exported the same way (IpcEvent): an importer
// never touches the exporter's CUevent, it waits for the exporter's records to complete, as the
// exporter's own executor reports them.
//
// Thread-safe: sessions of different tenants call it from their own threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>

#include "proto/status.h"

namespace remora::server {

// An interprocess event as every process of its tenant sees it: the exporter's records,
// numbered in the order it made them, and which are still pending on the device. Thread-safe;
// `then` functions run on the thread that completes a record, holding no lock of this.
class IpcEvent {
 public:
  // The exporter records it: the record's number, pending until Done(number).
  uint64_t Recorded();
  void Done(uint64_t record);
  // The latest record made so far; 0 if none.
  uint64_t latest() const;
  // True while record `n` has not completed (never for 0, or once the exporter is gone).
  bool Pending(uint64_t n) const;
  // Runs `then` once record `n` has completed: now if it has.
  void WhenDone(uint64_t n, std::function<void()> then);
  // The exporter destroyed it or ended: nothing is pending any more.
  void Gone();

 private:
  mutable std::mutex mu_;
  uint64_t recorded_ = 0;
  std::set<uint64_t> pending_;
  std::multimap<uint64_t, std::function<void()>> waiters_;
  bool gone_ = false;
};

class IpcRegistry {
 public:
  // The bytes of a handle: a fixed prefix, then the token.
  static constexpr size_t kHandleBytes = 24;

  // The handle of the allocation [base, base + size) of session `owner_session` (whose owner is
  // `owner`), made once per allocation and the same on every later call.
  std::string Export(uint64_t owner_session, const std::string& owner, uint64_t base,
                     uint64_t size);
  struct Opened {
    uint64_t base = 0, size = 0;
  };
  // Opens `handle` (a handle as the tenant holds it: Export's bytes, then anything) in
  // `session` (of `owner`); opening it again adds a reference. Errors:
  // kInvalidResourceHandle for a handle that names nothing (never made, or revoked);
  // kDeviceUninitialized (CUDA_ERROR_INVALID_CONTEXT) in the exporting session itself;
  // kNotPermitted for another owner's.
  Result<Opened> Open(const std::string& handle, uint64_t session, const std::string& owner);
  // Drops one reference of `session`'s opening at `base`. Errors: kInvalidValue if none.
  Status Close(uint64_t session, uint64_t base);
  // Is [p, p + n) inside memory `session` has open, still exported?
  bool Covers(uint64_t session, uint64_t p, uint64_t n) const;
  // The exporter frees the allocation at `base` (or goes: every one of its): its handles name
  // nothing from now on.
  void Revoke(uint64_t owner_session, uint64_t base);
  void RevokeAll(uint64_t owner_session);
  // `session` goes: its openings close.
  void CloseAll(uint64_t session);

  // The handle of interprocess event `event` (the exporter's id for it) of session
  // `owner_session`, the same on every call.
  std::string ExportEvent(uint64_t owner_session, const std::string& owner, uint64_t event,
                          std::shared_ptr<IpcEvent> state);
  // The event `handle` names, for `session` of `owner`. Errors: as Open.
  Result<std::shared_ptr<IpcEvent>> OpenEvent(const std::string& handle, uint64_t session,
                                              const std::string& owner);
  // The exporter destroyed `event`, or went (every one of its): the handles name nothing.
  void RevokeEvent(uint64_t owner_session, uint64_t event);

 private:
  struct Exported {
    uint64_t session = 0;
    std::string owner;
    uint64_t base = 0, size = 0;
    std::shared_ptr<IpcEvent> event;  // set for an event's handle (base: the exporter's id)
  };
  // The export `handle` names, checked for `session` of `owner` (Open's errors). REQUIRES: mu_.
  Result<const Exported*> FindLocked(const std::string& handle, uint64_t session,
                                     const std::string& owner) const;
  std::string NewHandleLocked();

  mutable std::mutex mu_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::map<std::string, Exported> exports_;                         // by handle
  std::map<std::pair<uint64_t, uint64_t>, std::string> handle_of_;  // (session, base) -> handle
  std::map<std::pair<uint64_t, uint64_t>, std::string> event_handle_of_;  // (session, event)
  struct Opening {
    std::string handle;
    uint32_t refs = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, Opening> opened_;  // (importer, base)
};

}  // namespace remora::server
