// tests/fatbin/link_image_test.cc - link images (fatbin/link_image.h): what is encoded decodes
// to the same inputs, and every malformed image is refused without reading past its end.
#include "fatbin/link_image.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace remora::fatbin {
namespace {

Bytes View(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

std::vector<LinkInput> RandomInputs(std::mt19937& rng) {
  std::vector<LinkInput> inputs(rng() % 5 + 1);
  for (LinkInput& in : inputs) {
    in.type = rng() % 5;
    in.bytes.resize(rng() % 300);
    for (char& c : in.bytes) c = char(rng());
  }
  return inputs;
}

TEST(LinkImage, RoundTripsRandomInputs) {
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    const std::vector<LinkInput> inputs = RandomInputs(rng);
    const std::string image = EncodeLinkImage(inputs);
    ASSERT_TRUE(IsLinkImage(image.data()));
    EXPECT_EQ(LinkImageSize(image.data()), image.size());
    Result<std::vector<LinkInput>> back = DecodeLinkImage(View(image));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->size(), inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      EXPECT_EQ((*back)[k].type, inputs[k].type);
      EXPECT_EQ((*back)[k].bytes, inputs[k].bytes);
    }
  }
}

TEST(LinkImage, RefusesEveryTruncationAndExtension) {
  std::mt19937 rng(6);
  const std::string image = EncodeLinkImage(RandomInputs(rng));
  for (size_t n = 0; n < image.size(); ++n) {
    // A copy of exactly n bytes, so that a read past it is the sanitizers' to see.
    std::string cut = image.substr(0, n);
    EXPECT_FALSE(DecodeLinkImage(View(cut)).ok()) << n;
  }
  EXPECT_FALSE(DecodeLinkImage(View(image + "x")).ok());
}

TEST(LinkImage, RefusesLyingHeaders) {
  std::string image = EncodeLinkImage({{1, "ptx"}, {2, "fatbin"}});
  std::string more = image;
  const uint32_t count = 1000000;
  std::memcpy(more.data() + 16, &count, sizeof count);  // more inputs than bytes
  EXPECT_FALSE(DecodeLinkImage(View(more)).ok());
  std::string big = image;
  const uint64_t size = ~uint64_t{0} - 4;
  std::memcpy(big.data() + kLinkHeaderBytes + 4, &size, sizeof size);  // an input past the end
  EXPECT_FALSE(DecodeLinkImage(View(big)).ok());
  std::string huge = image;
  const uint64_t total = uint64_t{1} << 40;
  std::memcpy(huge.data() + 8, &total, sizeof total);
  EXPECT_EQ(LinkImageSize(huge.data()), 0u);
  std::string other = image;
  other[0] = 'X';
  EXPECT_FALSE(IsLinkImage(other.data()));
  EXPECT_FALSE(DecodeLinkImage(View(other)).ok());
}

}  // namespace
}  // namespace remora::fatbin
