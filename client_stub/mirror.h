// client_stub/mirror.h - memory both the host and kernels use, where no memory is shared.
//
// Over shm the arena is device-mapped at the tenant's addresses, and managed and page-locked
// memory is simply arena memory (state.h). Over gRPC (a tenant on another machine, or an arena
// mapped elsewhere) nothing is shared, so such memory is mirrored: device memory on the server
// and host memory in the tenant, at the same address where the host pages are the mirror's
// (managed memory, __managed__ variables, page-locked memory the server reserved addresses
// for), at another for the program's own pages (registered memory). The two copies agree at
// the points CUDA promises coherence on a device without concurrent managed access
// (cudaDevAttrConcurrentManagedAccess 0):
//   - before device work (a launch, a copy, a memset, a library call) the host's changes since
//     they last agreed are sent: the mirror keeps a 64-bit hash of each 4 KiB piece as agreed
//     (proto/mirror.h), and sends the pieces whose hash changed (a change that keeps the hash,
//     2^-64 per piece, would go unseen);
//   - after a call that waited for device work that may have written the memory (stream,
//     event and device synchronization, a synchronous copy, a query that found work done),
//     and before a host function runs, the server hashes the device's pieces the same way and
//     sends those that changed (MirrorFetch), many blocks to a round trip. A piece the host
//     changed too meanwhile (it wrote while device work ran, which such a device forbids)
//     takes the device's contents, and stderr says the host's writes were lost.
//     The host's other changes stay and go before the next device work.
// Copies the mirror makes go on a private non-blocking stream, so they wait for no one.
// A stream stays "dirty" (fetched again at every wait) until a wait covers it: its own
// synchronization, the legacy stream's for blocking streams, or the device's.
#pragma once

#include <driver_types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "client_stub/connection.h"
#include "proto/mirror.h"

namespace remora::client_stub {

class Mirrors final : public CallObserver {
 public:
  // The process's mirrors, created on first use, never destroyed.
  static Mirrors& Get();

  // Managed memory of `bytes` (with `pinned_flags`, mapped pinned memory: cudaHostAlloc's):
  // device memory, zeroed, and zeroed host pages at its address. cudaErrorMemoryAllocation
  // when the device has no room or no address the host can map could be had (said on
  // stderr), else the server's error.
  cudaError_t Allocate(size_t bytes, void** out,
                       std::optional<unsigned> pinned_flags = std::nullopt);
  // Frees the block Allocate returned at `p` after the device is idle: cudaErrorInvalidValue
  // if there is none.
  cudaError_t Free(void* p);
  // Page-locked memory (cudaMallocHost, cudaHostAlloc) for a session without an arena: host
  // pages at an address the device reserves too, holding no device memory until a kernel, a
  // library or cudaHostGetDevicePointer reaches it (Reach), as a GPU with unified addressing
  // lets them; from then on it is mirrored. With cudaHostAllocMapped in `flags` that happens
  // at once. cudaErrorNotSupported when the device has no address reservations (the caller
  // then allocates plain page-locked memory); else as Allocate.
  cudaError_t AllocatePinned(size_t bytes, unsigned flags, void** out);
  // Whether kernels reach [p, p + bytes) at its own address: it lies in one mirrored block,
  // given device memory first if it had none. False for other memory, or when the device
  // memory could not be had (said on stderr once).
  bool Reach(const void* p, size_t bytes = 1);
  // Gives the tenant's page-locked memory [host, host + bytes) a device copy at another
  // address (cudaHostGetDevicePointer; a GPU without cudaDevAttrCanUseHostPointerForRegistered-
  // Mem maps it so too), sent from the host before the next device work: `*dev`.
  cudaError_t Attach(void* host, size_t bytes, uint64_t* dev);
  // The device address of host byte `p` of an attached block, or 0.
  uint64_t DeviceOf(const void* p);
  // Ends the attachment of the block starting at `host` after the device is idle (fetching
  // what the device wrote): nothing to do if there is none.
  cudaError_t Detach(void* host);
  // Mirrors device memory the tenant does not own, a module's __managed__ variable, from its
  // device contents: done once per address (again is a no-op). cudaErrorNotSupported, said on
  // stderr with `name`, when the host uses the address for something else.
  cudaError_t Adopt(uint64_t addr, size_t bytes, const char* name);
  // Forgets what Adopt mirrored at `addr` (its module is gone), if anything.
  void Release(uint64_t addr);

  // CallObserver: see the file comment.
  void Before(const CallTouch& t) override;
  void After(const CallTouch& t, cudaError_t e) override;
  void BeforeHostFunc() override;
  void AfterHostFunc() override;

 private:
  struct Block {
    std::byte* host = nullptr;  // the host copy: at the block's device address if `mapped`
    size_t size = 0;
    bool owned = true;                  // its device memory is the mirror's (else a variable's)
    bool mapped = true;                 // its host pages are the mirror's
    std::vector<uint64_t> agreed = {};  // each piece's hash as both copies last agreed (0: not yet)
    uint64_t reserved = 0;              // AllocatePinned's: the device addresses reserved
    uint64_t physical = 0;              // AllocatePinned's: the device memory mapped there, once
    bool reachable = true;              // has device memory (AllocatePinned's only once reached)
  };

  Mirrors() = default;
  template <class T>
  friend class NoDestructor;

  // Sends the host's changed pieces and waits for them. REQUIRES: mu_ held.
  cudaError_t PushLocked();
  // Fetches every block's device copy into its host pages. REQUIRES: mu_ held.
  cudaError_t PullLocked();
  // Maps the host pages of [addr, addr + n) not yet mapped for another block; false (nothing
  // mapped) if some page is taken by anything else. REQUIRES: mu_ held.
  bool MapLocked(uint64_t addr, size_t n);
  void UnmapLocked(uint64_t addr, size_t n);
  // Records block `b` at device address `addr`, which holds what the host copy holds unless
  // `b.agreed` is set (to zeros: all to be sent). REQUIRES: mu_ held.
  void AddLocked(uint64_t addr, Block b);
  // A fresh device allocation of `bytes` whose address the host can map when `map` (up to 8
  // tries, the misses given back after): its address, or 0 with the error. REQUIRES: mu_ held.
  uint64_t MallocLocked(size_t bytes, bool map, cudaError_t* e);
  // Gives the block at `it` back: its device memory if owned, its host pages if mapped.
  // REQUIRES: mu_ held.
  void EraseLocked(std::map<uint64_t, Block>::iterator it, bool free_device);
  // Gives a reserved block device memory at its address. REQUIRES: mu_ held.
  cudaError_t MakeReachableLocked(uint64_t addr, Block& b);
  // Free and Detach: the owned block whose host copy starts at `host`, mapped or not.
  cudaError_t Remove(void* host, bool mapped);
  // Forgets every block, without touching the device (whose memory a reset freed). REQUIRES:
  // mu_ held.
  void DropAllLocked();
  // The private stream, created on first use (0 if it cannot be). REQUIRES: mu_ held.
  uint64_t StreamLocked();
  bool AnyDirtyLocked() const { return dirty_any_ || !dirty_.empty(); }

  std::mutex mu_;
  std::atomic<bool> live_{false};  // some block exists
  std::map<uint64_t, Block> blocks_;
  std::map<uint64_t, uint32_t> page_refs_;  // host page -> blocks on it
  std::set<uint64_t> dirty_;                // streams with work not yet waited for
  bool dirty_any_ = false;                  // work whose stream is not known
  uint64_t stream_ = 0;
};

}  // namespace remora::client_stub
