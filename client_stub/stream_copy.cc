// client_stub/stream_copy.cc - non-temporal copies (SSE2: every x86-64 host has it).
#include "client_stub/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace remora::client_stub {

void StreamCopy(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  if (n < kStreamCopyMin) {
    std::memcpy(dst, src, n);
    return;
  }
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  // Up to the destination's first 16-byte boundary, as memcpy does.
  const size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  const size_t body = n & ~size_t{63};
  for (size_t i = 0; i < body; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  _mm_sfence();
  std::memcpy(d + body, s + body, n - body);
#else
  std::memcpy(dst, src, n);
#endif
}

}  // namespace remora::client_stub
