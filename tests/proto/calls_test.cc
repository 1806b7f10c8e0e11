// tests/proto/calls_test.cc - calls.def and session.proto stay in step.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "proto/calls.h"
#include "remora/v1/session.pb.h"

namespace remora {
namespace {

const google::protobuf::FileDescriptor* SessionProto() {
  return remora::v1::Reply::descriptor()->file();
}

TEST(Calls, IdsAreUniqueAndInRange) {
  std::set<uint32_t> seen;
  for (const CallInfo& c : kCalls) {
    EXPECT_TRUE(seen.insert(c.id).second) << "duplicate id " << c.id << " (" << c.name << ")";
    EXPECT_LE(c.id, kMaxCallId) << c.name;
    EXPECT_EQ(FindCall(c.id), &c);
  }
  EXPECT_EQ(FindCall(kMaxCallId + 1), nullptr);
  EXPECT_NE(FindCall(kMaxCallId), nullptr) << "kMaxCallId is the largest id of a row";
  EXPECT_LT(kMaxCallId, 5000u) << "ids stay within the library ranges of calls.def";
}

TEST(Calls, EveryRowNamesMessagesOfTheSchema) {
  for (const CallInfo& c : kCalls) {
    for (std::string_view m : {c.request, c.reply}) {
      EXPECT_NE(SessionProto()->FindMessageTypeByName(std::string(m)), nullptr)
          << c.name << " names " << m << ", which session.proto lacks";
    }
  }
}

TEST(Calls, EveryRequestMessageOfTheSchemaIsUsed) {
  std::set<std::string> used;
  for (const CallInfo& c : kCalls) {
    used.insert(std::string(c.request));
    used.insert(std::string(c.reply));
  }
  // Messages that are parts of others, not call bodies.
  const std::set<std::string> parts = {"Quota",        "DeviceInfo",   "Reply",    "HostBytes",
                                       "KernelLayout", "VariableInfo", "TenantRow"};
  for (int i = 0; i < SessionProto()->message_type_count(); ++i) {
    std::string name = SessionProto()->message_type(i)->name();
    if (parts.count(name)) continue;
    EXPECT_TRUE(used.count(name)) << name << " is in session.proto but no calls.def row uses it";
  }
}

}  // namespace
}  // namespace remora
