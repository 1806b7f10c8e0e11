// cli/list.h - `remora list`: every tenant of a server, one row each.
#pragma once

#include <string>
#include <vector>

#include "proto/status.h"
#include "remora/v1/session.pb.h"

namespace remora::cli {

// Connects to `server` (unix:PATH, grpc://HOST:PORT or grpcs://HOST:PORT) as an
// administration session, presenting `token` if not empty, and fetches the
// tenant list. Errors: kInitializationError if the server cannot be reached,
// the server's refusal otherwise.
Result<v1::TenantList> FetchTenants(const std::string& server, const std::string& token);

// The list as a table, one line per tenant under a header line.
std::string FormatTenants(const v1::TenantList& list);

// `remora list [--server ADDR] [--token T]`: prints the table; returns the exit code.
int RunList(const std::vector<std::string>& args);

}  // namespace remora::cli
