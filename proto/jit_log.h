// proto/jit_log.h - filling a JIT log option pair as NVIDIA's driver does, for the stub's
// driver (the tenant's buffers) and the emulated GPU's (the server's).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace remora {

// Among `n` JIT options (CUjit_option) and their values, finds the log buffer `buffer_opt` and
// its size slot `size_opt` (IN: the buffer's capacity, OUT: the bytes written) and writes
// `text` there, cut to fit and NUL-terminated. Does nothing unless both are given.
template <class Option>
void WriteJitLog(unsigned n, const Option* options, void** values, Option buffer_opt,
                 Option size_opt, std::string_view text) {
  char* buffer = nullptr;
  void** size_slot = nullptr;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == buffer_opt) buffer = static_cast<char*>(values[i]);
    if (options[i] == size_opt) size_slot = &values[i];
  }
  if (buffer == nullptr || size_slot == nullptr) return;
  const auto capacity = static_cast<size_t>(reinterpret_cast<uintptr_t>(*size_slot));
  if (capacity == 0) return;
  const size_t written = std::min(text.size(), capacity - 1);
  if (written > 0) std::memcpy(buffer, text.data(), written);  // an empty view's data may be null
  buffer[written] = '\0';
  *size_slot = reinterpret_cast<void*>(static_cast<uintptr_t>(written));
}

}  // namespace remora
