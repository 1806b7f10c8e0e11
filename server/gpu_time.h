// server/gpu_time.h - the GPU-time meter's arithmetic, apart from the driver.
//
// The executor charges each tenant the device time its work took, in groups of issued items
// closed by a marker (executor_meter.cc records the markers and timing events). What is pure
// lives here: when a stream's issued items close a group, what a stream's busy clock says a
// group cost, and a tenant's share of the device over a decaying window. No clocks: times are
// passed in, in nanoseconds.
#pragma once

#include <cstdint>

namespace remora::server {

// One stream's charge groups. The first item on an idle stream is a group; while groups are
// watched, the next closes once it holds a quarter of the items in flight (kMinItems at
// least), so charges come back while the device still has work queued and one marker serves
// many short items.
class ChargeGroups {
 public:
  static constexpr uint32_t kMinItems = 8;

  // An item was issued into the open group; true if that group should close now.
  bool Issued();
  // Closes the open group; returns its item count (the caller watches a marker for it).
  uint32_t Close();
  // A group of `n` items was charged; true if the items issued since should close a group
  // now (none is in flight to close them later).
  bool Charged(uint32_t n);

  uint32_t open_items() const { return uncharged_; }
  uint32_t groups_in_flight() const { return charging_; }

 private:
  uint32_t uncharged_ = 0;       // issued, in the open group
  uint32_t charging_ = 0;        // closed groups whose markers are watched
  uint32_t charging_items_ = 0;  // their items
};

// A stream's device busy time, as the emulated GPU reports it (NVIDIA's driver does not),
// turned into charges: each reading is charged what it adds to the last one.
class BusyClock {
 public:
  // Starts from `busy`: a pooled stream's earlier tenants' time is not this tenant's.
  explicit BusyClock(uint64_t busy = 0) : charged_(busy) {}
  // Device time since the last reading (0 if the clock went back).
  uint64_t Take(uint64_t busy);

 private:
  uint64_t charged_;
};

// A tenant's share of the device's time over about the last kWindowNs: device ns per ns,
// decaying exponentially, averaged over the time it has been there.
class UsageRate {
 public:
  static constexpr double kWindowNs = 10e9;

  explicit UsageRate(uint64_t joined_ns) : joined_(joined_ns), at_(joined_ns) {}
  // `gpu_ns` of device time charged at `now`.
  void Add(uint64_t gpu_ns, uint64_t now);
  // The share at `now`, in [0, 1]: the decayed rate over the weight the window has had since
  // the tenant joined, so a tenant busy since it joined shows its share at once.
  double Share(uint64_t now) const;

 private:
  double Decayed(uint64_t now) const;

  uint64_t joined_;
  double rate_ = 0;
  uint64_t at_;
};

}  // namespace remora::server
