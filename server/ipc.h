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
// Thread-safe: sessions of different tenants call it from their own threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "proto/status.h"

namespace remora::server {

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

 private:
  struct Exported {
    uint64_t session = 0;
    std::string owner;
    uint64_t base = 0, size = 0;
  };
  std::string NewHandleLocked();

  mutable std::mutex mu_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::map<std::string, Exported> exports_;                         // by handle
  std::map<std::pair<uint64_t, uint64_t>, std::string> handle_of_;  // (session, base) -> handle
  struct Opening {
    std::string handle;
    uint32_t refs = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, Opening> opened_;  // (importer, base)
};

}  // namespace remora::server
