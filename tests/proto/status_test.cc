// tests/proto/status_test.cc - the Status/Result contract.
#include "proto/status.h"

#include <gtest/gtest.h>

namespace remora {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Error(err::kInvalidValue, "odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x));
  return OkStatus();
}

TEST(Status, PropagatesCodeAndMessage) {
  EXPECT_EQ(Quarter(8).value(), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), err::kInvalidValue);
  EXPECT_EQ(r.status().message(), "odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(3).code(), 1);
}

TEST(Status, NamesAndStickinessComeFromTheTable) {
  EXPECT_STREQ(ErrorName(err::kMemoryAllocation), "MemoryAllocation");
  EXPECT_EQ(ErrorName(12345), nullptr);
  EXPECT_TRUE(ErrorIsSticky(err::kIllegalAddress));
  EXPECT_FALSE(ErrorIsSticky(err::kInvalidValue));
  EXPECT_EQ(Status(err::kInvalidValue, "x").ToString(), "InvalidValue (1): x");
}

}  // namespace
}  // namespace remora
