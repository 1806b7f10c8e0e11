// server/memops.cc - stream memory operations, by the driver or by a kernel (memops.h).
#include "server/memops.h"

#include <string>

namespace remora::server {

namespace {

// One thread each, for values of {W} bits. A wait's condition is the driver's
// (CU_STREAM_WAIT_VALUE_*): 0 at least the value, compared cyclically; 1 equal; 2 a set bit in
// common; 3 a bit clear in both. A wait also ends when the word at `stop` (if not 0) is.
constexpr const char kKernels[] = R"(
.visible .entry remora_write{W}(.param .u64 a, .param .u{W} v, .param .u32 f, .param .u64 stop)
{
  .reg .u64 %p;
  .reg .u{W} %v;
  ld.param.u64 %p, [a];
  ld.param.u{W} %v, [v];
  membar.sys;
  st.volatile.global.u{W} [%p], %v;
  membar.sys;
  ret;
}

.visible .entry remora_wait{W}(.param .u64 a, .param .u{W} v, .param .u32 f, .param .u64 stop)
{
  .reg .u64 %p, %s;
  .reg .u{W} %v, %x, %t;
  .reg .u32 %c, %raised;
  .reg .pred %q, %ok;
  ld.param.u64 %p, [a];
  ld.param.u{W} %v, [v];
  ld.param.u32 %c, [f];
  ld.param.u64 %s, [stop];
  and.b32 %c, %c, 3;
again:
  setp.eq.u64 %q, %s, 0;
  @%q bra read;
  ld.volatile.global.u32 %raised, [%s];
  setp.ne.u32 %q, %raised, 0;
  @%q bra done;
read:
  ld.volatile.global.u{W} %x, [%p];
  setp.eq.u32 %q, %c, 1;
  @%q bra eq;
  setp.eq.u32 %q, %c, 2;
  @%q bra and_;
  setp.eq.u32 %q, %c, 3;
  @%q bra nor;
  sub.u{W} %t, %x, %v;
  setp.ge.s{W} %ok, %t, 0;
  bra.uni test;
eq:
  setp.eq.u{W} %ok, %x, %v;
  bra.uni test;
and_:
  and.b{W} %t, %x, %v;
  setp.ne.u{W} %ok, %t, 0;
  bra.uni test;
nor:
  or.b{W} %t, %x, %v;
  not.b{W} %t, %t;
  setp.ne.u{W} %ok, %t, 0;
test:
  @%ok bra done;
  nanosleep.u32 200;
  bra.uni again;
done:
  membar.sys;
  ret;
}
)";

// The module: kKernels for 32- and 64-bit values. Lives as long as the process (it keys
// Device::OwnKernel's cache).
const char* Ptx() {
  static const std::string ptx = [] {
    std::string text = ".version 8.0\n.target sm_75\n.address_size 64\n";
    for (const char* bits : {"32", "64"}) {
      std::string k = kKernels;
      for (size_t at = k.find("{W}"); at != std::string::npos; at = k.find("{W}", at))
        k.replace(at, 3, bits);
      text += k;
    }
    return text;
  }();
  return ptx.c_str();
}

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

// A page of its own, so that registering it pins nothing else.
struct WaitStop::Page {
  alignas(4096) std::atomic<uint32_t> word{0};
  char rest[4096 - sizeof(std::atomic<uint32_t>)] = {};
};

WaitStop::WaitStop() : page_(std::make_unique<Page>()) {}
WaitStop::~WaitStop() = default;

CUdeviceptr WaitStop::Address(Device& dev) {
  std::lock_guard lock(mu_);
  if (epoch_ == dev.epoch()) return addr_;
  epoch_ = dev.epoch();  // a rebuilt context forgot the old registration
  addr_ = 0;
  CUdeviceptr at = 0;
  if (dev.drv().cuMemHostRegister(page_.get(), sizeof(Page), CU_MEMHOSTREGISTER_DEVICEMAP) !=
      CUDA_SUCCESS)
    return 0;
  if (dev.drv().cuMemHostGetDevicePointer(&at, page_.get(), 0) != CUDA_SUCCESS) {
    (void)dev.drv().cuMemHostUnregister(page_.get());
    return 0;
  }
  return addr_ = at;
}

void WaitStop::Raise() {
  page_->word.store(1, std::memory_order_release);
}

void WaitStop::Release(Device& dev) {
  std::lock_guard lock(mu_);
  if (addr_ != 0 && epoch_ == dev.epoch()) (void)dev.drv().cuMemHostUnregister(page_.get());
  addr_ = 0;
  epoch_ = ~uint64_t{0};
}

Status IssueMemOp(Device& dev, CUstream s, MemOp op, CUdeviceptr addr, uint64_t value,
                  unsigned flags, WaitStop* stop) {
  const CUresult r = ByDriver(dev.drv(), s, op, addr, value, flags);
  if (r != CUDA_ERROR_INVALID_VALUE) return dev.Check(r, "a stream memory operation");
  ASSIGN_OR_RETURN(CUfunction fn, dev.OwnKernel(Ptx(), KernelName(op)));
  const bool wide = op == MemOp::kWrite64 || op == MemOp::kWait64;
  uint32_t narrow = uint32_t(value);
  CUdeviceptr stop_at =
      stop != nullptr && (op == MemOp::kWait32 || op == MemOp::kWait64) ? stop->Address(dev) : 0;
  void* args[] = {&addr, wide ? static_cast<void*>(&value) : &narrow, &flags, &stop_at};
  return dev.Check(dev.drv().cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr),
                   "cuLaunchKernel (a stream memory operation)");
}

}  // namespace remora::server
