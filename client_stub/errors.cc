// client_stub/errors.cc - lookup in the sorted cudaError_t table.
#include "client_stub/errors.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <mutex>
#include <set>

#include "client_stub/no_destructor.h"

namespace remora::client_stub {
namespace {

struct CudaError {
  int32_t value;
  const char* name;
  const char* text;
};

constexpr auto kTable = [] {
  std::array<CudaError, 0
#define CUDA_ERROR(Name, value, text) +1
#include "proto/cuda_runtime_errors.def"
             >
      t{{
#define CUDA_ERROR(Name, value, text) {value, #Name, text},
#include "proto/cuda_runtime_errors.def"
      }};
  std::sort(t.begin(), t.end(),
            [](const CudaError& a, const CudaError& b) { return a.value < b.value; });
  return t;
}();

const CudaError* Find(int32_t code) {
  auto it = std::lower_bound(kTable.begin(), kTable.end(), code,
                             [](const CudaError& e, int32_t c) { return e.value < c; });
  return it != kTable.end() && it->value == code ? &*it : nullptr;
}

}  // namespace

const char* CudaErrorName(int32_t code) {
  const CudaError* e = Find(code);
  return e ? e->name : nullptr;
}

const char* CudaErrorText(int32_t code) {
  const CudaError* e = Find(code);
  return e ? e->text : nullptr;
}

int32_t Unsupported(const char* call, const char* why) {
  static NoDestructor<std::mutex> mu;
  static NoDestructor<std::set<const char*>> printed;  // string literals: pointers suffice
  bool first;
  {
    std::lock_guard lock(*mu);
    first = printed->insert(call).second;
  }
  if (first) std::fprintf(stderr, "remora: %s: %s (cudaErrorNotSupported)\n", call, why);
  return 801;  // cudaErrorNotSupported
}

}  // namespace remora::client_stub
