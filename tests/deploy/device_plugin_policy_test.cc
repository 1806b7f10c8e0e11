// tests/deploy/device_plugin_policy_test.cc - the device plugin's pure policy:
// IDs, health from tenant lists, preferred allocation, grants.
#include <gtest/gtest.h>

#include "client_stub/env.h"
#include "deploy/device_plugin/plugin.h"
#include "deploy/device_plugin/policy.h"
#include "deviceplugin.pb.h"

namespace remora::device_plugin {
namespace {

v1::TenantList List(uint64_t usable, std::vector<std::tuple<uint64_t, uint64_t, double>> tenants) {
  v1::TenantList l;
  l.set_usable_memory(usable);
  for (auto [request, used, compute] : tenants) {
    v1::TenantRow* r = l.add_tenants();
    r->set_memory_request(request);
    r->set_memory_used(used);
    r->set_compute_request(compute);
  }
  return l;
}

size_t Unhealthy(const std::vector<bool>& h) {
  return std::count(h.begin(), h.end(), false);
}

TEST(DevicePluginIds, FormatAndParseRoundTrip) {
  EXPECT_EQ(FormatId({0, Resource::kMemory, 42}), "gpu0-mem-00042");
  EXPECT_EQ(FormatId({3, Resource::kCompute, 42}), "gpu3-cmp-0042");
  EXPECT_EQ(FormatId({1, Resource::kMemory, 140000}), "gpu1-mem-140000");
  for (DeviceId id : {DeviceId{0, Resource::kMemory, 0}, DeviceId{7, Resource::kCompute, 999},
                      DeviceId{12, Resource::kMemory, 81920}}) {
    std::optional<DeviceId> back = ParseId(FormatId(id));
    ASSERT_TRUE(back) << FormatId(id);
    EXPECT_EQ(*back, id);
  }
  for (const char* bad :
       {"", "gpu", "gpu0", "gpu0-mem-", "gpu0-mem-42", "gpux-mem-00042", "gpu0-foo-0042",
        "gpu0-cmp-0042x", "gpu-1-cmp-0001", "nvidia0", "gpu0-mem-000000000000000000042"})
    EXPECT_FALSE(ParseId(bad)) << bad;
}

// kubelet reads at most 4 MiB per ListAndWatch message: one 80 GiB GPU at
// 1 MiB per device, all of them in the longer "Unhealthy", must fit.
TEST(DevicePluginIds, An80GiBGpuFitsKubeletsMessageLimit) {
  v1beta1::ListAndWatchResponse r;
  for (uint32_t u = 0; u < 80 * 1024; ++u) {
    v1beta1::Device* d = r.add_devices();
    d->set_id(FormatId({15, Resource::kMemory, u}));
    d->set_health("Unhealthy");
  }
  EXPECT_LT(r.ByteSizeLong(), size_t{4} << 20);
}

TEST(DevicePluginHealth, TenantsHoldTheMaxOfRequestAndUse) {
  const uint64_t usable = 1000 * kMiB + 123;
  // 100 MiB requested, 10 used; 5 MiB + 1 byte used with no request.
  v1::TenantList l = List(usable, {{100 * kMiB, 10 * kMiB, 0.25}, {0, 5 * kMiB + 1, 0.1}});
  EXPECT_EQ(TotalUnits(l, Resource::kMemory, kMiB), 1000u);
  EXPECT_EQ(TotalUnits(l, Resource::kCompute, kMiB), kComputeUnits);
  EXPECT_EQ(HeldUnits(l, Resource::kMemory, kMiB), 106u);  // 105 MiB + 1 byte, rounded up
  EXPECT_EQ(HeldUnits(l, Resource::kCompute, kMiB), 350u);
  EXPECT_EQ(HeldUnits(l, Resource::kMemory, 4 * kMiB), 27u);
  EXPECT_EQ(TotalUnits(l, Resource::kMemory, 4 * kMiB), 250u);
  // More than the GPU: capped.
  v1::TenantList full = List(10 * kMiB, {{8 * kMiB, 0, 0.7}, {8 * kMiB, 0, 0.7}});
  EXPECT_EQ(HeldUnits(full, Resource::kMemory, kMiB), 10u);
  EXPECT_EQ(HeldUnits(full, Resource::kCompute, kMiB), kComputeUnits);
  EXPECT_EQ(HeldUnits(List(kMiB, {}), Resource::kCompute, kMiB), 0u);
}

TEST(DevicePluginHealth, ForeignHoldingsMarkHighestFreeUnitsUnhealthy) {
  std::vector<bool> h = UnitHealth(10, true, 3, {});
  EXPECT_EQ(h, (std::vector<bool>{true, true, true, true, true, true, true, false, false, false}));
  // Two units are ours (allocated, 8 and 9): held 3 leaves 1 foreign, taken
  // from the highest unit that is not ours.
  h = UnitHealth(10, true, 3, {8, 9});
  EXPECT_EQ(Unhealthy(h), 1u);
  EXPECT_FALSE(h[7]);
  EXPECT_TRUE(h[8] && h[9]);
  // Everything held is ours: all healthy.
  EXPECT_EQ(Unhealthy(UnitHealth(10, true, 2, {0, 1, 2})), 0u);
  // Unreachable: all unhealthy, whatever else.
  EXPECT_EQ(Unhealthy(UnitHealth(10, false, 0, {})), 10u);
  // More foreign than free: every free unit unhealthy, ours untouched.
  h = UnitHealth(4, true, 9, {1});
  EXPECT_EQ(h, (std::vector<bool>{false, true, false, false}));
  EXPECT_TRUE(UnitHealth(0, true, 5, {}).empty());
}

std::vector<std::string> Ids(uint32_t gpu, Resource r, uint32_t from, uint32_t to) {
  std::vector<std::string> v;
  for (uint32_t u = from; u < to; ++u) v.push_back(FormatId({gpu, r, u}));
  return v;
}

TEST(DevicePluginPreferred, OneGpuWithTheMostThatFits) {
  std::vector<std::string> avail = Ids(0, Resource::kCompute, 0, 300);
  for (std::string& s : Ids(1, Resource::kCompute, 0, 500)) avail.push_back(s);
  avail.push_back("garbage");
  std::reverse(avail.begin(), avail.end());
  std::vector<std::string> got = PreferredAllocation(avail, {}, 250);
  ASSERT_EQ(got.size(), 250u);
  for (const std::string& s : got) EXPECT_EQ(ParseId(s)->gpu, 1u) << s;
  EXPECT_EQ(got.front(), "gpu1-cmp-0000");
  EXPECT_EQ(got.back(), "gpu1-cmp-0249");
  // Both fit 300: the one with more available wins.
  got = PreferredAllocation(avail, {}, 300);
  EXPECT_EQ(ParseId(got.front())->gpu, 1u);
  // None fits: what the best GPU has.
  got = PreferredAllocation(avail, {}, 600);
  EXPECT_EQ(got.size(), 500u);
  // Must-include decides the GPU and comes first.
  const std::string must = FormatId({0, Resource::kCompute, 299});
  got = PreferredAllocation(avail, {must}, 10);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got.front(), must);
  for (const std::string& s : got) EXPECT_EQ(ParseId(s)->gpu, 0u) << s;
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 10u);
  EXPECT_TRUE(PreferredAllocation({}, {}, 3).empty());
}

std::map<uint32_t, Gpu> TwoGpus() {
  std::map<uint32_t, Gpu> gpus;
  for (uint32_t i : {0u, 1u}) {
    Gpu g;
    g.index = i;
    g.server = "unix:/host/run/gpu" + std::to_string(i) + ".sock";
    g.host_dir = "/host/run";
    g.socket_name = "gpu" + std::to_string(i) + ".sock";
    g.reachable = i == 0;
    g.memory_units = 100;
    gpus[i] = g;
  }
  return gpus;
}

TEST(DevicePluginGrant, MemoryAndComputeEnvAndMounts) {
  GrantOptions o{"/run/remora", "/opt/stub", kMiB};
  Result<Grant> g = PlanGrant(Resource::kMemory, Ids(0, Resource::kMemory, 10, 74), TwoGpus(), o);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->gpu, 0u);
  EXPECT_EQ(g->units.size(), 64u);
  EXPECT_EQ(g->env["REMORA_SERVER"], "unix:/run/remora/gpu0.sock");
  EXPECT_EQ(g->env["REMORA_GPU_MEMORY"], std::to_string(64 * kMiB));
  EXPECT_EQ(g->env.count("REMORA_GPU_COMPUTE"), 0u);
  EXPECT_EQ(g->env["LD_LIBRARY_PATH"], kContainerLibDir);
  EXPECT_EQ(g->mounts, (std::vector<Mount>{{"/run/remora", "/host/run", false},
                                           {kContainerLibDir, "/opt/stub", true}}));

  o.memory_unit_bytes = 4 * kMiB;
  g = PlanGrant(Resource::kMemory, Ids(0, Resource::kMemory, 0, 3), TwoGpus(), o);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->env["REMORA_GPU_MEMORY"], std::to_string(12 * kMiB));

  g = PlanGrant(Resource::kCompute, Ids(0, Resource::kCompute, 0, 250), TwoGpus(), o);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->env["REMORA_GPU_COMPUTE"], "0.25");
  EXPECT_EQ(g->env.count("REMORA_GPU_MEMORY"), 0u);
  EXPECT_EQ(PerMille(1000), "1");
  EXPECT_EQ(PerMille(1), "0.001");
  EXPECT_EQ(PerMille(120), "0.12");
}

// The environment a grant sets is what the tenant's stub reads, to the byte.
TEST(DevicePluginGrant, TheStubReadsTheGrantedQuota) {
  GrantOptions o{"/run/remora", "/opt/stub", kMiB};
  Result<Grant> mem = PlanGrant(Resource::kMemory, Ids(0, Resource::kMemory, 0, 77), TwoGpus(), o);
  Result<Grant> cmp =
      PlanGrant(Resource::kCompute, Ids(0, Resource::kCompute, 0, 125), TwoGpus(), o);
  ASSERT_TRUE(mem.ok() && cmp.ok());
  std::map<std::string, std::string> env = mem->env;
  env.insert(cmp->env.begin(), cmp->env.end());
  Result<client_stub::Settings> s = client_stub::ReadSettings([&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->server.kind, client_stub::TransportKind::kShm);
  EXPECT_EQ(s->server.target, "/run/remora/gpu0.sock");
  EXPECT_EQ(s->quota.memory, 77 * kMiB);
  EXPECT_DOUBLE_EQ(s->quota.compute, 0.125);
}

TEST(DevicePluginGrant, RefusesWhatItCannotGrant) {
  std::map<uint32_t, Gpu> gpus = TwoGpus();
  gpus[1].reachable = true;
  GrantOptions o;
  auto refused = [&](std::vector<std::string> ids, Resource r, const std::string& why) {
    Result<Grant> g = PlanGrant(r, ids, gpus, o);
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.status().message().find(why), std::string::npos) << g.status().message();
  };
  refused({"gpu0-mem-00001", "gpu1-mem-00002"}, Resource::kMemory, "span GPUs 0 and 1");
  refused({"gpu0-mem-00001", "nonsense"}, Resource::kMemory, "'nonsense'");
  refused({"gpu0-cmp-0001"}, Resource::kMemory, "not a remora.io/gpu-memory device");
  refused({"gpu5-mem-00001"}, Resource::kMemory, "GPU 5, which is unknown");
  refused({"gpu0-mem-00100"}, Resource::kMemory, "beyond the 100 devices");
  refused({}, Resource::kCompute, "no device IDs");
  gpus[1].reachable = false;
  refused({"gpu1-cmp-0001"}, Resource::kCompute, "cannot be reached");
}

TEST(DevicePluginOptions, FlagsAndRefusals) {
  Result<Options> o =
      ParseOptions({"--socket-dir", "/s", "--kubelet-dir=/k", "--poll-ms", "50", "--stub-dir",
                    "/stub", "--container-socket-dir", "/c", "--memory-unit-mib", "4"},
                   "envtoken");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->socket_dir, "/s");
  EXPECT_EQ(o->kubelet_dir, "/k");
  EXPECT_EQ(o->poll.count(), 50);
  EXPECT_EQ(o->token, "envtoken");
  EXPECT_EQ(o->memory_unit_mib, 4u);
  o = ParseOptions({"--token", "t", "--server", "unix:/a/gpu3.sock", "--server=unix:/b/x.sock"},
                   "envtoken");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->token, "t");
  std::vector<Gpu> gpus = DiscoverGpus(*o);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 3u);
  EXPECT_EQ(gpus[0].host_dir, "/a");
  EXPECT_EQ(gpus[1].index, 1u);
  EXPECT_EQ(gpus[1].socket_name, "x.sock");
  for (std::vector<std::string> bad : {std::vector<std::string>{"--poll-ms", "0"},
                                       {"--poll-ms", "fast"},
                                       {"--frobnicate", "1"},
                                       {"--server", "grpc://h:1"},
                                       {"--kubelet-dir"},
                                       {"--memory-unit-mib", "-1"}})
    EXPECT_FALSE(ParseOptions(bad, nullptr).ok()) << bad[0];
  Result<Options> unknown = ParseOptions({"--bogus"}, nullptr);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown flag '--bogus'"), std::string::npos);
}

}  // namespace
}  // namespace remora::device_plugin
