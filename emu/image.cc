// emu/image.cc - decoding module images into PTX sources.
#include "emu/image.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "emu/device.h"
#include "fatbin/fatbin.h"
#include "proto/jit_log.h"

namespace remora::emu {
namespace {

constexpr uint32_t kLinkedVersion = 1;
constexpr size_t kLinkedHeader = 16;
constexpr uint64_t kMaxLinkedSource = uint64_t{1} << 30;

uint32_t LoadU32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

CUresult DecodeLinked(const char* p, std::vector<std::string>* ptx) {
  if (LoadU32(p + 4) != kLinkedVersion) return CUDA_ERROR_INVALID_IMAGE;
  const uint32_t count = LoadU32(p + 8);
  if (count == 0) return CUDA_ERROR_INVALID_IMAGE;
  const char* cur = p + kLinkedHeader;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t len;
    std::memcpy(&len, cur, sizeof(len));
    if (len > kMaxLinkedSource) return CUDA_ERROR_INVALID_IMAGE;
    ptx->emplace_back(cur + sizeof(len), len);
    cur += sizeof(len) + len;
  }
  return CUDA_SUCCESS;
}

CUresult FromStatus(const Status& s) {
  return s.code() == err::kNoKernelImage ? CUDA_ERROR_NO_BINARY_FOR_GPU : CUDA_ERROR_INVALID_PTX;
}

// Appends fatbin::KernelRegisters of `fatbin` to `out` (if any): a count it cannot read leaves
// the PTX's estimate, as the PTX is what runs.
void AddRegisters(fatbin::Bytes fatbin, KernelRegisters* out) {
  if (out == nullptr) return;
  auto regs = fatbin::KernelRegisters(fatbin, kArch);
  if (regs.ok()) out->insert(out->end(), regs->begin(), regs->end());
}

CUresult DecodeWrapper(const void* wrapper, std::vector<std::string>* ptx,
                       KernelRegisters* registers) {
  auto images = fatbin::WrapperImages(wrapper);
  if (!images.ok()) return FromStatus(images.status());
  for (const auto& img : *images) {
    AddRegisters(img, registers);
    auto text = fatbin::SelectPtx(img, kArch, kNewestPtx);
    if (text.ok()) {
      ptx->push_back(std::move(text).value());
    } else if (text.status().code() != err::kNoKernelImage) {
      return FromStatus(text.status());
    }
  }
  return ptx->empty() ? CUDA_ERROR_NO_BINARY_FOR_GPU : CUDA_SUCCESS;
}

// Reads `.<directive> <token>` from the first lines of `ptx`; "" if absent.
std::string_view Directive(std::string_view ptx, std::string_view directive) {
  size_t at = ptx.find(directive);
  while (at != std::string_view::npos && at > 0 && ptx[at - 1] != '\n' && ptx[at - 1] != ' ' &&
         ptx[at - 1] != '\t') {
    at = ptx.find(directive, at + 1);
  }
  if (at == std::string_view::npos) return {};
  size_t b = at + directive.size();
  while (b < ptx.size() && (ptx[b] == ' ' || ptx[b] == '\t')) ++b;
  size_t e = b;
  while (e < ptx.size() && ptx[e] != ' ' && ptx[e] != '\t' && ptx[e] != '\n' && ptx[e] != ',' &&
         ptx[e] != '\r') {
    ++e;
  }
  return ptx.substr(b, e - b);
}

int Digits(std::string_view s) {
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

CUresult CheckPtxHeader(const std::string& ptx) {
  std::string_view target = Directive(ptx, ".target ");
  const int arch = target.starts_with("sm_") ? Digits(target.substr(3)) : 0;
  if (arch > kNewestPtx) {
    // As NVIDIA's JIT refuses PTX for a newer architecture than the device's; say which.
    SetJitError("its PTX targets " + std::string(target) + ", newer than the device's sm_" +
                std::to_string(kArch) + " and the sm_" + std::to_string(kNewestPtx) +
                " PTX it also runs");
    std::fprintf(stderr, "remora-emu: cannot load module: %s\n", JitError().c_str());
    return CUDA_ERROR_INVALID_PTX;
  }
  if (arch > kArch) {
    // A GPU refuses it; the emulated GPU runs it and refuses at launch what it lacks. Said once
    // per target.
    static std::mutex mu;
    static std::set<std::string, std::less<>> told;
    std::lock_guard lock(mu);
    if (told.insert(std::string(target)).second)
      std::fprintf(stderr,
                   "remora-emu: running PTX for %.*s on the sm_%d device: a kernel reaching an "
                   "instruction it lacks is refused at launch, naming it\n",
                   static_cast<int>(target.size()), target.data(), kArch);
  }
  std::string_view version = Directive(ptx, ".version ");
  if (!version.empty()) {
    const int major = Digits(version);
    const size_t dot = version.find('.');
    const int minor = dot == std::string_view::npos ? 0 : Digits(version.substr(dot + 1));
    if (major > 9 || (major == 9 && minor > 0)) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  }
  return CUDA_SUCCESS;
}

namespace {
thread_local std::string t_jit_error;
}  // namespace

void SetJitError(std::string text) {
  t_jit_error = std::move(text);
}
const std::string& JitError() {
  return t_jit_error;
}
void ClearJitError() {
  t_jit_error.clear();
}

void WriteJitLogs(unsigned n, const CUjit_option* options, void** values, CUresult result) {
  if (n == 0 || options == nullptr || values == nullptr) return;
  remora::WriteJitLog(n, options, values, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                      "");
  remora::WriteJitLog(n, options, values, CU_JIT_ERROR_LOG_BUFFER,
                      CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                      result == CUDA_SUCCESS ? std::string_view() : std::string_view(JitError()));
}

int PtxTarget(const std::string& ptx) {
  std::string_view target = Directive(ptx, ".target ");
  return target.starts_with("sm_") ? Digits(target.substr(3)) : 0;
}

CUresult PtxFromFatbin(const void* fatbin, size_t size, std::vector<std::string>* ptx,
                       KernelRegisters* registers, int newest) {
  const auto* p = static_cast<const std::byte*>(fatbin);
  if (size == 0) {
    // Header: u32 magic, u16 version, u16 header size, u64 bytes of entries.
    uint16_t header_size;
    uint64_t entries;
    std::memcpy(&header_size, p + 6, sizeof(header_size));
    std::memcpy(&entries, p + 8, sizeof(entries));
    if (entries > fatbin::kMaxImageBytes) return CUDA_ERROR_INVALID_PTX;
    size = header_size + entries;
  }
  const fatbin::Bytes bytes(p, size);
  auto text = fatbin::SelectPtx(bytes, kArch, uint32_t(newest));
  if (!text.ok()) return FromStatus(text.status());
  ptx->push_back(std::move(text).value());
  AddRegisters(bytes, registers);
  return CUDA_SUCCESS;
}

CUresult DecodeImage(const void* image, std::vector<std::string>* ptx, KernelRegisters* registers) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* p = static_cast<const char*>(image);
  // Every binary magic is four non-zero bytes; shorter text is read as PTX.
  if (strnlen(p, 4) < 4) {
    ptx->emplace_back(p);
    return CUDA_SUCCESS;
  }
  const uint32_t magic = LoadU32(p);
  if (magic == kLinkedMagic) return DecodeLinked(p, ptx);
  if (magic == fatbin::kFatbinMagic) return PtxFromFatbin(image, 0, ptx, registers);
  if (magic == fatbin::kWrapperMagic) return DecodeWrapper(image, ptx, registers);
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) == 0)
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  ptx->emplace_back(p);
  return CUDA_SUCCESS;
}

std::vector<std::byte> EncodeLinked(std::span<const std::string> sources) {
  size_t total = kLinkedHeader;
  for (const auto& s : sources) total += sizeof(uint64_t) + s.size();
  std::vector<std::byte> out(total);
  const uint32_t header[4] = {kLinkedMagic, kLinkedVersion, static_cast<uint32_t>(sources.size()),
                              0};
  std::memcpy(out.data(), header, sizeof(header));
  size_t at = kLinkedHeader;
  for (const auto& s : sources) {
    const uint64_t len = s.size();
    std::memcpy(out.data() + at, &len, sizeof(len));
    std::memcpy(out.data() + at + sizeof(len), s.data(), s.size());
    at += sizeof(len) + s.size();
  }
  return out;
}

}  // namespace remora::emu
