// tests/cuda/kernels/driver_tables.cpp - the private export tables Remora's libcuda.so.1
// serves NVIDIA's libraries (client_stub/driver_tables.cc), as Remora serves them: the tools
// table's thread context, and the table NVIDIA's cuBLAS keys its per-context and per-stream
// state by. Behaviour only Remora's driver gives: NVIDIA's driver has these tables, but what
// it answers beyond the thread context is not checked here.
#include <cuda.h>

#include <cstdint>
#include <cstdio>

#include "cu_check.h"

namespace {

const void* const* Table(const unsigned char (&id)[16]) {
  CUuuid uuid;
  for (int i = 0; i < 16; ++i) uuid.bytes[i] = static_cast<char>(id[i]);
  const void* table = nullptr;
  CU_CHECK(cuGetExportTable(&table, &uuid));
  return static_cast<const void* const*>(table);
}

int Fail(const char* what) {
  std::printf("FAIL: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  CU_CHECK(cuInit(0));
  CUdevice dev = 0;
  CU_CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));

  constexpr unsigned char kToolsTls[16] = {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
                                           0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc};
  const void* const* tls = Table(kToolsTls);
  if (reinterpret_cast<uintptr_t>(tls[0]) != 3 * sizeof(void*))
    return Fail("the tools table is not three slots long");
  auto thread_context = reinterpret_cast<CUresult (*)(CUcontext*)>(tls[2]);
  CUcontext asked = reinterpret_cast<CUcontext>(uintptr_t{1});
  CU_EXPECT(thread_context(&asked), CUDA_ERROR_INVALID_CONTEXT);  // none current yet
  if (asked != nullptr) return Fail("no current context, but the answer was not cleared");
  CU_CHECK(cuCtxSetCurrent(ctx));
  CU_CHECK(thread_context(&asked));
  if (asked != ctx) return Fail("the tools table does not answer the current context");

  constexpr unsigned char kBlasState[16] = {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
                                            0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2};
  const void* const* blas = Table(kBlasState);
  if (reinterpret_cast<uintptr_t>(blas[0]) != 93 * sizeof(void*))
    return Fail("cuBLAS's table is not 93 slots long");
  auto context_key = reinterpret_cast<CUresult (*)(CUcontext, uint64_t*)>(blas[4]);
  auto identity = reinterpret_cast<CUresult (*)(CUcontext, const void*, uint64_t*)>(blas[39]);
  auto private_stream = reinterpret_cast<CUresult (*)(CUcontext, CUstream, void**, int)>(blas[51]);
  uint64_t key = 0, again = 1;
  CU_CHECK(context_key(ctx, &key));
  CU_CHECK(context_key(ctx, &again));
  if (key != again) return Fail("a context's key changed");
  CU_EXPECT(context_key(reinterpret_cast<CUcontext>(uintptr_t{8}), &key),
            CUDA_ERROR_INVALID_CONTEXT);

  CUstream a = nullptr, b = nullptr;
  CU_CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  void* pa = nullptr;
  void* pb = nullptr;
  void* legacy = nullptr;
  void* per_thread = nullptr;
  CU_CHECK(private_stream(ctx, a, &pa, 0));
  CU_CHECK(private_stream(ctx, b, &pb, 0));
  CU_CHECK(private_stream(ctx, nullptr, &legacy, 0));
  CU_CHECK(private_stream(ctx, nullptr, &per_thread, 1));
  if (legacy != static_cast<void*>(CU_STREAM_LEGACY) ||
      per_thread != static_cast<void*>(CU_STREAM_PER_THREAD))
    return Fail("the default stream is not the legacy or the per-thread stream");
  uint64_t ia = 0, ib = 0, ia2 = 1, il = 0;
  CU_CHECK(identity(ctx, pa, &ia));
  CU_CHECK(identity(ctx, pb, &ib));
  CU_CHECK(identity(ctx, pa, &ia2));
  CU_CHECK(identity(ctx, legacy, &il));
  if (ia != ia2 || ia == ib || ia == il || ib == il)
    return Fail("streams' identities are not one per stream");
  CU_EXPECT(identity(ctx, nullptr, &ia), CUDA_ERROR_INVALID_VALUE);
  CU_EXPECT(private_stream(ctx, a, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK(cuStreamDestroy(b));
  if (private_stream(ctx, b, &pb, 0) == CUDA_SUCCESS)
    return Fail("a destroyed stream has a private handle");

  // A slot not served answers CUDA_ERROR_NOT_SUPPORTED and names itself on stderr.
  CU_EXPECT(reinterpret_cast<CUresult (*)()>(blas[5])(), CUDA_ERROR_NOT_SUPPORTED);
  CU_CHECK(cuStreamDestroy(a));
  CU_CHECK(cuDevicePrimaryCtxRelease(dev));
  std::printf("PASS driver_tables\n");
  return 0;
}
