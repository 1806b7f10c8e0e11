// tests/server/ipc_test.cc - who may open exported device memory, and for how long.
#include "server/ipc.h"

#include <gtest/gtest.h>

namespace remora::server {
namespace {

constexpr uint64_t kBase = 0x7f00'0000'0000;

TEST(IpcRegistry, OpensOnlyInAnotherProcessOfTheSameTenant) {
  IpcRegistry r;
  const std::string h = r.Export(1, "alice", kBase, 4096);
  EXPECT_EQ(h.size(), IpcRegistry::kHandleBytes);
  EXPECT_EQ(r.Export(1, "alice", kBase, 4096), h);  // one handle per allocation
  EXPECT_NE(r.Export(1, "alice", kBase + 4096, 64), h);
  EXPECT_EQ(r.Open(h, 1, "alice").status().code(), err::kDeviceUninitialized);  // the exporter
  EXPECT_EQ(r.Open(h, 2, "bob").status().code(), err::kNotPermitted);
  std::string forged = h;
  forged.back() ^= 1;
  EXPECT_EQ(r.Open(forged, 2, "alice").status().code(), err::kInvalidResourceHandle);
  auto o = r.Open(h + std::string(40, '\0'), 2, "alice");  // as the tenant's 64 bytes carry it
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->base, kBase);
  EXPECT_EQ(o->size, 4096u);
  EXPECT_TRUE(r.Covers(2, kBase + 100, 3996));
  EXPECT_FALSE(r.Covers(2, kBase + 100, 3997));
  EXPECT_FALSE(r.Covers(3, kBase, 1));  // only where it was opened
  EXPECT_FALSE(r.Covers(1, kBase, 1));  // the exporter's own allocation is its own business
}

TEST(IpcRegistry, OpeningsAreCountedAndEndWithTheExporter) {
  IpcRegistry r;
  const std::string h = r.Export(1, "alice", kBase, 4096);
  ASSERT_TRUE(r.Open(h, 2, "alice").ok());
  ASSERT_TRUE(r.Open(h, 2, "alice").ok());
  EXPECT_TRUE(r.Close(2, kBase).ok());
  EXPECT_TRUE(r.Covers(2, kBase, 4096));  // one reference left
  r.Revoke(1, kBase);                     // the exporter frees it
  EXPECT_FALSE(r.Covers(2, kBase, 1));
  EXPECT_EQ(r.Open(h, 3, "alice").status().code(), err::kInvalidResourceHandle);
  EXPECT_TRUE(r.Close(2, kBase).ok());                      // closing what was revoked is fine
  EXPECT_EQ(r.Close(2, kBase).code(), err::kInvalidValue);  // nothing left open

  const std::string g = r.Export(1, "alice", kBase, 4096);  // the address again, a new handle
  EXPECT_NE(g, h);
  ASSERT_TRUE(r.Open(g, 2, "alice").ok());
  r.RevokeAll(1);  // the exporter goes
  EXPECT_FALSE(r.Covers(2, kBase, 1));
  const std::string k = r.Export(4, "alice", kBase + 8192, 64);
  ASSERT_TRUE(r.Open(k, 2, "alice").ok());
  r.CloseAll(2);  // the importer goes
  EXPECT_FALSE(r.Covers(2, kBase + 8192, 1));
  EXPECT_EQ(r.Close(2, kBase + 8192).code(), err::kInvalidValue);
}

// An importer waits for the exporter's latest record as of its call, never a later one.
TEST(IpcEvent, WaitsForTheLatestRecordAsOfTheCall) {
  IpcEvent ev;
  EXPECT_EQ(ev.latest(), 0u);
  EXPECT_FALSE(ev.Pending(0));  // never recorded: nothing to wait for
  const uint64_t first = ev.Recorded();
  int woke = 0;
  ev.WhenDone(first, [&] { ++woke; });
  const uint64_t second = ev.Recorded();
  int woke_second = 0;
  ev.WhenDone(second, [&] { ++woke_second; });
  EXPECT_EQ(ev.latest(), second);
  ev.Done(second);  // completes first (another stream): only its waiters go
  EXPECT_EQ(woke, 0);
  EXPECT_EQ(woke_second, 1);
  EXPECT_FALSE(ev.Pending(second));
  EXPECT_TRUE(ev.Pending(first));
  ev.Done(first);
  EXPECT_EQ(woke, 1);
  ev.WhenDone(first, [&] { ++woke; });  // done already: at once
  EXPECT_EQ(woke, 2);
  const uint64_t third = ev.Recorded();
  ev.WhenDone(third, [&] { ++woke; });
  ev.Gone();  // the exporter ended: nobody waits forever
  EXPECT_EQ(woke, 3);
  EXPECT_FALSE(ev.Pending(third));
}

TEST(IpcRegistry, EventHandlesAreNotMemoryHandles) {
  IpcRegistry r;
  auto ev = std::make_shared<IpcEvent>();
  const std::string eh = r.ExportEvent(1, "alice", 7, ev);
  EXPECT_EQ(r.ExportEvent(1, "alice", 7, ev), eh);
  const std::string mh = r.Export(1, "alice", kBase, 64);
  EXPECT_EQ(r.Open(eh, 2, "alice").status().code(), err::kInvalidResourceHandle);
  EXPECT_EQ(r.OpenEvent(mh, 2, "alice").status().code(), err::kInvalidResourceHandle);
  EXPECT_EQ(r.OpenEvent(eh, 2, "bob").status().code(), err::kNotPermitted);
  auto opened = r.OpenEvent(eh, 2, "alice");
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->get(), ev.get());
  r.RevokeEvent(1, 7);  // destroyed: no new openings
  EXPECT_EQ(r.OpenEvent(eh, 3, "alice").status().code(), err::kInvalidResourceHandle);
  const std::string again = r.ExportEvent(1, "alice", 8, ev);
  r.RevokeAll(1);  // the exporter ended: its event handles go too
  EXPECT_EQ(r.OpenEvent(again, 2, "alice").status().code(), err::kInvalidResourceHandle);
}

}  // namespace
}  // namespace remora::server
