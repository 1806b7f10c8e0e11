// fatbin/fuzz/fatbin_fuzz.cc - libFuzzer entry point over every fatbin reader.
//
// Feeds arbitrary bytes to FatbinSize, SplitSection, Parse, Decompress, PtxText,
// SelectPtx, DecodeLinkImage and (when the bytes hold a valid header) WrapperImages, and traps if
// a successful result contradicts its input. Memory errors are the sanitizers'
// job. Built as a fuzzer with clang; tests/fatbin replays it under gtest.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fatbin/fatbin.h"
#include "fatbin/link_image.h"

namespace {

namespace fb = remora::fatbin;

// Keeps each run fast; the library's own bound (kMaxImageBytes) is far larger.
constexpr uint64_t kMaxDecodeBytes = uint64_t{64} << 20;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckWrappers(fb::Bytes bytes, size_t size) {
  struct Wrapper {
    uint32_t magic, version;
    const void* data;
    const void* fatbins;
  };
  const void* array[] = {bytes.data(), bytes.data(), nullptr};
  for (uint32_t version : {1u, 2u}) {
    Wrapper w{fb::kWrapperMagic, version, bytes.data(), version == 2 ? array : nullptr};
    auto images = fb::WrapperImages(&w);
    Check(images.ok() && images->size() == (version == 2 ? 3u : 1u));
    for (fb::Bytes image : *images) Check(image.data() == bytes.data() && image.size() == size);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fb::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);

  auto total = fb::FatbinSize(bytes);
  if (total.ok()) {
    Check(*total >= 16 && *total <= size);
    CheckWrappers(bytes, *total);
  }
  auto split = fb::SplitSection(bytes);
  if (split.ok())
    for (fb::Bytes one : *split) Check(one.data() >= bytes.data() && one.size() <= size);

  auto entries = fb::Parse(bytes);
  Check(!entries.ok() || total.ok());
  if (entries.ok()) {
    for (const fb::Entry& e : *entries) {
      Check(e.payload.data() >= bytes.data() &&
            e.payload.data() + e.payload.size() <= bytes.data() + size);
      if (e.uncompressed_size > kMaxDecodeBytes) continue;
      auto decoded = fb::Decompress(e);
      if (decoded.ok()) {
        Check(decoded->size() == e.uncompressed_size);
        Check(fb::PtxText(*decoded).size() <= decoded->size());
      }
    }
  }
  auto link = fb::DecodeLinkImage(bytes);
  if (link.ok()) {  // a decoded link image encodes back to exactly its bytes
    const std::string again = fb::EncodeLinkImage(*link);
    Check(again.size() == size && std::memcmp(again.data(), data, size) == 0);
  }
  bool fast = true;
  if (entries.ok())
    for (const fb::Entry& e : *entries) fast = fast && e.uncompressed_size <= kMaxDecodeBytes;
  for (uint32_t arch : {75u, 0xFFFFFFFFu}) {
    if (!fast) break;
    auto ptx = fb::SelectPtx(bytes, arch);
    Check(ptx.ok() || ptx.status().code() == remora::err::kInvalidPtx ||
          ptx.status().code() == remora::err::kNoKernelImage);
  }
  return 0;
}
