// emu/device.cc - the emulated device's configuration and attribute table.
#include "emu/device.h"

#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace remora::emu {
namespace {

constexpr uint64_t kDefaultMemory = uint64_t{16} << 30;
constexpr int kDefaultSms = 40;

DeviceConfig ReadConfig() {
  DeviceConfig cfg{kDefaultMemory, kDefaultSms};
  if (const char* mem = std::getenv("REMORA_EMU_MEMORY")) {
    if (auto v = ParseMemorySize(mem)) cfg.total_memory = *v;
  }
  if (const char* sms = std::getenv("REMORA_EMU_SMS")) {
    char* end = nullptr;
    long v = std::strtol(sms, &end, 10);
    if (end != sms && *end == '\0' && v > 0 && v <= 1024) cfg.sm_count = static_cast<int>(v);
  }
  return cfg;
}

constexpr int kAttrCount = CU_DEVICE_ATTRIBUTE_MAX;

struct AttrTable {
  std::array<int, kAttrCount> value{};
  std::array<bool, kAttrCount> known{};
};

AttrTable BuildAttrs(const DeviceConfig& cfg) {
  AttrTable t;
#define DEVICE_ATTR(suffix, v)                 \
  t.value[CU_DEVICE_ATTRIBUTE_##suffix] = (v); \
  t.known[CU_DEVICE_ATTRIBUTE_##suffix] = true;
#include "emu/device_attrs.def"
  return t;
}

}  // namespace

const DeviceConfig& Config() {
  static const DeviceConfig cfg = ReadConfig();
  return cfg;
}

std::optional<uint64_t> ParseMemorySize(std::string_view text) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(text[i++] - '0');
  }
  if (i == 0) return std::nullopt;
  int shift = 0;
  if (i < text.size()) {
    constexpr std::string_view kUnits = "KMGT";
    size_t u = kUnits.find(static_cast<char>(std::toupper(static_cast<unsigned char>(text[i]))));
    if (u == std::string_view::npos) return std::nullopt;
    shift = 10 * static_cast<int>(u + 1);
    ++i;
    if (i < text.size() && (text[i] == 'i' || text[i] == 'I')) ++i;
    if (i < text.size() && (text[i] == 'B' || text[i] == 'b')) ++i;
  }
  if (i != text.size() || v == 0 || v > (UINT64_MAX >> shift)) return std::nullopt;
  return v << shift;
}

std::optional<int> DeviceAttribute(int attr) {
  static const AttrTable table = BuildAttrs(Config());
  if (attr <= 0 || attr >= kAttrCount || !table.known[attr]) return std::nullopt;
  return table.value[attr];
}

CUuuid DeviceUuid() {
  // "remora-emu-gpu-0" in ASCII: recognisable in nvidia-smi style listings.
  static constexpr char kBytes[16] = {'r', 'e', 'm', 'o', 'r', 'a', '-', 'e',
                                      'm', 'u', '-', 'g', 'p', 'u', '-', '0'};
  CUuuid u;
  std::memcpy(u.bytes, kBytes, sizeof(u.bytes));
  return u;
}

}  // namespace remora::emu
