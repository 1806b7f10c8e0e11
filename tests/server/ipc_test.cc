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

}  // namespace
}  // namespace remora::server
