// cli/main.cc - `remora`: the tenant-side command line.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/list.h"
#include "cli/run.h"

namespace {

constexpr const char* kUsage =
    "usage: remora run [--server unix:PATH|grpc://HOST:PORT] [--token T] [--trace] [--check]\n"
    "                  [--gpu-fraction F | --gpu-memory M] [--gpu-fraction-limit F | "
    "--gpu-memory-limit M]\n"
    "                  [--gpu-compute F] [--gpu-compute-limit F] [--priority high|normal|low]\n"
    "                  [--remote-libs cublas,cudnn|none] -- CMD ARGS\n"
    "       remora list|top [--server ADDR] [--token T]\n"
    "       remora evict SESSION|TENANT [--server ADDR] [--token T]\n"
    "  list: every tenant of the server, with its quotas, usage and share of GPU time\n"
    "  (top: refreshed every second); evict: end a session, or every session of a\n"
    "  tenant (one per process of it), freeing all they held.\n"
    "  Runs CMD as a tenant: it loads Remora's CUDA runtime and shares the server's GPU.\n"
    "  F is a fraction of the GPU's memory in (0, 1]; M is bytes (4G, 512Mi, ...).\n"
    "  --gpu-compute is its guaranteed share of GPU time (default: its memory fraction),\n"
    "  --gpu-compute-limit a cap on it even when the GPU is idle.\n"
    "  --trace prints each forwarded CUDA call, its arguments and result on CMD's stderr.\n"
    "  --check runs CMD and then lists each CUDA library it loaded and what served it.\n"
    "  Every CUDA driver library CMD loads, from any directory, is Remora's: NVIDIA's\n"
    "  runtime and libraries (static, or a framework's own) run over it.\n"
    "  --remote-libs serves cuBLAS (with cuBLASLt) and cuDNN from the server's copies\n"
    "  instead of loading NVIDIA's into CMD; none: NVIDIA's always. The default on the\n"
    "  emulated GPU, which cannot run NVIDIA's, is cublas,cudnn, with Remora's cuFFT and\n"
    "  cuRAND standing in for NVIDIA's.\n";

std::string ExeDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// `remora run --check`: runs the command with the audit module reporting to a file, then
// prints which CUDA libraries it loaded and what served each. Returns the command's status.
int RunChecked(std::vector<char*>& cargv) {
  char report[] = "/tmp/remora-check-XXXXXX";
  int fd = mkstemp(report);
  if (fd < 0) {
    std::cerr << "remora run: cannot create a report file: " << std::strerror(errno) << "\n";
    return 127;
  }
  close(fd);
  setenv("REMORA_CHECK_REPORT", report, 1);
  pid_t pid = fork();
  if (pid == 0) {
    execvp(cargv[0], cargv.data());
    std::cerr << "remora run: cannot run '" << cargv[0] << "': " << std::strerror(errno) << "\n";
    _exit(127);
  }
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::ifstream in(report);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(report);
  std::cerr << remora::cli::CheckTable(text);
  if (pid < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether the server the tenant will use runs Remora's emulated GPU (REMORA_EMULATED_GPU=1 in
// the environment already says so). A server that cannot be asked now counts as a GPU: the
// tenant then meets NVIDIA's libraries as it would without this question.
bool OnEmulatedGpu(const remora::cli::RunOptions& o) {
  if (const char* e = std::getenv("REMORA_EMULATED_GPU"); e && std::strcmp(e, "1") == 0)
    return true;
  const char* env_server = std::getenv("REMORA_SERVER");
  const char* env_token = std::getenv("REMORA_TOKEN");
  const std::string server = !o.server.empty()           ? o.server
                             : env_server && *env_server ? env_server
                                                         : remora::cli::kDefaultServer;
  const std::string token = !o.token.empty() ? o.token : env_token ? env_token : "";
  auto device = remora::cli::FetchDevice(server, token, std::chrono::seconds(3));
  return device.ok() && device->emulated();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  for (const char* admin : {"list", "top", "evict"})
    if (!std::strcmp(argv[1], admin))
      return remora::cli::RunAdmin(admin, std::vector<std::string>(argv + 2, argv + argc));
  if (std::strcmp(argv[1], "run") != 0) {
    std::cerr << "remora: unknown command '" << argv[1] << "'\n" << kUsage;
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  auto opts = remora::cli::ParseRun(args);
  if (!opts.ok()) {
    std::cerr << "remora run: " << opts.status().message() << "\n" << kUsage;
    return 2;
  }
  if (const char* r = std::getenv("REMORA_REMOTE_LIBS"); opts->remote_libs.empty() && r && *r)
    opts->remote_libs = r;
  opts->emulated_gpu = OnEmulatedGpu(*opts);
  const char* ld = std::getenv("LD_LIBRARY_PATH");
  const char* audit = std::getenv("LD_AUDIT");
  const char* preload = std::getenv("LD_PRELOAD");
  std::string stub_dir = ExeDir() + "/../lib/stub";
  if (const char* s = std::getenv("REMORA_STUB_DIR")) stub_dir = s;
  if (char* real = realpath(stub_dir.c_str(), nullptr)) {  // the paths the loader reports
    stub_dir = real;
    free(real);
  }
  for (const auto& [k, v] : remora::cli::TenantEnvironment(
           *opts, stub_dir, ld ? ld : "", audit ? audit : "", preload ? preload : ""))
    setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> cargv;
  for (std::string& a : opts->command) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  if (opts->check) return RunChecked(cargv);
  execvp(cargv[0], cargv.data());
  std::cerr << "remora run: cannot run '" << opts->command[0] << "': " << std::strerror(errno)
            << "\n";
  return 127;
}
