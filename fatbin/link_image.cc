// fatbin/link_image.cc - encoding and bounds-checked decoding of link images (link_image.h).
#include "fatbin/link_image.h"

#include <cstring>

namespace remora::fatbin {

namespace {

template <typename T>
void Append(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T Read(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::string EncodeLinkImage(const std::vector<LinkInput>& inputs) {
  std::string out(kLinkMagic, sizeof kLinkMagic);
  uint64_t total = kLinkHeaderBytes;
  for (const LinkInput& in : inputs) total += 12 + in.bytes.size();
  Append(out, total);
  Append(out, uint32_t(inputs.size()));
  for (const LinkInput& in : inputs) {
    Append(out, in.type);
    Append(out, uint64_t(in.bytes.size()));
    out += in.bytes;
  }
  return out;
}

bool IsLinkImage(const void* image) {
  return std::memcmp(image, kLinkMagic, sizeof kLinkMagic) == 0;
}

uint64_t LinkImageSize(const void* image) {
  if (!IsLinkImage(image)) return 0;
  const uint64_t total = Read<uint64_t>(static_cast<const std::byte*>(image) + 8);
  return total >= kLinkHeaderBytes && total <= kMaxImageBytes ? total : 0;
}

Result<std::vector<LinkInput>> DecodeLinkImage(Bytes image) {
  auto bad = [](const char* why) {
    return Error(err::kInvalidPtx, std::string("link image: ") + why);
  };
  if (image.size() < kLinkHeaderBytes || !IsLinkImage(image.data())) return bad("no header");
  if (LinkImageSize(image.data()) != image.size()) return bad("length disagrees");
  const uint32_t count = Read<uint32_t>(image.data() + 16);
  std::vector<LinkInput> out;
  size_t at = kLinkHeaderBytes;
  for (uint32_t i = 0; i < count; ++i) {
    if (image.size() - at < 12) return bad("an input past the end");
    LinkInput in;
    in.type = Read<uint32_t>(image.data() + at);
    const uint64_t size = Read<uint64_t>(image.data() + at + 4);
    at += 12;
    if (size > image.size() - at) return bad("an input past the end");
    in.bytes.assign(reinterpret_cast<const char*>(image.data() + at), size);
    at += size;
    out.push_back(std::move(in));
  }
  if (at != image.size()) return bad("bytes after the last input");
  return out;
}

}  // namespace remora::fatbin
