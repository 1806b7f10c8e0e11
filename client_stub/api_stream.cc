// client_stub/api_stream.cc - streams, events and host functions.
//
// App stream handles are the server's stream ids (state.h: StreamHandle); the null and
// legacy streams are stream 0, the per-thread stream each thread's own (PerThreadStreamId).
// Event handles are event ids.
#include <cstring>

#include "client_stub/api.h"
#include "client_stub/connection.h"
#include "client_stub/errors.h"
#include "client_stub/graph.h"
#include "client_stub/state.h"

using remora::CallId;
using remora::client_stub::CheckStream;
using remora::client_stub::Connection;
using remora::client_stub::Ret;
using remora::client_stub::St;
using remora::client_stub::StreamHandle;
using remora::client_stub::StreamId;
namespace v1 = remora::v1;
namespace cs = remora::client_stub;

namespace {

constexpr unsigned kEventFlags =
    cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;

uint64_t EventId(cudaEvent_t e) {
  return reinterpret_cast<uintptr_t>(e);
}

cudaError_t CheckEvent(cudaEvent_t e) {
  return e && St().events.Contains(EventId(e)) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

uint64_t PackStreamInfo(unsigned flags, int priority) {
  return uint64_t{flags} | uint64_t{static_cast<uint32_t>(priority)} << 32;
}

// Flags and priority of `s` as recorded at creation (0, 0 for the default streams).
cudaError_t StreamInfo(cudaStream_t s, unsigned* flags, int* priority) {
  uint64_t id = StreamId(s), info = 0;
  if (id != 0) {
    std::optional<uint64_t> v = St().streams.Find(id);
    if (!v) return cudaErrorInvalidResourceHandle;
    info = *v;
  }
  if (flags) *flags = static_cast<uint32_t>(info);
  if (priority) *priority = static_cast<int32_t>(info >> 32);
  return cudaSuccess;
}

cudaError_t CreateStream(cudaStream_t* out, unsigned flags, int priority) {
  if (!out || (flags & ~cudaStreamNonBlocking)) return Ret(cudaErrorInvalidValue);
  v1::StreamCreateRequest req;
  req.set_flags(flags);
  req.set_priority(priority);
  v1::HandleReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kStreamCreate, req, &rep)) return Ret(e);
  St().streams.Add(rep.handle(), PackStreamInfo(flags, priority));
  *out = StreamHandle(rep.handle());
  return cudaSuccess;
}

cudaError_t StreamCall(CallId id, cudaStream_t s) {
  if (cudaError_t e = CheckStream(s)) return Ret(e);
  v1::StreamRequest req;
  req.set_stream(StreamId(s));
  return Connection::Get().Call(id, req);
}

// Enqueues `fn` on stream `s`: it runs on the callback thread when the stream reaches it.
cudaError_t EnqueueHostFunc(cudaStream_t s, std::function<void(cudaError_t)> fn) {
  if (cudaError_t e = CheckStream(s)) return Ret(e);
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return Ret(e);
  uint64_t id = c.AddHostFunc(std::move(fn));
  v1::HostFuncRequest req;
  req.set_stream(StreamId(s));
  req.set_id(id);
  cudaError_t e = c.Post(CallId::kLaunchHostFunc, req);
  if (e) c.DropHostFunc(id);
  return Ret(e);
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return CreateStream(pStream, 0, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return CreateStream(pStream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  return CreateStream(pStream, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  // The per-thread default stream is the thread's while it lives, as the legacy one is the
  // process's: neither is the program's to destroy.
  if (stream == cudaStreamPerThread) return Ret(cudaErrorInvalidResourceHandle);
  uint64_t id = StreamId(stream);
  if (id == 0 || !St().streams.Contains(id)) return Ret(cudaErrorInvalidResourceHandle);
  v1::StreamRequest req;
  req.set_stream(id);
  cudaError_t e = Connection::Get().Call(CallId::kStreamDestroy, req);
  if (e == cudaSuccess) St().streams.Remove(id);
  return Ret(e);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (auto r = cs::RefuseWhileCapturing(stream)) return Ret(*r);
  return Ret(StreamCall(CallId::kStreamSynchronize, stream));
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return cudaStreamSynchronize(cs::PerThread(stream));
}

// cudaErrorNotReady is an answer, not an error: it is not recorded as last error.
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (auto r = cs::RefuseWhileCapturing(stream)) return Ret(*r);
  cudaError_t e = StreamCall(CallId::kStreamQuery, stream);
  return e == cudaErrorNotReady ? e : Ret(e);
}

cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  return cudaStreamQuery(cs::PerThread(stream));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (flags & ~cudaEventWaitExternal) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(stream)) return Ret(e);
  if (cudaError_t e = CheckEvent(event)) return Ret(e);
  if (auto r = cs::CaptureEventWait(stream, event)) return Ret(*r);
  v1::StreamWaitEventRequest req;
  req.set_stream(StreamId(stream));
  req.set_event(EventId(event));
  req.set_flags(flags);
  return Ret(Connection::Get().Post(CallId::kStreamWaitEvent, req));
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return cudaStreamWaitEvent(cs::PerThread(stream), event, flags);
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void* userData, unsigned int flags) {
  if (!callback || flags != 0) return Ret(cudaErrorInvalidValue);
  if (auto r = cs::RefuseWhileCapturing(stream)) return Ret(*r);  // not capturable, as CUDA's
  return EnqueueHostFunc(stream, [stream, callback, userData](cudaError_t status) {
    callback(stream, status, userData);
  });
}

cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                       void* userData, unsigned int flags) {
  return cudaStreamAddCallback(cs::PerThread(stream), callback, userData, flags);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (!fn) return Ret(cudaErrorInvalidValue);
  if (cs::AnyCapture()) {
    if (cudaError_t e = CheckStream(stream)) return Ret(e);
    cs::GraphOp op;
    op.type = cudaGraphNodeTypeHost;
    op.fn = fn;
    op.data = userData;
    if (auto r = cs::CaptureOp(stream, std::move(op))) return Ret(*r);
  }
  return EnqueueHostFunc(stream, [fn, userData](cudaError_t) { fn(userData); });
}

cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  return cudaLaunchHostFunc(cs::PerThread(stream), fn, userData);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (!event || (flags & ~kEventFlags)) return Ret(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
    return Ret(cudaErrorInvalidValue);
  v1::EventCreateRequest req;
  req.set_flags(flags);
  v1::HandleReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kEventCreate, req, &rep)) return Ret(e);
  if (rep.handle() == 0) return Ret(cudaErrorUnknown);
  St().events.Add(rep.handle(), flags);
  *event = reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(rep.handle()));
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, 0);
}

// An interprocess event's handle (the server's token, server/ipc.h), opened by another process
// of the same tenant as an event it may wait for, synchronize with and query.
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  if (handle == nullptr) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckEvent(event)) return Ret(e);
  v1::EventRequest req;
  req.set_event(EventId(event));
  v1::IpcHandle rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kIpcGetEventHandle, req, &rep)) return Ret(e);
  return cs::PutIpcToken(handle->reserved, rep.handle()) ? cudaSuccess : Ret(cudaErrorUnknown);
}

cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  if (event == nullptr) return Ret(cudaErrorInvalidValue);
  v1::IpcHandle req;
  req.set_handle(handle.reserved, sizeof handle.reserved);
  v1::HandleReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kIpcOpenEventHandle, req, &rep)) return Ret(e);
  St().events.Add(rep.handle(), cudaEventInterprocess | cudaEventDisableTiming);
  *event = reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(rep.handle()));
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (cudaError_t e = CheckEvent(event)) return Ret(e);
  if (cudaError_t e = CheckStream(stream)) return Ret(e);
  if (auto r = cs::CaptureEventRecord(event, stream)) return Ret(*r);
  v1::EventRecordRequest req;
  req.set_event(EventId(event));
  req.set_stream(StreamId(stream));
  // Another process may wait for an interprocess event as soon as this returns: the server
  // has the record then, as NVIDIA's driver has it when cudaEventRecord returns.
  const uint64_t flags = St().events.Find(EventId(event)).value_or(0);
  if (flags & cudaEventInterprocess)
    return Ret(Connection::Get().Call(CallId::kEventRecordIpc, req));
  return Ret(Connection::Get().Post(CallId::kEventRecord, req));
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  if (flags & ~cudaEventRecordExternal) return Ret(cudaErrorInvalidValue);
  return cudaEventRecord(event, stream);
}

cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                          unsigned int flags) {
  return cudaEventRecordWithFlags(event, cs::PerThread(stream), flags);
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  if (!flags) return Ret(cudaErrorInvalidValue);
  return Ret(StreamInfo(hStream, flags, nullptr));
}

cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int* flags) {
  return cudaStreamGetFlags(cs::PerThread(hStream), flags);
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  if (!priority) return Ret(cudaErrorInvalidValue);
  return Ret(StreamInfo(hStream, nullptr, priority));
}

cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int* priority) {
  return cudaStreamGetPriority(cs::PerThread(hStream), priority);
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  if (!device) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(hStream)) return Ret(e);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int* device) {
  return cudaStreamGetDevice(cs::PerThread(hStream), device);
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return cudaEventRecord(event, cs::PerThread(stream));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (cudaError_t e = CheckEvent(event)) return Ret(e);
  v1::EventRequest req;
  req.set_event(EventId(event));
  return Ret(Connection::Get().Call(CallId::kEventSynchronize, req));
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (cudaError_t e = CheckEvent(event)) return Ret(e);
  v1::EventRequest req;
  req.set_event(EventId(event));
  cudaError_t e = Connection::Get().Call(CallId::kEventQuery, req);
  return e == cudaErrorNotReady ? e : Ret(e);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckEvent(start)) return Ret(e);
  if (cudaError_t e = CheckEvent(end)) return Ret(e);
  v1::EventElapsedRequest req;
  req.set_start(EventId(start));
  req.set_end(EventId(end));
  v1::EventElapsedReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kEventElapsedTime, req, &rep)) return Ret(e);
  *ms = rep.ms();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (cudaError_t e = CheckEvent(event)) return Ret(e);
  v1::EventRequest req;
  req.set_event(EventId(event));
  cudaError_t e = Connection::Get().Call(CallId::kEventDestroy, req);
  if (e == cudaSuccess) St().events.Remove(EventId(event));
  return Ret(e);
}

// ---- Stream capture: the stream's work becomes nodes of a graph (client_stub/graph.h) ----

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  if (cudaError_t e = CheckStream(stream)) return Ret(e);
  if (mode > cudaStreamCaptureModeRelaxed) return Ret(cudaErrorInvalidValue);
  return Ret(cs::BeginCapture(stream, mode));
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return cudaStreamBeginCapture(cs::PerThread(stream), mode);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (cudaError_t e = CheckStream(stream)) return Ret(e);
  return Ret(cs::EndCapture(stream, pGraph));
}

cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
  return cudaStreamEndCapture(cs::PerThread(stream), pGraph);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  if (!status) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(stream)) return Ret(e);
  return Ret(cs::CaptureInfo(stream, status, nullptr, nullptr, nullptr, nullptr));
}

cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  return cudaStreamIsCapturing(cs::PerThread(stream), status);
}

// Edges carry no data here (every dependency is a full one).
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                     enum cudaStreamCaptureStatus* captureStatus_out,
                                     unsigned long long* id_out, cudaGraph_t* graph_out,
                                     const cudaGraphNode_t** dependencies_out,
                                     const cudaGraphEdgeData** edgeData_out,
                                     size_t* numDependencies_out) {
  if (!captureStatus_out) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(stream)) return Ret(e);
  if (edgeData_out) *edgeData_out = nullptr;
  return Ret(cs::CaptureInfo(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                             numDependencies_out));
}

cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                          enum cudaStreamCaptureStatus* captureStatus_out,
                                          unsigned long long* id_out, cudaGraph_t* graph_out,
                                          const cudaGraphNode_t** dependencies_out,
                                          const cudaGraphEdgeData** edgeData_out,
                                          size_t* numDependencies_out) {
  return cudaStreamGetCaptureInfo(cs::PerThread(stream), captureStatus_out, id_out, graph_out,
                                  dependencies_out, edgeData_out, numDependencies_out);
}

// The mode is recorded per thread; every capture here behaves as a relaxed one.
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (!mode || *mode > cudaStreamCaptureModeRelaxed) return Ret(cudaErrorInvalidValue);
  *mode = cs::ExchangeCaptureMode(*mode);
  return cudaSuccess;
}

// The server's stream id (0 for the legacy default stream).
cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  if (!streamId) return Ret(cudaErrorInvalidValue);
  if (cudaError_t e = CheckStream(hStream)) return Ret(e);
  *streamId = StreamId(hStream);
  return cudaSuccess;
}

cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long* streamId) {
  return cudaStreamGetId(cs::PerThread(hStream), streamId);
}

}  // extern "C"
