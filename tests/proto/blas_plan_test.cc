// tests/proto/blas_plan_test.cc - the shapes of forwarded cuBLAS routines: checks and reach.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

#include "proto/blas.h"

namespace remora {
namespace {

const BlasOp& Op(std::string_view name) {
  for (const BlasOp& o : BlasOps())
    if (o.name == name) return o;
  ADD_FAILURE() << name;
  return BlasOps()[0];
}

TEST(BlasPlan, EveryRowHasAUniqueIdAndAShape) {
  std::set<uint32_t> ids;
  for (const BlasOp& o : BlasOps()) {
    EXPECT_TRUE(ids.insert(o.op).second) << o.name;
    EXPECT_EQ(FindBlasOp(o.op), &o);
    EXPECT_LE(o.info->ptrs, kBlasMaxPtrs) << o.name;
    EXPECT_LE(o.info->scalars, 2) << o.name;
  }
  EXPECT_EQ(FindBlasOp(0), nullptr);
}

TEST(BlasPlan, GemmReachFollowsTransposesAndLeadingDimensions) {
  // m=3 n=4 k=5; A is op(A) m x k, stored k x m when transposed (lda >= k).
  Result<BlasPlan> p = PlanBlas(Op("Sgemm"), std::vector<int64_t>{1, 0, 3, 4, 5, 7, 6, 3});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bytes[0], ((3 - 1) * 7 + 5) * 4u);  // A: 5 x 3, lda 7
  EXPECT_EQ(p->bytes[1], ((4 - 1) * 6 + 5) * 4u);  // B: 5 x 4, ldb 6
  EXPECT_EQ(p->bytes[2], ((4 - 1) * 3 + 3) * 4u);  // C: 3 x 4, ldc 3
  EXPECT_EQ(p->scalar_bytes[0], 4u);
  // lda < rows of the stored A, a negative dimension, a bad enum.
  EXPECT_EQ(PlanBlas(Op("Sgemm"), std::vector<int64_t>{1, 0, 3, 4, 5, 4, 6, 3}).status().code(),
            err::kInvalidValue);
  EXPECT_EQ(PlanBlas(Op("Sgemm"), std::vector<int64_t>{0, 0, -1, 4, 5, 7, 6, 3}).status().code(),
            err::kInvalidValue);
  EXPECT_EQ(PlanBlas(Op("Sgemm"), std::vector<int64_t>{7, 0, 3, 4, 5, 7, 6, 3}).status().code(),
            err::kInvalidValue);
  EXPECT_EQ(PlanBlas(Op("Sgemm"), std::vector<int64_t>{0, 0, 3}).status().code(),
            err::kInvalidValue);
  // Zero-sized operands reach nothing (and may be anywhere).
  p = PlanBlas(Op("Dgemm"), std::vector<int64_t>{0, 0, 0, 4, 5, 1, 5, 1});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bytes[0], 0u);
  EXPECT_EQ(p->bytes[2], 0u);
}

// Each scalar has its own size: Hermitian updates take real alpha and beta (her2k a complex
// alpha and a real beta), crot a real c and a complex s, rotm a 5-element parameter array.
TEST(BlasPlan, ScalarsAreSizedOneByOne) {
  auto sizes = [](std::string_view name, std::vector<int64_t> ints) {
    Result<BlasPlan> p = PlanBlas(Op(name), ints);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().message();
    return p.ok() ? p->scalar_bytes : std::array<uint32_t, kBlasMaxScalars>{};
  };
  using S = std::array<uint32_t, kBlasMaxScalars>;
  EXPECT_EQ(sizes("Cherk", {0, 0, 4, 3, 4, 4}), (S{4, 4}));
  EXPECT_EQ(sizes("Zher2k", {1, 2, 4, 3, 3, 3, 4}), (S{16, 8}));
  EXPECT_EQ(sizes("Zher", {0, 4, 1, 4}), (S{8, 0}));
  EXPECT_EQ(sizes("Csyrk", {0, 1, 4, 3, 3, 4}), (S{8, 8}));
  EXPECT_EQ(sizes("Crot", {4, 1, 1}), (S{4, 8}));
  EXPECT_EQ(sizes("Zdrot", {4, 1, 1}), (S{8, 8}));
  EXPECT_EQ(sizes("Srotm", {4, 1, 1}), (S{20, 0}));
  Result<BlasPlan> p = PlanBlas(Op("Zher2k"), std::vector<int64_t>{1, 2, 4, 3, 3, 3, 4});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ScalarOffset(1), 16u);
  EXPECT_EQ(p->ScalarOffset(2), 24u);
  // A Hermitian product takes N or C, a complex symmetric one N or T, a real one any.
  EXPECT_EQ(PlanBlas(Op("Cherk"), std::vector<int64_t>{0, 1, 4, 3, 3, 4}).status().code(),
            err::kInvalidValue);
  EXPECT_EQ(PlanBlas(Op("Zherkx"), std::vector<int64_t>{0, 1, 4, 3, 3, 3, 4}).status().code(),
            err::kInvalidValue);
  EXPECT_EQ(PlanBlas(Op("Csyr2k"), std::vector<int64_t>{0, 2, 4, 3, 3, 3, 4}).status().code(),
            err::kInvalidValue);
  EXPECT_TRUE(PlanBlas(Op("Dsyrk"), std::vector<int64_t>{0, 2, 4, 3, 3, 4}).ok());
}

TEST(BlasPlan, VectorsStridedBatchesAndOverflow) {
  Result<BlasPlan> p = PlanBlas(Op("Daxpy"), std::vector<int64_t>{10, -3, 2});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bytes[0], (9 * 3 + 1) * 8u);
  EXPECT_EQ(p->bytes[1], (9 * 2 + 1) * 8u);
  EXPECT_FALSE(PlanBlas(Op("Daxpy"), std::vector<int64_t>{10, 0, 1}).ok());
  // Strided: (batch - 1) * stride elements plus one matrix.
  p = PlanBlas(Op("SgemmStridedBatched"),
               std::vector<int64_t>{0, 0, 2, 2, 2, 2, 100, 2, 0, 2, 4, 3});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bytes[0], (2 * 100 + 4) * 4u);
  EXPECT_EQ(p->bytes[1], 4 * 4u);  // stride 0: one matrix, shared
  EXPECT_EQ(p->bytes[2], (2 * 4 + 4) * 4u);
  EXPECT_EQ(p->batch, 3);
  // A reach no device holds is refused, not wrapped around.
  EXPECT_EQ(PlanBlas(Op("Sgemm"), std::vector<int64_t>{0, 0, 2147483647, 2147483647, 2147483647,
                                                       2147483647, 2147483647, 2147483647})
                .status()
                .code(),
            err::kInvalidValue);
}

TEST(BlasPlan, ExTypesAndArrays) {
  // GemmEx: half A/B, float C, 32F compute: scalars are float.
  Result<BlasPlan> p =
      PlanBlas(Op("GemmEx"), std::vector<int64_t>{0, 0, 4, 4, 4, 2, 4, 2, 4, 0, 4, 68, -1});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bytes[0], 16 * 2u);
  EXPECT_EQ(p->bytes[2], 16 * 4u);
  EXPECT_EQ(p->scalar_bytes[0], 4u);
  // An unforwarded type is NOT_SUPPORTED, not INVALID_VALUE.
  EXPECT_EQ(PlanBlas(Op("GemmEx"), std::vector<int64_t>{0, 0, 4, 4, 4, 8, 4, 2, 4, 0, 4, 68, -1})
                .status()
                .code(),
            err::kNotSupported);
  p = PlanBlas(Op("SgetrfBatched"), std::vector<int64_t>{5, 5, 3});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->array[0]);
  EXPECT_TRUE(p->nullable[1]);
  EXPECT_EQ(p->bytes[1], 5 * 3 * 4u);
  EXPECT_FALSE(PlanBlas(Op("SmatinvBatched"), std::vector<int64_t>{33, 33, 33, 1}).ok());
}

TEST(BlasPlan, ResultsOnTheHostAndStatusMapping) {
  EXPECT_TRUE(BlasResultOnHost(Op("Sdot"), false));
  EXPECT_FALSE(BlasResultOnHost(Op("Sdot"), true));
  EXPECT_TRUE(BlasResultOnHost(Op("SgetrsBatched"), true));  // info is host memory
  EXPECT_FALSE(BlasResultOnHost(Op("Sgemm"), false));
  for (int32_t s : {0, 3, 7, 13, 15}) EXPECT_EQ(CudaToBlasStatus(BlasStatusToCuda(s)), s) << s;
  EXPECT_EQ(CudaToBlasStatus(err::kInvalidResourceHandle), 1);  // NOT_INITIALIZED
  EXPECT_EQ(CudaToBlasStatus(err::kIllegalAddress), 13);        // EXECUTION_FAILED
}

}  // namespace
}  // namespace remora
