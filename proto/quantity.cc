// proto/quantity.cc - Kubernetes-style byte quantities.
#include "proto/quantity.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace remora {
namespace {

struct Suffix {
  std::string_view text;
  double scale;
};
constexpr Suffix kSuffixes[] = {
    {"", 1},        {"k", 1e3},     {"M", 1e6},     {"G", 1e9},     {"T", 1e12},
    {"P", 1e15},    {"E", 1e18},    {"Ki", 1024.0}, {"Mi", 0x1p20}, {"Gi", 0x1p30},
    {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60},
};

Status Bad(std::string_view text) {
  return Error(err::kInvalidValue,
               "'" + std::string(text) +
                   "' is not a quantity: write bytes (1073741824) or a number with a "
                   "Kubernetes suffix, k M G T P E (powers of 1000) or Ki Mi Gi Ti Pi Ei "
                   "(powers of 1024), e.g. 512Mi, 4G, 4Gi, 1.5Gi");
}

}  // namespace

Result<uint64_t> ParseQuantity(std::string_view text) {
  size_t i = 0, digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return Bad(text);
  const double value = std::strtod(std::string(text.substr(0, i)).c_str(), nullptr);
  const std::string_view suffix = text.substr(i);
  for (const Suffix& s : kSuffixes) {
    if (suffix != s.text) continue;
    const double bytes = std::round(value * s.scale);
    if (!(bytes < 0x1p64)) return Bad(text);
    return static_cast<uint64_t>(bytes);
  }
  return Bad(text);
}

}  // namespace remora
