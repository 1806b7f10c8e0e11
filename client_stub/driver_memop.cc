// client_stub/driver_memop.cc - the driver's stream memory operations: a 32- or 64-bit value
// written to device memory, or the stream held on the device until one there meets a
// condition, in stream order (one StreamMemOp each, checked by the server against the
// tenant's memory); batches of them, checked whole before any is sent. A stream being
// captured into a graph cannot take one, and barriers and remote-write flushes are not
// served: both are refused by name.
#include <cstddef>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/driver_internal.h"
#include "client_stub/errors.h"
#include "client_stub/state.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
namespace cs = remora::client_stub;
namespace v1 = remora::v1;

namespace {

using Op = v1::StreamMemOpRequest;

struct MemOp {
  Op::Op op;
  CUdeviceptr addr;
  uint64_t value;
  unsigned flags;
};

// CUDA_ERROR_INVALID_VALUE for an operation the driver would refuse: a misaligned address,
// or flags it does not have (remote-write flushes need a device that can make them, and the
// emulated GPU says it cannot: the server's device decides).
CUresult Check(const MemOp& m) {
  const bool wide = m.op == Op::WRITE64 || m.op == Op::WAIT64;
  const bool wait = m.op == Op::WAIT32 || m.op == Op::WAIT64;
  const unsigned allowed = wait ? 3u | unsigned{CU_STREAM_WAIT_VALUE_FLUSH}
                                : unsigned{CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER};
  if (m.addr == 0 || m.addr % (wide ? 8 : 4) != 0 || (m.flags & ~allowed) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// Refuses a stream that is capturing: its work becomes a graph, and Remora's graphs have no
// memory-operation nodes.
CUresult NotCapturing(CUstream s, const char* call) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaError_t e = cudaStreamIsCapturing(s, &capture)) return ToCu(e);
  if (capture == cudaStreamCaptureStatusNone) return CUDA_SUCCESS;
  return ToCu(cudaError_t(
      cs::Unsupported(call, "a stream memory operation cannot be captured into a graph")));
}

CUresult Post(CUstream s, const MemOp& m) {
  Op req;
  req.set_stream(cs::StreamId(s));
  req.set_addr(m.addr);
  req.set_value(m.value);
  req.set_op(m.op);
  req.set_flags(m.flags);
  return ToCu(cs::Connection::Get().Post(remora::CallId::kStreamMemOp, req));
}

CUresult One(CUstream s, const MemOp& m, const char* call) {
  cs::DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (CUresult r = Check(m)) return r;
  if (CUresult r = NotCapturing(s, call)) return r;
  return Post(s, m);
}

}  // namespace

static_assert(offsetof(CUstreamBatchMemOpParams, waitValue.address) ==
                  offsetof(CUstreamBatchMemOpParams, writeValue.address) &&
              offsetof(CUstreamBatchMemOpParams, waitValue.value64) ==
                  offsetof(CUstreamBatchMemOpParams, writeValue.value64) &&
              offsetof(CUstreamBatchMemOpParams, waitValue.flags) ==
                  offsetof(CUstreamBatchMemOpParams, writeValue.flags));

extern "C" {

CUresult cuStreamWriteValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return One(s, {Op::WRITE32, addr, value, flags}, "cuStreamWriteValue32");
}

CUresult cuStreamWriteValue64(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
  return One(s, {Op::WRITE64, addr, value, flags}, "cuStreamWriteValue64");
}

CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return One(s, {Op::WAIT32, addr, value, flags}, "cuStreamWaitValue32");
}

CUresult cuStreamWaitValue64(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
  return One(s, {Op::WAIT64, addr, value, flags}, "cuStreamWaitValue64");
}

CUresult cuStreamBatchMemOp(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops,
                            unsigned int flags) {
  cs::DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (flags != 0 || (count > 0 && ops == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<MemOp> batch;
  for (unsigned int i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = ops[i];
    switch (p.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
        // A write's parameters lie where a wait's do (static_assert above).
        const auto& v = p.waitValue;
        const bool wait = p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                          p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
        const bool wide = p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 ||
                          p.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
        const Op::Op op =
            wait ? (wide ? Op::WAIT64 : Op::WAIT32) : (wide ? Op::WRITE64 : Op::WRITE32);
        batch.push_back({op, v.address, wide ? v.value64 : v.value, v.flags});
        break;
      }
      case CU_STREAM_MEM_OP_BARRIER:
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        return ToCu(
            cudaError_t(cs::Unsupported("cuStreamBatchMemOp",
                                        "memory barrier and remote-write flush operations are not "
                                        "served")));
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (CUresult r = Check(batch.back())) return r;
  }
  if (CUresult r = NotCapturing(s, "cuStreamBatchMemOp")) return r;
  for (const MemOp& m : batch)
    if (CUresult r = Post(s, m)) return r;
  return CUDA_SUCCESS;
}

}  // extern "C"
