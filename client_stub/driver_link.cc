// client_stub/driver_link.cc - the driver's linker (cuLinkCreate, cuLinkAddData, cuLinkAddFile,
// cuLinkComplete, cuLinkDestroy). The tenant has no linker of Remora's: cuLinkComplete returns
// a link image (fatbin/link_image.h) holding the inputs, and loading it (cuModuleLoadData, a
// library load) has the server link them with the device's own linker. So an unresolved symbol
// is reported when the image is loaded, not at cuLinkComplete. Options that tune the linker are
// accepted and not applied (the server runs its own); the outputs (wall time, logs) are written
// at cuLinkComplete, as NVIDIA's linker writes them.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "client_stub/connection.h"
#include "client_stub/driver_internal.h"
#include "client_stub/errors.h"
#include "fatbin/link_image.h"
#include "proto/jit_log.h"

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::DriverCallScope;

namespace {

struct Link {
  std::vector<remora::fatbin::LinkInput> inputs;
  std::string image;  // cuLinkComplete's, owned until cuLinkDestroy
  // cuLinkCreate's options, whose outputs cuLinkComplete writes (the caller keeps them alive).
  unsigned noptions = 0;
  CUjit_option* options = nullptr;
  void** values = nullptr;
  std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();
};

struct Links {
  std::mutex mu;
  std::unordered_map<CUlinkState, std::unique_ptr<Link>> by_handle;
};
Links& TheLinks() {
  static auto* l = new Links;  // never destroyed: calls may come during exit
  return *l;
}

// The link `state` names, or null. The CUDA API has one thread use a link state at a time.
Link* Find(CUlinkState state) {
  Links& l = TheLinks();
  std::lock_guard lock(l.mu);
  auto it = l.by_handle.find(state);
  return it == l.by_handle.end() ? nullptr : it->second.get();
}

CUresult CheckOptions(unsigned n, CUjit_option* options, void** values) {
  return n > 0 && (options == nullptr || values == nullptr) ? CUDA_ERROR_INVALID_VALUE
                                                            : CUDA_SUCCESS;
}

// The input's bytes: PTX up to its NUL, anything else as given.
CUresult Add(CUlinkState state, CUjitInputType type, const char* data, size_t size) {
  Link* link = Find(state);
  if (link == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (data == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_JIT_INPUT_NVVM)
    return static_cast<CUresult>(remora::client_stub::Unsupported(
        "cuLinkAddData", "NVVM IR inputs are not served by Remora"));
  if (type > CU_JIT_INPUT_LIBRARY) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_JIT_INPUT_PTX) size = strnlen(data, size);
  link->inputs.push_back({uint32_t(type), std::string(data, size)});
  return CUDA_SUCCESS;
}

}  // namespace

namespace remora::client_stub::driver {

void WriteJitOutputs(unsigned n, const CUjit_option* options, void** values,
                     std::chrono::steady_clock::time_point start, CUresult result) {
  if (n == 0 || options == nullptr || values == nullptr) return;
  const float ms =
      std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (unsigned i = 0; i < n; ++i)
    if (options[i] == CU_JIT_WALL_TIME) std::memcpy(&values[i], &ms, sizeof ms);
  remora::WriteJitLog(n, options, values, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                      "");
  remora::WriteJitLog(
      n, options, values, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      result == CUDA_SUCCESS ? std::string_view() : Connection::LastFailureMessage());
}

}  // namespace remora::client_stub::driver

extern "C" {

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues,
                      CUlinkState* stateOut) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckOptions(numOptions, options, optionValues)) return r;
  auto link = std::make_unique<Link>();
  link->noptions = numOptions;
  link->options = options;
  link->values = optionValues;
  auto* handle = reinterpret_cast<CUlinkState>(link.get());
  Links& l = TheLinks();
  std::lock_guard lock(l.mu);
  l.by_handle.emplace(handle, std::move(link));
  *stateOut = handle;
  return CUDA_SUCCESS;
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size, const char*,
                       unsigned int numOptions, CUjit_option* options, void** optionValues) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (CUresult r = CheckOptions(numOptions, options, optionValues)) return r;
  return Add(state, type, static_cast<const char*>(data), size);
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path,
                       unsigned int numOptions, CUjit_option* options, void** optionValues) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (CUresult r = CheckOptions(numOptions, options, optionValues)) return r;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream f(path, std::ios::binary);
  if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return Add(state, type, bytes.data(), bytes.size());
}

CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  Link* link = Find(state);
  if (link == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr || sizeOut == nullptr || link->inputs.empty())
    return CUDA_ERROR_INVALID_VALUE;
  link->image = remora::fatbin::EncodeLinkImage(link->inputs);
  *cubinOut = link->image.data();
  *sizeOut = link->image.size();
  WriteJitOutputs(link->noptions, link->options, link->values, link->created, CUDA_SUCCESS);
  return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  Links& l = TheLinks();
  std::lock_guard lock(l.mu);
  return l.by_handle.erase(state) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // extern "C"
