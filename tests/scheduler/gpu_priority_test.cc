// tests/scheduler/gpu_priority_test.cc - tenants' streams on the GPU's priority range.
#include "scheduler/gpu_priority.h"

#include <gtest/gtest.h>

namespace remora::sched {
namespace {

constexpr Priority kClasses[] = {Priority::kLow, Priority::kNormal, Priority::kHigh};

// The emulated GPU's and an H200's range: two levels a class, a plain stream on the lower.
TEST(GpuStreamPriority, SixLevelsGiveEachClassTwo) {
  const PriorityRange r{0, -5};
  EXPECT_EQ(GpuStreamPriority(Priority::kLow, 0, r), 0);
  EXPECT_EQ(GpuStreamPriority(Priority::kLow, -1, r), -1);
  EXPECT_EQ(GpuStreamPriority(Priority::kLow, -5, r), -1);
  EXPECT_EQ(GpuStreamPriority(Priority::kNormal, 0, r), -2);
  EXPECT_EQ(GpuStreamPriority(Priority::kNormal, -3, r), -3);
  EXPECT_EQ(GpuStreamPriority(Priority::kHigh, 0, r), -4);
  EXPECT_EQ(GpuStreamPriority(Priority::kHigh, -5, r), -5);
  // Out of the range: clamped, as CUDA clamps.
  EXPECT_EQ(GpuStreamPriority(Priority::kNormal, 7, r), -2);
  EXPECT_EQ(GpuStreamPriority(Priority::kNormal, -99, r), -3);
}

// On any range: a higher class always outranks a lower one, a class stays in the range, and
// within a class a more urgent ask never gives a less urgent stream.
TEST(GpuStreamPriority, ClassesNeverCrossAndAsksAreMonotonic) {
  for (int least = -3; least <= 3; ++least) {
    for (int levels = 1; levels <= 40; ++levels) {
      const PriorityRange r{least, least - levels + 1};
      int below_least_urgent = r.least + 1;  // the previous class's most urgent
      for (Priority cls : kClasses) {
        int prev = r.least + 1;
        for (int asked = r.least + 2; asked >= r.greatest - 2; --asked) {
          const int p = GpuStreamPriority(cls, asked, r);
          EXPECT_LE(p, r.least);
          EXPECT_GE(p, r.greatest);
          EXPECT_LE(p, prev) << "levels " << levels << " asked " << asked;
          prev = p;
        }
        const int plain = GpuStreamPriority(cls, r.least, r);
        if (levels >= kPriorities) {
          EXPECT_LT(plain, below_least_urgent) << "levels " << levels;
          // Any ask above a plain stream raises it, where the band has room.
          if (GpuStreamPriority(cls, r.greatest, r) < plain) {
            EXPECT_LT(GpuStreamPriority(cls, r.least - 1, r), plain);
          }
        }
        below_least_urgent = GpuStreamPriority(cls, r.greatest, r);
      }
    }
  }
}

// Fewer levels than classes: the classes keep their order as far as the range allows.
TEST(GpuStreamPriority, ANarrowRangeKeepsTheClassesOrder) {
  const PriorityRange one{0, 0}, two{0, -1};
  for (Priority cls : kClasses) EXPECT_EQ(GpuStreamPriority(cls, -1, one), 0);
  EXPECT_EQ(GpuStreamPriority(Priority::kHigh, 0, two), -1);
  EXPECT_EQ(GpuStreamPriority(Priority::kLow, -1, two), 0);
}

}  // namespace
}  // namespace remora::sched
