// client_stub/image_module.cc - modules loaded from an image at run time.
#include "client_stub/image_module.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/kernels.h"
#include "client_stub/mirror.h"
#include "fatbin/fatbin.h"
#include "fatbin/link_image.h"

namespace remora::client_stub {
namespace {

// The images an image stands for: an nvcc fat-binary wrapper's, a fat binary, a cubin (ELF)
// or PTX text (NUL-terminated), as NVIDIA's driver takes them, or a link image.
Result<std::vector<std::string>> ImagesOf(const void* image) {
  if (image == nullptr) return Error(cudaErrorInvalidValue, "no image");
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof magic);
  std::vector<std::string> out;
  auto keep = [&](const void* p, size_t n) { out.emplace_back(static_cast<const char*>(p), n); };
  if (fatbin::IsLinkImage(image)) {  // the stub's own cuLinkComplete: the server links it
    const uint64_t n = fatbin::LinkImageSize(image);
    if (n == 0) return Error(cudaErrorInvalidValue, "link image header");
    keep(image, n);
  } else if (magic == fatbin::kWrapperMagic) {
    ASSIGN_OR_RETURN(std::vector<fatbin::Bytes> images, fatbin::WrapperImages(image));
    for (fatbin::Bytes b : images) keep(b.data(), b.size());
  } else if (magic == fatbin::kFatbinMagic) {
    // No length comes with it: the header says how long the rest is.
    uint16_t header = 0;
    uint64_t body = 0;
    std::memcpy(&header, static_cast<const char*>(image) + 6, sizeof header);
    std::memcpy(&body, static_cast<const char*>(image) + 8, sizeof body);
    if (header < 16 || body > (uint64_t{1} << 34)) return Error(cudaErrorInvalidValue, "header");
    keep(image, header + body);
  } else if (std::memcmp(image,
                         "\x7f"
                         "ELF",
                         4) == 0) {
    // A 64-bit ELF ends with its section headers: e_shoff + e_shnum * e_shentsize.
    const auto* e = static_cast<const unsigned char*>(image);
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    std::memcpy(&shoff, e + 0x28, sizeof shoff);
    std::memcpy(&shentsize, e + 0x3a, sizeof shentsize);
    std::memcpy(&shnum, e + 0x3c, sizeof shnum);
    keep(image, shoff + uint64_t{shentsize} * shnum);
  } else {
    keep(image, std::strlen(static_cast<const char*>(image)) + 1);  // PTX
  }
  return out;
}

}  // namespace

ImageModule::~ImageModule() {
  for (auto& [name, k] : kernels) ForgetKernelHandle(k.get());
  for (uint64_t at : managed) Mirrors::Get().Release(at);
}

namespace {

// Registers `images`, found at `origin`, with the server (by hash first); its module id.
cudaError_t Register(const std::vector<std::string>& images, bool rdc, const std::string& origin,
                     uint64_t* id) {
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  std::vector<fatbin::Bytes> views;
  for (const std::string& img : images) views.push_back(std::as_bytes(std::span(img)));
  v1::RegisterModuleRequest req;
  req.set_hash(fatbin::ImagesDigest(views));
  req.set_rdc(rdc);  // an -rdc program's wrapper: link its translation units' PTX
  req.set_origin(origin);
  v1::RegisterModuleReply rep;
  if (cudaError_t e = c.Call(CallId::kRegisterModule, req, &rep)) return e;
  if (rep.images_needed()) {
    for (const std::string& img : images) req.add_images(img);
    rep.Clear();
    if (cudaError_t e = c.Call(CallId::kRegisterModule, req, &rep)) {
      // Machine code for other GPUs only (NVIDIA's libraries on the emulated GPU): say which
      // module and whose, on the tenant's stderr as in the server's log, whoever asked for it.
      if (e == cudaErrorNoKernelImageForDevice)
        std::fprintf(stderr, "remora: a module%s%s has no image this device can run: %s%s\n",
                     origin.empty() ? "" : " of ", origin.c_str(),
                     Connection::LastFailureMessage().c_str(), RemoteLibsHint(origin));
      return e;
    }
    if (rep.images_needed()) return cudaErrorUnknown;  // a server that lost them
  }
  *id = rep.module();
  return cudaSuccess;
}

cudaError_t AskKernel(const ImageModule& m, Kernel& k) {
  v1::ModuleFunctionRequest req;
  req.set_module(m.id);
  req.set_name(k.name);
  v1::KernelLayout rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kModuleGetFunction, req, &rep)) return e;
  ApplyLayout(k, rep);
  k.epoch.store(m.epoch, std::memory_order_release);
  return cudaSuccess;
}

}  // namespace

const char* RemoteLibsHint(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  if (!base.starts_with("libcublas") && !base.starts_with("libcudnn")) return "";
  return " (`remora run --remote-libs cublas,cudnn` serves NVIDIA's cuBLAS, cuBLASLt and cuDNN "
         "from the server)";
}

std::string ImageOrigin(const void* image) {
  Dl_info info{};
  if (dladdr(image, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

cudaError_t LoadImageModule(const void* image, bool preserved, ImageModule** out) {
  if (out == nullptr || image == nullptr) return cudaErrorInvalidValue;
  Result<std::vector<std::string>> images = ImagesOf(image);
  if (!images.ok()) return cudaErrorInvalidKernelImage;
  uint32_t magic = 0, version = 0;
  std::memcpy(&magic, image, sizeof magic);
  if (magic == fatbin::kWrapperMagic) std::memcpy(&version, static_cast<const char*>(image) + 4, 4);
  auto m = std::make_unique<ImageModule>();
  m->epoch = DeviceEpoch();
  m->rdc = version == 2;
  m->origin = ImageOrigin(image);
  if (cudaError_t e = Register(*images, m->rdc, m->origin, &m->id)) return e;
  if (preserved || magic == fatbin::kWrapperMagic)
    m->preserved = image;
  else
    m->kept = std::move(*images);
  *out = m.release();  // UnloadImageModule deletes it
  return cudaSuccess;
}

Result<std::string> ReadImageFile(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error(cudaErrorFileNotFound, std::string("cannot read ") + path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  bytes.push_back('\0');
  return bytes;
}

// Loads `m` again if a device reset unloaded it. REQUIRES: m.mu held.
cudaError_t ReloadLocked(ImageModule& m, uint64_t now) {
  if (m.epoch == now) return cudaSuccess;
  std::vector<std::string> again;
  if (m.preserved) {
    Result<std::vector<std::string>> images = ImagesOf(m.preserved);
    if (!images.ok()) return cudaErrorInvalidKernelImage;
    again = std::move(*images);
  }
  if (cudaError_t e = Register(m.preserved ? again : m.kept, m.rdc, m.origin, &m.id)) return e;
  m.epoch = now;
  return cudaSuccess;
}

cudaError_t RefreshImageKernel(Kernel& k) {
  const uint64_t now = DeviceEpoch();
  if (k.epoch.load(std::memory_order_acquire) == now) return cudaSuccess;
  ImageModule& m = *k.image;
  std::lock_guard lock(m.mu);
  if (cudaError_t e = ReloadLocked(m, now)) return e;
  return k.epoch.load(std::memory_order_acquire) == now ? cudaSuccess : AskKernel(m, k);
}

cudaError_t ImageModuleKernelNames(ImageModule* m, const std::vector<std::string>** names) {
  if (m == nullptr || names == nullptr) return cudaErrorInvalidValue;
  std::lock_guard lock(m->mu);
  if (!m->kernel_names) {
    if (cudaError_t e = ReloadLocked(*m, DeviceEpoch())) return e;
    v1::ModuleKernelsRequest req;
    req.set_module(m->id);
    v1::ModuleKernelsReply rep;
    if (cudaError_t e = Connection::Get().Call(CallId::kModuleKernels, req, &rep)) return e;
    m->kernel_names.emplace(rep.names().begin(), rep.names().end());
  }
  *names = &*m->kernel_names;
  return cudaSuccess;
}

cudaError_t UnloadImageModule(ImageModule* module) {
  if (module == nullptr) return cudaErrorInvalidResourceHandle;
  std::unique_ptr<ImageModule> m(module);
  if (m->epoch != DeviceEpoch()) return cudaSuccess;  // a device reset unloaded it already
  v1::UnregisterModuleRequest req;
  req.set_module(m->id);
  return Connection::Get().Post(CallId::kUnregisterModule, req);
}

cudaError_t ImageModuleKernel(ImageModule* m, const char* name, Kernel** out) {
  if (out == nullptr || m == nullptr || name == nullptr) return cudaErrorInvalidValue;
  std::lock_guard lock(m->mu);
  std::unique_ptr<Kernel>& k = m->kernels[name];
  if (!k) {
    k = std::make_unique<Kernel>();
    k->name = name;
    k->image = m;
    if (cudaError_t e = AskKernel(*m, *k)) {
      m->kernels.erase(name);
      return e;
    }
    AcceptKernelHandle(k.get());
  }
  *out = k.get();
  return cudaSuccess;
}

cudaError_t ImageModuleGlobal(ImageModule* m, const char* name, uint64_t* dptr, size_t* bytes) {
  if (m == nullptr || name == nullptr) return cudaErrorInvalidValue;
  v1::ModuleFunctionRequest req;
  req.set_module(m->id);
  req.set_name(name);
  v1::VariableInfo rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kModuleGetGlobal, req, &rep)) return e;
  if (dptr) *dptr = rep.dptr();
  if (bytes) *bytes = rep.size();
  return cudaSuccess;
}

cudaError_t ImageModuleManaged(ImageModule* m, const char* name, uint64_t* dptr, size_t* bytes) {
  uint64_t at = 0;
  size_t n = 0;
  if (cudaError_t e = ImageModuleGlobal(m, name, &at, &n)) return e;
  if (cudaError_t e = Mirrors::Get().Adopt(at, n, name)) return e;
  {
    std::lock_guard lock(m->mu);
    if (std::find(m->managed.begin(), m->managed.end(), at) == m->managed.end())
      m->managed.push_back(at);
  }
  if (dptr) *dptr = at;
  if (bytes) *bytes = n;
  return cudaSuccess;
}

}  // namespace remora::client_stub
