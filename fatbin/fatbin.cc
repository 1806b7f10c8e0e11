// fatbin/fatbin.cc - bounds-checked fat binary walker and payload decoders.
#include "fatbin/fatbin.h"

#include <lz4.h>
#include <lz4frame.h>
#include <openssl/evp.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <string_view>

namespace remora::fatbin {
namespace {

static_assert(std::endian::native == std::endian::little, "fat binaries are little-endian");

constexpr size_t kFatbinHeaderBytes = 16;
constexpr size_t kEntryHeaderBytes = 64;
constexpr size_t kWrapperBytes = 24;
constexpr size_t kMaxPrelinkedFatbins = 1 << 16;

// Offsets inside an entry header (see notes/cuda13-abi-and-ptx.md section 3).
enum EntryField : size_t {
  kKind = 0,
  kHeaderSize = 4,
  kPayloadSize = 8,
  kCompressedSize = 16,
  kOptionsRef = 20,
  kPtxMinor = 24,
  kPtxMajor = 26,
  kArch = 28,
  kNameOffset = 32,
  kNameLength = 36,
  kFlags = 40,
  kUncompressedSize = 56,
};

template <typename T>
T Load(Bytes bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

Status Malformed(std::string why) {
  return Error(err::kInvalidPtx, "fatbin: " + why);
}

// True if [offset, offset + length) lies within [0, limit), without overflow.
bool Within(uint64_t offset, uint64_t length, uint64_t limit) {
  return offset <= limit && length <= limit - offset;
}

// ---- codecs -----------------------------------------------------------------

Status DecodeZlib(Bytes in, std::span<std::byte> out) {
  uLongf produced = out.size();
  int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &produced,
                      reinterpret_cast<const Bytef*>(in.data()), in.size());
  if (rc != Z_OK) return Malformed("zlib payload: " + std::string(zError(rc)));
  if (produced != out.size()) return Malformed("zlib payload decodes to the wrong size");
  return OkStatus();
}

Status DecodeLz4Block(Bytes in, std::span<std::byte> out) {
  int produced = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                                     reinterpret_cast<char*>(out.data()),
                                     static_cast<int>(in.size()), static_cast<int>(out.size()));
  if (produced < 0 || static_cast<size_t>(produced) != out.size())
    return Malformed("LZ4 block payload is corrupt or decodes to the wrong size");
  return OkStatus();
}

Status DecodeLz4Frame(Bytes in, std::span<std::byte> out) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION)))
    return Error(err::kUnknown, "fatbin: cannot create an LZ4 frame context");
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> ctx(
      raw, &LZ4F_freeDecompressionContext);
  size_t in_pos = 0, out_pos = 0, hint = 1;
  while (hint != 0) {
    size_t in_len = in.size() - in_pos, out_len = out.size() - out_pos;
    if (in_len == 0) return Malformed("LZ4 frame payload is truncated");
    hint = LZ4F_decompress(ctx.get(), out.data() + out_pos, &out_len, in.data() + in_pos, &in_len,
                           nullptr);
    if (LZ4F_isError(hint))
      return Malformed("LZ4 frame payload: " + std::string(LZ4F_getErrorName(hint)));
    if (in_len == 0 && out_len == 0) return Malformed("LZ4 frame payload decodes past its size");
    in_pos += in_len;
    out_pos += out_len;
  }
  if (out_pos != out.size()) return Malformed("LZ4 frame payload decodes to the wrong size");
  return OkStatus();
}

Status DecodeZstd(Bytes in, std::span<std::byte> out) {
  // The first frame's declared size; nvcc writes a single frame.
  unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return Malformed("ZSTD payload has a bad frame");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > out.size())
    return Malformed("ZSTD frame is larger than the entry's uncompressed size");
  size_t produced = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(produced))
    return Malformed("ZSTD payload: " + std::string(ZSTD_getErrorName(produced)));
  if (produced != out.size()) return Malformed("ZSTD payload decodes to the wrong size");
  return OkStatus();
}

// One row per compression flag. max_ratio bounds uncompressed/compressed for the
// format, so a forged size is refused before anything is allocated.
struct Codec {
  uint64_t flag;
  Compression compression;
  uint64_t max_ratio;
  Status (*decode)(Bytes in, std::span<std::byte> out);
};
constexpr std::array<Codec, 4> kCodecs = {{
    {kFlagZlib, Compression::kZlib, 1032, DecodeZlib},
    {kFlagLz4Block, Compression::kLz4Block, 256, DecodeLz4Block},
    {kFlagLz4Frame, Compression::kLz4Frame, 256, DecodeLz4Frame},
    {kFlagZstd, Compression::kZstd, 32768, DecodeZstd},
}};
constexpr uint64_t kCompressionMask = kFlagZlib | kFlagLz4Block | kFlagLz4Frame | kFlagZstd;

const Codec* FindCodec(Compression c) {
  for (const Codec& codec : kCodecs)
    if (codec.compression == c) return &codec;
  return nullptr;
}

// ---- headers ----------------------------------------------------------------

// A string stored inside an entry header as (offset, length) relative to it.
Result<std::string> HeaderString(Bytes header, uint32_t offset, uint32_t length, const char* what) {
  if (offset == 0) return std::string();
  if (!Within(offset, length, header.size()))
    return Malformed(std::string(what) + " lies outside its entry header");
  std::string s(reinterpret_cast<const char*>(header.data()) + offset, length);
  s.erase(std::find(s.begin(), s.end(), '\0'), s.end());
  return s;
}

Result<Entry> ParseEntry(Bytes header, Bytes payload) {
  Entry e;
  e.kind = static_cast<Kind>(Load<uint16_t>(header, kKind));
  e.arch = Load<uint32_t>(header, kArch);
  e.ptx_major = Load<uint16_t>(header, kPtxMajor);
  e.ptx_minor = Load<uint16_t>(header, kPtxMinor);
  e.flags = Load<uint64_t>(header, kFlags);

  uint64_t codec_bits = e.flags & kCompressionMask;
  if (std::popcount(codec_bits) > 1) return Malformed("entry sets several compression flags");
  const Codec* codec = nullptr;
  for (const Codec& c : kCodecs)
    if (codec_bits == c.flag) codec = &c;
  e.compression = codec != nullptr ? codec->compression : Compression::kNone;

  if (codec == nullptr) {
    e.payload = payload;
    e.uncompressed_size = payload.size();
  } else {
    uint32_t compressed = Load<uint32_t>(header, kCompressedSize);
    if (compressed == 0 || compressed > payload.size())
      return Malformed("compressed size is zero or exceeds the entry's payload");
    e.payload = payload.first(compressed);
    e.uncompressed_size = Load<uint64_t>(header, kUncompressedSize);
    if (e.uncompressed_size == 0 || e.uncompressed_size > kMaxImageBytes ||
        e.uncompressed_size / codec->max_ratio > compressed)
      return Malformed("implausible uncompressed size " + std::to_string(e.uncompressed_size));
  }

  ASSIGN_OR_RETURN(e.name, HeaderString(header, Load<uint32_t>(header, kNameOffset),
                                        Load<uint32_t>(header, kNameLength), "entry name"));
  uint32_t options_ref = Load<uint32_t>(header, kOptionsRef);
  if (options_ref != 0) {
    if (!Within(options_ref, 8, header.size()))
      return Malformed("ptxas options reference lies outside its entry header");
    ASSIGN_OR_RETURN(e.options,
                     HeaderString(header, Load<uint32_t>(header, options_ref),
                                  Load<uint32_t>(header, options_ref + 4), "ptxas options"));
  }
  return e;
}

}  // namespace

Result<size_t> FatbinSize(Bytes bytes) {
  if (bytes.size() < kFatbinHeaderBytes) return Malformed("truncated fat binary header");
  if (Load<uint32_t>(bytes, 0) != kFatbinMagic) return Malformed("bad fat binary magic");
  if (Load<uint16_t>(bytes, 4) != 1) return Malformed("unsupported fat binary version");
  uint16_t header_size = Load<uint16_t>(bytes, 6);
  uint64_t entries = Load<uint64_t>(bytes, 8);
  if (header_size < kFatbinHeaderBytes) return Malformed("fat binary header_size below 16");
  if (!Within(header_size, entries, bytes.size()))
    return Malformed("fat binary extends past the end of its buffer");
  return static_cast<size_t>(header_size + entries);
}

Result<std::vector<Bytes>> SplitSection(Bytes section) {
  std::vector<Bytes> fatbins;
  size_t offset = 0;
  while (offset < section.size()) {
    if (section[offset] == std::byte{0}) {  // alignment padding
      ++offset;
      continue;
    }
    Bytes rest = section.subspan(offset);
    ASSIGN_OR_RETURN(size_t size, FatbinSize(rest));
    fatbins.push_back(rest.first(size));
    offset += size;
  }
  return fatbins;
}

Result<std::vector<Entry>> Parse(Bytes fatbin) {
  ASSIGN_OR_RETURN(size_t size, FatbinSize(fatbin));
  Bytes all = fatbin.first(size);
  std::vector<Entry> entries;
  size_t offset = Load<uint16_t>(all, 6);
  while (offset < all.size()) {
    Bytes rest = all.subspan(offset);
    if (rest.size() < kEntryHeaderBytes) return Malformed("truncated entry header");
    uint32_t header_size = Load<uint32_t>(rest, kHeaderSize);
    uint64_t payload_size = Load<uint64_t>(rest, kPayloadSize);
    if (header_size < kEntryHeaderBytes) return Malformed("entry header_size below 64");
    if (!Within(header_size, payload_size, rest.size()))
      return Malformed("entry extends past the end of its fat binary");
    ASSIGN_OR_RETURN(Entry e,
                     ParseEntry(rest.first(header_size), rest.subspan(header_size, payload_size)));
    entries.push_back(std::move(e));
    offset += header_size + payload_size;
  }
  return entries;
}

Result<std::vector<std::byte>> Decompress(const Entry& e) {
  if (e.compression == Compression::kNone) {
    if (e.uncompressed_size != e.payload.size())
      return Malformed("raw entry size differs from its payload");
    return std::vector<std::byte>(e.payload.begin(), e.payload.end());
  }
  const Codec* codec = FindCodec(e.compression);
  if (codec == nullptr || e.uncompressed_size == 0 || e.uncompressed_size > kMaxImageBytes)
    return Malformed("entry has no usable codec or size");
  std::vector<std::byte> out(e.uncompressed_size);
  RETURN_IF_ERROR(codec->decode(e.payload, out));
  return out;
}

std::string PtxText(Bytes decoded) {
  size_t n = decoded.size();
  while (n > 0 && decoded[n - 1] == std::byte{0}) --n;
  return std::string(reinterpret_cast<const char*>(decoded.data()), n);
}

Result<std::string> SelectPtx(Bytes fatbin, uint32_t device_arch, uint32_t newest) {
  ASSIGN_OR_RETURN(std::vector<Entry> entries, Parse(fatbin));
  const Entry* best = ChoosePtx(entries, device_arch, newest);
  if (best == nullptr)
    return Error(err::kNoKernelImage,
                 "fatbin: no PTX for compute_" + std::to_string(device_arch) +
                     (newest > device_arch ? " to " + std::to_string(newest) : " or older"));
  ASSIGN_OR_RETURN(std::vector<std::byte> decoded, Decompress(*best));
  return PtxText(decoded);
}

Result<std::vector<Bytes>> WrapperImages(const void* wrapper) {
  if (wrapper == nullptr) return Malformed("null registration wrapper");
  Bytes w(static_cast<const std::byte*>(wrapper), kWrapperBytes);
  if (Load<uint32_t>(w, 0) != kWrapperMagic) return Malformed("bad registration wrapper magic");
  uint32_t version = Load<uint32_t>(w, 4);
  if (version != 1 && version != 2) return Malformed("unsupported registration wrapper version");

  // The program's own fatbin: trust the 16-byte header, then its declared size.
  auto image = [](const void* p) -> Result<Bytes> {
    if (p == nullptr) return Malformed("registration wrapper points at no fat binary");
    auto* base = static_cast<const std::byte*>(p);
    Bytes header(base, kFatbinHeaderBytes);
    if (Load<uint32_t>(header, 0) != kFatbinMagic) return Malformed("bad fat binary magic");
    uint64_t size = Load<uint16_t>(header, 6) + Load<uint64_t>(header, 8);
    if (size > kMaxImageBytes) return Malformed("implausible fat binary size");
    Bytes whole(base, size);
    RETURN_IF_ERROR(FatbinSize(whole));
    return whole;
  };

  std::vector<Bytes> images;
  ASSIGN_OR_RETURN(Bytes linked, image(Load<const void*>(w, 8)));
  images.push_back(linked);
  if (version == 2) {
    auto* const* prelinked = Load<const void* const*>(w, 16);
    for (size_t i = 0; prelinked != nullptr && prelinked[i] != nullptr; ++i) {
      if (i == kMaxPrelinkedFatbins) return Malformed("unterminated prelinked fatbin array");
      ASSIGN_OR_RETURN(Bytes tu, image(prelinked[i]));
      images.push_back(tu);
    }
  }
  return images;
}

const Entry* Choose(std::span<const Entry> entries, uint32_t device_arch, bool ptx_only) {
  const Entry* elf = nullptr;
  const Entry* ptx = nullptr;
  for (const Entry& e : entries) {
    if (e.arch > device_arch) continue;
    if (e.kind == Kind::kElf && !ptx_only && e.arch / 10 == device_arch / 10 &&
        (!elf || e.arch > elf->arch))
      elf = &e;
    if (e.kind == Kind::kPtx && (!ptx || e.arch > ptx->arch)) ptx = &e;
  }
  return elf ? elf : ptx;
}

const Entry* ChoosePtx(std::span<const Entry> entries, uint32_t device_arch, uint32_t newest) {
  const Entry* best = Choose(entries, device_arch, /*ptx_only=*/true);
  if (best == nullptr) {
    for (const Entry& e : entries)
      if (e.kind == Kind::kPtx && e.arch <= newest && (!best || e.arch < best->arch)) best = &e;
  }
  return best;
}

Result<std::vector<ElfSection>> ElfSections(Bytes elf) {
  // ELF64, little-endian: e_shoff at 0x28, e_shentsize, e_shnum and e_shstrndx at 0x3a..0x3f;
  // a section header's sh_name at 0, sh_type at 4, sh_offset at 24, sh_size at 32, sh_info at 44.
  constexpr size_t kElfHeader = 64, kSection = 64;
  if (elf.size() < kElfHeader ||
      std::memcmp(elf.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      Load<uint8_t>(elf, 4) != 2 || Load<uint8_t>(elf, 5) != 1)
    return Malformed("not a little-endian ELF64");
  const uint64_t shoff = Load<uint64_t>(elf, 0x28);
  const uint16_t shentsize = Load<uint16_t>(elf, 0x3a), shnum = Load<uint16_t>(elf, 0x3c),
                 shstrndx = Load<uint16_t>(elf, 0x3e);
  if (shentsize < kSection || !Within(shoff, uint64_t(shnum) * shentsize, elf.size()) ||
      shstrndx >= shnum)
    return Malformed("ELF section headers lie outside it");
  auto header = [&](uint32_t i) { return shoff + uint64_t(i) * shentsize; };
  const uint64_t names = Load<uint64_t>(elf, header(shstrndx) + 24),
                 names_size = Load<uint64_t>(elf, header(shstrndx) + 32);
  if (!Within(names, names_size, elf.size())) return Malformed("ELF section names lie outside it");
  const std::string_view table(reinterpret_cast<const char*>(elf.data() + names), names_size);
  std::vector<ElfSection> out;
  for (uint32_t i = 0; i < shnum; ++i) {
    const uint32_t at = Load<uint32_t>(elf, header(i));
    if (at >= table.size()) return Malformed("ELF section name outside the name table");
    const size_t end = table.find('\0', at);
    if (end == std::string_view::npos) return Malformed("ELF section name is not terminated");
    const uint64_t offset = Load<uint64_t>(elf, header(i) + 24),
                   size = Load<uint64_t>(elf, header(i) + 32);
    // A section that occupies no bytes of the file (SHT_NOBITS: .bss, .nv.shared...) has none.
    constexpr uint32_t kNoBits = 8;
    const bool in_file =
        Load<uint32_t>(elf, header(i) + 4) != kNoBits && Within(offset, size, elf.size());
    out.push_back({std::string(table.substr(at, end - at)),
                   in_file ? elf.subspan(offset, size) : Bytes(),
                   Load<uint32_t>(elf, header(i) + 44)});
  }
  return out;
}

Result<std::vector<std::pair<std::string, uint32_t>>> ElfKernelRegisters(Bytes elf) {
  ASSIGN_OR_RETURN(std::vector<ElfSection> sections, ElfSections(elf));
  constexpr std::string_view kText = ".text.";
  std::vector<std::pair<std::string, uint32_t>> out;
  for (const ElfSection& s : sections) {
    if (!s.name.starts_with(kText) || s.name.size() == kText.size()) continue;
    if (const uint32_t regs = s.info >> 24; regs > 0)
      out.emplace_back(s.name.substr(kText.size()), regs);
  }
  return out;
}

Result<std::vector<std::pair<std::string, uint32_t>>> KernelRegisters(Bytes fatbin,
                                                                      uint32_t device_arch) {
  ASSIGN_OR_RETURN(std::vector<Entry> entries, Parse(fatbin));
  const Entry* chosen = Choose(entries, device_arch, /*ptx_only=*/false);
  const Entry* best = chosen != nullptr && chosen->kind == Kind::kElf ? chosen : nullptr;
  // Else the machine code nearest the device: what its JIT allocates for the PTX is close.
  auto distance = [&](const Entry& e) {
    return e.arch > device_arch ? e.arch - device_arch : device_arch - e.arch;
  };
  if (best == nullptr)
    for (const Entry& e : entries)
      if (e.kind == Kind::kElf && (best == nullptr || distance(e) < distance(*best))) best = &e;
  if (best == nullptr) return std::vector<std::pair<std::string, uint32_t>>{};
  ASSIGN_OR_RETURN(std::vector<std::byte> decoded, Decompress(*best));
  return ElfKernelRegisters(decoded);
}

std::string EntryName(const Entry& e) {
  const char* prefix = e.kind == Kind::kPtx ? "compute_" : e.kind == Kind::kElf ? "sm_" : "kind?_";
  return prefix + std::to_string(e.arch);
}

std::string Describe(Bytes fatbin) {
  Result<std::vector<Entry>> entries = Parse(fatbin);
  if (!entries.ok()) return "malformed (" + entries.status().message() + ")";
  std::string out;
  for (const Entry& e : *entries) {
    if (!out.empty()) out += ' ';
    out += EntryName(e);
  }
  return out.empty() ? "empty" : out;
}

std::string ImagesDigest(std::span<const Bytes> images) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return {};
  for (Bytes img : images) {
    const uint64_t n = img.size();
    EVP_DigestUpdate(ctx.get(), &n, sizeof n);
    EVP_DigestUpdate(ctx.get(), img.data(), img.size());
  }
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace remora::fatbin
