// tests/fuzz/replay_test.cc - one fuzz target's seed corpus and mutations of it, under gtest.
//
// Linked once per target (tests/fuzz/CMakeLists.txt) with that target's
// LLVMFuzzerTestOneInput, so that every build type, gcc's included, runs the harness
// and its checks: the committed seeds, then REMORA_FUZZ_MUTATIONS cheap mutations
// (bit flips, byte stores, truncations, insertions, splices). Each input is passed in
// an exactly sized heap buffer, so an ASan build flags any overread. A trap in the
// harness kills the test binary: ctest reports it as a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace remora::fuzz {
namespace {

using Bytes = std::vector<uint8_t>;

std::vector<Bytes> Corpus() {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(REMORA_FUZZ_CORPUS))
    if (e.is_regular_file()) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<Bytes> seeds;
  for (const auto& p : paths) {
    std::ifstream f(p, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return seeds;
}

int RunOne(const Bytes& input) {
  // Exactly sized: one byte past the end is a red zone under ASan.
  auto exact = std::make_unique<uint8_t[]>(input.size());
  std::copy(input.begin(), input.end(), exact.get());
  return LLVMFuzzerTestOneInput(exact.get(), input.size());
}

Bytes Mutate(std::mt19937& rng, const Bytes& seed, const Bytes& other) {
  auto below = [&](size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  Bytes b = seed;
  for (int round = 1 + below(4); round > 0; --round) {
    switch (below(5)) {
      case 0:
        if (!b.empty()) b[below(b.size())] ^= uint8_t(1u << below(8));
        break;
      case 1:
        if (!b.empty()) b[below(b.size())] = uint8_t(below(256));
        break;
      case 2:
        b.resize(below(b.size() + 1));
        break;
      case 3:
        b.insert(b.begin() + below(b.size() + 1), below(16) + 1, uint8_t(below(256)));
        break;
      case 4: {  // the head of this input, the tail of another
        const size_t at = below(b.size() + 1), from = below(other.size() + 1);
        b.resize(at);
        b.insert(b.end(), other.begin() + from, other.end());
        break;
      }
    }
  }
  return b;
}

TEST(FuzzReplay, Seeds) {
  const auto seeds = Corpus();
  ASSERT_FALSE(seeds.empty()) << "no seeds in " << REMORA_FUZZ_CORPUS;
  for (const Bytes& s : seeds) EXPECT_EQ(RunOne(s), 0);
  EXPECT_EQ(RunOne({}), 0);
}

TEST(FuzzReplay, Mutations) {
  const auto seeds = Corpus();
  ASSERT_FALSE(seeds.empty());
  std::mt19937 rng(20261122);
  for (int i = 0; i < REMORA_FUZZ_MUTATIONS; ++i) {
    const Bytes& seed = seeds[i % seeds.size()];
    const Bytes& other = seeds[(i / seeds.size()) % seeds.size()];
    ASSERT_EQ(RunOne(Mutate(rng, seed, other)), 0);
  }
}

}  // namespace
}  // namespace remora::fuzz
