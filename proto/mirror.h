// proto/mirror.h - how mirrored memory (client_stub/mirror.h) is compared, piece by piece: the
// stub and the server hash the same pieces the same way (MirrorFetch).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "proto/inline.h"

namespace remora::mirror {

// The unit the host's and the device's copies are compared and sent in, from a range's start.
inline constexpr size_t kPiece = 4096;

// Pieces in a range of `bytes`.
constexpr size_t Pieces(size_t bytes) {
  return (bytes + kPiece - 1) / kPiece;
}

// A 64-bit hash of `n` bytes: four independent multiply-rotate lanes over 32-byte blocks, then
// the tail, then an avalanche. Not cryptographic; a change keeps it with probability 2^-64.
inline uint64_t Hash(const std::byte* p, size_t n) {
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL;
  constexpr uint64_t kP3 = 0x165667B19E3779F9ULL, kP4 = 0x85EBCA77C2B2AE63ULL;
  constexpr uint64_t kP5 = 0x27D4EB2F165667C5ULL;
  auto load = [](const std::byte* q) {
    uint64_t v;
    std::memcpy(&v, q, sizeof v);
    return v;
  };
  auto round = [](uint64_t acc, uint64_t word) { return std::rotl(acc + word * kP2, 31) * kP1; };
  uint64_t v0 = kP1 + kP2, v1 = kP2, v2 = 0, v3 = 0 - kP1;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    v0 = round(v0, load(p + i));
    v1 = round(v1, load(p + i + 8));
    v2 = round(v2, load(p + i + 16));
    v3 = round(v3, load(p + i + 24));
  }
  uint64_t h = std::rotl(v0, 1) + std::rotl(v1, 7) + std::rotl(v2, 12) + std::rotl(v3, 18) + n;
  for (; i + 8 <= n; i += 8) h = std::rotl(h ^ round(0, load(p + i)), 27) * kP1 + kP4;
  for (; i < n; ++i) h = std::rotl(h ^ (std::to_integer<uint64_t>(p[i]) * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

// Bytes a reply spends on each piece besides its data (field tags, lengths, its address).
inline constexpr uint64_t kPieceOverhead = 24;

// The most device bytes one MirrorFetch may ask for on a channel accepting `max_body` bytes: a
// whole number of pieces whose reply, every piece changed, fits one frame (0 if none would).
inline uint64_t FetchBudget(uint64_t max_body) {
  if (max_body <= kInlineOverhead) return 0;
  const uint64_t pieces = (max_body - kInlineOverhead) / (kPiece + kPieceOverhead);
  return pieces * kPiece;
}

// Piece `i` of the range of `bytes` at `p`: its hash.
inline uint64_t PieceHash(const std::byte* p, size_t bytes, size_t i) {
  const size_t off = i * kPiece;
  return Hash(p + off, bytes - off < kPiece ? bytes - off : kPiece);
}

// Calls changed(offset, length) for each piece of the `size` bytes at `data` whose hash is not
// agreed(i), in order: what MirrorFetch replies with.
template <class Agreed, class Changed>
void ForChangedPieces(const std::byte* data, size_t size, Agreed agreed, Changed changed) {
  for (size_t i = 0; i < Pieces(size); ++i) {
    if (PieceHash(data, size, i) == agreed(i)) continue;
    const size_t off = i * kPiece;
    changed(off, size - off < kPiece ? size - off : kPiece);
  }
}

}  // namespace remora::mirror
