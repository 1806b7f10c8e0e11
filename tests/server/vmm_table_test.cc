// tests/server/vmm_table_test.cc - the bookkeeping of a tenant's virtual memory management:
// what it may map, where, what becomes accessible, and what goes back when.
#include "server/vmm_table.h"

#include <gtest/gtest.h>

#include <random>

namespace remora::server {
namespace {

constexpr uint64_t kG = 2 << 20;  // a granularity
constexpr uint64_t kBase = 0x7000'0000'0000;

class VmmTableTest : public ::testing::Test {
 protected:
  TableSet set;
  VmmTable t{set, 64 * kG};

  void Physical(uint64_t handle, uint64_t size) {
    t.AddPhysical(handle, {.driver_handle = handle + 1000, .size = size, .charged = size});
  }
};

TEST_F(VmmTableTest, MappingsStayInsideTheTenantsReservationsAndAllocations) {
  t.AddReservation(kBase, 8 * kG);
  Physical(1, 2 * kG);
  EXPECT_EQ(t.Map(kBase - kG, kG, 0, 1).code(), err::kInvalidValue);          // before it
  EXPECT_EQ(t.Map(kBase + 7 * kG, 2 * kG, 0, 1).code(), err::kInvalidValue);  // past its end
  EXPECT_EQ(t.Map(kBase, 2 * kG, kG, 1).code(), err::kInvalidValue);          // past the allocation
  EXPECT_EQ(t.Map(kBase, kG, 0, 2).code(), err::kInvalidValue);  // not the tenant's handle
  ASSERT_TRUE(t.Map(kBase + kG, 2 * kG, 0, 1).ok());
  EXPECT_EQ(t.Map(kBase, 2 * kG, 0, 1).code(), err::kInvalidValue);       // overlaps it from below
  EXPECT_EQ(t.Map(kBase + 2 * kG, kG, 0, 1).code(), err::kInvalidValue);  // inside it
  EXPECT_TRUE(t.Map(kBase + 3 * kG, kG, kG, 1).ok());  // the other half, right after
  EXPECT_EQ(t.mappings(), 2u);
}

TEST_F(VmmTableTest, AdjacentAccessibleMappingsAreOneRange) {
  t.AddReservation(kBase, 8 * kG);
  for (uint64_t h = 1; h <= 3; ++h) {
    Physical(h, kG);
    ASSERT_TRUE(t.Map(kBase + (h - 1) * kG, kG, 0, h).ok());
  }
  EXPECT_FALSE(t.accessible().Covers(kBase, 1));       // mapped, not yet accessible
  ASSERT_TRUE(t.SetAccess(kBase, 2 * kG, true).ok());  // two mappings at once
  auto third = t.SetAccess(kBase + 2 * kG, kG, true);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->runs.size(), 1u);                           // merged with the first two
  EXPECT_TRUE(t.accessible().Covers(kBase + kG / 2, 2 * kG));  // spans all three
  EXPECT_EQ(t.SetAccess(kBase, kG / 2, true).status().code(), err::kInvalidValue);  // part of one
  auto hole = t.SetAccess(kBase + kG, kG, false);  // the middle one: two ranges
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(hole->lo, kBase);
  EXPECT_EQ(hole->hi, kBase + 3 * kG);
  ASSERT_EQ(hole->runs.size(), 2u);
  EXPECT_FALSE(t.accessible().Covers(kBase, kG + 1));
  EXPECT_TRUE(t.accessible().Covers(kBase + 2 * kG, kG));
}

TEST_F(VmmTableTest, MemoryGoesBackWhenTheLastHandleAndMappingGo) {
  t.AddReservation(kBase, 4 * kG);
  Physical(7, 2 * kG);
  ASSERT_TRUE(t.Map(kBase, kG, 0, 7).ok());
  ASSERT_TRUE(t.Map(kBase + kG, kG, kG, 7).ok());
  ASSERT_TRUE(t.SetAccess(kBase, 2 * kG, true).ok());
  auto released = t.Release(7);  // still mapped twice: nothing goes back
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->charged, 0u);
  EXPECT_TRUE(released->driver_release.empty());
  EXPECT_EQ(t.Release(7).status().code(), err::kInvalidValue);  // no handle left
  auto retained = t.Retain(kBase + kG + 5);                     // one again, from its address
  ASSERT_TRUE(retained.ok());
  EXPECT_EQ(retained->handle, 7u);
  EXPECT_EQ(retained->size, 2 * kG);
  ASSERT_TRUE(t.Release(7).ok());
  EXPECT_EQ(t.TakeMappings(kBase + kG, 2 * kG).status().code(), err::kInvalidValue);  // a gap
  auto first = t.TakeMappings(kBase, kG);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->charged, 0u);  // the other mapping holds it
  EXPECT_EQ(t.FreeReservation(kBase, 4 * kG).code(), err::kInvalidValue);  // still mapped
  auto last = t.TakeMappings(kBase + kG, kG);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->charged, 2 * kG);
  ASSERT_EQ(last->driver_release.size(), 1u);
  EXPECT_EQ(last->driver_release[0], 1007u);
  EXPECT_FALSE(t.accessible().Covers(kBase + kG, 1));
  EXPECT_EQ(t.physicals(), 0u);
  EXPECT_EQ(t.FreeReservation(kBase, 2 * kG).code(), err::kInvalidValue);  // not its size
  EXPECT_TRUE(t.FreeReservation(kBase, 4 * kG).ok());
  EXPECT_EQ(t.reserved_bytes(), 0u);
}

TEST_F(VmmTableTest, ReservationsAreBoundedPerTenant) {
  EXPECT_TRUE(t.CheckReserve(64 * kG).ok());
  t.AddReservation(kBase, 60 * kG);
  EXPECT_TRUE(t.CheckReserve(4 * kG).ok());
  EXPECT_EQ(t.CheckReserve(5 * kG).code(), err::kMemoryAllocation);
  EXPECT_EQ(t.CheckReserve(~uint64_t{0}).code(), err::kMemoryAllocation);  // no overflow
}

TEST_F(VmmTableTest, ATenantThatGoesUndoesEverythingInOrder) {
  t.AddReservation(kBase, 4 * kG);
  Physical(1, kG);
  Physical(2, kG);
  ASSERT_TRUE(t.Map(kBase, kG, 0, 1).ok());
  ASSERT_TRUE(t.Release(2).ok());  // already gone: nothing to release again
  VmmTable::Everything got;
  t.undo = [&](const VmmTable::Everything& e) { got = e; };
  Held held;
  set.SurrenderAll(held);
  ASSERT_EQ(held.destroy.size(), 1u);
  held.destroy[0]();
  ASSERT_EQ(got.unmap.size(), 1u);
  EXPECT_EQ(got.unmap[0].first, kBase);
  EXPECT_EQ(got.driver_release, std::vector<uint64_t>{1001});
  ASSERT_EQ(got.reservations.size(), 1u);
  EXPECT_EQ(t.mappings() + t.physicals(), 0u);
  EXPECT_FALSE(t.accessible().Covers(kBase, 1));
}

// Random maps, unmaps and access changes: accessible() is always exactly the union of the
// read-write mappings, whatever the order.
TEST_F(VmmTableTest, AccessibleIsTheUnionOfReadWriteMappings) {
  constexpr int kSlots = 24;
  t.AddReservation(kBase, kSlots * kG);
  Physical(1, kG);
  std::mt19937 rng(7);
  std::vector<int> state(kSlots, 0);  // 0 unmapped, 1 mapped, 2 read-write
  for (int step = 0; step < 3000; ++step) {
    const int i = static_cast<int>(rng() % kSlots);
    const uint64_t at = kBase + i * kG;
    switch (rng() % 3) {
      case 0:
        EXPECT_EQ(t.Map(at, kG, 0, 1).ok(), state[i] == 0);
        if (state[i] == 0) state[i] = 1;
        break;
      case 1:
        EXPECT_EQ(t.TakeMappings(at, kG).ok(), state[i] != 0);
        state[i] = 0;
        break;
      default: {
        const bool rw = rng() % 2;
        EXPECT_EQ(t.SetAccess(at, kG, rw).ok(), state[i] != 0);
        if (state[i] != 0) state[i] = rw ? 2 : 1;
      }
    }
    for (int j = 0; j < kSlots; ++j)
      ASSERT_EQ(t.accessible().Covers(kBase + j * kG, kG), state[j] == 2) << "step " << step;
    for (int j = 0; j + 1 < kSlots; ++j)  // runs are merged: a copy may span two
      ASSERT_EQ(t.accessible().Covers(kBase + j * kG + kG / 2, kG),
                state[j] == 2 && state[j + 1] == 2);
  }
}

}  // namespace
}  // namespace remora::server
