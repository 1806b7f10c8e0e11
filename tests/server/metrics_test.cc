// tests/server/metrics_test.cc - the Prometheus text Remora serves at /metrics.
#include "server/metrics.h"

#include "server/host_port.h"

#include <gtest/gtest.h>
#include <httplib.h>

namespace remora::server {
namespace {

v1::TenantList TwoTenants() {
  v1::TenantList list;
  list.set_usable_memory(1000);
  v1::TenantRow* a = list.add_tenants();
  a->set_session(3);
  a->set_tenant("alice/train-1@h");
  a->set_project("research");
  a->set_priority("high");
  a->set_memory_request(100);
  a->set_memory_limit(200);
  a->set_memory_used(150);
  a->set_memory_borrowed(50);
  a->set_pinned_host_bytes(64);
  a->set_gpu_ns(2500000000);
  a->set_achieved_share(0.75);
  a->set_calls(42);
  a->set_errors(2);
  v1::TenantRow* b = list.add_tenants();
  b->set_session(4);
  b->set_tenant("say \"hi\"\\now");  // quotes and a backslash, escaped
  b->set_priority("low");
  return list;
}

TEST(Metrics, EveryTenantAndCounterInTextFormat) {
  Counters c;
  c.sessions_opened = 5;
  c.reclaims = 1;
  c.preemptions = 2;
  c.device_faults = 3;
  c.stall_releases = 7;
  const std::string text = RenderMetrics(TwoTenants(), c);
  const std::string alice =
      "{session=\"3\",tenant=\"alice/train-1@h\",project=\"research\",priority=\"high\"}";
  for (const std::string& line :
       {"remora_tenant_memory_used_bytes" + alice + " 150",
        "remora_tenant_memory_borrowed_bytes" + alice + " 50",
        "remora_tenant_pinned_host_bytes" + alice + " 64",
        "remora_tenant_memory_limit_bytes" + alice + " 200",
        "remora_tenant_gpu_seconds_total" + alice + " 2.5",
        "remora_tenant_achieved_share" + alice + " 0.75",
        "remora_tenant_calls_total" + alice + " 42", "remora_tenant_errors_total" + alice + " 2",
        std::string("remora_tenant_calls_total{session=\"4\",tenant=\"say \\\"hi\\\"\\\\now\","
                    "project=\"\",priority=\"low\"} 0"),
        std::string("remora_sessions_opened_total 5"), std::string("remora_reclaims_total 1"),
        std::string("remora_preemptions_total 2"), std::string("remora_device_faults_total 3"),
        std::string("remora_stall_releases_total 7"), std::string("remora_tenants 2"),
        std::string("remora_usable_memory_bytes 1000"),
        std::string("# TYPE remora_tenant_gpu_seconds_total counter"),
        std::string("# TYPE remora_tenant_memory_used_bytes gauge")})
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n---\n" << text;
}

TEST(Metrics, EndpointServesWhatRenderSaysAndRefusesBadAddresses) {
  int scrapes = 0;
  auto m = MetricsEndpoint::Start("127.0.0.1:0", [&] {
    ++scrapes;
    return std::string("remora_tenants 7\n");
  });
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_GT((*m)->port(), 0);
  httplib::Client http("127.0.0.1", (*m)->port());
  auto r = http.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "remora_tenants 7\n");
  EXPECT_NE(r->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
  EXPECT_EQ(scrapes, 1);
  auto missing = http.Get("/other");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  for (const char* bad : {"nohost", "127.0.0.1:", "127.0.0.1:99999x"})
    EXPECT_EQ(MetricsEndpoint::Start(bad, [] { return std::string(); }).status().code(),
              err::kInvalidValue)
        << bad;
}

// The one HOST:PORT grammar of --grpc and --metrics: a port past 65535 or too
// long to convert is refused, never thrown on.
TEST(HostPort, ParsesWhatTheFlagsTakeAndRefusesTheRest) {
  auto v4 = ParseHostPort("127.0.0.1:7070");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 7070);
  auto v6 = ParseHostPort("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  auto any = ParseHostPort(":65535");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->host, "");
  for (const char* bad : {"nohost", "h:", "h:65536", "h:99999999999999999999", "h:7x", "h:-1"})
    EXPECT_FALSE(ParseHostPort(bad)) << bad;
}

}  // namespace
}  // namespace remora::server
