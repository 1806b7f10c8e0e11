// tests/fatbin/fatbin_test.cc - Parse/Decompress/SelectPtx on nvcc's real fat binaries.
#include "fatbin/fatbin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/fatbin/test_util.h"

namespace remora::fatbin {
namespace {

using testing::kSaxpyModes;
using testing::ReadData;

std::vector<std::byte> Saxpy(const std::string& mode) {
  auto bytes = ReadData("saxpy_" + mode + ".fatbin");
  EXPECT_FALSE(bytes.empty()) << mode;
  return bytes;
}

template <typename T>
void Store(std::vector<std::byte>& bytes, size_t offset, T v) {
  ASSERT_LE(offset + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + offset, &v, sizeof(T));
}

// Offsets of each entry header, walked independently of the library.
std::vector<size_t> EntryOffsets(const std::vector<std::byte>& bytes) {
  uint64_t entries;
  std::memcpy(&entries, bytes.data() + 8, 8);
  std::vector<size_t> offsets;
  for (size_t off = 16; off < 16 + entries;) {
    uint32_t header_size;
    uint64_t payload_size;
    std::memcpy(&header_size, bytes.data() + off + 4, 4);
    std::memcpy(&payload_size, bytes.data() + off + 8, 8);
    offsets.push_back(off);
    off += header_size + payload_size;
  }
  return offsets;
}

// Offset of the first PTX entry's header.
size_t PtxEntryOffset(const std::vector<std::byte>& bytes) {
  for (size_t off : EntryOffsets(bytes)) {
    uint16_t kind;
    std::memcpy(&kind, bytes.data() + off, 2);
    if (kind == 1) return off;
  }
  ADD_FAILURE() << "no PTX entry";
  return 0;
}

int32_t CodeOf(const Status& s) {
  return s.code();
}

TEST(FatbinSize, CoversTheWholeSection) {
  for (const char* mode : kSaxpyModes) {
    auto bytes = Saxpy(mode);
    auto size = FatbinSize(bytes);
    ASSERT_TRUE(size.ok()) << mode << ": " << size.status().ToString();
    EXPECT_EQ(*size, bytes.size()) << mode;
  }
}

TEST(Parse, EntriesOfEachCompressionMode) {
  const std::map<std::string, Compression> expected = {
      {"zstd", Compression::kZstd},         {"lz4", Compression::kLz4Block},
      {"raw", Compression::kNone},          {"zlib", Compression::kZlib},
      {"lz4frame", Compression::kLz4Frame},
  };
  for (const auto& [mode, compression] : expected) {
    auto bytes = Saxpy(mode);
    auto entries = Parse(bytes);
    ASSERT_TRUE(entries.ok()) << mode << ": " << entries.status().ToString();
    ASSERT_EQ(entries->size(), 2u) << mode;  // default build: sm_75 ELF + compute_75 PTX
    const Entry& elf = (*entries)[0];
    const Entry& ptx = (*entries)[1];
    EXPECT_EQ(elf.kind, Kind::kElf) << mode;
    EXPECT_EQ(ptx.kind, Kind::kPtx) << mode;
    EXPECT_EQ(elf.arch, 75u);
    EXPECT_EQ(ptx.arch, 75u);
    EXPECT_EQ(elf.compression, Compression::kNone) << mode;
    EXPECT_EQ(ptx.compression, compression) << mode;
    EXPECT_GE(ptx.ptx_major, 8) << mode;
    EXPECT_EQ(ptx.flags & (kFlag64Bit | kFlagLinux), kFlag64Bit | kFlagLinux);
    EXPECT_EQ(ptx.flags & kFlagDebug, 0u);
    if (compression != Compression::kNone) {
      EXPECT_GT(ptx.uncompressed_size, ptx.payload.size());
    }
  }
}

TEST(Decompress, ElfPayloadIsAnElf) {
  auto bytes = Saxpy("zstd");
  auto entries = Parse(bytes);
  ASSERT_TRUE(entries.ok());
  auto elf = Decompress((*entries)[0]);
  ASSERT_TRUE(elf.ok());
  ASSERT_GE(elf->size(), 4u);
  EXPECT_EQ(std::memcmp(elf->data(),
                        "\x7f"
                        "ELF",
                        4),
            0);
}

TEST(SelectPtx, AllModesGiveTheSamePtxText) {
  std::string reference;
  for (const char* mode : kSaxpyModes) {
    auto bytes = Saxpy(mode);
    auto ptx = SelectPtx(bytes, 75);
    ASSERT_TRUE(ptx.ok()) << mode << ": " << ptx.status().ToString();
    size_t start = ptx->find_first_not_of(" \t\r\n");
    ASSERT_NE(start, std::string::npos);
    EXPECT_EQ(ptx->compare(start, 9, ".version "), 0) << mode;
    EXPECT_NE(ptx->find(".target sm_75"), std::string::npos) << mode;
    EXPECT_NE(ptx->find(".entry _Z5saxpyifPKfPf("), std::string::npos) << mode;
    EXPECT_NE(ptx->find(".entry _Z8scaleSumiPKdPd("), std::string::npos) << mode;
    EXPECT_NE(ptx->back(), '\0') << mode;
    if (reference.empty()) reference = *ptx;
    EXPECT_EQ(*ptx, reference) << mode << " decodes to different PTX";
  }
}

TEST(SelectPtx, NoPtxInAnSmOnlyBuild) {
  auto bytes = Saxpy("sm80");
  auto entries = Parse(bytes);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].kind, Kind::kElf);
  EXPECT_EQ((*entries)[0].arch, 80u);
  for (uint32_t arch : {75u, 80u, 120u}) {
    auto ptx = SelectPtx(bytes, arch);
    ASSERT_FALSE(ptx.ok());
    EXPECT_EQ(CodeOf(ptx.status()), err::kNoKernelImage);
  }
}

TEST(SelectPtx, PicksTheHighestArchNotAboveTheDevice) {
  auto bytes = Saxpy("ptx2");
  auto entries = Parse(bytes);
  ASSERT_TRUE(entries.ok());
  std::vector<uint32_t> archs;
  for (const Entry& e : *entries) {
    EXPECT_EQ(e.kind, Kind::kPtx);
    archs.push_back(e.arch);
  }
  std::sort(archs.begin(), archs.end());
  EXPECT_EQ(archs, (std::vector<uint32_t>{75, 86}));

  for (uint32_t device : {75u, 80u, 86u, 120u}) {
    auto ptx = SelectPtx(bytes, device);
    ASSERT_TRUE(ptx.ok()) << device;
    const char* want = device < 86 ? ".target sm_75" : ".target sm_86";
    EXPECT_NE(ptx->find(want), std::string::npos) << device;
  }
  auto too_old = SelectPtx(bytes, 70);
  ASSERT_FALSE(too_old.ok());
  EXPECT_EQ(CodeOf(too_old.status()), err::kNoKernelImage);
  // Up to a newer arch: the lowest PTX above the device within it, and still the highest at or
  // below the device where there is one.
  auto newer = SelectPtx(bytes, 70, /*newest=*/90);
  ASSERT_TRUE(newer.ok());
  EXPECT_NE(newer->find(".target sm_75"), std::string::npos);
  auto own = SelectPtx(bytes, 80, /*newest=*/90);
  ASSERT_TRUE(own.ok());
  EXPECT_NE(own->find(".target sm_75"), std::string::npos);
  EXPECT_EQ(CodeOf(SelectPtx(bytes, 70, /*newest=*/74).status()), err::kNoKernelImage);
}

TEST(Choose, TakesCompatibleMachineCodeElsePtxAsADriverWould) {
  auto entry = [](Kind kind, uint32_t arch) {
    Entry e{};
    e.kind = kind;
    e.arch = arch;
    return e;
  };
  const std::vector<Entry> entries = {entry(Kind::kElf, 75), entry(Kind::kPtx, 75),
                                      entry(Kind::kElf, 80), entry(Kind::kElf, 86),
                                      entry(Kind::kPtx, 86), entry(Kind::kElf, 120)};
  auto name = [&](uint32_t arch, bool ptx_only) {
    const Entry* e = Choose(entries, arch, ptx_only);
    return e ? EntryName(*e) : std::string("none");
  };
  EXPECT_EQ(name(75, false), "sm_75");
  EXPECT_EQ(name(89, false), "sm_86");       // same major, highest not above
  EXPECT_EQ(name(90, false), "compute_86");  // no sm_9x code: JIT the newest PTX
  EXPECT_EQ(name(120, false), "sm_120");
  EXPECT_EQ(name(75, true), "compute_75");
  EXPECT_EQ(name(90, true), "compute_86");
  EXPECT_EQ(name(70, false), "none");
}

// The registers ptxas gave each kernel (saxpy.cu's two take about ten) come from the machine
// code a device of that arch loads, else from the nearest machine code; a PTX-only build has
// none. A cubin cut anywhere is refused or read within its bytes, never past them.
TEST(KernelRegisters, ReadFromTheMachineCodeTheDeviceLoads) {
  auto names = [](const std::vector<std::pair<std::string, uint32_t>>& regs) {
    std::map<std::string, uint32_t> m(regs.begin(), regs.end());
    return m;
  };
  for (const char* mode : {"sm80", "zstd"}) {
    auto regs = KernelRegisters(Saxpy(mode), 80);
    ASSERT_TRUE(regs.ok()) << mode << ": " << regs.status().ToString();
    auto m = names(*regs);
    ASSERT_EQ(m.size(), 2u) << mode;
    for (const char* k : {"_Z5saxpyifPKfPf", "_Z8scaleSumiPKdPd"}) {
      ASSERT_TRUE(m.count(k)) << mode << " " << k;
      EXPECT_GE(m[k], 4u) << mode << " " << k;
      EXPECT_LE(m[k], 32u) << mode << " " << k;
    }
  }
  auto none = KernelRegisters(Saxpy("ptx2"), 80);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  const std::vector<std::byte> sm80 = Saxpy("sm80");  // the entries view it
  auto entries = Parse(sm80);
  ASSERT_TRUE(entries.ok());
  auto elf = Decompress((*entries)[0]);
  ASSERT_TRUE(elf.ok());
  for (size_t n = 0; n < elf->size(); n += std::max<size_t>(1, elf->size() / 512)) {
    std::vector<std::byte> cut(elf->begin(), elf->begin() + n);  // its own allocation: ASan sees
    auto r = ElfKernelRegisters(cut);
    if (r.ok()) {
      EXPECT_LE(r->size(), 2u) << n;
    }
  }
  std::vector<std::byte> garbled = *elf;
  Store<uint64_t>(garbled, 0x28, ~0ull);  // section headers nowhere
  EXPECT_EQ(CodeOf(ElfKernelRegisters(garbled).status()), err::kInvalidPtx);
}

TEST(Parse, DebugBuildCarriesNameAndOptions) {
  auto bytes = Saxpy("debug");
  auto entries = Parse(bytes);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  bool saw_ptx = false;
  for (const Entry& e : *entries) {
    EXPECT_NE(e.flags & kFlagDebug, 0u);
    EXPECT_TRUE(e.name.ends_with("saxpy.cu")) << e.name;
    if (e.kind != Kind::kPtx) continue;
    saw_ptx = true;
    EXPECT_NE(e.options.find("-g"), std::string::npos) << e.options;
    auto decoded = Decompress(e);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_NE(PtxText(*decoded).find(".entry _Z5saxpyifPKfPf("), std::string::npos);
  }
  EXPECT_TRUE(saw_ptx);
}

TEST(SplitSection, RdcRelocatableFatbin) {
  auto section = ReadData("rdc_a.relfatbin");
  ASSERT_FALSE(section.empty());
  auto fatbins = SplitSection(section);
  ASSERT_TRUE(fatbins.ok()) << fatbins.status().ToString();
  ASSERT_EQ(fatbins->size(), 1u);
  auto ptx = SelectPtx((*fatbins)[0], 75);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_NE(ptx->find(".entry _Z9rdcCallerPi("), std::string::npos);
  EXPECT_NE(ptx->find("_Z5twicei"), std::string::npos);  // declared, defined in rdc_b
}

TEST(SplitSection, ExecutableSection) {
  auto section = ReadData("saxpy_exe.nv_fatbin");
  ASSERT_FALSE(section.empty());
  auto fatbins = SplitSection(section);
  ASSERT_TRUE(fatbins.ok()) << fatbins.status().ToString();
  // The device-link fatbin (an sm_75 ELF, no PTX), then one per .cu in link order.
  ASSERT_EQ(fatbins->size(), 3u);
  EXPECT_EQ(SelectPtx((*fatbins)[0], 75).status().code(), err::kNoKernelImage);
  auto saxpy = SelectPtx((*fatbins)[1], 75);
  ASSERT_TRUE(saxpy.ok()) << saxpy.status().ToString();
  auto reference = SelectPtx(Saxpy("zstd"), 75);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(*saxpy, *reference);
  auto kernelless = SelectPtx((*fatbins)[2], 75);  // exe_main.cu: PTX without entries
  ASSERT_TRUE(kernelless.ok()) << kernelless.status().ToString();
  EXPECT_NE(kernelless->find(".version "), std::string::npos);
  EXPECT_EQ(kernelless->find(".entry"), std::string::npos);
}

TEST(SplitSection, ConcatenatedWithPadding) {
  auto a = Saxpy("zstd");
  auto b = Saxpy("lz4");
  std::vector<std::byte> section(a);
  section.resize(section.size() + 8);  // extra alignment padding
  section.insert(section.end(), b.begin(), b.end());
  section.resize(section.size() + 3);  // zero tail
  auto fatbins = SplitSection(section);
  ASSERT_TRUE(fatbins.ok()) << fatbins.status().ToString();
  ASSERT_EQ(fatbins->size(), 2u);
  EXPECT_EQ((*fatbins)[0].data(), section.data());
  EXPECT_EQ((*fatbins)[0].size(), a.size());
  EXPECT_EQ((*fatbins)[1].data(), section.data() + a.size() + 8);
  EXPECT_EQ((*fatbins)[1].size(), b.size());

  section.push_back(std::byte{0x42});
  EXPECT_EQ(CodeOf(SplitSection(section).status()), err::kInvalidPtx);
}

// ---- malformed input: each case must be refused with kInvalidPtx -------------

void ExpectParseRefused(const std::vector<std::byte>& bytes, const char* why) {
  auto entries = Parse(bytes);
  ASSERT_FALSE(entries.ok()) << why;
  EXPECT_EQ(CodeOf(entries.status()), err::kInvalidPtx) << why;
}

TEST(Malformed, EveryTruncationIsRefused) {
  auto bytes = Saxpy("zstd");
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + n);
    auto entries = Parse(cut);
    ASSERT_FALSE(entries.ok()) << "prefix " << n;
    ASSERT_EQ(CodeOf(entries.status()), err::kInvalidPtx);
  }
}

TEST(Malformed, FatbinHeader) {
  auto good = Saxpy("zstd");
  auto bytes = good;
  Store<uint32_t>(bytes, 0, 0xBA55ED51);
  ExpectParseRefused(bytes, "bad magic");
  bytes = good;
  Store<uint16_t>(bytes, 4, 2);
  ExpectParseRefused(bytes, "version 2");
  bytes = good;
  Store<uint16_t>(bytes, 6, 8);
  ExpectParseRefused(bytes, "header_size 8");
  bytes = good;
  Store<uint64_t>(bytes, 8, good.size());  // 16 bytes too many
  ExpectParseRefused(bytes, "bytes_of_entries past the end");
  bytes = good;
  Store<uint64_t>(bytes, 8, ~uint64_t{0} - 8);
  ExpectParseRefused(bytes, "bytes_of_entries overflows");
}

TEST(Malformed, TrailingPartialEntry) {
  auto bytes = Saxpy("zstd");
  uint64_t entries;
  std::memcpy(&entries, bytes.data() + 8, 8);
  bytes.resize(bytes.size() + 32);
  Store<uint64_t>(bytes, 8, entries + 32);
  ExpectParseRefused(bytes, "32 stray bytes after the last entry");
}

TEST(Malformed, EntryHeader) {
  auto good = Saxpy("zstd");
  size_t ptx = PtxEntryOffset(good);
  auto bytes = good;
  Store<uint32_t>(bytes, ptx + 4, 63);
  ExpectParseRefused(bytes, "entry header_size 63");
  bytes = good;
  Store<uint32_t>(bytes, ptx + 4, 0xFFFFFFF0);
  ExpectParseRefused(bytes, "entry header_size past the end");
  bytes = good;
  Store<uint64_t>(bytes, ptx + 8, ~uint64_t{0} - 40);
  ExpectParseRefused(bytes, "payload size overflows");
  bytes = good;
  Store<uint64_t>(bytes, 16 + 8, good.size());
  ExpectParseRefused(bytes, "first payload past the end");
  bytes = good;
  Store<uint64_t>(bytes, ptx + 40, kFlag64Bit | kFlagLinux | kFlagZstd | kFlagLz4Block);
  ExpectParseRefused(bytes, "two compression flags");
  bytes = good;
  Store<uint32_t>(bytes, ptx + 16, 0);
  ExpectParseRefused(bytes, "compressed size 0");
  bytes = good;
  Store<uint32_t>(bytes, ptx + 16, 0x7FFFFFFF);
  ExpectParseRefused(bytes, "compressed size beyond the payload");
  bytes = good;
  Store<uint64_t>(bytes, ptx + 56, uint64_t{1} << 40);
  ExpectParseRefused(bytes, "absurd uncompressed size");
  bytes = good;
  Store<uint64_t>(bytes, ptx + 56, uint64_t{300} << 20);  // below the cap, beyond ZSTD's ratio
  ExpectParseRefused(bytes, "uncompressed size beyond the codec's ratio");
  bytes = good;
  Store<uint32_t>(bytes, ptx + 32, 60);  // name at 60 of length 1000
  Store<uint32_t>(bytes, ptx + 36, 1000);
  ExpectParseRefused(bytes, "name outside the header");
  bytes = good;
  Store<uint32_t>(bytes, ptx + 20, 0xFFFFFFFC);
  ExpectParseRefused(bytes, "options reference outside the header");
}

TEST(Malformed, DecodedSizeMismatchIsRefusedForEveryCodec) {
  for (const char* mode : {"zstd", "lz4", "zlib", "lz4frame"}) {
    auto good = Saxpy(mode);
    size_t ptx = PtxEntryOffset(good);
    uint64_t size;
    std::memcpy(&size, good.data() + ptx + 56, 8);
    for (uint64_t wrong : {size - 1, size + 1, size + 4096}) {
      auto bytes = good;
      Store<uint64_t>(bytes, ptx + 56, wrong);
      auto entries = Parse(bytes);
      ASSERT_TRUE(entries.ok()) << mode;
      auto decoded = Decompress((*entries)[1]);
      ASSERT_FALSE(decoded.ok()) << mode << " accepted size " << wrong << " (real " << size << ")";
      EXPECT_EQ(CodeOf(decoded.status()), err::kInvalidPtx);
      EXPECT_EQ(CodeOf(SelectPtx(bytes, 75).status()), err::kInvalidPtx) << mode;
    }
  }
}

TEST(Malformed, TruncatedCompressedStreamIsRefusedForEveryCodec) {
  for (const char* mode : {"zstd", "lz4", "zlib", "lz4frame"}) {
    auto bytes = Saxpy(mode);
    size_t ptx = PtxEntryOffset(bytes);
    uint32_t compressed;
    std::memcpy(&compressed, bytes.data() + ptx + 16, 4);
    Store<uint32_t>(bytes, ptx + 16, compressed / 2);
    auto entries = Parse(bytes);
    ASSERT_TRUE(entries.ok()) << mode;
    auto decoded = Decompress((*entries)[1]);
    ASSERT_FALSE(decoded.ok()) << mode;
    EXPECT_EQ(CodeOf(decoded.status()), err::kInvalidPtx) << mode;
  }
}

TEST(Malformed, GarbledStreamMagicIsRefused) {
  for (const char* mode : {"zstd", "zlib", "lz4frame"}) {
    auto bytes = Saxpy(mode);
    size_t ptx = PtxEntryOffset(bytes);
    uint32_t header_size;
    std::memcpy(&header_size, bytes.data() + ptx + 4, 4);
    Store<uint16_t>(bytes, ptx + header_size, 0x5A5A);
    auto entries = Parse(bytes);
    ASSERT_TRUE(entries.ok()) << mode;
    EXPECT_EQ(CodeOf(Decompress((*entries)[1]).status()), err::kInvalidPtx) << mode;
  }
}

TEST(PtxText, StripsOnlyTrailingNuls) {
  const char raw[] = "a\0b\n\0\0";
  Bytes bytes(reinterpret_cast<const std::byte*>(raw), sizeof(raw));
  EXPECT_EQ(PtxText(bytes), std::string("a\0b\n", 4));
  EXPECT_EQ(PtxText({}), "");
}

TEST(ImagesDigest, DependsOnBoundariesAndBytes) {
  std::byte ab[] = {std::byte{1}, std::byte{2}};
  Bytes whole(ab, 2), first(ab, 1), second(ab + 1, 1);
  const std::string h1 = ImagesDigest(std::vector<Bytes>{whole});
  EXPECT_EQ(h1.size(), 32u);
  EXPECT_NE(h1, ImagesDigest(std::vector<Bytes>{first, second}));
  EXPECT_EQ(h1, ImagesDigest(std::vector<Bytes>{whole}));
  ab[1] = std::byte{3};
  EXPECT_NE(h1, ImagesDigest(std::vector<Bytes>{whole}));
}

}  // namespace
}  // namespace remora::fatbin
