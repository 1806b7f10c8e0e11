// tests/server/lifecycle_test.cc - sessions that end badly: a loan reclaimed mid-launch, a device
// fault, a thousand idle sessions, a client that dies; the server keeps serving the rest.
#include "tests/server/harness.h"

namespace remora {
namespace {

using namespace server_test;

// A loan taken back while the borrower's kernels are queued and running, writing
// into the borrowed memory: the owner's allocation succeeds, the borrower hears
// why, others are served meanwhile, the loan comes back once the borrower's
// work has left the device, and memory handed on afterwards keeps what its new
// owner writes (no kernel of the borrower's runs on into it).
TEST_F(ServerTest, ReclaimWhileTheBorrowerIsMidLaunchLosesNoData) {
  auto borrower = Client::Connect(path_);  // no quota: request 0, limit everything
  ASSERT_TRUE(borrower);
  ASSERT_EQ(borrower->welcome_status(), 0);
  const uint64_t usable = borrower->welcome().memory_limit();
  const uint64_t loan = borrower->Malloc(usable / 4 * 3);
  ASSERT_NE(loan, 0u);
  const uint64_t scribble =
      LoadKernel(*borrower, kScribblePtx, sizeof kScribblePtx, "_Z8scribblePjjj");
  ASSERT_NE(scribble, 0u);
  std::string params(16, '\0');
  const uint32_t iters = 300'000, mark = 0xB0B0B0B0;
  std::memcpy(params.data(), &loan, 8);
  std::memcpy(params.data() + 8, &iters, 4);
  std::memcpy(params.data() + 12, &mark, 4);
  for (int i = 0; i < 16; ++i) borrower->Post(CallId::kLaunchKernel, OneThread(scribble, params));
  ASSERT_EQ(borrower->Call(CallId::kStreamQuery, v1::StreamRequest()), err::kNotReady)
      << "the borrower's kernels should still be running";

  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.5);
  auto owner = Client::Connect(path_, h);
  ASSERT_TRUE(owner);
  ASSERT_EQ(owner->welcome_status(), 0);
  auto bystander = Client::Connect(path_);
  ASSERT_TRUE(bystander);
  ASSERT_EQ(bystander->welcome_status(), 0);
  const uint64_t scratch = bystander->Malloc(4096);
  ASSERT_NE(scratch, 0u);
  // Others are served while the borrower's long kernels run.
  {
    v1::MemsetRequest m;
    m.set_dst(scratch);
    m.set_size(4096);
    m.set_value(7);
    ASSERT_EQ(bystander->Call(CallId::kMemset, m), 0) << bystander->last().message();
    ASSERT_EQ(borrower->Call(CallId::kStreamQuery, v1::StreamRequest()), err::kNotReady)
        << "the borrower's kernels should still be running";
  }
  // Within its request: the loan goes. The claim waits for the borrower's work
  // to leave the device; the bystander's calls meanwhile are all served, correctly. (How
  // many fall within the claim depends on how fast the borrower's kernels are stopped:
  // the emulated GPU cancels them at once.)
  const uint64_t first = usable / 5 * 2;
  std::atomic<bool> claimed{false};
  uint64_t owned = 0;
  std::thread claim([&] {
    owned = owner->Malloc(first);
    claimed = true;
  });
  for (uint32_t i = 0; !claimed; ++i) {
    v1::MemsetRequest m;
    m.set_dst(scratch);
    m.set_size(4096);
    m.set_value(i & 0xff);
    v1::MemcpyDtoHRequest d;
    d.set_src(scratch + 4000);
    d.set_size(1);
    v1::MemcpyDtoHReply b;
    const bool ok = bystander->Call(CallId::kMemset, m) == 0 &&
                    bystander->Call(CallId::kMemcpyDtoH, d, &b) == 0 &&
                    b.data() == std::string(1, static_cast<char>(i & 0xff));
    ASSERT_TRUE(ok) << "the bystander was not served: " << bystander->last().message();
  }
  claim.join();
  ASSERT_NE(owned, 0u);
  const std::string why = borrower->WaitEvicted();
  EXPECT_NE(why.find(owner->welcome().tenant()), std::string::npos) << why;
  EXPECT_LT(borrower->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // the session is over

  // The loan is free again once the borrower's session has closed.
  v1::Hello admin;
  admin.set_admin(true);
  auto root = Client::Connect(path_, admin);
  ASSERT_TRUE(root);
  for (int i = 0; i < 400; ++i) {
    v1::TenantList list;
    ASSERT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
    if (list.tenants_size() == 2) break;
    std::this_thread::sleep_for(50ms);
  }
  v1::MallocRequest half;
  half.set_size(usable / 2);
  v1::MallocReply got_half;
  EXPECT_EQ(bystander->Call(CallId::kMalloc, half, &got_half), 0)
      << "the borrower's " << usable / 4 * 3 << " bytes did not come back";

  // The owner's second allocation may reuse where the borrower's kernels wrote.
  const uint64_t second = usable / 20;
  const uint64_t mine = owner->Malloc(second);
  ASSERT_NE(mine, 0u);
  const uint64_t at = mine <= loan && loan + 4096 <= mine + second ? loan : mine;
  v1::MemsetRequest fill;
  fill.set_dst(at);
  fill.set_size(4096);
  fill.set_value(0x11);
  ASSERT_EQ(owner->Call(CallId::kMemset, fill), 0) << owner->last().message();
  std::this_thread::sleep_for(300ms);  // a scribbler still running would show by now
  v1::MemcpyDtoHRequest back;
  back.set_src(at);
  back.set_size(4096);
  v1::MemcpyDtoHReply data;
  ASSERT_EQ(owner->Call(CallId::kMemcpyDtoH, back, &data), 0) << owner->last().message();
  EXPECT_EQ(data.data(), std::string(4096, '\x11'))
      << "the owner's memory changed after it wrote it (the borrower's kernel ran on)";
}

// A device fault breaks the context for every tenant, as on a GPU; the server
// names the tenant whose kernel faulted, rebuilds the context, tells the other
// tenants (whose state is gone) why, and serves new tenants at once.
TEST_F(ServerTest, ADeviceFaultNamesTheCulpritAndNewTenantsAreServed) {
  v1::Hello culprit_hello, bystander_hello, newcomer_hello;
  culprit_hello.set_program("culprit");
  bystander_hello.set_program("bystander");
  newcomer_hello.set_program("newcomer");
  auto a = Client::Connect(path_, culprit_hello);
  auto b = Client::Connect(path_, bystander_hello);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->welcome_status(), 0);
  ASSERT_NE(b->Malloc(1 << 20), 0u);

  uint64_t bad = LoadKernel(*a, kFaultPtx, sizeof kFaultPtx, "_Z3badv");
  ASSERT_NE(bad, 0u);
  a->Post(CallId::kLaunchKernel, OneThread(bad, ""));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kIllegalAddress);

  // The bystander's state died with the context; its calls say whose fault it was.
  bool named = false;
  for (int i = 0; i < 200 && !named; ++i) {
    // MemGetInfo is answered from the ledger: until the rebuild reaches this
    // session it may still succeed; after it, it fails like every call.
    const int code = b->Call(CallId::kMemGetInfo, v1::Empty());
    named = code == err::kIllegalAddress &&
            b->last().message().find("caused by culprit-") != std::string::npos;
    if (!named) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(named) << b->last().message();
  v1::MallocRequest m;
  m.set_size(4096);
  EXPECT_EQ(b->Call(CallId::kMalloc, m), err::kIllegalAddress);  // sticky

  // A new tenant gets a working device: its kernel runs and computes.
  auto c = Client::Connect(path_, newcomer_hello);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  uint64_t p = c->Malloc(4);
  ASSERT_NE(p, 0u);
  v1::MemcpyHtoDRequest h;
  h.set_dst(p);
  h.set_size(4);
  h.mutable_src()->set_data(std::string("\x29\0\0\0", 4));  // 41
  ASSERT_EQ(c->Call(CallId::kMemcpyHtoD, h), 0);
  uint64_t add = LoadKernel(*c, kAddPtx, sizeof kAddPtx, "_Z3addPi");
  ASSERT_NE(add, 0u);
  c->Post(CallId::kLaunchKernel, OneThread(add, std::string(reinterpret_cast<char*>(&p), 8)));
  v1::MemcpyDtoHRequest d;
  d.set_src(p);
  d.set_size(4);
  v1::MemcpyDtoHReply out;
  ASSERT_EQ(c->Call(CallId::kMemcpyDtoH, d, &out), 0);
  ASSERT_EQ(out.data().size(), 4u);
  EXPECT_EQ(out.data()[0], 42);
  EXPECT_EQ(server_->device().last_fault().culprit.rfind("culprit-", 0), 0u)
      << server_->device().last_fault().culprit;
  EXPECT_GE(server_->device().epoch(), 1u);
}

// What a tenant's kernels printed and no reply carried yet goes with its eviction: an assert's
// lines reach the program even when the eviction that follows the fault overtakes the reply of
// the call that waited for the kernel.
TEST_F(ServerTest, AnEvictionCarriesTheDeviceOutputNotYetSent) {
  v1::Hello hello;
  hello.set_program("printer");
  auto a = Client::Connect(path_, hello);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  std::shared_ptr<server::Session> session;
  // listed() is the barrier after which a session's name may be read from another thread.
  for (int i = 0; i < 500 && !session; ++i) {
    for (const auto& s : server_->Sessions())
      if (s->listed() && s->who().tenant.rfind("printer-", 0) == 0) session = s;
    if (!session) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(session);
  session->output().Append("file.cu:7: kernel: block: [1,0,0], thread: [5,0,0] Assertion failed\n");
  ASSERT_TRUE(session->Evict("the GPU context was lost", err::kAssert));
  const v1::Evicted e = a->WaitEvictedMessage();
  EXPECT_EQ(e.code(), err::kAssert);
  EXPECT_EQ(e.device_output(),
            "file.cu:7: kernel: block: [1,0,0], thread: [5,0,0] Assertion failed\n");
}

// A thousand idle tenants cost no thread each (a fixed pool serves them all),
// and once they leave, every thread and descriptor they cost is gone.
TEST_F(ServerTest, AThousandIdleSessionsHoldNoThreadEachAndLeaveNothing) {
  rlimit nofile{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
  nofile.rlim_cur = nofile.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &nofile), 0);
  constexpr size_t kSessions = 1000;
  if (nofile.rlim_cur < 4 * kSessions + 64) GTEST_SKIP() << "too few descriptors allowed";
  const size_t threads_before = CountThreads(), fds_before = CountFds();
  std::vector<std::unique_ptr<Client>> clients;
  for (size_t i = 0; i < kSessions; ++i) {
    clients.push_back(Client::Connect(path_));
    ASSERT_TRUE(clients.back()) << "session " << i;
    ASSERT_EQ(clients.back()->welcome_status(), 0) << "session " << i;
  }
  ASSERT_TRUE(WaitForSessions(kSessions, 10s));
  // Idle: some time for anything lazily started to settle.
  std::this_thread::sleep_for(200ms);
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_LE(CountThreads(), threads_before + 4 * cores + 16) << "threads grew with idle sessions";
  // Every session still answers.
  for (size_t i = 0; i < kSessions; i += 97)
    EXPECT_EQ(clients[i]->Call(CallId::kStreamQuery, v1::StreamRequest()), 0) << "session " << i;
  clients.clear();
  ASSERT_TRUE(WaitForSessions(0, 30s));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until &&
         (CountThreads() > threads_before || CountFds() > fds_before))
    std::this_thread::sleep_for(20ms);
  EXPECT_LE(CountThreads(), threads_before) << "threads left behind";
  EXPECT_LE(CountFds(), fds_before) << "descriptors left behind";
}

TEST_F(ServerTest, DeadClientIsReapedWithinASecondAndOthersKeepRunning) {
  auto survivor = Client::Connect(path_);
  ASSERT_TRUE(survivor);
  uint64_t keep = survivor->Malloc(1 << 20);
  ASSERT_NE(keep, 0u);
  v1::MemGetInfoReply before;
  ASSERT_EQ(survivor->Call(CallId::kMemGetInfo, v1::Empty(), &before), 0);

  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    auto c = Client::Connect(path_);
    if (!c) _exit(1);
    for (int i = 0; i < 8; ++i) c->Malloc(32 << 20);
    v1::MemsetRequest m;
    m.set_dst(c->Malloc(1 << 20));
    m.set_size(1 << 20);
    for (int i = 0; i < 1000; ++i) c->Post(CallId::kMemsetAsync, m);  // killed mid-stream
    char x = 1;
    (void)!write(ready[1], &x, 1);
    pause();
    _exit(0);
  }
  char x;
  ASSERT_EQ(read(ready[0], &x, 1), 1);
  ASSERT_TRUE(WaitForSessions(2, 2s));
  v1::MemGetInfoReply during;
  ASSERT_EQ(survivor->Call(CallId::kMemGetInfo, v1::Empty(), &during), 0);
  EXPECT_LT(during.free(), before.free());  // the child holds memory
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitForSessions(1, 1000ms)) << "the dead tenant was not reaped within 1 s";
  EXPECT_LE(std::chrono::steady_clock::now() - killed_at, 1000ms);
  v1::MemGetInfoReply after;
  ASSERT_EQ(survivor->Call(CallId::kMemGetInfo, v1::Empty(), &after), 0);
  EXPECT_EQ(after.free(), before.free());  // everything the child held is back
  v1::MemsetRequest m;
  m.set_dst(keep);
  m.set_size(1 << 20);
  EXPECT_EQ(survivor->Call(CallId::kMemset, m), 0);
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace remora
