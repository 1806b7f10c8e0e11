// tests/cuda/kernels/cu_check.h - what the driver-API test programs share: CU_CHECK(call) exits
// with FAIL naming the driver's error; CU_EXPECT(call, want) checks for exactly `want`.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CU_CHECK(call) ExpectCu((call), CUDA_SUCCESS, #call, __LINE__)
#define CU_EXPECT(call, want) ExpectCu((call), (want), #call, __LINE__)

inline void ExpectCu(CUresult got, CUresult want, const char* what, int line) {
  if (got == want) return;
  const char* name = nullptr;
  if (cuGetErrorName(got, &name) != CUDA_SUCCESS) name = "?";
  std::printf("FAIL: line %d: %s -> %s (%d), expected %d\n", line, what, name,
              static_cast<int>(got), static_cast<int>(want));
  std::exit(1);
}
