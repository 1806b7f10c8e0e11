// tests/proto/dnn_plan_test.cc - layouts of forwarded cuDNN operations: checks and reach.
#include <gtest/gtest.h>

#include <set>

#include "proto/dnn.h"

namespace remora {
namespace {

const DnnOp& Op(std::string_view name) {
  for (const DnnOp& o : DnnOps())
    if (o.name == name) return o;
  ADD_FAILURE() << name;
  return DnnOps()[0];
}

DnnTensorShape Nchw(int n, int c, int h, int w, int dtype = 0) {
  return {dtype, {n, c, h, w}, {c * h * w, h * w, w, 1}};
}

TEST(DnnPlan, EveryRowHasAUniqueIdAndALayout) {
  std::set<uint32_t> ids;
  for (const DnnOp& o : DnnOps()) {
    EXPECT_TRUE(ids.insert(o.op).second) << o.name;
    EXPECT_EQ(FindDnnOp(o.op), &o);
    EXPECT_LE(o.info->ptrs, kDnnMaxPtrs) << o.name;
    for (size_t i = 0; i < o.info->ptrs; ++i)
      EXPECT_TRUE(o.info->reach[i] == kDnnFilter || o.info->reach[i] < o.info->tensors) << o.name;
  }
  EXPECT_EQ(FindDnnOp(0), nullptr);
}

TEST(DnnPlan, ReachFollowsStridesAndTheFilter) {
  const DnnTensorShape x = Nchw(2, 3, 5, 5), y = Nchw(2, 4, 5, 5);
  const DnnFilterShape w{0, 0, {4, 3, 3, 3}};
  const DnnTensorShape ts[] = {x, y};
  Result<DnnPlan> p = PlanDnn(Op("ConvolutionForward"), ts, &w);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bytes[0], 2 * 3 * 25 * 4u);  // x
  EXPECT_EQ(p->bytes[1], 4 * 3 * 9 * 4u);   // w
  EXPECT_EQ(p->bytes[2], 2 * 4 * 25 * 4u);  // y
  EXPECT_EQ(p->scalar_bytes, 4u);
  // NHWC strides reach the same bytes; a padded stride reaches further.
  DnnTensorShape nhwc{0, {2, 3, 5, 5}, {75, 1, 15, 3}};
  EXPECT_EQ(DnnTensorReach(nhwc).value(), 2 * 3 * 25 * 4u);
  DnnTensorShape padded{1, {2, 3, 5, 5}, {100, 25, 5, 1}};
  EXPECT_EQ(DnnTensorReach(padded).value(), (100 + 2 * 25 + 4 * 5 + 4 + 1) * 8u);
  // Double data scales with doubles; SetTensor's value has the tensor's type.
  const DnnTensorShape d[] = {Nchw(1, 1, 2, 2, 1), Nchw(1, 1, 2, 2, 1)};
  EXPECT_EQ(PlanDnn(Op("AddTensor"), d, nullptr)->scalar_bytes, 8u);
  const DnnTensorShape hf[] = {Nchw(1, 1, 2, 2, 2)};
  EXPECT_EQ(PlanDnn(Op("SetTensor"), hf, nullptr)->scalar_bytes, 2u);
}

TEST(DnnPlan, BadDescriptorsAreRefused) {
  EXPECT_EQ(DnnTensorReach({0, {1, 2}, {2, 1}}).status().code(), err::kInvalidValue);
  EXPECT_EQ(DnnTensorReach({0, {1, 0, 2, 2}, {4, 4, 2, 1}}).status().code(), err::kInvalidValue);
  EXPECT_EQ(DnnTensorReach({0, {1, 2, 2, 2}, {8, 4, 2, 0}}).status().code(), err::kInvalidValue);
  EXPECT_EQ(DnnTensorReach({3, {1, 2, 2, 2}, {8, 4, 2, 1}}).status().code(), err::kNotSupported);
  EXPECT_EQ(DnnTensorReach({0, {1 << 30, 1 << 30, 1 << 30, 2}, {1 << 30, 1 << 30, 1 << 30, 1}})
                .status()
                .code(),
            err::kInvalidValue);
  const DnnTensorShape one[] = {Nchw(1, 1, 2, 2)};
  EXPECT_FALSE(PlanDnn(Op("AddTensor"), one, nullptr).ok());  // needs two
  const DnnFilterShape w{0, 0, {4, 3, 3, 3}};
  const DnnTensorShape two[] = {Nchw(1, 1, 2, 2), Nchw(1, 1, 2, 2)};
  EXPECT_FALSE(PlanDnn(Op("AddTensor"), two, &w).ok());  // takes no filter
  EXPECT_EQ(CudaToDnnStatus(DnnStatusToCuda(2000)), 2000);
  EXPECT_EQ(CudaToDnnStatus(err::kInvalidResourceHandle), 2000);  // BAD_PARAM
  EXPECT_EQ(DnnStatusToCuda(3007), err::kNotSupported);           // by category
}

}  // namespace
}  // namespace remora
