// tests/server/device_lock_test.cc - one server per GPU: the lock file's contract.
#include "server/device_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace remora::server {
namespace {

class DeviceLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/remora-lock-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    ::unlink((dir_ + "/remora-gpu-a.lock").c_str());
    ::unlink((dir_ + "/remora-gpu-b.lock").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(DeviceLockTest, TheHolderWritesItsPidAndASecondIsRefusedNamingIt) {
  auto first = DeviceLock::Acquire(dir_, "gpu-a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->held());
  std::ifstream f(first->path());
  long pid = 0;
  f >> pid;
  EXPECT_EQ(pid, ::getpid());
  auto second = DeviceLock::Acquire(dir_, "gpu-a");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), err::kDevicesUnavailable);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.status().message();
  auto other = DeviceLock::Acquire(dir_, "gpu-b");  // another GPU is free
  EXPECT_TRUE(other.ok()) << other.status().ToString();
}

TEST_F(DeviceLockTest, ReleasedWhenTheHolderGoesHoweverItGoes) {
  {
    auto first = DeviceLock::Acquire(dir_, "gpu-a");
    ASSERT_TRUE(first.ok());
  }
  auto again = DeviceLock::Acquire(dir_, "gpu-a");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  again = DeviceLock();  // released by assignment too

  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // holds the lock until killed
    auto held = DeviceLock::Acquire(dir_, "gpu-a");
    char c = held.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto refused = DeviceLock::Acquire(dir_, "gpu-a");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("pid " + std::to_string(child)), std::string::npos)
      << refused.status().message();
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  auto after = DeviceLock::Acquire(dir_, "gpu-a");
  EXPECT_TRUE(after.ok()) << after.status().ToString();
}

TEST_F(DeviceLockTest, AFolderThatCannotHoldTheFileIsAnInitializationError) {
  auto r = DeviceLock::Acquire(dir_ + "/missing", "gpu-a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), err::kInitializationError);
}

}  // namespace
}  // namespace remora::server
