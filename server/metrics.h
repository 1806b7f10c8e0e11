// server/metrics.h - what Prometheus scrapes at /metrics: tenants and server counters.
//
//   MetricsEndpoint::Start("0.0.0.0:9400", [&] { return RenderMetrics(list(), counters); });
//
// Text exposition format 0.0.4, served by cpp-httplib (Debian's libcpp-httplib).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "proto/status.h"
#include "remora/v1/session.pb.h"

namespace httplib {
class Server;
}

namespace remora::server {

// Server-wide events since the process started. Thread-safe.
struct Counters {
  std::atomic<uint64_t> sessions_opened{0};  // Hellos answered with success
  std::atomic<uint64_t> reclaims{0};         // sessions ended to give a loan back
  std::atomic<uint64_t> preemptions{0};      // sessions ended for a higher priority's admission
  std::atomic<uint64_t> admin_evictions{0};  // sessions ended by remora evict
  std::atomic<uint64_t> device_faults{0};    // faults that broke the context
  std::atomic<uint64_t> stall_releases{0};   // Executor::StallReleases, when last rendered
  std::atomic<bool> draining{false};         // a gauge: shutting down, admitting no one
};

// Every tenant of `list` (labels: session, tenant, project, priority) and `c`,
// as Prometheus text: memory request/limit/used/borrowed in bytes, GPU
// seconds, compute request/limit, target and achieved share, calls, errors.
std::string RenderMetrics(const v1::TenantList& list, const Counters& c);

class MetricsEndpoint {
 public:
  // Serves GET /metrics on `host_port` ("HOST:PORT"; port 0 picks one) from a
  // thread of its own, calling `render` per scrape. Errors: kInvalidValue for
  // an address that does not parse; kInitializationError if it cannot bind.
  static Result<std::unique_ptr<MetricsEndpoint>> Start(const std::string& host_port,
                                                        std::function<std::string()> render);
  struct Key {};  // Start's only
  explicit MetricsEndpoint(Key);
  ~MetricsEndpoint();  // stops serving and joins the thread
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace remora::server
