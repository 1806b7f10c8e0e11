// scheduler/gpu_priority.cc - the GPU stream priority of a tenant's stream.
#include "scheduler/gpu_priority.h"

#include <algorithm>

namespace remora::sched {

int GpuStreamPriority(Priority cls, int asked, PriorityRange range) {
  const int levels = range.least - range.greatest + 1;
  if (levels < kPriorities) {
    switch (cls) {
      case Priority::kHigh:
        return range.greatest;
      case Priority::kNormal:
        return (range.least + range.greatest) / 2;
      case Priority::kLow:
        return range.least;
    }
    return range.least;
  }
  // Bands from least up: low, normal, high (which keeps what the division leaves over).
  const int band = levels / kPriorities;
  const int rank = kPriorities - 1 - int(cls);  // low 0, normal 1, high 2
  const int bottom = range.least - rank * band;
  const int top = cls == Priority::kHigh ? range.greatest : bottom - band + 1;
  const int span = bottom - top;  // levels above the band's default
  const int ask = range.least - std::clamp(asked, range.greatest, range.least);  // 0 .. levels-1
  const int raise = (ask * span + (levels - 2)) / (levels - 1);  // rounded up: any ask counts
  return bottom - raise;
}

}  // namespace remora::sched
