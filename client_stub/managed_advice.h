// client_stub/managed_advice.h - what managed memory has been told (cudaMemAdvise) and where it
// was last prefetched (cudaMemPrefetchAsync), byte range by byte range, so that
// cudaMemRangeGetAttribute answers as a GPU does: an attribute holds for a range only when it
// holds for every byte of it.
//
// Managed memory under Remora is device-mapped host memory that never migrates, so advice
// changes nothing about where the bytes live; it is recorded only to be reported back.
// Not thread-safe: HostMemory guards it with its own lock.
#pragma once

#include <driver_types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace remora::client_stub {

class ManagedAdvice {
 public:
  // A location as cudaMemLocation gives it: (type, id); type 0 is none.
  using Location = std::pair<int, int>;
  struct Attrs {
    bool read_mostly = false;
    Location preferred{0, 0};
    std::vector<Location> accessed_by;  // in the order first set
    Location last_prefetch{0, 0};
    bool operator==(const Attrs&) const = default;
  };

  // Whether managed memory may be advised to or prefetched to `at`: the device (ordinal 0) or
  // the host. cudaErrorInvalidDevice for another device, cudaErrorInvalidValue for no location.
  static cudaError_t Check(const cudaMemLocation& at);
  // `at` as recorded: the id of the host, and of the host's current NUMA node, is ignored.
  static Location Of(const cudaMemLocation& at);

  // Applies `change` to the attributes of every byte of [lo, hi).
  void Change(uint64_t lo, uint64_t hi, const std::function<void(Attrs&)>& change);
  // Every byte of [lo, hi) back to no advice (its allocation was freed).
  void Reset(uint64_t lo, uint64_t hi);
  // The attributes of [lo, hi), one entry per run of equal ones, in address order.
  std::vector<Attrs> Over(uint64_t lo, uint64_t hi) const;

 private:
  // Makes `at` the start of a run (its attributes those of the run it was in).
  void Split(uint64_t at);
  // Merges runs of equal attributes around [lo, hi].
  void Coalesce(uint64_t lo, uint64_t hi);

  // Run starts: a run holds from its key to the next key; below the first key, and where a run
  // says so, no advice at all.
  std::map<uint64_t, Attrs> runs_;
};

}  // namespace remora::client_stub
