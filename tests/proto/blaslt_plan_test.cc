// tests/proto/blaslt_plan_test.cc - cuBLASLt matmuls: checks and how far each pointer reaches.
#include <gtest/gtest.h>

#include "proto/blaslt.h"

namespace remora {
namespace {

constexpr int32_t kF32 = 0, kF16 = 2, kBF16 = 14, kF64 = 1;

BlasLtLayout L(int32_t type, uint64_t rows, uint64_t cols, int64_t ld, int32_t batch = 1,
               int64_t stride = 0) {
  return BlasLtLayout{
      .type = type, .rows = rows, .cols = cols, .ld = ld, .batch = batch, .stride = stride};
}

// D (m x n) = op(A) op(B) + C, all of `type`, with the layouts' leading dimensions.
BlasLtMatmul Gemm(int32_t type, int m, int n, int k, int32_t transa = 0, int32_t transb = 0) {
  BlasLtMatmul g;
  g.desc.transa = transa;
  g.desc.transb = transb;
  g.layouts[kLtA] = transa ? L(type, k, m, k + 1) : L(type, m, k, m + 1);
  g.layouts[kLtB] = transb ? L(type, n, k, n) : L(type, k, n, k > 0 ? k : 1);
  g.layouts[kLtC] = L(type, m, n, m > 0 ? m : 1);
  g.layouts[kLtD] = L(type, m, n, m + 2);
  return g;
}

TEST(BlasLtPlan, ReachFollowsTheLayouts) {
  Result<BlasLtPlan> p = PlanBlasLt(Gemm(kF32, 5, 3, 4));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->m, 5);
  EXPECT_EQ(p->n, 3);
  EXPECT_EQ(p->k, 4);
  EXPECT_EQ(p->bytes[kLtA], ((4 - 1) * 6 + 5) * 4u);  // (cols-1)*ld + rows elements
  EXPECT_EQ(p->bytes[kLtB], ((3 - 1) * 4 + 4) * 4u);
  EXPECT_EQ(p->bytes[kLtC], 15 * 4u);
  EXPECT_EQ(p->bytes[kLtD], ((3 - 1) * 7 + 5) * 4u);
  EXPECT_EQ(p->bias_bytes, 0u);
  EXPECT_EQ(p->scalar_bytes, 4u);
  // Transposed: A is k x m in memory.
  p = PlanBlasLt(Gemm(kF16, 5, 3, 4, /*transa=*/1, /*transb=*/1));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bytes[kLtA], ((5 - 1) * 5 + 4) * 2u);
  EXPECT_EQ(p->bytes[kLtB], ((4 - 1) * 3 + 3) * 2u);
}

TEST(BlasLtPlan, BatchesReachStrideTimesBatchMinusOneMore) {
  BlasLtMatmul g = Gemm(kF32, 4, 4, 4);
  for (BlasLtLayout& l : g.layouts) {
    l.batch = 3;
    l.stride = 100;
  }
  g.desc.epilogue = 4;  // BIAS
  g.desc.bias_batch_stride = 10;
  Result<BlasLtPlan> p = PlanBlasLt(g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->batch, 3);
  EXPECT_EQ(p->bytes[kLtC], (2 * 100 + 16) * 4u);
  EXPECT_EQ(p->bias_bytes, (2 * 10 + 4) * 4u);  // D's type unless set
  for (BlasLtLayout& l : g.layouts) l.type = kBF16;
  g.layouts[kLtC].type = g.layouts[kLtD].type = kBF16;
  g.desc.bias_type = kBF16;  // D's type, set
  p = PlanBlasLt(g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bias_type, kBF16);
  EXPECT_EQ(p->bias_bytes, (2 * 10 + 4) * 2u);
  EXPECT_EQ(p->bytes[kLtA], (2 * 100 + 3 * 5 + 4) * 2u);
  // Stride 0 (one matrix for every entry) reaches one matrix.
  g.layouts[kLtB].stride = 0;
  p = PlanBlasLt(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bytes[kLtB], 16 * 2u);
  // Batch counts must agree; strides must not be negative.
  g.layouts[kLtA].batch = 2;
  EXPECT_EQ(PlanBlasLt(g).status().code(), err::kInvalidValue);
  g.layouts[kLtA].batch = 3;
  g.layouts[kLtA].stride = -1;
  EXPECT_EQ(PlanBlasLt(g).status().code(), err::kInvalidValue);
}

TEST(BlasLtPlan, RefusesWhatCuBlasLtRefuses) {
  auto code = [](BlasLtMatmul g) { return PlanBlasLt(g).status().code(); };
  BlasLtMatmul g = Gemm(kF32, 4, 4, 4);
  g.layouts[kLtA].ld = 3;  // below the rows
  EXPECT_EQ(code(g), err::kInvalidValue);
  g = Gemm(kF32, 4, 4, 4);
  g.layouts[kLtB].rows = 5;  // inner dimensions differ
  g.layouts[kLtB].ld = 5;
  EXPECT_EQ(code(g), err::kInvalidValue);
  g = Gemm(kF32, 4, 4, 4);
  g.desc.transa = 7;
  EXPECT_EQ(code(g), err::kInvalidValue);
  // Not forwarded: other types, compute and scale types, orders, epilogues, modes.
  EXPECT_EQ(code(Gemm(kF64, 4, 4, 4)), err::kNotSupported);
  g = Gemm(kF16, 4, 4, 4);
  g.layouts[kLtC].type = g.layouts[kLtD].type = kBF16;
  EXPECT_EQ(code(g), err::kNotSupported);
  g = Gemm(kF16, 4, 4, 4);
  g.layouts[kLtC].type = g.layouts[kLtD].type = kF32;  // FP16 in, FP32 out: fine
  EXPECT_TRUE(PlanBlasLt(g).ok());
  g = Gemm(kF32, 4, 4, 4);
  g.desc.compute_type = 70;  // CUBLAS_COMPUTE_64F
  EXPECT_EQ(code(g), err::kNotSupported);
  g = Gemm(kF32, 4, 4, 4);
  g.desc.scale_type = kF16;
  EXPECT_EQ(code(g), err::kNotSupported);
  g = Gemm(kF32, 4, 4, 4);
  g.layouts[kLtD].order = 1;  // CUBLASLT_ORDER_ROW
  EXPECT_EQ(code(g), err::kNotSupported);
  g = Gemm(kF32, 4, 4, 4);
  g.desc.epilogue = 8 | 128;  // DRELU
  EXPECT_EQ(code(g), err::kNotSupported);
  g = Gemm(kF32, 4, 4, 4);
  g.desc.pointer_mode = 2;  // DEVICE_VECTOR
  EXPECT_EQ(code(g), err::kNotSupported);
  // A bias of another type than D's: invalid, as NVIDIA's heuristic says of an FP32 bias for
  // FP16 D (an H200, cuBLASLt 13.0).
  g = Gemm(kF16, 4, 4, 4);
  g.desc.epilogue = 4;
  g.desc.bias_type = kF32;
  EXPECT_EQ(code(g), err::kInvalidValue);
  g.desc.bias_type = kBF16;
  EXPECT_EQ(code(g), err::kInvalidValue);
  g = Gemm(kF32, 4, 4, 4);
  g.desc.unsupported = 17;
  EXPECT_EQ(code(g), err::kNotSupported);
  // A reach no device holds.
  g = Gemm(kF32, 4, 4, 4);
  for (BlasLtLayout& l : g.layouts) {
    l.batch = 1 << 30;
    l.stride = int64_t{1} << 40;
  }
  EXPECT_EQ(code(g), err::kInvalidValue);
}

TEST(BlasLtPlan, EmptyProductsReachNothingOfAAndB) {
  Result<BlasLtPlan> p = PlanBlasLt(Gemm(kF32, 4, 4, 0));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bytes[kLtA], 0u);
  EXPECT_EQ(p->bytes[kLtB], 0u);
  EXPECT_GT(p->bytes[kLtC], 0u);
  p = PlanBlasLt(Gemm(kF32, 0, 4, 4));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bytes[kLtD], 0u);
}

TEST(BlasLtPlan, AttributesRoundTripWithNvidiasSizes) {
  BlasLtDesc d;
  const int32_t t = 1;
  EXPECT_EQ(BlasLtSetDescAttribute(d, 3, &t, sizeof t), 0);  // TRANSA
  EXPECT_EQ(d.transa, 1);
  EXPECT_EQ(BlasLtSetDescAttribute(d, 3, &t, 8), 7);       // wrong size
  EXPECT_EQ(BlasLtSetDescAttribute(d, 999, &t, 4), 7);     // unknown
  EXPECT_EQ(BlasLtSetDescAttribute(d, 3, nullptr, 4), 7);  // no buffer
  const uint64_t null_ptr = 0, some_ptr = 0x1000;
  EXPECT_EQ(BlasLtSetDescAttribute(d, 17, &null_ptr, 8), 0);  // A_SCALE_POINTER null: default
  EXPECT_EQ(d.unsupported, -1);
  EXPECT_EQ(BlasLtSetDescAttribute(d, 17, &some_ptr, 8), 0);  // set: the matmul refuses
  EXPECT_EQ(d.unsupported, 17);                               // named in the matmul's refusal
  BlasLtDesc fast;
  const int8_t on = 1;  // FAST_ACCUM is an int8_t (PyTorch's fp8 matmuls set it)
  EXPECT_EQ(BlasLtSetDescAttribute(fast, 25, &on, sizeof on), 0);
  EXPECT_EQ(BlasLtSetDescAttribute(fast, 25, &t, sizeof t), 7);
  EXPECT_EQ(fast.unsupported, -1);
  size_t written = 0;
  EXPECT_EQ(BlasLtGetDescAttribute(d, 3, nullptr, 0, &written), 0);
  EXPECT_EQ(written, 4u);
  int32_t back = 0;
  EXPECT_EQ(BlasLtGetDescAttribute(d, 3, &back, 4, &written), 0);
  EXPECT_EQ(back, 1);
  BlasLtLayout l;
  const int64_t ld = 9;
  EXPECT_EQ(BlasLtSetLayoutAttribute(l, 4, &ld, 8), 0);
  EXPECT_EQ(l.ld, 9);
  const uint32_t pointer_array = 1;
  EXPECT_EQ(BlasLtSetLayoutAttribute(l, 8, &pointer_array, 4), 0);  // BATCH_MODE
  EXPECT_EQ(l.unsupported, 8);
}

}  // namespace
}  // namespace remora
