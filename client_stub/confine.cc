// client_stub/confine.cc - libremora_confine.so, the dynamic linker's audit module that
// `remora run` installs (LD_AUDIT): no CUDA driver but Remora's is ever loaded in a tenant.
//
// Every search for libcuda.so* or libnvidia-ml.so* (a name, or a full path such as the one a
// framework finds with `ldconfig -p`) is answered with Remora's library from REMORA_STUB_DIR,
// so NVIDIA's runtime and libraries, wherever they come from, run over Remora's driver. The
// libraries REMORA_REMOTE_LIBS names ("cublas": libcublas and libcublasLt; "cudnn": libcudnn)
// are answered the same way with Remora's stubs, which forward their calls to the server's
// copies (`remora run --remote-libs`; on the emulated GPU both unless it says "none"). With
// REMORA_EMULATED_GPU=1 (`remora run` asked the server), NVIDIA's cuFFT and cuRAND are answered
// with Remora's, which serve them there (not with REMORA_REMOTE_LIBS=none); the NVIDIA library
// one of those opens for itself is not. Should
// a driver library outside that directory still be opened (under another file name: its
// SONAME tells), the process stops at once, naming it, before any GPU work could run
// unconfined. With REMORA_CHECK_REPORT set to a file, each
// CUDA library the process opens is appended to it (`remora run --check`).
//
// An audit module runs inside the dynamic linker's own namespace: it uses libc only.
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

char g_stub_dir[4096];
char g_cuda[4200], g_nvml[4200];
char g_cublas[4200], g_cublaslt[4200], g_cudnn[4200];  // empty: not remote
char g_cufft[4200], g_curand[4200];                    // empty: NVIDIA's
const char* g_report = nullptr;
// The NVIDIA library one of Remora's stand-ins opened last by its path (libcurand.so.10,
// curand.cc; libcufft.so.12, cufft.cc), for the report.
char g_opened_by_stub[4096];

const char* Base(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}
bool Starts(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}
bool InStubDir(const char* path) {
  const size_t n = std::strlen(g_stub_dir);
  return n > 0 && std::strncmp(path, g_stub_dir, n) == 0 && path[n] == '/';
}
// Remora's library standing for `name`, or nullptr when it is not a driver library.
const char* Ours(const char* name) {
  const char* b = Base(name);
  if (Starts(b, "libcuda.so")) return g_cuda;
  if (Starts(b, "libnvidia-ml.so")) return g_nvml;
  return nullptr;
}

// Remora's stub standing for `name` when REMORA_REMOTE_LIBS serves it from the server, or, on
// the emulated GPU, Remora's cuFFT or cuRAND; else nullptr. libcudnn.so*, not its
// sub-libraries (libcudnn_ops.so*, ...), which only NVIDIA's libcudnn loads.
const char* Remote(const char* name) {
  const char* b = Base(name);
  const char* r = nullptr;
  if (Starts(b, "libcublasLt.so"))
    r = g_cublaslt;
  else if (Starts(b, "libcublas.so"))
    r = g_cublas;
  else if (Starts(b, "libcudnn.so"))
    r = g_cudnn;
  else if (Starts(b, "libcufft.so"))
    r = g_cufft;
  else if (Starts(b, "libcurand.so"))
    r = g_curand;
  return r != nullptr && r[0] != '\0' ? r : nullptr;
}

// True if the comma-separated `list` names `item`.
bool Lists(const char* list, const char* item) {
  const size_t n = std::strlen(item);
  for (const char* p = list; p != nullptr && *p != '\0';) {
    const char* end = std::strchr(p, ',');
    const size_t len = end ? size_t(end - p) : std::strlen(p);
    if (len == n && std::strncmp(p, item, n) == 0) return true;
    p = end ? end + 1 : nullptr;
  }
  return false;
}

void Say(const char* what, const char* path) {
  char line[8400];
  int n = std::snprintf(line, sizeof line, "remora: %s %s\n", what, path);
  if (n > 0) (void)!write(2, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
}

// A file name in `dir`'s directory, kept until the process ends (the loader opens it after
// la_objsearch returns): one slot per search, reused after 64.
const char* Beside(const char* dir_of, const char* name) {
  static char slots[64][4096];
  static unsigned next = 0;
  const char* slash = std::strrchr(dir_of, '/');
  if (slash == nullptr) return nullptr;
  char* out = slots[next++ % 64];
  int n = std::snprintf(out, sizeof slots[0], "%.*s/%s", int(slash - dir_of), dir_of, name);
  if (n <= 0 || size_t(n) >= sizeof slots[0] || access(out, F_OK) != 0) return nullptr;
  return out;
}

// CUDA's libraries, by the start of their file names.
bool IsCudaLibrary(const char* b) {
  static const char* const kPrefixes[] = {
      "libcuda.so",  "libcudart.so",  "libcublas", "libcudnn",  "libcufft",     "libcurand",
      "libcusparse", "libcusolver",   "libnvrtc",  "libnccl",   "libnvJitLink", "libnvidia-ml",
      "libcupti",    "libnvToolsExt", "libnvperf", "libcufile", "libnvblas"};
  for (const char* p : kPrefixes)
    if (Starts(b, p)) return true;
  return false;
}

// The object's DT_SONAME, or "" (the loader has relocated its dynamic section's addresses, or
// they are still offsets from the load address).
const char* Soname(const struct link_map* map) {
  const char* strtab = nullptr;
  uintptr_t soname = 0;
  bool has = false;
  for (const ElfW(Dyn)* d = map->l_ld; d != nullptr && d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_STRTAB) {
      uintptr_t p = d->d_un.d_ptr;
      strtab = reinterpret_cast<const char*>(p < map->l_addr ? p + map->l_addr : p);
    } else if (d->d_tag == DT_SONAME) {
      soname = d->d_un.d_val;
      has = true;
    }
  }
  return has && strtab ? strtab + soname : "";
}

// NVIDIA's libraries whose kernels are machine code for GPUs, with no PTX the emulated GPU runs.
bool CarriesMachineCode(const char* b) {
  static const char* const kPrefixes[] = {"libcublas", "libcudnn", "libcufft", "libnccl",
                                          "libnvblas"};
  for (const char* p : kPrefixes)
    if (Starts(b, p)) return true;
  return false;
}

// NVIDIA's libraries whose kernels are machine code beside compute_120/121 PTX, which the
// emulated GPU runs (cuSOLVER's cuBLAS calls need `--remote-libs cublas` there).
bool CarriesNewerPtx(const char* b) {
  return Starts(b, "libcusparse") || Starts(b, "libcurand") || Starts(b, "libcusolver");
}

// What serves a library the process opened, for the report.
const char* ServedBy(const char* path) {
  if (InStubDir(path)) {
    const char* b = Base(path);
    if (Starts(b, "libcublas") || Starts(b, "libcudnn"))
      return "Remora (each call forwarded to the server's library)";
    if (Starts(b, "libcufft"))
      return "Remora (NVIDIA's on a GPU; on the emulated GPU, transforms on the host)";
    if (Starts(b, "libcurand"))
      return "Remora (NVIDIA's on a GPU; on the emulated GPU, its host generators)";
    return "Remora";
  }
  const char* b = Base(path);
  if (Ours(b)) return "UNCONFINED";  // never reached: la_objopen stops the process first
  if (std::strcmp(path, g_opened_by_stub) == 0)
    return Starts(b, "libcurand")
               ? "NVIDIA's, opened by Remora's libcurand.so.10 (a GPU runs its kernels; on the "
                 "emulated GPU its host generators serve the device generators)"
           : Starts(b, "libcufft")
               ? "NVIDIA's, opened by Remora's libcufft.so.12 on a GPU, which runs its kernels"
               : "NVIDIA's, opened by Remora's stand-in for it";
  if (CarriesNewerPtx(b))
    return "NVIDIA's, over Remora's libcuda.so.1 (a GPU runs its machine code, the emulated GPU "
           "its PTX for newer GPUs)";
  if (CarriesMachineCode(b))
    return "NVIDIA's, over Remora's libcuda.so.1 (its kernels are machine code: a GPU runs "
           "them, the emulated GPU refuses them by name)";
  return "NVIDIA's, over Remora's libcuda.so.1";
}

void Report(const char* path) {
  if (g_report == nullptr || !IsCudaLibrary(Base(path))) return;
  FILE* f = std::fopen(g_report, "a");
  if (f == nullptr) return;
  std::fprintf(f, "%s\t%s\n", path, ServedBy(path));
  std::fclose(f);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) unsigned int la_version(unsigned int) {
  const char* dir = std::getenv("REMORA_STUB_DIR");
  if (dir != nullptr && std::strlen(dir) < sizeof g_stub_dir) {
    std::strcpy(g_stub_dir, dir);
    std::snprintf(g_cuda, sizeof g_cuda, "%s/libcuda.so.1", g_stub_dir);
    std::snprintf(g_nvml, sizeof g_nvml, "%s/libnvidia-ml.so.1", g_stub_dir);
    const char* remote = std::getenv("REMORA_REMOTE_LIBS");
    if (Lists(remote, "cublas")) {
      std::snprintf(g_cublas, sizeof g_cublas, "%s/libcublas.so.13", g_stub_dir);
      std::snprintf(g_cublaslt, sizeof g_cublaslt, "%s/libcublasLt.so.13", g_stub_dir);
    }
    if (Lists(remote, "cudnn"))
      std::snprintf(g_cudnn, sizeof g_cudnn, "%s/libcudnn.so.9", g_stub_dir);
    const char* emulated = std::getenv("REMORA_EMULATED_GPU");
    if (emulated != nullptr && std::strcmp(emulated, "1") == 0 && !Lists(remote, "none")) {
      std::snprintf(g_cufft, sizeof g_cufft, "%s/libcufft.so.12", g_stub_dir);
      std::snprintf(g_curand, sizeof g_curand, "%s/libcurand.so.10", g_stub_dir);
    }
  }
  g_report = std::getenv("REMORA_CHECK_REPORT");
  return LAV_CURRENT;
}

// A CUDA library that one of NVIDIA's (outside Remora's directory) depends on is looked for
// beside it first, so NVIDIA's cuBLAS gets NVIDIA's cuBLASLt, not Remora's stub; only the driver
// libraries are always Remora's.
__attribute__((visibility("default"))) char* la_objsearch(const char* name, uintptr_t* cookie,
                                                          unsigned int flag) {
  if (flag != LA_SER_ORIG || g_stub_dir[0] == '\0' || InStubDir(name))
    return const_cast<char*>(name);
  if (const char* ours = Ours(name)) return const_cast<char*>(ours);
  const auto* requester = cookie ? reinterpret_cast<const struct link_map*>(*cookie) : nullptr;
  const bool by_stub = requester && requester->l_name && InStubDir(requester->l_name);
  if (by_stub && name[0] == '/') {  // a stand-in opening NVIDIA's library it serves
    if (std::strlen(name) < sizeof g_opened_by_stub) std::strcpy(g_opened_by_stub, name);
    return const_cast<char*>(name);
  }
  if (const char* remote = Remote(name)) return const_cast<char*>(remote);
  if (requester && requester->l_name && requester->l_name[0] == '/' &&
      !InStubDir(requester->l_name) && IsCudaLibrary(Base(requester->l_name)) &&
      std::strchr(name, '/') == nullptr && IsCudaLibrary(name)) {
    if (const char* beside = Beside(requester->l_name, name)) return const_cast<char*>(beside);
  }
  return const_cast<char*>(name);
}

__attribute__((visibility("default"))) unsigned int la_objopen(struct link_map* map, Lmid_t,
                                                               uintptr_t*) {
  const char* path = map->l_name;
  if (path == nullptr || path[0] == '\0') return 0;
  if (g_stub_dir[0] != '\0' && (Ours(path) || Ours(Soname(map))) && !InStubDir(path)) {
    Say("stopping: a CUDA driver library outside Remora was loaded, and its GPU work would run "
        "unconfined:",
        path);
    _exit(70);
  }
  Report(path);
  return 0;
}

}  // extern "C"
