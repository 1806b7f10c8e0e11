// tests/server/tenants_test.cc - the --tenants file: what parses, what is refused and why.
#include "server/tenants.h"

#include <gtest/gtest.h>

namespace remora::server {
namespace {

constexpr const char* kBook = R"(
projects:
  - name: research
    gpu-compute: 0.6
  - name: prod
tenants:
  - name: alice
    token: tok-alice
    project: research
    priority: high
    gpu-fraction: 0.25
    gpu-fraction-limit: 0.5
    gpu-compute: 0.3
    gpu-compute-limit: 0.6
  - name: bob
    token: tok-bob
    gpu-memory: 4Gi
    gpu-memory-limit: 6Gi
    weight: 3
admin-token: tok-admin
)";

TEST(TenantBook, ParsesEveryKey) {
  auto book = TenantBook::Parse(kBook);
  ASSERT_TRUE(book.ok()) << book.status().ToString();
  const TenantBook& b = **book;
  ASSERT_EQ(b.tenants().size(), 2u);
  ASSERT_EQ(b.projects().size(), 2u);
  EXPECT_DOUBLE_EQ(b.projects()[0].gpu_compute, 0.6);
  EXPECT_DOUBLE_EQ(b.projects()[1].gpu_compute, 1.0);  // the default
  const TenantSpec* a = b.ByToken("tok-alice");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "alice");
  EXPECT_EQ(a->project, "research");
  EXPECT_EQ(a->quota.priority(), "high");
  EXPECT_DOUBLE_EQ(a->quota.gpu_fraction(), 0.25);
  EXPECT_DOUBLE_EQ(a->quota.gpu_fraction_limit(), 0.5);
  EXPECT_DOUBLE_EQ(a->quota.gpu_compute(), 0.3);
  EXPECT_DOUBLE_EQ(a->quota.gpu_compute_limit(), 0.6);
  const TenantSpec* bob = b.ByToken("tok-bob");
  ASSERT_NE(bob, nullptr);
  EXPECT_EQ(bob->quota.gpu_memory(), 4ull << 30);
  EXPECT_EQ(bob->quota.gpu_memory_limit(), 6ull << 30);
  EXPECT_DOUBLE_EQ(bob->weight, 3);
  EXPECT_EQ(b.ProjectOf("research"), 1u);
  EXPECT_EQ(b.ProjectOf("prod"), 2u);
  EXPECT_EQ(b.ProjectOf(""), sched::kNoProject);
  EXPECT_EQ(b.ProjectOf("nope"), sched::kNoProject);
  EXPECT_EQ(b.ByToken(""), nullptr);
  EXPECT_EQ(b.ByToken("tok-carol"), nullptr);
  EXPECT_TRUE(b.IsAdmin("tok-admin"));
  EXPECT_FALSE(b.IsAdmin(""));
  EXPECT_FALSE(b.IsAdmin("tok-alice"));
}

TEST(TenantBook, EmptyFileIsAnEmptyBook) {
  auto book = TenantBook::Parse("");
  ASSERT_TRUE(book.ok());
  EXPECT_TRUE((*book)->tenants().empty());
  EXPECT_FALSE((*book)->IsAdmin(""));
}

// Every mistake names where it is; none loosens a quota by being skipped.
TEST(TenantBook, RefusesMistakesNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"tenants:\n  - name: a\n    token: t\n    gpu-fration: 0.5\n", "unknown key 'gpu-fration'"},
      {"tenants:\n  - name: a\n", "has no token"},
      {"tenants:\n  - token: t\n", "has no name"},
      {"tenants:\n  - {name: a, token: t}\n  - {name: a, token: u}\n", "name given twice"},
      {"tenants:\n  - {name: a, token: t}\n  - {name: b, token: t}\n", "token shared"},
      {"tenants:\n  - {name: a, token: t, project: x}\n", "project 'x' is not"},
      {"tenants:\n  - {name: a, token: t, gpu-fraction: 1.5}\n", "gpu-fraction is a fraction"},
      {"tenants:\n  - {name: a, token: t, gpu-memory: 4Qi}\n", "gpu-memory"},
      {"tenants:\n  - {name: a, token: t, gpu-memory: 4Gi, gpu-memory-limit: 1Gi}\n",
       "gpu-memory-limit is below"},
      {"tenants:\n  - {name: a, token: t, gpu-fraction: 0.2, gpu-memory: 1Gi}\n", "not both"},
      {"tenants:\n  - {name: a, token: t, gpu-compute: 0.5, gpu-compute-limit: 0.2}\n",
       "gpu-compute-limit is below"},
      {"tenants:\n  - {name: a, token: t, priority: urgent}\n", "priority 'urgent'"},
      {"tenants:\n  - {name: a, token: t, weight: -1}\n", "weight"},
      {"admin-token: t\ntenants:\n  - {name: a, token: t}\n", "admin token"},
      {"projects:\n  - {name: p, gpu-compute: 0}\n", "above 0"},
      {"tenant:\n  - {name: a, token: t}\n", "unknown key 'tenant'"},
      {"tenants: [ {name: a, token: t\n", "tenants file: line"},
  };
  for (const auto& [yaml, want] : cases) {
    auto book = TenantBook::Parse(yaml);
    ASSERT_FALSE(book.ok()) << yaml;
    EXPECT_EQ(book.status().code(), err::kInvalidValue) << yaml;
    EXPECT_NE(book.status().message().find(want), std::string::npos)
        << yaml << " -> " << book.status().message();
  }
}

TEST(TenantBook, LoadSaysWhichFileItCannotRead) {
  auto book = TenantBook::Load("/nonexistent/tenants.yaml");
  ASSERT_FALSE(book.ok());
  EXPECT_NE(book.status().message().find("/nonexistent/tenants.yaml"), std::string::npos);
}

}  // namespace
}  // namespace remora::server
