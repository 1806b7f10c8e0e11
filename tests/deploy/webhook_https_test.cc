// tests/deploy/webhook_https_test.cc - remora-webhook as the API server meets it: a
// process serving HTTPS with a certificate made here, answering fixtures, health
// checks and garbage, logging one line per request and stopping on SIGTERM.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/deploy/json_patch.h"

extern char** environ;

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A self-signed certificate for 127.0.0.1 and localhost, made once with openssl(1).
class Certs {
 public:
  Certs() {
    char tmpl[] = "/tmp/remora-webhook-test-XXXXXX";
    if (!mkdtemp(tmpl)) return;
    dir_ = tmpl;
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
        "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
        key() + " -out " + cert() + " 2>" + (dir_ / "openssl.log").string();
    ok_ = std::system(cmd.c_str()) == 0;
    std::ofstream(garbage()) << "-----BEGIN CERTIFICATE-----\nnot a certificate\n";
  }
  ~Certs() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  bool ok() const { return ok_; }
  std::string cert() const { return (dir_ / "cert.pem").string(); }
  std::string key() const { return (dir_ / "key.pem").string(); }
  std::string garbage() const { return (dir_ / "garbage.pem").string(); }
  std::string log() const { return ReadFile(dir_ / "openssl.log"); }

 private:
  fs::path dir_;
  bool ok_ = false;
};

const Certs& TheCerts() {
  static const Certs certs;
  return certs;
}

// remora-webhook running as a child process whose stderr is read back.
class Webhook {
 public:
  explicit Webhook(std::vector<std::string> args) {
    args.insert(args.begin(), REMORA_WEBHOOK_BIN);
    int fds[2];
    if (pipe(fds) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    err_ = fds[0];
  }
  ~Webhook() {
    if (pid_ > 0) Stop();
    if (err_ >= 0) close(err_);
  }
  Webhook(const Webhook&) = delete;
  Webhook& operator=(const Webhook&) = delete;

  // Reads stderr up to the "listening" line; the port it names, or -1 if the
  // process ended first.
  int WaitListening() {
    const std::string marker = "event=listening addr=127.0.0.1:";
    while (true) {
      if (const size_t at = log_.find(marker); at != std::string::npos) {
        const size_t end = log_.find_first_not_of("0123456789", at + marker.size());
        if (end != std::string::npos) return std::atoi(log_.c_str() + at + marker.size());
      }
      if (!ReadSome()) return -1;
    }
  }
  // Sends SIGTERM (unless it already ended), reads stderr to its end, returns
  // the exit status (-1 if it was killed by a signal).
  int Stop(bool terminate = true) {
    if (terminate) kill(pid_, SIGTERM);
    while (ReadSome()) {
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& log() const { return log_; }

 private:
  bool ReadSome() {
    char buf[4096];
    const ssize_t n = read(err_, buf, sizeof buf);
    if (n <= 0) return false;
    log_.append(buf, static_cast<size_t>(n));
    return true;
  }
  pid_t pid_ = -1;
  int err_ = -1;
  std::string log_;
};

std::vector<std::string> GoodFlags() {
  return {"--listen",        "127.0.0.1:0",     "--tls-cert",       TheCerts().cert(),
          "--tls-key",       TheCerts().key(),  "--gpu-memory-mib", "80000",
          "--stub-host-dir", "/opt/remora/stub"};
}

std::unique_ptr<httplib::SSLClient> Client(int port) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  c->set_ca_cert_path(TheCerts().cert().c_str());
  c->enable_server_certificate_verification(true);
  return c;
}

TEST(Https, ServesFixturesHealthAndGarbageThenStops) {
  ASSERT_TRUE(TheCerts().ok()) << TheCerts().log();
  Webhook hook(GoodFlags());
  const int port = hook.WaitListening();
  ASSERT_GT(port, 0) << hook.log();
  auto client = Client(port);

  auto health = client->Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");

  const fs::path dir(REMORA_WEBHOOK_FIXTURES);
  const json review = json::parse(ReadFile(dir / "dynamic-0.25-0.8.json"));
  auto mutate = client->Post("/mutate", review.dump(), "application/json");
  ASSERT_TRUE(mutate) << httplib::to_string(mutate.error());
  ASSERT_EQ(mutate->status, 200) << mutate->body;
  EXPECT_EQ(mutate->get_header_value("Content-Type"), "application/json");
  const json answer = json::parse(mutate->body);
  EXPECT_EQ(answer["kind"], "AdmissionReview");
  EXPECT_EQ(answer["response"]["uid"], review["request"]["uid"]);
  ASSERT_TRUE(answer["response"]["allowed"].get<bool>()) << mutate->body;
  json pod = review["request"]["object"];
  remora::test::ApplyPatch(
      pod, json::parse(remora::test::DecodeBase64(answer["response"]["patch"].get<std::string>())));
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["remora.io/gpu-memory"], "20000");  // 0.25 of 80000 MiB
  EXPECT_EQ(c["resources"]["limits"]["remora.io/gpu-compute"], "250");
  EXPECT_EQ(pod["spec"]["volumes"][0]["hostPath"]["path"], "/opt/remora/stub");

  const json bad = json::parse(ReadFile(dir / "conflict-fraction-memory.json"));
  auto refused = client->Post("/mutate", bad.dump(), "application/json");
  ASSERT_TRUE(refused);
  ASSERT_EQ(refused->status, 200);
  const json no = json::parse(refused->body)["response"];
  EXPECT_FALSE(no["allowed"].get<bool>());
  EXPECT_EQ(no["status"]["code"], 400);
  EXPECT_NE(no["status"]["message"].get<std::string>().find("conflict"), std::string::npos);

  auto garbage = client->Post("/mutate", "{\"this is\": not json", "application/json");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400);
  EXPECT_NE(garbage->body.find("not an AdmissionReview"), std::string::npos);

  EXPECT_EQ(hook.Stop(), 0) << hook.log();
  const std::string& log = hook.log();
  for (const json* r : {&review, &bad}) {
    const std::string uid = (*r)["request"]["uid"];
    const size_t at = log.find("uid=" + uid);
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_EQ(log.find("uid=" + uid, at + 1), std::string::npos) << "two lines for one request";
  }
  EXPECT_NE(log.find("allowed=false reason=\"remora.io/gpu-fraction"), std::string::npos) << log;
  EXPECT_NE(log.find("http=400"), std::string::npos) << log;
  EXPECT_NE(log.find("event=stopped"), std::string::npos) << log;
}

TEST(Https, PlainHttpIsNotServed) {
  ASSERT_TRUE(TheCerts().ok()) << TheCerts().log();
  Webhook hook(GoodFlags());
  const int port = hook.WaitListening();
  ASSERT_GT(port, 0) << hook.log();
  httplib::Client plain("127.0.0.1", port);
  auto res = plain.Get("/healthz");
  EXPECT_FALSE(res && res->status == 200);
  EXPECT_EQ(hook.Stop(), 0) << hook.log();
}

TEST(Https, BadFlagsExitWithAReason) {
  ASSERT_TRUE(TheCerts().ok()) << TheCerts().log();
  struct Case {
    std::vector<std::string> flags;
    int status;
    std::string words;
  };
  const std::string cert = TheCerts().cert(), key = TheCerts().key();
  const Case cases[] = {
      {{"--tls-cert", cert}, 2, "--tls-key"},
      {{"--tls-cert", cert, "--tls-key", "/nonexistent/key.pem"}, 2, "/nonexistent/key.pem"},
      {{"--tls-cert", cert, "--tls-key", key, "--listen", "8443"}, 2, "HOST:PORT"},
      {{"--tls-cert", cert, "--tls-key", key, "--gpu-memory-mib", "lots"}, 2, "--gpu-memory-mib"},
      {{"--tls-cert", cert, "--tls-key", key, "--stub-host-dir", "rel"}, 2, "absolute"},
      {{"--tls-cert", cert, "--tls-key", key, "--frobnicate", "1"}, 2, "unknown flag"},
      {{"--tls-cert", TheCerts().garbage(), "--tls-key", key, "--listen", "127.0.0.1:0"},
       1,
       "cannot load the TLS certificate"},
  };
  for (const Case& c : cases) {
    Webhook hook(c.flags);
    EXPECT_EQ(hook.Stop(/*terminate=*/false), c.status) << hook.log();
    EXPECT_NE(hook.log().find(c.words), std::string::npos) << hook.log();
  }
}

}  // namespace
