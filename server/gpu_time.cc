// server/gpu_time.cc - charge groups, busy clocks and usage rates (gpu_time.h).
#include "server/gpu_time.h"

#include <algorithm>
#include <cmath>

namespace remora::server {

bool ChargeGroups::Issued() {
  ++uncharged_;
  return charging_ == 0 || uncharged_ >= std::max(kMinItems, charging_items_ / 4);
}

uint32_t ChargeGroups::Close() {
  const uint32_t n = uncharged_;
  uncharged_ = 0;
  ++charging_;
  charging_items_ += n;
  return n;
}

bool ChargeGroups::Charged(uint32_t n) {
  if (charging_ > 0) --charging_;
  charging_items_ -= std::min(charging_items_, n);
  return charging_ == 0 && uncharged_ != 0;
}

uint64_t BusyClock::Take(uint64_t busy) {
  const uint64_t delta = busy - std::min(busy, charged_);
  charged_ = busy;
  return delta;
}

double UsageRate::Decayed(uint64_t now) const {
  return now > at_ ? rate_ * std::exp(-static_cast<double>(now - at_) / kWindowNs) : rate_;
}

void UsageRate::Add(uint64_t gpu_ns, uint64_t now) {
  rate_ = Decayed(now) + static_cast<double>(gpu_ns) / kWindowNs;
  at_ = now;
}

double UsageRate::Share(uint64_t now) const {
  const double seen =
      1 - std::exp(-static_cast<double>(now > joined_ ? now - joined_ : 0) / kWindowNs);
  return seen > 0 ? std::min(1.0, Decayed(now) / seen) : 0;
}

}  // namespace remora::server
