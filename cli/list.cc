// cli/list.cc - `remora list`: an administration session that fetches and prints tenants.
#include "cli/list.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "proto/calls.h"
#include "transport/fragment.h"
#include "transport/grpc/client.h"
#include "transport/shm/shm_channel.h"

namespace remora::cli {
namespace {

using transport::Deadline;

constexpr auto kTimeout = std::chrono::seconds(10);
constexpr const char* kAdminUsage =
    "usage: remora list [--server ADDR] [--token T]\n"
    "       remora top [--server ADDR] [--token T] [--interval SECONDS]\n"
    "       remora evict SESSION|TENANT [--server ADDR] [--token T]\n";

Result<std::unique_ptr<transport::Channel>> Dial(const std::string& server,
                                                 const std::string& token,
                                                 std::chrono::seconds timeout) {
  if (server.rfind("unix:", 0) == 0)
    return transport::ShmConnect(server.substr(5), Deadline::In(timeout));
  for (const char* scheme : {"grpc://", "grpcs://"}) {
    const std::string s = scheme;
    if (server.rfind(s, 0) != 0) continue;
    transport::GrpcClientOptions opts;
    opts.token = token;
    if (s == "grpcs://") {
      const char* roots = std::getenv("REMORA_TLS_ROOT_CERT");
      opts.tls_root_cert_path = roots ? roots : "/etc/ssl/certs/ca-certificates.crt";
    }
    return transport::GrpcConnect(server.substr(s.size()), std::move(opts), Deadline::In(timeout));
  }
  return Error(err::kInvalidValue,
               "--server takes unix:PATH, grpc://HOST:PORT or "
               "grpcs://HOST:PORT, not '" +
                   server + "'");
}

// One SYNC call: sends `req` as `id` and parses the Reply's result into `rep`.
Status Call(transport::Channel& ch, CallId id, uint64_t seq, const google::protobuf::Message& req,
            google::protobuf::Message* rep, std::chrono::seconds timeout = kTimeout) {
  const std::string body = req.SerializeAsString();
  RETURN_IF_ERROR(ch.Send({.call = static_cast<uint32_t>(id), .flags = 0, .seq = seq},
                          std::as_bytes(std::span(body.data(), body.size()))));
  transport::Frame f;
  do {
    RETURN_IF_ERROR(ch.Receive(f, Deadline::In(timeout)));
  } while (f.header.seq != seq);
  v1::Reply reply;
  if (!reply.ParseFromArray(f.body.data(), static_cast<int>(f.body.size())))
    return Error(err::kUnknown, "malformed reply");
  if (reply.code() != 0) return Error(reply.code(), reply.message());
  if (rep && !rep->ParseFromString(reply.result()))
    return Error(err::kUnknown, "malformed reply result");
  return OkStatus();
}

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1fGi", static_cast<double>(n) / (1 << 30));
  else
    std::snprintf(buf, sizeof buf, "%.0fMi", static_cast<double>(n) / (1 << 20));
  return buf;
}

std::string Fraction(double f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", f);
  return buf;
}

// An administration session (Hello with admin set) or, with `monitor`, a monitoring one, which
// holds nothing on the server: Hello, then calls, then Goodbye.
class AdminSession {
 public:
  static Result<AdminSession> Open(const std::string& server, const std::string& token,
                                   bool monitor = false, std::chrono::seconds timeout = kTimeout,
                                   v1::Welcome* welcome_out = nullptr) {
    Result<std::unique_ptr<transport::Channel>> dialed = Dial(server, token, timeout);
    if (!dialed.ok())
      return Error(dialed.status().code() == err::kInvalidValue ? err::kInvalidValue
                                                                : err::kInitializationError,
                   "cannot reach " + server + ": " + dialed.status().message());
    AdminSession s(std::make_unique<transport::FragmentingChannel>(std::move(dialed).value()));
    v1::Hello hello;
    hello.set_protocol_version(kProtocolVersion);
    hello.set_token(token);
    hello.set_admin(!monitor);
    hello.set_monitor(monitor);
    hello.set_client_pid(getpid());
    hello.set_client_uid(getuid());
    hello.set_program("remora");
    v1::Welcome welcome;
    RETURN_IF_ERROR(cli::Call(*s.ch_, CallId::kHello, s.seq_++, hello, &welcome, timeout));
    if (welcome_out) *welcome_out = std::move(welcome);
    return s;
  }
  AdminSession(AdminSession&&) = default;
  ~AdminSession() {
    if (ch_)
      (void)ch_->Send({.call = static_cast<uint32_t>(CallId::kGoodbye), .flags = 0, .seq = ++seq_},
                      {});
  }
  Status Call(CallId id, const google::protobuf::Message& req, google::protobuf::Message* rep) {
    return cli::Call(*ch_, id, seq_++, req, rep);
  }

 private:
  explicit AdminSession(std::unique_ptr<transport::Channel> ch) : ch_(std::move(ch)) {}
  std::unique_ptr<transport::Channel> ch_;
  uint64_t seq_ = 0;
};

}  // namespace

Result<v1::TenantList> FetchTenants(const std::string& server, const std::string& token) {
  ASSIGN_OR_RETURN(AdminSession s, AdminSession::Open(server, token));
  v1::TenantList list;
  RETURN_IF_ERROR(s.Call(CallId::kListTenants, v1::Empty(), &list));
  return list;
}

Result<v1::DeviceInfo> FetchDevice(const std::string& server, const std::string& token,
                                   std::chrono::seconds timeout) {
  v1::Welcome welcome;
  ASSIGN_OR_RETURN(AdminSession s,
                   AdminSession::Open(server, token, /*monitor=*/true, timeout, &welcome));
  return welcome.device();
}

Status EvictTenant(const std::string& server, const std::string& token, const std::string& who) {
  ASSIGN_OR_RETURN(AdminSession s, AdminSession::Open(server, token));
  v1::EvictRequest req;
  char* end = nullptr;
  const unsigned long long id = std::strtoull(who.c_str(), &end, 10);
  if (!who.empty() && *end == '\0' && id != 0)
    req.set_session(id);
  else
    req.set_tenant(who);
  return s.Call(CallId::kEvictTenant, req, nullptr);
}

std::string FormatTenants(const v1::TenantList& list) {
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line,
                "%-7s %-34s %-10s %-8s %-9s %8s %8s %8s %8s %8s %7s %6s %6s %8s %9s\n", "SESSION",
                "TENANT", "PROJECT", "PRIORITY", "STATUS", "MEM-REQ", "MEM-LIM", "MEM-USED",
                "BORROWED", "PINNED", "COMPUTE", "LIMIT", "TARGET", "ACHIEVED", "GPU-TIME");
  out += line;
  for (const v1::TenantRow& r : list.tenants()) {
    std::snprintf(line, sizeof line,
                  "%-7llu %-34s %-10s %-8s %-9s %8s %8s %8s %8s %8s %7s %6s %6s %8s %8.2fs\n",
                  static_cast<unsigned long long>(r.session()), r.tenant().c_str(),
                  r.project().empty() ? "-" : r.project().c_str(), r.priority().c_str(),
                  r.status().c_str(), Bytes(r.memory_request()).c_str(),
                  Bytes(r.memory_limit()).c_str(), Bytes(r.memory_used()).c_str(),
                  Bytes(r.memory_borrowed()).c_str(), Bytes(r.pinned_host_bytes()).c_str(),
                  Fraction(r.compute_request()).c_str(),
                  r.compute_limit() > 0 ? Fraction(r.compute_limit()).c_str() : "-",
                  Fraction(r.target_share()).c_str(), Fraction(r.achieved_share()).c_str(),
                  static_cast<double>(r.gpu_ns()) / 1e9);
    out += line;
  }
  return out;
}

int RunAdmin(const std::string& command, const std::vector<std::string>& args) {
  const char* env = std::getenv("REMORA_SERVER");
  std::string server = env && *env ? env : kDefaultServer;
  const char* tok = std::getenv("REMORA_TOKEN");
  std::string token = tok ? tok : "";
  std::string interval = "1", who;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string* into = args[i] == "--server"     ? &server
                        : args[i] == "--token"    ? &token
                        : args[i] == "--interval" ? &interval
                                                  : nullptr;
    if (!into && command == "evict" && who.empty() && args[i].rfind("--", 0) != 0) {
      who = args[i];
      continue;
    }
    if (!into || i + 1 >= args.size()) {
      std::cerr << kAdminUsage;
      return 2;
    }
    *into = args[++i];
  }
  if (command == "evict") {
    if (who.empty()) {
      std::cerr << kAdminUsage;
      return 2;
    }
    Status st = EvictTenant(server, token, who);
    if (!st.ok()) {
      std::cerr << "remora evict: " << st.message() << "\n";
      return 1;
    }
    std::cout << "evicted " << who << "\n";
    return 0;
  }
  const double every = std::strtod(interval.c_str(), nullptr);
  for (;;) {
    Result<v1::TenantList> list = FetchTenants(server, token);
    if (!list.ok()) {
      std::cerr << "remora " << command << ": " << list.status().message() << "\n";
      return 1;
    }
    if (command == "top") std::cout << "\033[H\033[2J";  // home, clear
    std::cout << list->device() << ", " << Bytes(list->usable_memory()) << " usable, "
              << list->tenants_size() << " tenant(s)\n"
              << FormatTenants(*list) << std::flush;
    if (command != "top") return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(every > 0.1 ? every : 0.1));
  }
}

}  // namespace remora::cli
