// tests/cli/run_test.cc - `remora run` argument checking and tenant environment.
#include "cli/run.h"

#include <gtest/gtest.h>

namespace remora::cli {
namespace {

TEST(Run, ParsesQuotaAndCommand) {
  auto o = ParseRun({"--server", "unix:/tmp/s.sock", "--gpu-fraction=0.25", "--gpu-fraction-limit",
                     "0.5", "--", "./app", "-n", "10"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->command, (std::vector<std::string>{"./app", "-n", "10"}));
  auto env = TenantEnvironment(*o, "/opt/remora/lib/stub", "/usr/lib");
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "/opt/remora/lib/stub:/usr/lib");
  EXPECT_EQ(env["REMORA_SERVER"], "unix:/tmp/s.sock");
  EXPECT_EQ(env["REMORA_GPU_FRACTION"], "0.25");
  EXPECT_EQ(env["REMORA_GPU_FRACTION_LIMIT"], "0.5");
  EXPECT_EQ(env.count("REMORA_GPU_MEMORY"), 0u);
  EXPECT_EQ(env.count("REMORA_TRACE"), 0u);
}

TEST(Run, TraceFlagSetsRemoraTrace) {
  auto o = ParseRun({"--trace", "--server", "unix:/s", "./app", "--trace"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->trace);
  EXPECT_EQ(o->command, (std::vector<std::string>{"./app", "--trace"}));
  EXPECT_EQ(TenantEnvironment(*o, "/stub", "")["REMORA_TRACE"], "1");
}

TEST(Run, RefusesBadQuotas) {
  EXPECT_FALSE(ParseRun({"--gpu-fraction", "0.5", "--gpu-memory", "1G", "--", "x"}).ok());
  EXPECT_FALSE(ParseRun({"--gpu-fraction", "1.5", "--", "x"}).ok());
  EXPECT_FALSE(ParseRun({"--gpu-fraction", "abc", "--", "x"}).ok());
  EXPECT_FALSE(ParseRun({"--gpu-memory", "2G", "--gpu-memory-limit", "1G", "--", "x"}).ok());
  EXPECT_FALSE(ParseRun({"--gpu-memory", "lots", "--", "x"}).ok());
  EXPECT_FALSE(ParseRun({"--frobnicate", "--", "x"}).ok());
  EXPECT_FALSE(ParseRun({"--gpu-fraction", "0.5"}).ok());
  EXPECT_TRUE(ParseRun({"--gpu-memory", "1Gi", "--gpu-memory-limit", "2Gi", "./x"}).ok());
}

TEST(Run, ComputeShareLimitAndPriority) {
  auto o = ParseRun(
      {"--gpu-compute", "0.25", "--gpu-compute-limit=0.5", "--priority", "low", "--", "./app"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  auto env = TenantEnvironment(*o, "/stub", "");
  EXPECT_EQ(env["REMORA_GPU_COMPUTE"], "0.25");
  EXPECT_EQ(env["REMORA_GPU_COMPUTE_LIMIT"], "0.5");
  EXPECT_EQ(env["REMORA_PRIORITY"], "low");
  EXPECT_FALSE(ParseRun({"--gpu-compute", "1.5", "--", "x"}).ok());
  EXPECT_FALSE(ParseRun({"--gpu-compute", "0.5", "--gpu-compute-limit", "0.4", "--", "x"}).ok());
  auto bad = ParseRun({"--priority", "urgent", "--", "x"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("high, normal or low"), std::string::npos);
}

}  // namespace
}  // namespace remora::cli

namespace remora::cli {
namespace {

// --remote-libs names the NVIDIA libraries the audit module answers with Remora's stubs.
TEST(Run, RemoteLibsGoToTheAuditModuleAndOnlyKnownOnes) {
  auto o = ParseRun({"--remote-libs", "cublas,cudnn", "--", "./app"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(TenantEnvironment(*o, "/stub", "")["REMORA_REMOTE_LIBS"], "cublas,cudnn");
  auto plain = ParseRun({"./app"});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(TenantEnvironment(*plain, "/stub", "").count("REMORA_REMOTE_LIBS"), 0u);
  EXPECT_TRUE(ParseRun({"--remote-libs=cudnn", "./app"}).ok());
  EXPECT_TRUE(ParseRun({"--remote-libs=none", "./app"}).ok());
  for (const char* bad : {"cufft", "cublas,", "cublas,,cudnn", "cuBLAS", "none,cublas"}) {
    auto r = ParseRun({"--remote-libs", bad, "--", "./app"});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("cublas and cudnn"), std::string::npos);
  }
}

// On the emulated GPU NVIDIA's cuBLAS and cuDNN cannot run: unless told otherwise, both are
// served by the server, and the audit module learns the device (for cuFFT and cuRAND).
TEST(Run, TheEmulatedGpuServesNvidiasLibrariesUnlessToldNone) {
  auto plain = ParseRun({"./app"});
  ASSERT_TRUE(plain.ok());
  plain->emulated_gpu = true;
  auto env = TenantEnvironment(*plain, "/stub", "");
  EXPECT_EQ(env["REMORA_REMOTE_LIBS"], "cublas,cudnn");
  EXPECT_EQ(env["REMORA_EMULATED_GPU"], "1");
  for (const char* told : {"cudnn", "none"}) {
    auto o = ParseRun({"--remote-libs", told, "./app"});
    ASSERT_TRUE(o.ok());
    o->emulated_gpu = true;
    EXPECT_EQ(TenantEnvironment(*o, "/stub", "")["REMORA_REMOTE_LIBS"], told);
  }
  plain->emulated_gpu = false;
  EXPECT_EQ(TenantEnvironment(*plain, "/stub", "").count("REMORA_EMULATED_GPU"), 0u);
}

TEST(Run, InstallsTheAuditModuleBeforeAnyOther) {
  auto o = ParseRun({"--check", "--", "./app"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->check);
  auto env = TenantEnvironment(*o, "/stub", "", "/other/audit.so");
  EXPECT_EQ(env["LD_AUDIT"], "/stub/libremora_confine.so:/other/audit.so");
  EXPECT_EQ(env["REMORA_STUB_DIR"], "/stub");
  EXPECT_EQ(TenantEnvironment(*o, "/stub", "")["LD_AUDIT"], "/stub/libremora_confine.so");
}

TEST(Run, PreloadsNvrtcsInterposerBeforeTheProgramsOwn) {
  auto o = ParseRun({"--", "./app"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(TenantEnvironment(*o, "/stub", "")["LD_PRELOAD"], "/stub/libremora_nvrtc.so");
  EXPECT_EQ(TenantEnvironment(*o, "/stub", "", "", "/mine.so")["LD_PRELOAD"],
            "/stub/libremora_nvrtc.so:/mine.so");
}

TEST(Run, CheckTableListsEachLibraryOnceInOrder) {
  const std::string table = CheckTable(
      "/nv/libcudart.so.13\tNVIDIA's, over Remora's libcuda.so.1\n"
      "/stub/libcuda.so.1\tRemora\n"
      "/nv/libcudart.so.13\tNVIDIA's, over Remora's libcuda.so.1\n"
      "garbage without a tab\n");
  EXPECT_EQ(table,
            "CUDA LIBRARY         SERVED BY\n"
            "/nv/libcudart.so.13  NVIDIA's, over Remora's libcuda.so.1\n"
            "/stub/libcuda.so.1   Remora\n");
  EXPECT_NE(CheckTable("").find("(none"), std::string::npos);
}

}  // namespace
}  // namespace remora::cli
