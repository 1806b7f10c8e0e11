// deploy/webhook/main.cc - remora-webhook: the mutating admission webhook over HTTPS.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "deploy/webhook/mutate.h"

namespace {

constexpr char kUsage[] =
    "usage: remora-webhook --tls-cert FILE --tls-key FILE [--listen HOST:PORT]\n"
    "                      [--gpu-memory-mib N] [--memory-unit-mib N]\n"
    "                      [--stub-host-dir DIR]\n"
    "  --listen         address to serve on (default 0.0.0.0:8443; port 0: any free port)\n"
    "  --tls-cert       PEM certificate (chain) the API server trusts\n"
    "  --tls-key        PEM private key of that certificate\n"
    "  --gpu-memory-mib memory of one GPU of the cluster's GPU nodes (default 81559)\n"
    "  --memory-unit-mib  MiB per remora.io/gpu-memory unit: the device plugin's\n"
    "                   --memory-unit-mib (default 1)\n"
    "  --stub-host-dir  node directory holding Remora's stub libraries\n"
    "                   (default /usr/local/lib/remora/stub)\n"
    "endpoints: POST /mutate (AdmissionReview v1), GET /healthz\n";

struct Flags {
  std::string host = "0.0.0.0";
  int port = 8443;
  std::string cert, key;
  remora::webhook::Config cfg;
};

std::mutex log_mu;

void Log(const std::string& level, const std::string& fields) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[80];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  const std::string line =
      std::string("ts=") + ts + " level=" + level + " comp=webhook " + fields + "\n";
  std::lock_guard<std::mutex> lock(log_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::optional<uint64_t> Number(const std::string& s) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(s);
}

// Parses argv; on a mistake returns nullopt after saying why on stderr.
std::optional<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  auto fail = [](const std::string& why) -> std::optional<Flags> {
    std::cerr << "remora-webhook: " << why << "\n" << kUsage;
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return fail(arg + " needs a value");
    }
    if (arg == "--listen") {
      const size_t colon = value.rfind(':');
      const std::optional<uint64_t> port =
          colon == std::string::npos ? std::nullopt : Number(value.substr(colon + 1));
      if (!port || *port > 65535) return fail("--listen takes HOST:PORT, not '" + value + "'");
      f.host = value.substr(0, colon);
      if (f.host.size() >= 2 && f.host.front() == '[' && f.host.back() == ']')
        f.host = f.host.substr(1, f.host.size() - 2);
      f.port = static_cast<int>(*port);
    } else if (arg == "--tls-cert") {
      f.cert = value;
    } else if (arg == "--tls-key") {
      f.key = value;
    } else if (arg == "--gpu-memory-mib") {
      const std::optional<uint64_t> n = Number(value);
      if (!n || *n == 0 || *n > (uint64_t{1} << 32))
        return fail("--gpu-memory-mib takes a positive number of MiB, not '" + value + "'");
      f.cfg.gpu_memory_mib = *n;
    } else if (arg == "--memory-unit-mib") {
      const std::optional<uint64_t> n = Number(value);
      if (!n || *n == 0 || *n > 1024)
        return fail("--memory-unit-mib takes a number of MiB in 1..1024, not '" + value + "'");
      f.cfg.memory_unit_mib = *n;
    } else if (arg == "--stub-host-dir") {
      if (value.empty() || value.front() != '/')
        return fail("--stub-host-dir takes an absolute path, not '" + value + "'");
      f.cfg.stub_host_dir = value;
    } else {
      return fail("unknown flag " + arg);
    }
  }
  if (f.cert.empty() || f.key.empty()) return fail("--tls-cert and --tls-key are required");
  for (const std::string& path : {f.cert, f.key})
    if (access(path.c_str(), R_OK) != 0) return fail("cannot read " + path);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Flags> flags = ParseFlags(argc, argv);
  if (!flags) return 2;

  // SIGTERM and SIGINT reach only the waiter thread, which stops the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  httplib::SSLServer server(flags->cert.c_str(), flags->key.c_str());
  if (!server.is_valid()) {
    std::cerr << "remora-webhook: cannot load the TLS certificate " << flags->cert << " and key "
              << flags->key << " (PEM files of one pair expected)\n";
    return 1;
  }
  server.set_payload_max_length(size_t{8} << 20);
  const remora::webhook::Config cfg = flags->cfg;
  server.Post("/mutate", [&cfg](const httplib::Request& req, httplib::Response& res) {
    const remora::webhook::Answer a = remora::webhook::Review(req.body, cfg);
    res.status = a.http_status;
    res.set_content(a.body, a.http_status == 200 ? "application/json" : "text/plain");
    Log(a.http_status == 200 ? "info" : "warn", a.summary);
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });

  const int port = flags->port == 0
                       ? server.bind_to_any_port(flags->host)
                       : (server.bind_to_port(flags->host, flags->port) ? flags->port : -1);
  if (port <= 0) {
    std::cerr << "remora-webhook: cannot listen on " << flags->host << ":" << flags->port << "\n";
    return 1;
  }
  std::thread waiter([&server, &stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  Log("info", "event=listening addr=" + flags->host + ":" + std::to_string(port) +
                  " gpu_memory_mib=" + std::to_string(cfg.gpu_memory_mib) +
                  " stub_host_dir=" + cfg.stub_host_dir);
  const bool served = server.listen_after_bind();
  pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter if no signal came
  waiter.join();
  Log("info", "event=stopped");
  return served ? 0 : 1;
}
