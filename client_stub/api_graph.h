// client_stub/api_graph.h - what the runtime's graph entry points share (api_graph.cc,
// api_graph_nodes.cc): a node's work from the runtime's parameter structures.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "client_stub/errors.h"
#include "client_stub/graph.h"

namespace remora::client_stub::graphs {

// A kernel node's work: the kernel registered for p->func, its parameters packed.
cudaError_t KernelNodeOp(const cudaKernelNodeParams* p, GraphOp* op);
// A copy over linear memory (cudaErrorNotSupported for CUDA arrays).
cudaError_t MemcpyNodeOp(const cudaMemcpy3DParms* p, GraphOp* op);
// A fill of 1-, 2- or 4-byte elements.
cudaError_t MemsetNodeOp(const cudaMemsetParams* p, GraphOp* op);
// Issues one step of a graph on `s`; a conditional step waits for the stream's work so far.
cudaError_t Run(const GraphOp& op, cudaStream_t s);
// Issues the enabled steps of `exec` on `s`, in order.
cudaError_t RunSteps(const CUgraphExec_st& exec, cudaStream_t s);
// AddNode for an entry point: its error is also the last error.
cudaError_t Add(cudaGraphNode_t* node, cudaGraph_t g, const cudaGraphNode_t* deps, size_t n,
                GraphOp op);

// Lists `items` into `out` (room for *n) or, with `out` null, only counts them.
template <class T>
cudaError_t List(const std::vector<T>& items, T* out, size_t* n) {
  if (n == nullptr) return Ret(cudaErrorInvalidValue);
  if (out != nullptr)
    for (size_t i = 0; i < std::min(*n, items.size()); ++i) out[i] = items[i];
  if (out == nullptr || *n > items.size()) *n = items.size();
  return cudaSuccess;
}

}  // namespace remora::client_stub::graphs
