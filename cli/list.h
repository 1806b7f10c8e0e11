// cli/list.h - `remora list`, `top` and `evict`: a server's tenants, for operators.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "proto/status.h"
#include "remora/v1/session.pb.h"

namespace remora::cli {

// The server `remora` talks to when neither --server nor REMORA_SERVER names one (the stub's
// own default, client_stub/env.h).
inline constexpr const char* kDefaultServer = "unix:/run/remora/gpu0.sock";

// Connects to `server` (unix:PATH, grpc://HOST:PORT or grpcs://HOST:PORT) as an
// administration session, presenting `token` if not empty, and fetches the
// tenant list. Errors: kInitializationError if the server cannot be reached,
// the server's refusal otherwise.
Result<v1::TenantList> FetchTenants(const std::string& server, const std::string& token);

// The server's device, from the Welcome of a monitoring session (which holds nothing there)
// presenting `token` if not empty, given up after `timeout`. Errors: as FetchTenants.
Result<v1::DeviceInfo> FetchDevice(const std::string& server, const std::string& token,
                                   std::chrono::seconds timeout);

// The list as a table, one line per tenant under a header line.
std::string FormatTenants(const v1::TenantList& list);

// Ends the session of the tenant `who` names: a session id, or a tenant name
// that exactly one running session has. Errors: the server's refusal.
Status EvictTenant(const std::string& server, const std::string& token, const std::string& who);

// `remora list|top|evict ...` (`command` is the word after remora): prints the
// table once, refreshes it (top), or evicts; returns the exit code.
int RunAdmin(const std::string& command, const std::vector<std::string>& args);

}  // namespace remora::cli
