// server/metrics.cc - Prometheus text exposition over cpp-httplib.
#include "server/metrics.h"

#include <httplib.h>

#include <cstdio>

#include "server/host_port.h"

namespace remora::server {
namespace {

// A label value with \, " and newlines escaped, as the text format asks.
std::string Escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Family {
  const char* name;
  const char* type;
  const char* help;
  double (*value)(const v1::TenantRow&);
};

constexpr Family kTenantFamilies[] = {
    {"remora_tenant_memory_request_bytes", "gauge", "Device memory guaranteed to the tenant.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.memory_request()); }},
    {"remora_tenant_memory_limit_bytes", "gauge", "Device memory the tenant may never pass.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.memory_limit()); }},
    {"remora_tenant_memory_used_bytes", "gauge", "Device memory the tenant holds.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.memory_used()); }},
    {"remora_tenant_memory_borrowed_bytes", "gauge",
     "Device memory held above the request: a loan another tenant may reclaim.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.memory_borrowed()); }},
    {"remora_tenant_pinned_host_bytes", "gauge",
     "Host memory of the tenant's shared-memory arena page-locked with the driver.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.pinned_host_bytes()); }},
    {"remora_tenant_gpu_seconds_total", "counter", "GPU time charged to the tenant.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.gpu_ns()) / 1e9; }},
    {"remora_tenant_compute_request", "gauge", "The tenant's guaranteed share of GPU time.",
     [](const v1::TenantRow& r) { return r.compute_request(); }},
    {"remora_tenant_compute_limit", "gauge", "The tenant's cap on GPU time (0: none).",
     [](const v1::TenantRow& r) { return r.compute_limit(); }},
    {"remora_tenant_target_share", "gauge",
     "Share of GPU time the tenant gets while every tenant is busy.",
     [](const v1::TenantRow& r) { return r.target_share(); }},
    {"remora_tenant_achieved_share", "gauge", "Share of GPU time over about the last 10 s.",
     [](const v1::TenantRow& r) { return r.achieved_share(); }},
    {"remora_tenant_calls_total", "counter", "Calls the tenant made.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.calls()); }},
    {"remora_tenant_errors_total", "counter", "Calls answered with an error.",
     [](const v1::TenantRow& r) { return static_cast<double>(r.errors()); }},
};

}  // namespace

std::string RenderMetrics(const v1::TenantList& list, const Counters& c) {
  std::string out;
  for (const Family& f : kTenantFamilies) {
    out +=
        std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type + "\n";
    for (const v1::TenantRow& r : list.tenants())
      out += std::string(f.name) + "{session=\"" + std::to_string(r.session()) + "\",tenant=\"" +
             Escaped(r.tenant()) + "\",project=\"" + Escaped(r.project()) + "\",priority=\"" +
             Escaped(r.priority()) + "\"} " + Number(f.value(r)) + "\n";
  }
  auto counter = [&out](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(v) + "\n";
  };
  counter("remora_sessions_opened_total", "Tenant sessions admitted.", c.sessions_opened.load());
  counter("remora_reclaims_total", "Sessions ended to give their memory loan back.",
          c.reclaims.load());
  counter("remora_preemptions_total", "Sessions ended to admit a tenant of higher priority.",
          c.preemptions.load());
  counter("remora_admin_evictions_total", "Sessions ended by remora evict.",
          c.admin_evictions.load());
  counter("remora_device_faults_total", "Device faults that broke the GPU context.",
          c.device_faults.load());
  counter("remora_stall_releases_total",
          "Items let past an in-flight bound whose work made no progress for a while.",
          c.stall_releases.load());
  out +=
      "# HELP remora_draining 1 while the server shuts down: it admits no new sessions.\n"
      "# TYPE remora_draining gauge\n";
  out += std::string("remora_draining ") + (c.draining.load() ? "1" : "0") + "\n";
  out += "# HELP remora_tenants Tenants admitted now.\n# TYPE remora_tenants gauge\n";
  out += "remora_tenants " + std::to_string(list.tenants_size()) + "\n";
  out +=
      "# HELP remora_usable_memory_bytes Device memory tenants may share.\n"
      "# TYPE remora_usable_memory_bytes gauge\n";
  out += "remora_usable_memory_bytes " + std::to_string(list.usable_memory()) + "\n";
  return out;
}

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& host_port, std::function<std::string()> render) {
  const std::optional<HostPort> hp = ParseHostPort(host_port);
  if (!hp) return Error(err::kInvalidValue, "--metrics takes HOST:PORT, not '" + host_port + "'");
  const std::string& host = hp->host;
  const int port = hp->port;
  auto m = std::make_unique<MetricsEndpoint>(Key{});
  m->http_ = std::make_unique<httplib::Server>();
  m->http_->Get("/metrics",
                [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
                  res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
                });
  m->port_ = port == 0 ? m->http_->bind_to_any_port(host) : port;
  if (port != 0 && !m->http_->bind_to_port(host, port)) m->port_ = -1;
  if (m->port_ <= 0)
    return Error(err::kInitializationError, "--metrics " + host_port + ": cannot listen there");
  m->thread_ = std::thread([http = m->http_.get()] { http->listen_after_bind(); });
  return m;
}

MetricsEndpoint::MetricsEndpoint(Key) {}

MetricsEndpoint::~MetricsEndpoint() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace remora::server
