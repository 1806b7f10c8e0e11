// tests/fatbin/test_util.h - reading the nvcc-built fat binaries the fatbin tests use.
#pragma once

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace remora::fatbin::testing {

// Returns the bytes of REMORA_FATBIN_DATA/<name>, or an empty vector if unreadable.
inline std::vector<std::byte> ReadData(const std::string& name) {
  std::ifstream in(std::string(REMORA_FATBIN_DATA) + "/" + name, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// Fat binaries extracted from saxpy.cu, one per nvcc packaging mode.
inline const char* const kSaxpyModes[] = {"zstd", "lz4", "raw", "zlib", "lz4frame"};

}  // namespace remora::fatbin::testing
