// tests/fatbin/fuzz_replay_test.cc - runs the libFuzzer target over seeds and random mutations.
//
// The seeds are nvcc's fat binaries in every packaging mode; each mutation is
// passed in an exactly sized heap buffer, so an ASan build flags any overread.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fatbin/fatbin.h"
#include "tests/fatbin/test_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace remora::fatbin {
namespace {

using testing::ReadData;

constexpr int kMutations = 20000;

std::vector<std::vector<std::byte>> Seeds() {
  std::vector<std::vector<std::byte>> seeds;
  for (const char* mode : {"zstd", "lz4", "raw", "zlib", "lz4frame", "sm80", "ptx2", "debug"})
    seeds.push_back(ReadData(std::string("saxpy_") + mode + ".fatbin"));
  seeds.push_back(ReadData("rdc_a.relfatbin"));
  seeds.push_back(ReadData("saxpy_exe.nv_fatbin"));
  for (const auto& s : seeds) EXPECT_FALSE(s.empty());
  return seeds;
}

// Header offsets of every entry in a valid seed, for targeted field mutations.
std::vector<size_t> EntryHeaders(const std::vector<std::byte>& seed) {
  std::vector<size_t> offsets;
  auto entries = Parse(seed);
  if (!entries.ok()) return offsets;
  for (size_t off = 16; off + 16 <= seed.size() && offsets.size() < entries->size();) {
    uint32_t header_size;
    uint64_t payload;
    std::memcpy(&header_size, seed.data() + off + 4, 4);
    std::memcpy(&payload, seed.data() + off + 8, 8);
    offsets.push_back(off);
    off += header_size + payload;
  }
  return offsets;
}

class Mutator {
 public:
  explicit Mutator(uint32_t seed) : rng_(seed) {}

  std::vector<std::byte> Mutate(const std::vector<std::byte>& seed,
                                const std::vector<std::byte>& other) {
    std::vector<std::byte> b = seed;
    int rounds = 1 + Below(3);
    for (int i = 0; i < rounds && !b.empty(); ++i) {
      switch (Below(7)) {
        case 0:  // flip one bit
          b[Below(b.size())] ^= std::byte(1u << Below(8));
          break;
        case 1:  // random byte
          b[Below(b.size())] = std::byte(Below(256));
          break;
        case 2:  // interesting value into a header field of some entry
          PokeField(b, seed);
          break;
        case 3:  // truncate
          b.resize(Below(b.size()));
          break;
        case 4:  // append junk
          for (size_t n = Below(64); n > 0; --n) b.push_back(std::byte(Below(256)));
          break;
        case 5:  // splice the tail of another seed
          if (!other.empty()) {
            size_t at = Below(b.size()), from = Below(other.size());
            b.resize(at);
            b.insert(b.end(), other.begin() + from, other.end());
          }
          break;
        case 6:  // interesting value anywhere, 8-byte aligned
          if (b.size() >= 8) Poke(b, Below(b.size() / 8) * 8, 8);
          break;
      }
    }
    return b;
  }

 private:
  size_t Below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  void Poke(std::vector<std::byte>& b, size_t offset, size_t width) {
    static constexpr std::array<uint64_t, 12> kValues = {
        0, 1, 8, 15, 16, 63, 64, 0x7F, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, ~uint64_t{0}};
    uint64_t v = kValues[Below(kValues.size())];
    if (Below(4) == 0) v = b.size() + Below(32) - 16;
    if (offset + width <= b.size()) std::memcpy(b.data() + offset, &v, width);
  }

  void PokeField(std::vector<std::byte>& b, const std::vector<std::byte>& seed) {
    static constexpr std::array<std::pair<size_t, size_t>, 13> kFields = {{{0, 2},
                                                                           {4, 4},
                                                                           {8, 8},
                                                                           {16, 4},
                                                                           {20, 4},
                                                                           {24, 2},
                                                                           {26, 2},
                                                                           {28, 4},
                                                                           {32, 4},
                                                                           {36, 4},
                                                                           {40, 8},
                                                                           {56, 8},
                                                                           {6, 2}}};
    auto headers = EntryHeaders(seed);
    if (headers.empty() || Below(5) == 0) {  // the fat binary header itself
      Poke(b, Below(2) == 0 ? 6 : 8, Below(2) == 0 ? 2 : 8);
      return;
    }
    auto [offset, width] = kFields[Below(kFields.size())];
    if (Below(3) == 0 && offset == 40) {  // flip compression bits specifically
      size_t at = headers[Below(headers.size())] + 40;
      if (at + 2 <= b.size()) b[at + 1] ^= std::byte(0x10u << Below(4));
      return;
    }
    Poke(b, headers[Below(headers.size())] + offset, width);
  }

  std::mt19937 rng_;
};

int RunOne(const std::vector<std::byte>& input) {
  // Exactly sized heap copy: one byte past the end is a red zone under ASan.
  std::vector<uint8_t> exact(input.size());
  if (!input.empty()) std::memcpy(exact.data(), input.data(), input.size());
  return LLVMFuzzerTestOneInput(exact.data(), exact.size());
}

TEST(FuzzReplay, Seeds) {
  for (const auto& seed : Seeds()) {
    EXPECT_EQ(RunOne(seed), 0);
    auto fatbins = SplitSection(seed);
    ASSERT_TRUE(fatbins.ok()) << fatbins.status().ToString();
    for (Bytes fb : *fatbins) EXPECT_TRUE(Parse(fb).ok());
  }
  EXPECT_EQ(RunOne({}), 0);
}

TEST(FuzzReplay, RandomMutationsNeverCrash) {
  auto seeds = Seeds();
  Mutator mutator(20261122);
  int parsed = 0, refused = 0, decoded = 0;
  for (int i = 0; i < kMutations; ++i) {
    const auto& seed = seeds[i % seeds.size()];
    const auto& other = seeds[(i / seeds.size()) % seeds.size()];
    std::vector<std::byte> input = mutator.Mutate(seed, other);
    ASSERT_EQ(RunOne(input), 0);
    auto entries = Parse(input);
    if (!entries.ok()) {
      ++refused;
      ASSERT_EQ(entries.status().code(), err::kInvalidPtx);
      continue;
    }
    ++parsed;
    if (SelectPtx(input, 75).ok()) ++decoded;
  }
  // The mutations must exercise both the accepting and the refusing paths.
  EXPECT_GT(parsed, kMutations / 20);
  EXPECT_GT(refused, kMutations / 20);
  EXPECT_GT(decoded, 0);
}

}  // namespace
}  // namespace remora::fatbin
