// client_stub/env.h - the tenant's REMORA_* settings: server address, token, quota.
//
// Read once, at connect time. Parsing is separate from getenv so tests can feed
// strings:
//   ASSIGN_OR_RETURN(Settings s, SettingsFromEnv());
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "proto/status.h"

namespace remora::client_stub {

enum class TransportKind { kShm, kGrpc, kGrpcTls };

// Where the server is: REMORA_SERVER "unix:/path" (or a bare absolute path),
// "grpc://host:port" or "grpcs://host:port".
struct ServerAddress {
  TransportKind kind = TransportKind::kShm;
  std::string target;  // socket path, or host:port
};

// Quota the tenant declares; a zero field is "not given".
struct QuotaRequest {
  double fraction = 0, fraction_limit = 0;
  uint64_t memory = 0, memory_limit = 0;
  double compute = 0, compute_limit = 0;  // fractions of the GPU's time
  std::string priority;                   // "high", "normal", "low"; "" = normal
};

struct Settings {
  ServerAddress server;
  std::string token;
  QuotaRequest quota;
  std::string tls_root_cert;  // grpcs only
};

inline constexpr const char* kDefaultServer = "unix:/run/remora/gpu0.sock";

// Parses a GPU fraction in (0, 1]. Errors: kInvalidValue otherwise.
Result<double> ParseFraction(const std::string& text);

// Parses REMORA_SERVER's value. Errors: kInvalidValue for an unknown scheme or an
// empty target.
Result<ServerAddress> ParseServer(const std::string& text);

// Builds the settings from `get` (getenv-like: nullptr = unset). Errors:
// kInvalidValue naming the variable that does not parse, or mixing fractions with
// byte sizes, or a limit below its request.
Result<Settings> ReadSettings(const std::function<const char*(const char*)>& get);

// ReadSettings over the process environment.
Result<Settings> SettingsFromEnv();

}  // namespace remora::client_stub
