// emu/device.cc - the emulated device's configuration and attribute table.
#include "emu/device.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "proto/quantity.h"

namespace remora::emu {
namespace {

constexpr uint64_t kDefaultMemory = uint64_t{16} << 30;
constexpr int kDefaultSms = 40;

DeviceConfig ReadConfig() {
  DeviceConfig cfg{kDefaultMemory, kDefaultSms, true};
  if (const char* mem = std::getenv("REMORA_EMU_MEMORY")) {
    Result<uint64_t> v = ParseQuantity(mem);
    if (v.ok() && *v > 0)
      cfg.total_memory = *v;
    else
      std::fprintf(stderr, "remora-emu: REMORA_EMU_MEMORY: %s; using 16Gi\n",
                   v.ok() ? "zero bytes" : v.status().message().c_str());
  }
  if (const char* sms = std::getenv("REMORA_EMU_SMS")) {
    char* end = nullptr;
    long v = std::strtol(sms, &end, 10);
    if (end != sms && *end == '\0' && v > 0 && v <= 1024) cfg.sm_count = static_cast<int>(v);
  }
  if (const char* sticky = std::getenv("REMORA_EMU_STICKY_FAULTS")) {
    if (std::string_view(sticky) == "context")
      cfg.faults_poison_process = false;
    else if (std::string_view(sticky) != "process")
      std::fprintf(stderr,
                   "remora-emu: REMORA_EMU_STICKY_FAULTS takes process or context; "
                   "using process\n");
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
