// server/handlers/module.cc - fat binaries, modules, kernels and launches.
#include "server/session.h"

#include <cstring>

#include "fatbin/fatbin.h"
#include "fatbin/link_image.h"
#include "proto/arena.h"
#include "server/handlers/util.h"
#include "server/log.h"

namespace remora::server {

// ---- Kernels -------------------------------------------------------------------

namespace {

// The images' entries for the module log, and the one a driver of `arch`
// takes from `img` (the emulator runs PTX only).
bool IsFatbin(const std::string& img) {
  return img.size() >= 4 && std::memcmp(img.data(), &fatbin::kFatbinMagic, 4) == 0;
}

// What cuModuleLoadData takes besides fat binaries.
const char* PlainImageKind(const std::string& img) {
  return img.starts_with(
             "\x7f"
             "ELF")
             ? "cubin"
             : "PTX text";
}

std::string OfferedImages(const FatbinImages& images) {
  std::string out;
  for (size_t i = 0; i < images.images.size(); ++i) {
    const std::string& img = images.images[i];
    if (i) out += " | ";
    out += IsFatbin(img) ? fatbin::Describe(std::as_bytes(std::span(img.data(), img.size())))
                         : PlainImageKind(img);
  }
  return out;
}

// Appends `name` to a log list of at most a few names, then counts the rest.
void AppendCapped(std::string& list, int& count, const std::string& name) {
  constexpr int kShown = 5;
  if (++count <= kShown) list += (list.empty() ? "" : " ") + name;
}

std::string ChosenEntry(const std::string& img, uint32_t arch, bool ptx_only) {
  if (!IsFatbin(img)) return PlainImageKind(img);
  Result<std::vector<fatbin::Entry>> entries =
      fatbin::Parse(std::as_bytes(std::span(img.data(), img.size())));
  if (!entries.ok()) return "none";
  // The emulated GPU's pick, newer PTX included (its driver bounds how new, and says so).
  const fatbin::Entry* e = ptx_only ? fatbin::ChoosePtx(*entries, arch, UINT32_MAX)
                                    : fatbin::Choose(*entries, arch, false);
  return e ? fatbin::EntryName(*e) : "none";
}

}  // namespace

namespace {

struct LinkPart {
  CUjitInputType type;
  const std::string* bytes;
};

// The driver's JIT error log for one load or link: the options that ask for it, and the
// failure it explains (NVIDIA's ptxas or the emulated GPU's parser: the line and the reason),
// for the tenant's error message and its own log buffer.
class JitLog {
 public:
  unsigned count() const { return 2; }
  CUjit_option* options() { return options_; }
  void** values() { return values_; }
  // `st` with the log's text after its message, when the driver wrote any.
  Status Explain(Status st) const {
    const size_t n = strnlen(text_, sizeof text_);
    if (st.ok() || n == 0) return st;
    return Error(st.code(), st.message() + ": " + std::string(text_, n));
  }

 private:
  char text_[2048] = {};
  CUjit_option options_[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values_[2] = {text_, reinterpret_cast<void*>(sizeof text_)};
};

// Links `parts` with the device's linker and loads the result. With `left_out`, a part holding
// no image the device can run is left out and counted there (NVIDIA's device runtime, machine
// code only, whose calls the emulated GPU's linker serves itself): a symbol only it defined
// then fails the link by name.
Result<CUmodule> LinkAndLoad(Device& dev, const std::vector<LinkPart>& parts,
                             int* left_out = nullptr) {
  const DriverTable& drv = dev.drv();
  auto Check = [&](CUresult r, const char* what) { return dev.Check(r, what); };
  CUlinkState link = nullptr;
  JitLog log;
  RETURN_IF_ERROR(
      Check(drv.cuLinkCreate(log.count(), log.options(), log.values(), &link), "cuLinkCreate"));
  Status st;
  size_t skipped = 0;
  for (size_t i = 0; i < parts.size() && st.ok(); ++i) {
    const CUresult r =
        drv.cuLinkAddData(link, parts[i].type, const_cast<char*>(parts[i].bytes->data()),
                          parts[i].bytes->size(), "tenant", 0, nullptr, nullptr);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU && left_out) {
      ++skipped;
      continue;
    }
    st = Check(r, "cuLinkAddData");
  }
  if (left_out) *left_out += int(skipped);
  // Nothing left to link: the device can run none of it.
  if (st.ok() && skipped == parts.size() && skipped > 0)
    st = Check(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuLinkAddData");
  void* cubin = nullptr;
  size_t cubin_size = 0;
  CUmodule mod = nullptr;
  if (st.ok())
    st = log.Explain(Check(drv.cuLinkComplete(link, &cubin, &cubin_size), "cuLinkComplete"));
  if (st.ok()) st = Check(drv.cuModuleLoadData(&mod, cubin), "cuModuleLoadData");
  (void)drv.cuLinkDestroy(link);
  if (!st.ok()) return st;
  return mod;
}

// A tenant's own link (the stub's cuLinkComplete, fatbin/link_image.h): its inputs, linked here.
Result<CUmodule> LoadLinkImage(Device& dev, const std::string& image, std::string* how) {
  ASSIGN_OR_RETURN(std::vector<fatbin::LinkInput> inputs,
                   fatbin::DecodeLinkImage(std::as_bytes(std::span(image.data(), image.size()))));
  if (inputs.empty()) return Error(err::kInvalidValue, "a link of no inputs");
  std::vector<LinkPart> parts;
  *how = "the tenant's link of";
  for (const fatbin::LinkInput& in : inputs) {
    // CUBIN, PTX, FATBINARY, OBJECT and LIBRARY; NVVM IR needs options Remora does not carry.
    if (in.type > CU_JIT_INPUT_LIBRARY)
      return Error(err::kNotSupported,
                   "linker input type " + std::to_string(in.type) + " is not served by Remora");
    static constexpr const char* kNames[] = {"cubin", "ptx", "fatbin", "object", "library"};
    *how += std::string(" ") + kNames[in.type];
    parts.push_back({CUjitInputType(in.type), &in.bytes});
  }
  return LinkAndLoad(dev, parts);
}

// Whether fat binary `img` holds PTX for compute_`newest` or older.
bool HasPtxUpTo(const std::string& img, uint32_t newest) {
  if (!IsFatbin(img)) return true;  // plain PTX or ELF: the driver decides
  Result<std::vector<fatbin::Entry>> entries =
      fatbin::Parse(std::as_bytes(std::span(img.data(), img.size())));
  if (!entries.ok()) return true;
  return fatbin::Choose(*entries, newest, /*ptx_only=*/true) != nullptr;
}

// Loads a module from `images`, found at `origin` (the tenant's word); `how` says which image
// or linked PTX it used.
Result<CUmodule> LoadModule(Device& dev, const FatbinImages& images, const std::string& origin,
                            std::string* how) {
  const DriverTable& drv = dev.drv();
  auto Check = [&](CUresult r, const char* what) { return dev.Check(r, what); };
  CUmodule mod = nullptr;
  if (images.images.empty()) return Error(err::kInvalidPtx, "no fat binary images");
  const std::string& first = images.images[0];
  if (first.size() >= sizeof fatbin::kLinkMagic && fatbin::IsLinkImage(first.data()))
    return LoadLinkImage(dev, first, how);
  const auto& attrs = dev.info().attributes();
  auto attr = [&](int a) { return a < attrs.size() ? attrs[a] : 0; };
  const uint32_t arch = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  const bool ptx_only = drv.emulated;
  // NVIDIA's cuBLAS and cuBLASLt pick their kernels by the device's architecture, and the PTX
  // they carry, for compute_120 alone, holds none of the sm_80 ones they ask for: every routine
  // would fail with no word why. The emulated GPU refuses their modules at load instead, so the
  // tenant is told, with the way to Remora's own (other libraries' newer PTX runs).
  const std::string_view base = std::string_view(origin).substr(origin.rfind('/') + 1);
  if (ptx_only && (base.starts_with("libcublas.") || base.starts_with("libcublasLt.")) &&
      !HasPtxUpTo(images.images[0], 90))
    return Error(err::kNoKernelImage,
                 "NVIDIA's cuBLAS carries PTX for compute_120 alone, without the kernels it "
                 "picks for this sm_80 device");
  // images[0] is the whole program (v1) or, for -rdc (v2), the device-linked
  // fatbin: machine code only. A GPU of that architecture loads it as it is.
  JitLog log;
  CUresult r = drv.cuModuleLoadDataEx(&mod, images.images[0].data(), log.count(), log.options(),
                                      log.values());
  if (r == CUDA_SUCCESS) {
    *how = (images.rdc ? "device-linked image " : "image ") +
           ChosenEntry(images.images[0], arch, ptx_only);
    return mod;
  }
  if (!images.rdc || images.images.size() < 2 || r != CUDA_ERROR_NO_BINARY_FOR_GPU)
    return log.Explain(Check(r, "cuModuleLoadData"));
  // Otherwise link the per-translation-unit fatbins (their PTX) into one module.
  std::vector<LinkPart> parts;
  *how = "linked";
  for (size_t i = 1; i < images.images.size(); ++i) {
    parts.push_back({CU_JIT_INPUT_FATBINARY, &images.images[i]});
    *how += " " + ChosenEntry(images.images[i], arch, true);
  }
  *how += " of " + std::to_string(images.images.size() - 1) + " translation units";
  int left_out = 0;
  Result<CUmodule> linked = LinkAndLoad(dev, parts, &left_out);
  if (left_out > 0)
    *how += " (" + std::to_string(left_out) + " with no image for the device left out)";
  return linked;
}

}  // namespace

Status Session::OnRegisterModule(const v1::RegisterModuleRequest& req,
                                 v1::RegisterModuleReply& rep) {
  std::shared_ptr<const FatbinImages> images;
  std::string digest;
  if (req.images_size() == 0) {
    images = env_.modules->Get(req.hash());
    if (!images) {  // not an error: the stub sends the images next (session.proto)
      rep.set_images_needed(true);
      return OkStatus();
    }
  } else {
    // The cache key is our own digest of the bytes received, never the tenant's
    // claim, so no tenant can plant images under another program's hash.
    auto fresh = std::make_shared<FatbinImages>();
    fresh->rdc = req.rdc();
    std::vector<fatbin::Bytes> views;
    for (const std::string& img : req.images()) {
      fresh->images.push_back(img);
      views.push_back(std::as_bytes(std::span(img.data(), img.size())));
    }
    digest = fatbin::ImagesDigest(views);
    if (digest != req.hash())
      Log(Level::kWarn, "module", {{"tenant", who_.tenant}, {"event", "hash_mismatch"}});
    images = std::move(fresh);
  }
  const std::string first_kernel = req.kernels_size() ? req.kernels(0) : "";
  // The tenant's word for where the images came from, bounded: for messages, and to refuse
  // NVIDIA's cuBLAS on the emulated GPU (LoadModule).
  const std::string origin = req.origin().substr(0, 256);
  std::string how;
  const std::string offered = OfferedImages(*images);
  Result<CUmodule> loaded = LoadModule(*env_.device, *images, origin, &how);
  if (!loaded.ok()) {
    Log(Level::kWarn, "module",
        {{"tenant", who_.tenant},
         {"event", "refused"},
         {"offered", offered},
         {"kernels", req.kernels_size()},
         {"first_kernel", first_kernel},
         {"origin", origin},
         {"error", loaded.status().ToString()}});
    const std::string which =
        first_kernel.empty() ? "module" : "module with kernel " + first_kernel;
    const std::string of = origin.empty() ? "" : " of " + origin;
    return Error(loaded.status().code(),
                 which + of + " (images " + offered + "): " + loaded.status().message());
  }
  // Only images that loaded are kept for other sessions.
  if (!digest.empty()) images = env_.modules->Put(digest, images);
  CUmodule mod = *loaded;
  uint64_t module_id = next_handle_++;
  modules_.Put(module_id, Module{mod, images});
  rep.set_module(module_id);
  std::string missing;
  int missing_count = 0;
  for (const std::string& name : req.kernels()) {
    CUfunction fn = nullptr;
    if (dev().drv().cuModuleGetFunction(&fn, mod, name.c_str()) != CUDA_SUCCESS) {
      AppendCapped(missing, missing_count, name);
      continue;
    }
    DescribeKernel(fn, name, module_id, *rep.add_kernels());
  }
  for (const std::string& name : req.variables()) {
    CUdeviceptr p = 0;
    size_t size = 0;
    if (dev().drv().cuModuleGetGlobal(&p, &size, mod, name.c_str()) != CUDA_SUCCESS) {
      AppendCapped(missing, missing_count, name);
      continue;
    }
    symbols_.Add(p, size);
    v1::VariableInfo* v = rep.add_variables();
    v->set_name(name);
    v->set_dptr(p);
    v->set_size(size);
  }
  Log(missing_count ? Level::kWarn : Level::kInfo, "module",
      {{"tenant", who_.tenant},
       {"event", "loaded"},
       {"module", module_id},
       {"offered", offered},
       {"chosen", how},
       {"kernels_found", rep.kernels_size()},
       {"kernels_registered", req.kernels_size()},
       {"variables_found", rep.variables_size()},
       {"missing_count", missing_count},
       {"missing", missing}});
  return OkStatus();
}

void Session::DescribeKernel(CUfunction fn, const std::string& name, uint64_t module_id,
                             v1::KernelLayout& k) {
  k.set_name(name);
  uint32_t bytes = 0;
  std::vector<uint32_t> offsets;
  for (size_t i = 0;; ++i) {
    size_t off = 0, size = 0;
    if (dev().drv().cuFuncGetParamInfo(fn, i, &off, &size) != CUDA_SUCCESS) break;
    offsets.push_back(static_cast<uint32_t>(off));
    k.add_offsets(static_cast<uint32_t>(off));
    k.add_sizes(static_cast<uint32_t>(size));
    bytes = std::max<uint32_t>(bytes, static_cast<uint32_t>(off + size));
  }
  k.set_param_bytes(bytes);
  auto attr = [&](CUfunction_attribute a) {
    int v = 0;
    (void)dev().drv().cuFuncGetAttribute(&v, a, fn);
    return v;
  };
  k.set_max_threads_per_block(attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  k.set_shared_size_bytes(attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  k.set_local_size_bytes(attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
  k.set_num_regs(attr(CU_FUNC_ATTRIBUTE_NUM_REGS));
  k.set_ptx_version(attr(CU_FUNC_ATTRIBUTE_PTX_VERSION));
  k.set_binary_version(attr(CU_FUNC_ATTRIBUTE_BINARY_VERSION));
  k.set_const_size_bytes(attr(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
  k.set_cluster_x(attr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH));
  k.set_cluster_y(attr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT));
  k.set_cluster_z(attr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH));
  k.set_cluster_size_must_be_set(attr(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET));
  k.set_non_portable_cluster_size(attr(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED));
  const uint64_t handle = next_handle_++;
  k.set_handle(handle);
  kernels_.Put(handle, Kernel{fn, bytes, module_id, std::move(offsets)});
}

// The driver API names a kernel only after its module loaded (cuModuleGetFunction).
Status Session::OnModuleGetFunction(const v1::ModuleFunctionRequest& req, v1::KernelLayout& rep) {
  ASSIGN_OR_RETURN(Module * m, modules_.Find(req.module()));
  CUfunction fn = nullptr;
  if (CUresult r = dev().drv().cuModuleGetFunction(&fn, m->mod, req.name().c_str());
      r != CUDA_SUCCESS)
    return Error(err::kInvalidDeviceFunction,
                 "the module has no kernel named " + req.name() + " (" +
                     dev().Check(r, "cuModuleGetFunction").message() + ")");
  DescribeKernel(fn, req.name(), req.module(), rep);
  return OkStatus();
}

Status Session::OnModuleKernels(const v1::ModuleKernelsRequest& req, v1::ModuleKernelsReply& rep) {
  ASSIGN_OR_RETURN(Module * m, modules_.Find(req.module()));
  unsigned count = 0;
  if (CUresult r = dev().drv().cuModuleGetFunctionCount(&count, m->mod); r != CUDA_SUCCESS)
    return dev().Check(r, "cuModuleGetFunctionCount");
  std::vector<CUfunction> fns(count);
  if (CUresult r = dev().drv().cuModuleEnumerateFunctions(fns.data(), count, m->mod);
      count > 0 && r != CUDA_SUCCESS)
    return dev().Check(r, "cuModuleEnumerateFunctions");
  for (CUfunction fn : fns) {
    const char* name = nullptr;
    if (CUresult r = dev().drv().cuFuncGetName(&name, fn); r != CUDA_SUCCESS || name == nullptr)
      return dev().Check(r == CUDA_SUCCESS ? CUDA_ERROR_INVALID_HANDLE : r, "cuFuncGetName");
    rep.add_names(name);
  }
  return OkStatus();
}

Status Session::OnModuleGetGlobal(const v1::ModuleFunctionRequest& req, v1::VariableInfo& rep) {
  ASSIGN_OR_RETURN(Module * m, modules_.Find(req.module()));
  CUdeviceptr p = 0;
  size_t size = 0;
  if (CUresult r = dev().drv().cuModuleGetGlobal(&p, &size, m->mod, req.name().c_str());
      r != CUDA_SUCCESS)
    return Error(err::kInvalidSymbol, "the module has no variable named " + req.name() + " (" +
                                          dev().Check(r, "cuModuleGetGlobal").message() + ")");
  symbols_.Add(p, size);  // the tenant's to copy to and from from now on
  rep.set_name(req.name());
  rep.set_dptr(p);
  rep.set_size(size);
  return OkStatus();
}

Status Session::OnUnregisterModule(const v1::UnregisterModuleRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(Module * m, modules_.Find(req.module()));
  kernels_.EraseIf([&](const Kernel& k) { return k.module == req.module(); });
  // Unloaded once this tenant's work that may run its kernels is done.
  Held held;
  held.epoch = epoch_;
  held.modules.push_back(m->mod);
  modules_.Erase(req.module());
  return GiveBackWhenDone(std::move(held), /*reply=*/false);
}

Status Session::OnLaunchKernel(const fixed::LaunchView& req, v1::Empty&) {
  ASSIGN_OR_RETURN(Kernel * kernel, kernels_.Find(req.kernel()));
  const Kernel& k = *kernel;
  if (req.params().size() != k.param_bytes)
    return Error(err::kInvalidValue,
                 "kernel parameters are " + std::to_string(req.params().size()) +
                     " bytes, the kernel takes " + std::to_string(k.param_bytes));
  Executor::LaunchArgs a;
  a.fn = k.fn;
  a.grid[0] = req.grid_x(), a.grid[1] = req.grid_y(), a.grid[2] = req.grid_z();
  a.block[0] = req.block_x(), a.block[1] = req.block_y(), a.block[2] = req.block_z();
  a.shared = req.shared_bytes();
  a.params = req.params();
  if (req.cooperative()) a.cooperative = std::span<const uint32_t>(k.param_offsets);
  a.cluster[0] = std::max(1u, req.cluster_x());
  a.cluster[1] = std::max(1u, req.cluster_y());
  a.cluster[2] = std::max(1u, req.cluster_z());
  for (int i = 0; i < 3; ++i)
    if (a.grid[i] % a.cluster[i] != 0)
      return Error(err::kInvalidClusterSize,
                   "a cluster of " + std::to_string(a.cluster[0]) + "x" +
                       std::to_string(a.cluster[1]) + "x" + std::to_string(a.cluster[2]) +
                       " blocks does not divide the grid of " + std::to_string(a.grid[0]) + "x" +
                       std::to_string(a.grid[1]) + "x" + std::to_string(a.grid[2]));
  return work_->Launch(req.stream(), a);
}

Status Session::OnFuncSetAttribute(const v1::FuncAttributeRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(Kernel * kernel, kernels_.Find(req.kernel()));
  return dev().Check(
      dev().drv().cuFuncSetAttribute(kernel->fn, static_cast<CUfunction_attribute>(req.attribute()),
                                     req.value()),
      "cuFuncSetAttribute");
}

Status Session::OnOccupancyMaxActiveBlocks(const v1::OccupancyRequest& req, v1::IntReply& rep) {
  ASSIGN_OR_RETURN(Kernel * kernel, kernels_.Find(req.kernel()));
  int blocks = 0;
  RETURN_IF_ERROR(dev().Check(dev().drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                  &blocks, kernel->fn, req.block_size(), req.dynamic_shared()),
                              "cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  rep.set_value(blocks);
  return OkStatus();
}

Status Session::OnOccupancyClusters(const v1::ClusterOccupancyRequest& req, v1::IntReply& rep) {
  ASSIGN_OR_RETURN(Kernel * kernel, kernels_.Find(req.kernel()));
  CUlaunchAttribute cluster = {};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = req.cluster_x();
  cluster.value.clusterDim.y = req.cluster_y();
  cluster.value.clusterDim.z = req.cluster_z();
  CUlaunchConfig cfg = {};
  cfg.gridDimX = req.grid_x(), cfg.gridDimY = req.grid_y(), cfg.gridDimZ = req.grid_z();
  cfg.blockDimX = req.block_x(), cfg.blockDimY = req.block_y(), cfg.blockDimZ = req.block_z();
  cfg.sharedMemBytes = req.shared_bytes();
  const bool given = req.cluster_x() != 0 || req.cluster_y() != 0 || req.cluster_z() != 0;
  cfg.attrs = given ? &cluster : nullptr;
  cfg.numAttrs = given ? 1 : 0;
  int value = 0;
  if (req.potential_size())
    RETURN_IF_ERROR(
        dev().Check(dev().drv().cuOccupancyMaxPotentialClusterSize(&value, kernel->fn, &cfg),
                    "cuOccupancyMaxPotentialClusterSize"));
  else
    RETURN_IF_ERROR(dev().Check(dev().drv().cuOccupancyMaxActiveClusters(&value, kernel->fn, &cfg),
                                "cuOccupancyMaxActiveClusters"));
  rep.set_value(value);
  return OkStatus();
}

}  // namespace remora::server
