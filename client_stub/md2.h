// client_stub/md2.h - MD2 (RFC 1319) and HMAC over it (RFC 2104), as NVIDIA's runtime uses them
// to check the driver it runs on (the integrity export table, driver_tables.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace remora::client_stub {

using Md2Digest = std::array<uint8_t, 16>;

// MD2 of a message given in pieces: Update any number of times, then Final once.
class Md2 {
 public:
  void Update(std::span<const uint8_t> bytes);
  Md2Digest Final();

 private:
  void Block(const uint8_t* block);

  std::array<uint8_t, 48> x_{};        // the state: X[0..16) is the digest so far
  std::array<uint8_t, 16> check_{};    // the running checksum
  std::array<uint8_t, 16> pending_{};  // bytes of a block not yet complete
  size_t pending_n_ = 0;
  uint8_t last_ = 0;  // the checksum's L
};

Md2Digest Md2Of(std::span<const uint8_t> bytes);

// HMAC-MD2 with a key of one block (16 bytes), over a message given in pieces.
class HmacMd2 {
 public:
  explicit HmacMd2(const Md2Digest& key);
  void Update(std::span<const uint8_t> bytes) { inner_.Update(bytes); }
  Md2Digest Final();

 private:
  Md2Digest key_;
  Md2 inner_;
};

}  // namespace remora::client_stub
