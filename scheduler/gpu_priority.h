// scheduler/gpu_priority.h - the GPU stream priority of a tenant's stream.
#pragma once

#include "scheduler/tenant.h"

namespace remora::sched {

// The device's stream priorities, as CUDA numbers them: `greatest` <= `least`, numerically
// lower is more urgent (the emulated GPU and an H200: greatest -5, least 0).
struct PriorityRange {
  int least = 0;
  int greatest = 0;
};

// The priority a stream of a tenant of class `cls` gets on the GPU when the tenant asked for
// `asked` (cudaStreamCreateWithPriority; `range.least` for a plain stream). The range is split
// into three bands, low, normal and high from least up, so every stream of a higher class
// outranks every stream of a lower one. Within its class's band a stream the tenant asked to
// be more urgent is raised, monotonically in `asked` (clamped to the range, as CUDA clamps),
// any ask above `least` by at least one level while the band has one. With fewer than three
// levels the classes take least, the middle and greatest, and asks change nothing.
int GpuStreamPriority(Priority cls, int asked, PriorityRange range);

}  // namespace remora::sched
