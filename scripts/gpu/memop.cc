// scripts/gpu/memop.cc - do stream memory operations work on memory from the default pool
// (cuMemAllocAsync), as on cuMemAlloc's? Native driver API.
#include <cuda.h>
#include <cstdio>
static const char* N(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}
int main() {
  cuInit(0);
  CUdevice d;
  cuDeviceGet(&d, 0);
  CUcontext c;
  cuDevicePrimaryCtxRetain(&c, d);
  cuCtxSetCurrent(c);
  CUstream s;
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  for (int pool = 0; pool < 2; ++pool) {
    CUdeviceptr p = 0;
    CUresult a = pool ? cuMemAllocAsync(&p, 64, s) : cuMemAlloc(&p, 64);
    cuStreamSynchronize(s);
    CUresult w = cuStreamWriteValue32(s, p, 7, 0);
    CUresult ws = cuStreamSynchronize(s);
    CUresult q = cuStreamWaitValue32(s, p, 7, CU_STREAM_WAIT_VALUE_EQ);
    CUresult qs = cuStreamSynchronize(s);
    unsigned v = 0;
    cuMemcpyDtoH(&v, p, 4);
    std::printf("MEMOP %s: alloc %s write %s sync %s wait %s sync %s value %u\n",
                pool ? "pool (cuMemAllocAsync)" : "cuMemAlloc", N(a), N(w), N(ws), N(q), N(qs), v);
  }
  int v1 = -1;
  cuDeviceGetAttribute(&v1, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, d);
  std::printf("MEMOP attr CAN_USE_STREAM_MEM_OPS_V1 %d\n", v1);
  return 0;
}
