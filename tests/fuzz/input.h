// tests/fuzz/input.h - Input: fuzzer bytes consumed as fields; Check: trap on a broken invariant.
//
// Every target reads its input front to back through one Input, so that a short input
// simply runs out (fields read as zero, spans come back short) rather than being refused:
// libFuzzer then explores from any prefix. Check() traps, so a violated invariant is a
// crash libFuzzer minimizes and the replay test reports, in every build type.
//
//   Input in(data, size);
//   uint16_t n = in.Take<uint16_t>();
//   std::span<const std::byte> body = in.Bytes(n);
//   Check(body.size() <= n);
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace remora::fuzz {

// Traps (SIGILL: libFuzzer reports a crash with the stack) unless `ok`.
inline void Check(bool ok) {
  if (!ok) [[unlikely]]
    __builtin_trap();
}

class Input {
 public:
  Input(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const std::byte*>(data), size) {}
  explicit Input(std::span<const std::byte> bytes) : rest_(bytes) {}

  bool empty() const { return rest_.empty(); }
  size_t size() const { return rest_.size(); }

  // The next sizeof(T) bytes as a little-endian T; missing bytes read as zero.
  template <class T>
  T Take() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    const size_t n = rest_.size() < sizeof v ? rest_.size() : sizeof v;
    if (n != 0) std::memcpy(&v, rest_.data(), n);
    rest_ = rest_.subspan(n);
    return v;
  }
  // The next min(n, size()) bytes.
  std::span<const std::byte> Bytes(size_t n) {
    const auto b = rest_.first(n < rest_.size() ? n : rest_.size());
    rest_ = rest_.subspan(b.size());
    return b;
  }
  // Everything left.
  std::span<const std::byte> Rest() { return Bytes(rest_.size()); }

 private:
  std::span<const std::byte> rest_;
};

inline std::string_view AsChars(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace remora::fuzz
