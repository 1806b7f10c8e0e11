// server/tenants.cc - parsing and checking the --tenants file.
#include "server/tenants.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "proto/quantity.h"
#include "scheduler/tenant.h"

namespace remora::server {
namespace {

Status Bad(const std::string& where, const std::string& what) {
  return Error(err::kInvalidValue, "tenants file: " + where + ": " + what);
}

// A fraction of the GPU in [0, 1] under `key`, if present.
Status Fraction(const YAML::Node& n, const std::string& where, const char* key, double* out) {
  if (!n[key]) return OkStatus();
  double v = -1;
  if (!YAML::convert<double>::decode(n[key], v) || !(v >= 0 && v <= 1))
    return Bad(where, std::string(key) + " is a fraction of the GPU in [0, 1]");
  *out = v;
  return OkStatus();
}

// Bytes under `key` ("4Gi", "512Mi", 1073741824), if present.
Status Bytes(const YAML::Node& n, const std::string& where, const char* key, uint64_t* out) {
  if (!n[key]) return OkStatus();
  if (!n[key].IsScalar()) return Bad(where, std::string(key) + " is a byte quantity");
  Result<uint64_t> b = ParseQuantity(n[key].Scalar());
  if (!b.ok()) return Bad(where, std::string(key) + ": " + b.status().message());
  *out = *b;
  return OkStatus();
}

Status OnlyKeys(const YAML::Node& n, const std::string& where, std::set<std::string> keys) {
  if (!n.IsMap()) return Bad(where, "is not a map of keys");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>("");
    if (!keys.count(k)) return Bad(where, "unknown key '" + k + "'");
  }
  return OkStatus();
}

std::string Text(const YAML::Node& n, const char* key) {
  return n[key] && n[key].IsScalar() ? n[key].Scalar() : "";
}

}  // namespace

Result<std::shared_ptr<const TenantBook>> TenantBook::Parse(std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Bad("line " + std::to_string(e.mark.line + 1), e.msg);
  }
  auto book = std::make_shared<TenantBook>();
  if (root.IsNull()) return std::shared_ptr<const TenantBook>(book);
  RETURN_IF_ERROR(OnlyKeys(root, "top level", {"projects", "tenants", "admin-token"}));
  book->admin_token_ = Text(root, "admin-token");

  std::map<std::string, size_t> project_index;
  if (const YAML::Node ps = root["projects"]; ps) {
    if (!ps.IsSequence()) return Bad("projects", "is not a list");
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string where = "projects[" + std::to_string(i) + "]";
      RETURN_IF_ERROR(OnlyKeys(ps[i], where, {"name", "gpu-compute"}));
      ProjectSpec p;
      p.name = Text(ps[i], "name");
      if (p.name.empty()) return Bad(where, "has no name");
      if (project_index.count(p.name)) return Bad(where, "project '" + p.name + "' twice");
      RETURN_IF_ERROR(Fraction(ps[i], where, "gpu-compute", &p.gpu_compute));
      if (p.gpu_compute <= 0) return Bad(where, "gpu-compute must be above 0");
      project_index[p.name] = book->projects_.size();
      book->projects_.push_back(p);
    }
  }

  std::set<std::string> names, tokens;
  if (const YAML::Node ts = root["tenants"]; ts) {
    if (!ts.IsSequence()) return Bad("tenants", "is not a list");
    for (size_t i = 0; i < ts.size(); ++i) {
      const YAML::Node n = ts[i];
      std::string where = "tenants[" + std::to_string(i) + "]";
      RETURN_IF_ERROR(OnlyKeys(
          n, where,
          {"name", "token", "project", "weight", "priority", "gpu-fraction", "gpu-fraction-limit",
           "gpu-memory", "gpu-memory-limit", "gpu-compute", "gpu-compute-limit"}));
      TenantSpec t;
      t.name = Text(n, "name");
      if (t.name.empty()) return Bad(where, "has no name");
      where += " (" + t.name + ")";
      if (!names.insert(t.name).second) return Bad(where, "tenant name given twice");
      t.token = Text(n, "token");
      if (t.token.empty()) return Bad(where, "has no token");
      if (t.token == book->admin_token_) return Bad(where, "its token is the admin token");
      if (!tokens.insert(t.token).second) return Bad(where, "token shared with another tenant");
      t.project = Text(n, "project");
      if (!t.project.empty() && !project_index.count(t.project))
        return Bad(where, "project '" + t.project + "' is not under projects:");
      if (n["weight"] && (!YAML::convert<double>::decode(n["weight"], t.weight) ||
                          !(t.weight > 0 && t.weight <= 1000)))
        return Bad(where, "weight is a number in (0, 1000]");
      const std::string priority = Text(n, "priority");
      if (!priority.empty() && !sched::ParsePriority(priority))
        return Bad(where, "priority '" + priority + "' is none of high, normal, low");
      t.quota.set_priority(priority);
      double f = 0;
      uint64_t b = 0;
      RETURN_IF_ERROR(Fraction(n, where, "gpu-fraction", &f));
      t.quota.set_gpu_fraction(f);
      f = 0;
      RETURN_IF_ERROR(Fraction(n, where, "gpu-fraction-limit", &f));
      t.quota.set_gpu_fraction_limit(f);
      RETURN_IF_ERROR(Bytes(n, where, "gpu-memory", &b));
      t.quota.set_gpu_memory(b);
      b = 0;
      RETURN_IF_ERROR(Bytes(n, where, "gpu-memory-limit", &b));
      t.quota.set_gpu_memory_limit(b);
      f = 0;
      RETURN_IF_ERROR(Fraction(n, where, "gpu-compute", &f));
      t.quota.set_gpu_compute(f);
      f = 0;
      RETURN_IF_ERROR(Fraction(n, where, "gpu-compute-limit", &f));
      t.quota.set_gpu_compute_limit(f);
      const v1::Quota& q = t.quota;
      if ((q.gpu_fraction() > 0 || q.gpu_fraction_limit() > 0) &&
          (q.gpu_memory() > 0 || q.gpu_memory_limit() > 0))
        return Bad(where, "give memory as gpu-fraction(-limit) or as gpu-memory(-limit), not both");
      if (q.gpu_fraction_limit() > 0 && q.gpu_fraction_limit() < q.gpu_fraction())
        return Bad(where, "gpu-fraction-limit is below gpu-fraction");
      if (q.gpu_memory_limit() > 0 && q.gpu_memory_limit() < q.gpu_memory())
        return Bad(where, "gpu-memory-limit is below gpu-memory");
      if (q.gpu_compute_limit() > 0 && q.gpu_compute_limit() < q.gpu_compute())
        return Bad(where, "gpu-compute-limit is below gpu-compute");
      book->tenants_.push_back(std::move(t));
    }
  }
  return std::shared_ptr<const TenantBook>(book);
}

Result<std::shared_ptr<const TenantBook>> TenantBook::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(err::kInvalidValue, "tenants file " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str());
}

const TenantSpec* TenantBook::ByToken(std::string_view token) const {
  if (token.empty()) return nullptr;
  for (const TenantSpec& t : tenants_)
    if (t.token == token) return &t;
  return nullptr;
}

const TenantSpec* TenantBook::ByName(std::string_view name) const {
  for (const TenantSpec& t : tenants_)
    if (t.name == name) return &t;
  return nullptr;
}

bool TenantBook::IsAdmin(std::string_view token) const {
  return !token.empty() && token == admin_token_;
}

sched::ProjectId TenantBook::ProjectOf(std::string_view name) const {
  if (name.empty()) return sched::kNoProject;
  for (size_t i = 0; i < projects_.size(); ++i)
    if (projects_[i].name == name) return i + 1;
  return sched::kNoProject;
}

}  // namespace remora::server
