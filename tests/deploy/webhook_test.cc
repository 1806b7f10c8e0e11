// tests/deploy/webhook_test.cc - remora-webhook's answers to the AdmissionReview
// fixtures in webhook/: each NAME.json beside NAME.expect.json, which says whether
// the pod is allowed, the words a refusal must contain, and what the pod must look
// like once the API server has applied the patch.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "deploy/webhook/mutate.h"
#include "tests/deploy/json_patch.h"

namespace remora::webhook {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The cluster the fixtures' expectations assume (also remora-webhook's flags in
// webhook_https_test.cc).
Config TestConfig() {
  return Config{.gpu_memory_mib = 80000, .stub_host_dir = "/opt/remora/stub"};
}

json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(REMORA_WEBHOOK_FIXTURES)) {
    const std::string file = entry.path().filename().string();
    if (file.ends_with(".json") && !file.ends_with(".expect.json"))
      names.push_back(file.substr(0, file.size() - 5));
  }
  std::sort(names.begin(), names.end());
  return names;
}

const json* Named(const json& list, const std::string& name) {
  if (!list.is_array()) return nullptr;
  for (const json& e : list)
    if (e.value("name", "") == name) return &e;
  return nullptr;
}

int CountNamed(const json& list, const std::string& name) {
  int n = 0;
  if (list.is_array())
    for (const json& e : list) n += e.value("name", "") == name;
  return n;
}

// resources.limits or resources.requests of container `c`, empty if it has none.
json Members(const json& c, const char* kind) {
  const json::json_pointer ptr("/resources/" + std::string(kind));
  return c.contains(ptr) ? c[ptr] : json::object();
}

void CheckContainer(const std::string& name, const json& before, const json& after,
                    const json& want) {
  SCOPED_TRACE("container " + name);
  if (want.value("unchanged", false)) {
    EXPECT_EQ(after, before);
    return;
  }
  if (want.contains("limits")) {
    EXPECT_EQ(Members(after, "limits"), want["limits"]);
  }
  if (want.contains("requests")) {
    EXPECT_EQ(Members(after, "requests"), want["requests"]);
  }
  const json env = after.value("env", json::array());
  const json want_env = want.value("env", json::object());
  for (const auto& [var, value] : want_env.items()) {
    EXPECT_EQ(CountNamed(env, var), 1) << var;
    if (const json* e = Named(env, var)) {
      EXPECT_EQ(e->value("value", ""), value) << var;
    }
  }
  for (const json& var : want.value("absent_env", json::array()))
    EXPECT_EQ(Named(env, var.get<std::string>()), nullptr) << var;
  if (want.contains("env_count")) {
    EXPECT_EQ(env.size(), want["env_count"].get<size_t>());
  }
  for (const json& e : before.value("env", json::array())) {
    if (e.value("name", "") != "LD_LIBRARY_PATH") {
      EXPECT_NE(std::find(env.begin(), env.end(), e), env.end()) << "lost env " << e.dump();
    }
  }
  const json mounts = after.value("volumeMounts", json::array());
  if (want.value("mount", false)) {
    ASSERT_EQ(CountNamed(mounts, std::string(kStubVolume)), 1);
    const json& m = *Named(mounts, std::string(kStubVolume));
    EXPECT_EQ(m.value("mountPath", ""), kStubMountPath);
    EXPECT_TRUE(m.value("readOnly", false));
  }
  for (const json& other : want.value("mounts", json::array()))
    EXPECT_EQ(CountNamed(mounts, other.get<std::string>()), 1) << other;
  for (const char* field : {"image", "command", "ports", "readinessProbe"})
    EXPECT_EQ(after.value(field, json()), before.value(field, json())) << field;
}

class Fixture : public testing::TestWithParam<std::string> {};

TEST_P(Fixture, AnswerMatchesExpectation) {
  const fs::path dir(REMORA_WEBHOOK_FIXTURES);
  const json review = ReadJson(dir / (GetParam() + ".json"));
  ASSERT_TRUE(fs::exists(dir / (GetParam() + ".expect.json"))) << "no expectation";
  const json want = ReadJson(dir / (GetParam() + ".expect.json"));

  const Answer a = Review(review.dump(), TestConfig());
  ASSERT_EQ(a.http_status, 200) << a.body;
  const json got = json::parse(a.body);
  EXPECT_EQ(got["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(got["kind"], "AdmissionReview");
  const json& res = got["response"];
  EXPECT_EQ(res["uid"], review["request"]["uid"]);
  ASSERT_EQ(res["allowed"], want["allowed"]) << a.body;
  EXPECT_NE(a.summary.find(review["request"]["uid"].get<std::string>()), std::string::npos);

  if (!want["allowed"].get<bool>()) {
    EXPECT_FALSE(res.contains("patch"));
    EXPECT_EQ(res["status"]["code"], 400);
    const std::string message = res["status"].value("message", "");
    for (const json& word : want["message"])
      EXPECT_NE(message.find(word.get<std::string>()), std::string::npos)
          << "'" << word.get<std::string>() << "' not in: " << message;
    return;
  }
  ASSERT_EQ(res.contains("patch"), want["patched"].get<bool>()) << a.body;
  const json before = review["request"]["object"];
  json after = before;
  if (res.contains("patch")) {
    EXPECT_EQ(res["patchType"], "JSONPatch");
    const json patch = json::parse(test::DecodeBase64(res["patch"].get<std::string>()));
    try {
      test::ApplyPatch(after, patch);
    } catch (const std::exception& e) {
      FAIL() << e.what() << " in " << patch.dump();
    }
  }
  EXPECT_EQ(after["metadata"], before["metadata"]);
  if (!want["volume"].get<bool>()) {
    EXPECT_EQ(after, before);
    return;
  }
  const json volumes = after["spec"].value("volumes", json::array());
  ASSERT_EQ(CountNamed(volumes, std::string(kStubVolume)), 1);
  const json& v = *Named(volumes, std::string(kStubVolume));
  EXPECT_EQ(v["hostPath"]["path"], TestConfig().stub_host_dir);
  EXPECT_EQ(v["hostPath"]["type"], "Directory");
  for (const json& other : want.value("volumes", json::array()))
    EXPECT_EQ(CountNamed(volumes, other.get<std::string>()), 1) << other;

  const json& containers = after["spec"]["containers"];
  ASSERT_EQ(containers.size(), before["spec"]["containers"].size());
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string name = containers[i]["name"];
    const json& old = before["spec"]["containers"][i];
    if (want["containers"].contains(name))
      CheckContainer(name, old, containers[i], want["containers"][name]);
    else
      EXPECT_EQ(containers[i], old) << "container " << name << " is not in the expectation";
  }
}

INSTANTIATE_TEST_SUITE_P(Webhook, Fixture, testing::ValuesIn(FixtureNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(WebhookBody, NotAnAdmissionReviewIsHttp400) {
  for (
      const char* body :
      {"", "garbage", "[1,2]", "{}", R"({"apiVersion":"v1","kind":"Pod"})",
       R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
       R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":7})",
       R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":3}})",
       R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}})"}) {
    const Answer a = Review(body, TestConfig());
    EXPECT_EQ(a.http_status, 400) << body;
    EXPECT_NE(a.body.find("not an AdmissionReview"), std::string::npos) << body;
  }
}

TEST(WebhookBody, MalformedPodIsRefusedNotCrashed) {
  const std::string head =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
      R"("kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":)";
  const std::string ann = R"("metadata":{"annotations":{"remora.io/gpu-fraction":"0.5"}})";
  for (const std::string& object : std::vector<std::string>{
           "null", "[]", "{" + ann + "}", "{" + ann + R"(,"spec":{"containers":{}}})",
           "{" + ann + R"(,"spec":{"containers":[]}})",
           "{" + ann + R"(,"spec":{"containers":[{"image":"x"}]}})",
           "{" + ann + R"(,"spec":{"containers":[{"name":"a","env":{}}]}})",
           "{" + ann + R"(,"spec":{"containers":[{"name":"a","resources":{"limits":[]}}]}})",
           "{" + ann + R"(,"spec":{"volumes":{},"containers":[{"name":"a"}]}})",
           R"({"metadata":{"annotations":[]},"spec":{"containers":[{"name":"a"}]}})"}) {
    const Answer a = Review(head + object + "}}", TestConfig());
    ASSERT_EQ(a.http_status, 200) << object;
    const json res = json::parse(a.body)["response"];
    EXPECT_EQ(res["uid"], "u");
    EXPECT_FALSE(res["allowed"].get<bool>()) << object;
    EXPECT_FALSE(res["status"].value("message", "").empty()) << object;
  }
}

// Every value anywhere in a pod, swapped for one of the wrong type: the answer is
// still an AdmissionReview for that uid (allowed or refused), never a crash.
TEST(WebhookBody, WrongTypesAnywhereInThePodAreAnswered) {
  const json review = ReadJson(fs::path(REMORA_WEBHOOK_FIXTURES) / "existing-fields.json");
  const json flat = review["request"]["object"].flatten();
  int refused = 0;
  for (const auto& [pointer, value] : flat.items()) {
    const json::json_pointer leaf("/request/object" + pointer);
    // The value itself and the object or list holding it.
    for (const json::json_pointer& at : {leaf, leaf.parent_pointer()}) {
      for (const json& wrong : {json(7), json::array(), json("x")}) {
        json broken = review;
        broken[at] = wrong;
        const Answer a = Review(broken.dump(), TestConfig());
        ASSERT_EQ(a.http_status, 200) << at.to_string();
        const json res = json::parse(a.body)["response"];
        EXPECT_EQ(res["uid"], review["request"]["uid"]) << at.to_string();
        refused += !res["allowed"].get<bool>();
      }
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(WebhookBody, EveryTruncationIsHttp400) {
  const std::string body =
      ReadJson(fs::path(REMORA_WEBHOOK_FIXTURES) / "priority-high-training.json").dump();
  for (size_t n = 0; n < body.size(); ++n)
    ASSERT_EQ(Review(body.substr(0, n), TestConfig()).http_status, 400) << n;
}

TEST(WebhookBase64, MatchesRfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    EXPECT_EQ(Base64(plain), coded);
    EXPECT_EQ(test::DecodeBase64(coded), plain);
  }
}

TEST(WebhookAnnotations, FractionsAreExactAndScaleWithTheGpu) {
  for (uint64_t mib : {80000u, 81559u, 40960u}) {
    const Config cfg{.gpu_memory_mib = mib, .stub_host_dir = "/x"};
    for (uint64_t tenths = 1; tenths <= 10; ++tenths) {
      const std::string text = tenths == 10 ? "1" : "0." + std::to_string(tenths);
      Result<PodQuota> q = ParseAnnotations({{"remora.io/gpu-fraction", text}}, cfg);
      ASSERT_TRUE(q.ok()) << text << ": " << q.status().message();
      EXPECT_EQ(q->memory_mib, mib * tenths / 10) << text;
      EXPECT_EQ(q->compute_permille, tenths * 100) << text;
    }
  }
}

// With the device plugin's memory unit above 1 MiB, requests count its units,
// rounded up: a pod never gets less memory than its annotation asks for.
TEST(WebhookAnnotations, MemoryRequestsCountThePluginsUnits) {
  Config cfg = TestConfig();
  cfg.memory_unit_mib = 4;
  const std::string pod =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
      R"("kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":)"
      R"({"metadata":{"name":"p","annotations":{"remora.io/gpu-memory":"1025Mi"}},)"
      R"("spec":{"containers":[{"name":"c","image":"i"}]}}}})";
  const Answer a = Review(pod, cfg);
  ASSERT_EQ(a.http_status, 200) << a.body;
  const json r = json::parse(a.body)["response"];
  ASSERT_TRUE(r["allowed"].get<bool>()) << a.body;
  const std::string patch = test::DecodeBase64(r["patch"].get<std::string>());
  EXPECT_NE(patch.find(R"("remora.io/gpu-memory":"257")"), std::string::npos) << patch;
}

TEST(WebhookAnnotations, MemoryRoundsUpToWholeMiB) {
  const Config cfg = TestConfig();
  const std::pair<const char*, uint64_t> cases[] = {
      {"1073741824", 1024}, {"512Mi", 512}, {"4096Mi", 4096}, {"1", 1}, {"1048577", 2}};
  for (const auto& [text, mib] : cases) {
    Result<PodQuota> q = ParseAnnotations({{"remora.io/gpu-memory", text}}, cfg);
    ASSERT_TRUE(q.ok()) << text << ": " << q.status().message();
    EXPECT_EQ(q->memory_mib, mib) << text;
    EXPECT_EQ(q->compute_permille, 0u) << text;
  }
}

}  // namespace
}  // namespace remora::webhook
