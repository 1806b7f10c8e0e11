// client_stub/env.cc - parsing REMORA_SERVER, REMORA_TOKEN and the quota variables.
#include "client_stub/env.h"

#include "proto/quantity.h"
#include "scheduler/tenant.h"

#include <cmath>
#include <cstdlib>
#include <string_view>

namespace remora::client_stub {
namespace {

Status Bad(const std::string& what, const std::string& text) {
  return Error(err::kInvalidValue, what + ": cannot parse '" + text + "'");
}

// Splits "12.5Gi" into its number and suffix; false if the number part is malformed.
bool SplitNumber(const std::string& text, double* value, std::string_view* rest) {
  size_t i = 0, digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  *value = std::strtod(text.substr(0, i).c_str(), nullptr);
  *rest = std::string_view(text).substr(i);
  return true;
}

}  // namespace

Result<double> ParseFraction(const std::string& text) {
  double value;
  std::string_view rest;
  if (!SplitNumber(text, &value, &rest) || !rest.empty() || value <= 0 || value > 1)
    return Bad("fraction", text);
  return value;
}

Result<ServerAddress> ParseServer(const std::string& text) {
  struct Scheme {
    std::string_view prefix;
    TransportKind kind;
  };
  static constexpr Scheme kSchemes[] = {{"unix:", TransportKind::kShm},
                                        {"grpc://", TransportKind::kGrpc},
                                        {"grpcs://", TransportKind::kGrpcTls},
                                        {"/", TransportKind::kShm}};
  for (const Scheme& s : kSchemes) {
    if (!text.starts_with(s.prefix)) continue;
    std::string target = s.prefix == "/" ? text : text.substr(s.prefix.size());
    if (target.empty()) break;
    return ServerAddress{s.kind, target};
  }
  return Error(err::kInvalidValue,
               "REMORA_SERVER: expected unix:/path, grpc://host:port or "
               "grpcs://host:port, got '" +
                   text + "'");
}

Result<Settings> ReadSettings(const std::function<const char*(const char*)>& get) {
  Settings s;
  const char* server = get("REMORA_SERVER");
  ASSIGN_OR_RETURN(s.server, ParseServer(server && *server ? server : kDefaultServer));
  if (const char* token = get("REMORA_TOKEN")) s.token = token;
  if (const char* roots = get("REMORA_TLS_ROOT_CERT")) s.tls_root_cert = roots;

  struct FractionVar {
    const char* name;
    double* out;
  };
  for (FractionVar v : {FractionVar{"REMORA_GPU_FRACTION", &s.quota.fraction},
                        FractionVar{"REMORA_GPU_FRACTION_LIMIT", &s.quota.fraction_limit},
                        FractionVar{"REMORA_GPU_COMPUTE", &s.quota.compute},
                        FractionVar{"REMORA_GPU_COMPUTE_LIMIT", &s.quota.compute_limit}}) {
    const char* text = get(v.name);
    if (!text || !*text) continue;
    Result<double> f = ParseFraction(text);
    if (!f.ok())
      return Error(err::kInvalidValue, std::string(v.name) + ": " + f.status().message());
    *v.out = *f;
  }
  struct BytesVar {
    const char* name;
    uint64_t* out;
  };
  for (BytesVar v : {BytesVar{"REMORA_GPU_MEMORY", &s.quota.memory},
                     BytesVar{"REMORA_GPU_MEMORY_LIMIT", &s.quota.memory_limit}}) {
    const char* text = get(v.name);
    if (!text || !*text) continue;
    Result<uint64_t> b = ParseQuantity(text);
    if (!b.ok())
      return Error(err::kInvalidValue, std::string(v.name) + ": " + b.status().message());
    *v.out = *b;
  }
  if (const char* p = get("REMORA_PRIORITY"); p && *p) {
    const std::string prio = p;
    if (!sched::ParsePriority(prio))
      return Error(err::kInvalidValue,
                   "REMORA_PRIORITY: expected high, normal or low, got '" + prio + "'");
    s.quota.priority = prio;
  }
  const QuotaRequest& q = s.quota;
  if ((q.fraction || q.fraction_limit) && (q.memory || q.memory_limit))
    return Error(err::kInvalidValue,
                 "REMORA_GPU_FRACTION* and REMORA_GPU_MEMORY* cannot be combined; pick one kind");
  if (q.fraction_limit && q.fraction_limit < q.fraction)
    return Error(err::kInvalidValue, "REMORA_GPU_FRACTION_LIMIT is below REMORA_GPU_FRACTION");
  if (q.memory_limit && q.memory_limit < q.memory)
    return Error(err::kInvalidValue, "REMORA_GPU_MEMORY_LIMIT is below REMORA_GPU_MEMORY");
  if (q.compute_limit && q.compute_limit < q.compute)
    return Error(err::kInvalidValue, "REMORA_GPU_COMPUTE_LIMIT is below REMORA_GPU_COMPUTE");
  return s;
}

Result<Settings> SettingsFromEnv() {
  return ReadSettings([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace remora::client_stub
