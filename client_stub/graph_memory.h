// client_stub/graph_memory.h - graph memory as NVIDIA's driver keeps it.
//
// An allocation node owns an address range from its creation on, good for every launch.
// Physical memory is mapped under it only when a launch reaches it, taken from the process's
// graph memory pool, and goes back to the pool when the allocation is freed: by a free node (at
// the end of that launch, in the launching stream's order), by cudaFree, or by the executable's
// next launch when it was instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch. A launch
// reuses pooled memory freed in its own stream, or whose freeing work is done; otherwise it
// creates more, so graphs that can run at the same time never share memory. The pool keeps
// what it holds until cudaDeviceGraphMemTrim gives back what no allocation uses. Two allocation
// nodes of one graph share an address when the second runs after the first's free node.
//
// The memory is the session's virtual memory management (vmm.h): created physical memory is
// charged to the tenant's quota, so a graph costs what a GPU's graph pool would, not the sum of
// every allocation node ever made.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "client_stub/graph.h"

namespace remora::client_stub {

// The address range for a new allocation node of `bytes` in `g` after `deps`: that of an
// allocation of `g` whose free node the node runs after, when one is large enough, otherwise a
// new reservation. cudaErrorNotSupported, named on stderr, where the device has no virtual
// memory management.
cudaError_t GraphRegionFor(const CUgraph_st& g, const cudaGraphNode_t* deps, size_t n, size_t bytes,
                           std::shared_ptr<GraphRegion>* out);
uint64_t RegionAddress(const GraphRegion& r);
// `node` is now the latest allocation node given `r`'s address.
void NoteRegionHolder(GraphRegion& r, const CUgraphNode_st* node);

// At instantiation, from the raw lists Instantiate made: each range once, whether the graph
// frees it (as many free nodes as allocation nodes for its address), and only the addresses of
// other graphs' allocations left in `frees`.
void SettleGraphMemory(CUgraphExec_st* exec);

// Around a launch of `exec` on `s`: Begin maps memory under each of its ranges
// (cudaErrorInvalidValue if an earlier launch's allocation is not yet freed and the executable
// does not free it on launch; cudaErrorMemoryAllocation past the tenant's quota). End, once the
// launch's work is issued, gives back what the graph frees, in `s`'s order.
cudaError_t BeginGraphMemory(const CUgraphExec_st& exec, cudaStream_t s);
cudaError_t EndGraphMemory(const CUgraphExec_st& exec, cudaStream_t s);

// cudaFree of `dptr`: nullopt when it is no graph allocation's address; else the result
// (cudaErrorInvalidValue when nothing is allocated there now).
std::optional<cudaError_t> FreeGraphAllocation(void* dptr);

// cudaDeviceGraphMemTrim: gives back pooled memory no allocation uses and no work may.
cudaError_t TrimGraphMemory();
// Bytes of memory the pool holds, and the most it held since ResetGraphMemoryHigh.
uint64_t GraphMemoryInUse();
uint64_t GraphMemoryHigh();
void ResetGraphMemoryHigh();

}  // namespace remora::client_stub
