// scheduler/dispatch.cc - the FIFO dispatch order.
#include "scheduler/dispatch.h"

#include <algorithm>

namespace remora::sched {

void FifoQueue::Ready(TenantId t, uint64_t) {
  if (queued_.insert(t).second) order_.push_back(t);
}

std::optional<TenantId> FifoQueue::Next(uint64_t) {
  if (order_.empty()) return std::nullopt;
  TenantId t = order_.front();
  order_.pop_front();
  queued_.erase(t);
  return t;
}

void FifoQueue::Remove(TenantId t) {
  if (queued_.erase(t)) order_.erase(std::find(order_.begin(), order_.end(), t));
}

}  // namespace remora::sched
