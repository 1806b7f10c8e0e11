// server/tenants.h - who may connect, and with what quota: the --tenants file.
//
//   projects:
//     - name: research
//       gpu-compute: 0.6          # the project's share of GPU time among projects
//   tenants:
//     - name: alice
//       token: 6f1c...            # what alice's stub sends (REMORA_TOKEN)
//       project: research
//       priority: high            # high, normal (default), low
//       gpu-fraction: 0.25        # or gpu-memory: 4Gi; limits: gpu-fraction-limit,
//       gpu-compute-limit: 0.5    #   gpu-memory-limit; compute: gpu-compute(-limit)
//       weight: 2                 # GPU-time weight when no compute or memory request
//   admin-token: 9a0e...          # what remora list/top/evict must send
//
// With a book, the server admits a session only for a token the book names,
// with the book's quota (what the client declares is ignored), one session
// per tenant at a time. Unknown keys are errors: a typo never loosens a quota.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.h"
#include "remora/v1/session.pb.h"
#include "scheduler/dispatch.h"

namespace remora::server {

struct ProjectSpec {
  std::string name;
  double gpu_compute = 1;  // weight among projects and lone tenants
};

struct TenantSpec {
  std::string name;
  std::string token;
  std::string project;  // "" = none
  double weight = 1;
  v1::Quota quota;  // as a client would declare it (fractions, bytes, compute, priority)
};

class TenantBook {
 public:
  // Parses a book from YAML text. Errors: kInvalidValue naming the entry and
  // the key: malformed YAML, an unknown key, a missing name or token, a
  // duplicate name or token, an unknown project, a quantity or fraction that
  // does not parse, a limit below its request, an unknown priority.
  static Result<std::shared_ptr<const TenantBook>> Parse(std::string_view yaml);
  // Reads and parses `path`. Errors: Parse's; kInvalidValue if it cannot be read.
  static Result<std::shared_ptr<const TenantBook>> Load(const std::string& path);

  // The tenant `token` names, or nullptr (an empty token names none).
  const TenantSpec* ByToken(std::string_view token) const;
  // The tenant called `name`, or nullptr.
  const TenantSpec* ByName(std::string_view name) const;
  // True if `token` is the admin token (never for an empty one).
  bool IsAdmin(std::string_view token) const;
  // The scheduler's id for project `name` (1-based order in the file), or
  // sched::kNoProject for "" or an unknown name.
  sched::ProjectId ProjectOf(std::string_view name) const;

  const std::vector<ProjectSpec>& projects() const { return projects_; }
  const std::vector<TenantSpec>& tenants() const { return tenants_; }

 private:
  std::vector<ProjectSpec> projects_;
  std::vector<TenantSpec> tenants_;
  std::string admin_token_;
};

}  // namespace remora::server
