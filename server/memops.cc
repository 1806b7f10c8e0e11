// server/memops.cc - stream memory operations, by the driver or by a kernel (memops.h).
#include "server/memops.h"

namespace remora::server {

namespace {

// One thread each. A wait's condition is the driver's (CU_STREAM_WAIT_VALUE_*): 0 at least
// the value, compared cyclically; 1 equal; 2 a set bit in common; 3 a bit clear in both.
constexpr const char kPtx[] = R"(
.version 8.0
.target sm_75
.address_size 64

.visible .entry remora_write32(.param .u64 a, .param .u32 v, .param .u32 f)
{
  .reg .u64 %p;
  .reg .u32 %v;
  ld.param.u64 %p, [a];
  ld.param.u32 %v, [v];
  membar.sys;
  st.volatile.global.u32 [%p], %v;
  membar.sys;
  ret;
}

.visible .entry remora_write64(.param .u64 a, .param .u64 v, .param .u32 f)
{
  .reg .u64 %p, %v;
  ld.param.u64 %p, [a];
  ld.param.u64 %v, [v];
  membar.sys;
  st.volatile.global.u64 [%p], %v;
  membar.sys;
  ret;
}

.visible .entry remora_wait32(.param .u64 a, .param .u32 v, .param .u32 f)
{
  .reg .u64 %p;
  .reg .u32 %v, %c, %x, %t;
  .reg .pred %q, %ok;
  ld.param.u64 %p, [a];
  ld.param.u32 %v, [v];
  ld.param.u32 %c, [f];
  and.b32 %c, %c, 3;
again:
  ld.volatile.global.u32 %x, [%p];
  setp.eq.u32 %q, %c, 1;
  @%q bra eq;
  setp.eq.u32 %q, %c, 2;
  @%q bra and_;
  setp.eq.u32 %q, %c, 3;
  @%q bra nor;
  sub.u32 %t, %x, %v;
  setp.ge.s32 %ok, %t, 0;
  bra.uni test;
eq:
  setp.eq.u32 %ok, %x, %v;
  bra.uni test;
and_:
  and.b32 %t, %x, %v;
  setp.ne.u32 %ok, %t, 0;
  bra.uni test;
nor:
  or.b32 %t, %x, %v;
  not.b32 %t, %t;
  setp.ne.u32 %ok, %t, 0;
test:
  @%ok bra done;
  nanosleep.u32 200;
  bra.uni again;
done:
  membar.sys;
  ret;
}

.visible .entry remora_wait64(.param .u64 a, .param .u64 v, .param .u32 f)
{
  .reg .u64 %p, %v, %x, %t;
  .reg .u32 %c;
  .reg .pred %q, %ok;
  ld.param.u64 %p, [a];
  ld.param.u64 %v, [v];
  ld.param.u32 %c, [f];
  and.b32 %c, %c, 3;
again:
  ld.volatile.global.u64 %x, [%p];
  setp.eq.u32 %q, %c, 1;
  @%q bra eq;
  setp.eq.u32 %q, %c, 2;
  @%q bra and_;
  setp.eq.u32 %q, %c, 3;
  @%q bra nor;
  sub.u64 %t, %x, %v;
  setp.ge.s64 %ok, %t, 0;
  bra.uni test;
eq:
  setp.eq.u64 %ok, %x, %v;
  bra.uni test;
and_:
  and.b64 %t, %x, %v;
  setp.ne.u64 %ok, %t, 0;
  bra.uni test;
nor:
  or.b64 %t, %x, %v;
  not.b64 %t, %t;
  setp.ne.u64 %ok, %t, 0;
test:
  @%ok bra done;
  nanosleep.u32 200;
  bra.uni again;
done:
  membar.sys;
  ret;
}
)";

const char* KernelName(MemOp op) {
  switch (op) {
    case MemOp::kWrite32:
      return "remora_write32";
    case MemOp::kWrite64:
      return "remora_write64";
    case MemOp::kWait32:
      return "remora_wait32";
    default:
      return "remora_wait64";
  }
}

CUresult ByDriver(const DriverTable& drv, CUstream s, MemOp op, CUdeviceptr addr, uint64_t value,
                  unsigned flags) {
  switch (op) {
    case MemOp::kWrite32:
      return drv.cuStreamWriteValue32(s, addr, cuuint32_t(value), flags);
    case MemOp::kWrite64:
      return drv.cuStreamWriteValue64(s, addr, value, flags);
    case MemOp::kWait32:
      return drv.cuStreamWaitValue32(s, addr, cuuint32_t(value), flags);
    default:
      return drv.cuStreamWaitValue64(s, addr, value, flags);
  }
}

}  // namespace

Status IssueMemOp(Device& dev, CUstream s, MemOp op, CUdeviceptr addr, uint64_t value,
                  unsigned flags) {
  const CUresult r = ByDriver(dev.drv(), s, op, addr, value, flags);
  if (r != CUDA_ERROR_INVALID_VALUE) return dev.Check(r, "a stream memory operation");
  ASSIGN_OR_RETURN(CUfunction fn, dev.OwnKernel(kPtx, KernelName(op)));
  const bool wide = op == MemOp::kWrite64 || op == MemOp::kWait64;
  uint32_t narrow = uint32_t(value);
  void* args[] = {&addr, wide ? static_cast<void*>(&value) : &narrow, &flags};
  return dev.Check(dev.drv().cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr),
                   "cuLaunchKernel (a stream memory operation)");
}

}  // namespace remora::server
