// tests/server/executor_test.cc - the executor against its dispatch queue, on the emulated
// device: every item it issues is one the queue handed out (Next, IssueNow, Grant), so the
// queue's bounds, shares and limits see all of a tenant's work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/fair_queue.h"
#include "server/device.h"
#include "server/driver_table.h"
#include "server/executor.h"
#include "server/memops.h"

namespace remora::server {
namespace {

using namespace std::chrono_literals;

// A FairQueue that counts, per tenant, the items it handed out, got back unused and was
// told were done.
class CountingQueue final : public sched::DispatchQueue {
 public:
  struct Counts {
    uint64_t handed = 0, returned = 0, done = 0;
  };
  explicit CountingQueue(sched::FairOptions o) : q_(o) {}
  Counts Of(sched::TenantId t) {
    std::lock_guard lock(mu_);
    return counts_[t];
  }

  void Ready(sched::TenantId t, uint64_t now) override { q_.Ready(t, now); }
  std::optional<sched::TenantId> Next(uint64_t now) override {
    std::optional<sched::TenantId> t = q_.Next(now);
    if (t) Add(*t, &Counts::handed, 1);
    return t;
  }
  using DispatchQueue::Done;
  void Done(sched::TenantId t, uint32_t items, uint64_t gpu_ns, uint64_t now) override {
    Add(t, &Counts::done, items);
    q_.Done(t, items, gpu_ns, now);
  }
  void Remove(sched::TenantId t) override { q_.Remove(t); }
  bool IssueNow(sched::TenantId t, uint64_t now) override {
    const bool go = q_.IssueNow(t, now);
    if (go) Add(t, &Counts::handed, 1);
    return go;
  }
  void Return(sched::TenantId t, uint32_t items) override {
    Add(t, &Counts::returned, items);
    q_.Return(t, items);
  }
  bool WaitsForDone() const override { return q_.WaitsForDone(); }
  bool WaitsForDrain() const override { return q_.WaitsForDrain(); }
  void Configure(sched::TenantId t, const sched::Share& s) override { q_.Configure(t, s); }
  void ConfigureProject(sched::ProjectId p, double s) override { q_.ConfigureProject(p, s); }
  std::optional<uint64_t> NextEligibleAt(uint64_t now) const override {
    return q_.NextEligibleAt(now);
  }
  uint64_t stall_releases() const override { return q_.stall_releases(); }

 private:
  // The executor calls the queue under its own lock; the test reads from its thread.
  void Add(sched::TenantId t, uint64_t Counts::*field, uint64_t n) {
    std::lock_guard lock(mu_);
    counts_[t].*field += n;
  }
  sched::FairQueue q_;
  std::mutex mu_;
  std::map<sched::TenantId, Counts> counts_;
};

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto drv = DriverTable::Load(DeviceKind::kEmu, REMORA_EMU_DIR);
    ASSERT_TRUE(drv.ok()) << drv.status().ToString();
    auto dev = Device::Open(std::move(drv).value());
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    device_ = std::move(dev).value();
    sched::FairOptions o;
    o.min_in_flight = 2;  // as the server runs it
    auto q = std::make_unique<CountingQueue>(o);
    queue_ = q.get();
    executor_ = std::make_unique<Executor>(*device_, std::move(q), nullptr);
  }
  void TearDown() override {
    for (auto& t : tenants_) t.reset();
    executor_.reset();
    device_.reset();
  }

  // Gives tenant `t` stream `id` on a new CUstream. REQUIRES: a Use.
  void AddStream(Executor::Tenant& t, uint64_t id) {
    CUstream s = nullptr;
    ASSERT_EQ(device_->drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    t.AddStream(id, s, false);
  }
  // Tenant `t` gives its streams `ids` back once their work is done; it is kept until TearDown.
  // REQUIRES: a Use.
  void Leave(std::shared_ptr<Executor::Tenant> t, std::initializer_list<uint64_t> ids) {
    for (uint64_t id : ids) {
      std::promise<void> gone;
      t->RemoveStream(id, [&](CUstream cs) {
        (void)device_->drv().cuStreamDestroy(cs);
        gone.set_value();
      });
      gone.get_future().wait();
    }
    std::lock_guard lock(mu_);
    tenants_.push_back(std::move(t));
  }

  // A tenant submits `n` items on a stream of its own from this thread, then waits for them.
  void Submit(uint64_t id, int n) {
    Device::Use use = device_->Enter();
    auto t = executor_->Join(id, "t" + std::to_string(id), {});
    AddStream(*t, 1);
    for (int i = 0; i < n; ++i) ASSERT_TRUE(t->Submit(1, [](CUstream) { return OkStatus(); }).ok());
    std::promise<Status> done;
    t->WhenDone(1, [&](const Status& st) { done.set_value(st); });
    EXPECT_TRUE(done.get_future().get().ok());
    // The charges come as the executor notices each group's end.
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (queue_->Of(id).done < static_cast<uint64_t>(n) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(1ms);
    Leave(std::move(t), {1});
  }

  std::unique_ptr<Device> device_;
  CountingQueue* queue_ = nullptr;
  std::unique_ptr<Executor> executor_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Executor::Tenant>> tenants_;  // guarded by mu_
};

// A tenant alone issues on its own thread under grants; each item it issues took one of what
// the queue handed out, so what it was told is done is what it handed out and did not get
// back. An item issued beyond them would be work no bound, share or limit ever saw.
TEST_F(ExecutorTest, EveryIssuedItemWasHandedOutByTheQueue) {
  constexpr int kItems = 500;
  Submit(1, kItems);
  const CountingQueue::Counts c = queue_->Of(1);
  EXPECT_GE(c.done, static_cast<uint64_t>(kItems));
  EXPECT_EQ(c.done, c.handed - c.returned)
      << "handed out " << c.handed << ", returned " << c.returned;
}

// Two tenants at once, each on its own thread: grants pass between them as each becomes
// ready, and still every item was handed out once.
TEST_F(ExecutorTest, TwoTenantsEachIssueOnlyWhatTheyWereHanded) {
  constexpr int kItems = 2000;
  std::thread a([&] { Submit(1, kItems); });
  std::thread b([&] { Submit(2, kItems); });
  a.join();
  b.join();
  for (sched::TenantId t : {1, 2}) {
    const CountingQueue::Counts c = queue_->Of(t);
    EXPECT_GE(c.done, static_cast<uint64_t>(kItems)) << "tenant " << t;
    EXPECT_EQ(c.done, c.handed - c.returned)
        << "tenant " << t << ": handed out " << c.handed << ", returned " << c.returned;
  }
}

// A stream that waits on the device for what another stream of its tenant does (here a host
// function that returns once the other stream's item has been issued; on a GPU, a wait for a
// value in memory) fills the tenant's in-flight bound with work that cannot finish: the
// other stream's item still goes, or the tenant hangs.
TEST_F(ExecutorTest, AStreamWaitingForAnotherDoesNotHoldItBack) {
  Device::Use use = device_->Enter();
  auto t = executor_->Join(1, "t1", {});
  AddStream(*t, 1);  // the waiter
  AddStream(*t, 2);  // the writer
  struct Flag {
    std::mutex mu;
    std::condition_variable cv;
    bool set = false;
    void Set() {
      std::lock_guard lock(mu);
      set = true;
      cv.notify_all();
    }
  } flag;
  auto wait = [](void* p) {
    auto* f = static_cast<Flag*>(p);
    std::unique_lock lock(f->mu);
    f->cv.wait(lock, [f] { return f->set; });
  };
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(t->Submit(1, [&](CUstream s) {
                   return device_->Check(device_->drv().cuLaunchHostFunc(s, wait, &flag),
                                         "cuLaunchHostFunc");
                 }).ok());
  ASSERT_TRUE(t->Submit(2, [&](CUstream) {
                 flag.Set();
                 return OkStatus();
               }).ok());
  std::promise<Status> done;
  t->WhenDone(std::nullopt, [&](const Status& st) { done.set_value(st); });
  const bool finished = done.get_future().wait_for(20s) == std::future_status::ready;
  EXPECT_TRUE(finished) << "the writer's item was never issued";
  EXPECT_GE(executor_->StallReleases(), 1u) << "the writer went past the stalled bound";
  if (!finished) flag.Set();  // let the device go, so the test can end
  Leave(std::move(t), {1, 2});
}

// A wait the server runs as a kernel of its own (the driver refuses memory operations on pool
// memory, as an H200 does) ends once its tenant's stop word is raised, met or not: a tenant
// that left with a wait nobody meets frees its multiprocessor.
TEST_F(ExecutorTest, ARaisedStopEndsAWaitKernel) {
  Device::Use use = device_->Enter();
  const DriverTable& drv = device_->drv();
  CUstream s = nullptr;
  ASSERT_EQ(drv.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  Result<CUdeviceptr> value = executor_->Allocate(4);
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  ASSERT_EQ(drv.cuMemsetD32(*value, 0, 1), CUDA_SUCCESS);
  WaitStop stop;
  ASSERT_TRUE(
      IssueMemOp(*device_, s, MemOp::kWait32, *value, 1, CU_STREAM_WAIT_VALUE_EQ, &stop).ok());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(drv.cuStreamQuery(s), CUDA_ERROR_NOT_READY) << "nothing met the wait";
  stop.Raise();
  CUresult r = CUDA_ERROR_NOT_READY;
  for (auto end = std::chrono::steady_clock::now() + 10s;
       r == CUDA_ERROR_NOT_READY && std::chrono::steady_clock::now() < end;)
    r = drv.cuStreamQuery(s);
  EXPECT_EQ(r, CUDA_SUCCESS) << "the wait went on after its stop was raised";
  if (r == CUDA_ERROR_NOT_READY) (void)drv.remoraEmuCancelStream(s);
  ASSERT_EQ(drv.cuStreamSynchronize(s), CUDA_SUCCESS);
  stop.Release(*device_);
  EXPECT_TRUE(executor_->Free(*value).ok());
  EXPECT_EQ(drv.cuStreamDestroy(s), CUDA_SUCCESS);
}

// A wait no doorbell announces is polled at a fixed fraction of its age: a young one at the
// shortest interval, an old one at the longest, and in between never later than 1/64 of how
// long it has waited, so it is found at most that much after its end.
TEST(AgedPollIntervalTest, IsAFractionOfTheWaitsAgeWithinTheExecutorsIntervals) {
  using std::chrono::microseconds;
  EXPECT_EQ(AgedPollInterval(0), microseconds(20));
  EXPECT_EQ(AgedPollInterval(500'000), microseconds(20));  // a GPU waiter's spin: 500 us
  EXPECT_EQ(AgedPollInterval(3'200'000), microseconds(50));
  EXPECT_EQ(AgedPollInterval(3'600'000'000'000), microseconds(1000));
  for (uint64_t age = 1'280'000; age <= 64'000'000; age += 97'000)
    EXPECT_LE(AgedPollInterval(age).count(), static_cast<int64_t>(age / 64)) << age;
}

}  // namespace
}  // namespace remora::server
