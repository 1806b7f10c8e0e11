// tests/server/session_test.cc - the server against raw protocol clients: the checks every tenant
// call gets (handles, ranges, malformed frames), module registration, copies, admission and quotas.
// Each test starts a Server on the emulated device with a private socket (harness.h).
#include "tests/server/harness.h"

namespace remora {
namespace {

using namespace server_test;

TEST_F(ServerTest, WelcomeDescribesTheDeviceAndArena) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  EXPECT_EQ(c->welcome().device().name(), "Remora Emulated GPU");
  EXPECT_GT(c->welcome().device().total_mem(), 0u);
  EXPECT_EQ(c->welcome().device().attributes(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 8);
  EXPECT_EQ(c->welcome().staging_slots(), 16u);
  EXPECT_GT(c->welcome().heap_bytes(), 0u);
}

TEST_F(ServerTest, ArenaIsDeviceMappedForZeroCopy) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  // The server's address of arena byte 0: kernels may dereference it there.
  EXPECT_NE(c->welcome().arena_device_address(), 0u);
  EXPECT_EQ(c->welcome().arena_device_address() % 4096, 0u);
}

// The staging slots are page-locked at Hello, the heap chunk by chunk as the stub asks before
// it hands memory out (server/arena_pins.h); what is locked shows in the tenant's row.
TEST_F(ServerTest, TheArenaHeapIsPageLockedChunkByChunkAsTheTenantAsks) {
  v1::Hello stub;
  stub.set_pins_arena_heap(true);
  auto a = Client::Connect(path_, stub);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  const v1::Welcome& w = a->welcome();
  const uint64_t chunk = w.heap_pin_chunk_bytes(), heap = w.heap_offset(), n = w.heap_bytes();
  ASSERT_EQ(chunk, arena::kHeapPinChunkBytes);
  ASSERT_GT(n, 2 * chunk) << "the fixture's arena holds three chunks at least";
  v1::Hello admin;
  admin.set_admin(true);
  auto root = Client::Connect(path_, admin);
  ASSERT_TRUE(root);
  auto pinned = [&] {
    v1::TenantList list;
    EXPECT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
    for (const auto& r : list.tenants())
      if (r.session() == w.session_id()) return r.pinned_host_bytes();
    ADD_FAILURE() << "no row for the session";
    return uint64_t{0};
  };
  auto pin = [&](uint64_t offset, uint64_t bytes) {
    v1::PinArenaRequest req;
    req.set_offset(offset);
    req.set_bytes(bytes);
    return a->Call(CallId::kPinArena, req);
  };
  EXPECT_EQ(pinned(), heap) << "the staging region alone";
  EXPECT_EQ(pin(heap, 4096), 0);
  EXPECT_EQ(pinned(), heap + chunk);
  EXPECT_EQ(pin(heap + 100, chunk - 200), 0) << "the same chunk again";
  EXPECT_EQ(pinned(), heap + chunk);
  EXPECT_EQ(pin(heap + 2 * chunk - 4096, 8192), 0) << "across the second and third";
  EXPECT_EQ(pinned(), heap + std::min(n, 3 * chunk));
  EXPECT_EQ(pin(heap, n), 0) << "the whole heap";
  EXPECT_EQ(pinned(), heap + n);
  // Outside the heap: refused, nothing changes.
  EXPECT_EQ(pin(0, 4096), cudaErrorInvalidValue) << "the staging region";
  EXPECT_EQ(pin(heap + n, 1), cudaErrorInvalidValue) << "past the end";
  EXPECT_EQ(pin(heap, n + 1), cudaErrorInvalidValue) << "running past the end";
  EXPECT_EQ(pin(~uint64_t{0} - 10, 100), cudaErrorInvalidValue) << "wrapping";
  EXPECT_EQ(pinned(), heap + n);

  // A stub that does not say it pins on demand (an older one) gets its whole arena at Hello.
  auto old = Client::Connect(path_);
  ASSERT_TRUE(old);
  ASSERT_EQ(old->welcome_status(), 0);
  EXPECT_EQ(old->welcome().heap_pin_chunk_bytes(), 0u);
  v1::TenantList list;
  ASSERT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  bool listed = false;
  for (const auto& r : list.tenants()) {
    if (r.session() != old->welcome().session_id()) continue;
    listed = true;
    EXPECT_EQ(r.pinned_host_bytes(), old->welcome().heap_offset() + old->welcome().heap_bytes());
  }
  EXPECT_TRUE(listed);
}

// Dedup: a hash alone that the server has not seen gets images_needed (not an
// error); once the images came, any session may send the hash alone.
TEST_F(ServerTest, FatBinariesAreKeptByHash) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  v1::RegisterModuleRequest req;
  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  req.set_hash(Digest(req));
  req.clear_images();
  req.add_kernels("_Z3addPi");
  v1::RegisterModuleReply rep;
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_TRUE(rep.images_needed());
  EXPECT_EQ(rep.module(), 0u);
  EXPECT_EQ(rep.kernels_size(), 0);

  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  rep.Clear();
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_FALSE(rep.images_needed());
  EXPECT_NE(rep.module(), 0u);
  ASSERT_EQ(rep.kernels_size(), 1);
  EXPECT_EQ(rep.kernels(0).ptx_version(), 75);

  auto b = Client::Connect(path_);
  ASSERT_TRUE(b);
  req.clear_images();
  rep.Clear();
  ASSERT_EQ(b->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_FALSE(rep.images_needed()) << "the images were found by hash";
  EXPECT_NE(rep.module(), 0u);

  // Once no session uses the program, the server keeps nothing of it.
  a.reset();
  b.reset();
  ASSERT_TRUE(WaitForSessions(0, 5s));
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  rep.Clear();
  ASSERT_EQ(c->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_TRUE(rep.images_needed()) << "the images outlived every session using them";
}

// The cache is keyed by the server's own digest: images sent under another
// program's hash are not found by that hash.
TEST_F(ServerTest, ATenantCannotPlantImagesUnderAnotherHash) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  v1::RegisterModuleRequest req;
  req.set_hash(std::string(32, '\x42'));
  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  v1::RegisterModuleReply rep;
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_NE(rep.module(), 0u);

  req.clear_images();
  rep.Clear();
  ASSERT_EQ(a->Call(CallId::kRegisterModule, req, &rep), 0);
  EXPECT_TRUE(rep.images_needed());
}

// An image the device cannot run is refused with the GPU's error and the
// module named; a registration larger than a frame arrives whole; a kernel the
// module lacks gets no handle, so no launch of it can succeed.
TEST_F(ServerTest, ModulesAreRefusedByNameAndKernelsNeverSilentlyMissing) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  v1::RegisterModuleRequest elf;
  const char kElfHeader[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1};  // a cubin's first bytes
  elf.add_images(std::string(kElfHeader, sizeof kElfHeader));
  elf.set_hash(Digest(elf));
  elf.add_kernels("_Z6sm80_kv");
  EXPECT_EQ(c->Call(CallId::kRegisterModule, elf), 209);  // cudaErrorNoKernelImageForDevice
  EXPECT_NE(c->last().message().find("_Z6sm80_kv"), std::string::npos) << c->last().message();
  // An image that failed to load is not kept: its hash alone is not enough.
  elf.clear_images();
  v1::RegisterModuleReply again;
  ASSERT_EQ(c->Call(CallId::kRegisterModule, elf, &again), 0);
  EXPECT_TRUE(again.images_needed());

  v1::RegisterModuleRequest req;
  req.add_images(std::string(kAddPtx, sizeof kAddPtx));
  req.set_hash(Digest(req));
  for (int i = 0; i < 2000; ++i)
    req.add_kernels("_Z7missing" + std::string(200, 'x') + std::to_string(i));
  req.add_kernels("_Z3addPi");
  ASSERT_GT(req.ByteSizeLong(), 256u << 10) << "must not fit one shm frame";
  v1::RegisterModuleReply rep;
  ASSERT_EQ(c->Call(CallId::kRegisterModule, req, &rep), 0);
  ASSERT_EQ(rep.kernels_size(), 1);
  EXPECT_EQ(rep.kernels(0).name(), "_Z3addPi");
  EXPECT_NE(rep.kernels(0).handle(), 0u);
  ASSERT_EQ(rep.kernels(0).sizes_size(), 1);
  EXPECT_EQ(rep.kernels(0).sizes(0), 8u);

  v1::LaunchRequest launch;
  launch.set_kernel(rep.kernels(0).handle() + 0x777);
  launch.set_grid_x(1), launch.set_grid_y(1), launch.set_grid_z(1);
  launch.set_block_x(1), launch.set_block_y(1), launch.set_block_z(1);
  launch.set_params(std::string(8, '\0'));
  c->Post(CallId::kLaunchKernel, launch);
  EXPECT_EQ(c->Call(CallId::kDeviceSynchronize, v1::Empty()), 98);  // InvalidDeviceFunction

  // Thread-block clusters: a shape that does not divide the grid is the server's refusal; one
  // that does reaches the device, which (emulated) has no clusters.
  uint64_t d = c->Malloc(64);
  ASSERT_NE(d, 0u);
  launch.set_kernel(rep.kernels(0).handle());
  launch.set_params(std::string(reinterpret_cast<const char*>(&d), 8));
  launch.set_grid_x(3);
  launch.set_cluster_x(2);
  c->Post(CallId::kLaunchKernel, launch);
  EXPECT_EQ(c->Call(CallId::kDeviceSynchronize, v1::Empty()), 912);  // InvalidClusterSize
  launch.set_grid_x(4);
  c->Post(CallId::kLaunchKernel, launch);
  EXPECT_EQ(c->Call(CallId::kDeviceSynchronize, v1::Empty()), 801);  // NotSupported
}

TEST_F(ServerTest, CopiesRoundTripThroughArenaAndInline) {
  auto c = Client::Connect(path_);
  ASSERT_TRUE(c);
  const uint64_t n = 1 << 20;
  uint64_t d = c->Malloc(n);
  ASSERT_NE(d, 0u);
  std::mt19937 rng(1);
  std::byte* heap = c->arena()->base() + c->welcome().heap_offset();
  for (uint64_t i = 0; i < n; ++i) heap[i] = static_cast<std::byte>(rng());
  v1::MemcpyHtoDRequest h;
  h.set_dst(d);
  h.set_size(n);
  h.mutable_src()->set_arena_offset(c->welcome().heap_offset());
  ASSERT_EQ(c->Call(CallId::kMemcpyHtoD, h), 0);
  v1::MemcpyDtoHRequest back;
  back.set_src(d + 100);
  back.set_size(1000);
  v1::MemcpyDtoHReply data;
  ASSERT_EQ(c->Call(CallId::kMemcpyDtoH, back, &data), 0);
  ASSERT_EQ(data.data().size(), 1000u);
  EXPECT_EQ(std::memcmp(data.data().data(), heap + 100, 1000), 0);
}

TEST_F(ServerTest, RefusesRangesOutsideTheTenantsAllocations) {
  auto a = Client::Connect(path_);
  auto b = Client::Connect(path_);
  ASSERT_TRUE(a && b);
  uint64_t pa = a->Malloc(4096);
  uint64_t pb = b->Malloc(4096);
  v1::MemcpyDtoHRequest r;
  r.set_size(16);
  r.set_src(pb);  // b's memory, read by a
  EXPECT_EQ(a->Call(CallId::kMemcpyDtoH, r), err::kInvalidValue);
  EXPECT_NE(a->last().message().find("outside this tenant's allocations"), std::string::npos);
  r.set_src(pa + 4090);  // runs past the end
  EXPECT_EQ(a->Call(CallId::kMemcpyDtoH, r), err::kInvalidValue);
  r.set_src(pa);
  r.set_size(~0ull);  // overflowing size
  EXPECT_EQ(a->Call(CallId::kMemcpyDtoH, r), err::kInvalidValue);
  v1::MemsetRequest m;
  m.set_dst(pb);
  m.set_size(1);
  EXPECT_EQ(a->Call(CallId::kMemset, m), err::kInvalidValue);
  v1::FreeRequest f;
  f.set_dptr(pb);
  EXPECT_EQ(a->Call(CallId::kFree, f), err::kInvalidValue);  // not a's to free
  f.set_dptr(pa);
  EXPECT_EQ(a->Call(CallId::kFree, f), 0);
  EXPECT_EQ(a->Call(CallId::kFree, f), err::kInvalidValue);  // double free
  v1::MemcpyHtoDRequest h;
  h.set_dst(pa);  // use after free
  h.set_size(4);
  h.mutable_src()->set_data("abcd");
  EXPECT_EQ(a->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  h.set_dst(pb);
  h.mutable_src()->set_arena_offset(a->arena()->size() - 2);  // arena overrun, b's memory anyway
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  // A staging slot the session does not have is refused, not ignored.
  h.mutable_src()->set_data("abcd");
  h.set_staging_slot(0xFFFFFFFF);
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  EXPECT_NE(b->last().message().find("staging slot"), std::string::npos) << b->last().message();
  b->Post(CallId::kMemcpyHtoDAsync, h);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  h.set_staging_slot(0);
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), 0);
}

TEST_F(ServerTest, StreamOrderedErrorsSurfaceAtTheNextSyncCall) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  v1::MemsetRequest m;
  m.set_dst(0xdead0000);
  m.set_size(8);
  m.set_async(true);
  a->Post(CallId::kMemsetAsync, m);  // no reply
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // reported once
}

TEST_F(ServerTest, MalformedFramesGetErrorsNotCrashes) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->CallRaw(static_cast<uint32_t>(CallId::kMalloc), std::string("\xff\xff\xff", 3)),
            err::kInvalidValue);
  EXPECT_EQ(a->CallRaw(9999, ""), err::kNotSupported);
  EXPECT_EQ(a->CallRaw(static_cast<uint32_t>(CallId::kHello), ""), err::kNotPermitted);
  EXPECT_EQ(a->CallRaw(static_cast<uint32_t>(CallId::kGetDevice), ""), err::kNotSupported);
  // Random bytes for every synchronous call: bytes that are no valid request
  // get cudaErrorInvalidValue, never success; the session keeps serving.
  std::mt19937 rng(3);
  const google::protobuf::DescriptorPool* pool = v1::Empty::descriptor()->file()->pool();
  google::protobuf::DynamicMessageFactory factory(pool);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::string junk(rng() % 64, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    uint32_t call = 32 + rng() % 70;
    const CallInfo* info = FindCall(call);
    if (!info || info->cls != CallClass::kSync) continue;
    const auto* type = pool->FindMessageTypeByName("remora.v1." + std::string(info->request));
    ASSERT_NE(type, nullptr) << info->request;
    std::unique_ptr<google::protobuf::Message> parsed(factory.GetPrototype(type)->New());
    const bool valid = parsed->ParseFromString(junk);
    int code = a->CallRaw(call, junk);
    EXPECT_GE(code, 0) << "call " << call << ": no reply";
    if (!valid) {
      EXPECT_EQ(code, err::kInvalidValue) << info->name << " took bytes that are no request";
      ++refused;
    }
  }
  EXPECT_GT(refused, 50) << "the junk should mostly not parse";
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()) >= 0, true);
  EXPECT_NE(a->Malloc(64), 0u);  // still serving
}

// The fast path is checked like protobuf: a body of the wrong shape, or a fixed
// layout for a call that has none, is refused and answered in kind.
TEST_F(ServerTest, FixedLayoutFramesAreCheckedAndAnsweredInKind) {
  auto a = Client::Connect(path_);
  ASSERT_TRUE(a);
  std::string why;
  v1::StreamRequest q;
  std::string body;
  fixed::Encode(q, body);
  EXPECT_EQ(a->CallFixed(CallId::kStreamQuery, body, &why), 0) << why;
  EXPECT_EQ(a->CallFixed(CallId::kStreamQuery, body.substr(0, 7), &why), err::kInvalidValue);
  EXPECT_NE(why.find("malformed"), std::string::npos) << why;
  q.set_stream(0x999);
  fixed::Encode(q, body);
  EXPECT_EQ(a->CallFixed(CallId::kStreamQuery, body, &why), err::kInvalidResourceHandle);
  EXPECT_NE(why.find("StreamQuery"), std::string::npos) << why;
  // MallocRequest has no fixed layout: its protobuf bytes flagged fixed are refused.
  v1::MallocRequest m;
  m.set_size(64);
  EXPECT_EQ(a->CallFixed(CallId::kMalloc, m.SerializeAsString()), err::kInvalidValue);
  // A small copy both ways through the fast path, inline bytes out, arena bytes back.
  const uint64_t p = a->Malloc(64);
  ASSERT_NE(p, 0u);
  v1::MemcpyHtoDRequest h;
  h.set_dst(p);
  h.set_size(4);
  h.mutable_src()->set_data("abcd");
  fixed::Encode(h, body);
  EXPECT_EQ(a->CallFixed(CallId::kMemcpyHtoD, body, &why), 0) << why;
  v1::MemcpyDtoHRequest d;
  d.set_src(p);
  d.set_size(4);
  d.set_to_arena(true);
  d.set_dst_arena_offset(0);
  fixed::Encode(d, body);
  ASSERT_TRUE(a->arena());
  EXPECT_EQ(a->CallFixed(CallId::kMemcpyDtoH, body, &why), 0) << why;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a->arena()->base()), 4), "abcd");
  d.set_src(p + 62);  // 2 bytes past the allocation
  fixed::Encode(d, body);
  EXPECT_EQ(a->CallFixed(CallId::kMemcpyDtoH, body, &why), err::kInvalidValue);
  EXPECT_NE(a->Malloc(64), 0u);  // still serving
}

// Memory above a tenant's request is a loan: a guaranteed tenant's allocation
// takes it back, ending the borrower's session with a message saying why.
TEST_F(ServerTest, GuaranteedAllocationReclaimsALoan) {
  auto borrower = Client::Connect(path_);  // no quota: request 0, limit everything
  ASSERT_TRUE(borrower);
  ASSERT_EQ(borrower->welcome_status(), 0);
  const uint64_t usable = borrower->welcome().memory_limit();
  ASSERT_GT(usable, 1u << 30);
  EXPECT_NE(borrower->Malloc(usable / 4 * 3), 0u);
  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.5);
  auto owner = Client::Connect(path_, h);
  ASSERT_TRUE(owner);
  ASSERT_EQ(owner->welcome_status(), 0);
  // Within its request but beyond what is free: the loan goes, the allocation succeeds.
  EXPECT_NE(owner->Malloc(usable / 5 * 2), 0u);
  const std::string why = borrower->WaitEvicted();
  EXPECT_NE(why.find(owner->welcome().tenant()), std::string::npos) << why;
  EXPECT_NE(why.find("reclaimed"), std::string::npos) << why;
  EXPECT_LT(borrower->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // the session is over
  // Past its request, and past its limit (= request): refused, nobody else pays.
  v1::MallocRequest more;
  more.set_size(usable / 5);
  EXPECT_EQ(owner->Call(CallId::kMalloc, more), err::kMemoryAllocation);
  auto bystander = Client::Connect(path_);
  ASSERT_TRUE(bystander);
  EXPECT_NE(bystander->Malloc(1 << 20), 0u);  // served, from free memory
}

// A request that does not fit is admitted by preempting lower-priority tenants
// only; without them it is refused, saying what is free and who holds it.
TEST_F(ServerTest, AdmissionPreemptsLowerPriorityOnly) {
  v1::Hello low;
  low.mutable_quota()->set_gpu_fraction(0.6);
  low.mutable_quota()->set_priority("low");
  auto a = Client::Connect(path_, low);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  v1::Hello normal;
  normal.mutable_quota()->set_gpu_fraction(0.6);
  auto n1 = Client::Connect(path_, normal);  // 0.6 + 0.6 > 1: no room beside the low one
  ASSERT_TRUE(n1);
  // Normal outranks low: the low tenant is preempted, the normal one admitted.
  EXPECT_EQ(n1->welcome_status(), 0);
  EXPECT_NE(a->WaitEvicted().find("priority normal"), std::string::npos);
  auto b = Client::Connect(path_, normal);  // nobody lower left to preempt
  ASSERT_TRUE(b);
  EXPECT_EQ(b->welcome_status(), err::kMemoryAllocation);
  EXPECT_NE(b->last().message().find("free"), std::string::npos) << b->last().message();
  v1::Hello bad;
  bad.mutable_quota()->set_priority("urgent");
  auto c = Client::Connect(path_, bad);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->welcome_status(), err::kInvalidValue);
}

// A tenant class's streams carry its GPU priority (sched::GpuStreamPriority: plain streams of
// high, normal and low -4, -2 and 0 on the emulator, each class's most urgent -5, -3, -1),
// through the pool too: a stream given back goes again only to a tenant of the class and
// priority it was made for.
TEST_F(ServerTest, StreamsCarryTheirTenantClassesGpuPriority) {
  server::Device& dev = server_->device();
  server::Device::Use use = dev.Enter();
  ASSERT_TRUE(dev.MakeCurrent().ok());
  auto priority = [&](CUstream s) {
    int p = 99;
    EXPECT_EQ(dev.drv().cuStreamGetPriority(s, &p), CUDA_SUCCESS);
    return p;
  };
  auto high = dev.AcquireStream(sched::Priority::kHigh);
  auto normal = dev.AcquireStream(sched::Priority::kNormal);
  auto low = dev.AcquireStream(sched::Priority::kLow);
  ASSERT_TRUE(high.ok() && normal.ok() && low.ok());
  EXPECT_EQ(priority(*high), -4);
  EXPECT_EQ(priority(*normal), -2);
  EXPECT_EQ(priority(*low), 0);
  auto low_urgent = dev.AcquireStream(sched::Priority::kLow, -5);
  auto normal_urgent = dev.AcquireStream(sched::Priority::kNormal, -1);
  ASSERT_TRUE(low_urgent.ok() && normal_urgent.ok());
  EXPECT_EQ(priority(*low_urgent), -1);
  EXPECT_EQ(priority(*normal_urgent), -3);
  dev.ReleaseStream(*high);  // idle: pooled at once
  auto low2 = dev.AcquireStream(sched::Priority::kLow);
  ASSERT_TRUE(low2.ok());
  EXPECT_NE(*low2, *high);
  EXPECT_EQ(priority(*low2), 0);
  auto high_urgent = dev.AcquireStream(sched::Priority::kHigh, -5);
  ASSERT_TRUE(high_urgent.ok());
  EXPECT_NE(*high_urgent, *high);  // pooled, but of another priority
  EXPECT_EQ(priority(*high_urgent), -5);
  auto high2 = dev.AcquireStream(sched::Priority::kHigh);
  ASSERT_TRUE(high2.ok());
  EXPECT_EQ(*high2, *high);  // the pooled one
  EXPECT_EQ(priority(*high2), -4);
  for (CUstream s : {*high2, *normal, *low, *low2, *low_urgent, *normal_urgent, *high_urgent})
    dev.ReleaseStream(s);
}

// `remora list` speaks as an administration session: it sees every tenant with
// what it was granted and holds, and may do nothing else; tenants may not list.
TEST_F(ServerTest, AdminSessionListsTenantsAndNothingElse) {
  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.25);
  h.mutable_quota()->set_gpu_compute(0.5);
  h.set_program("alpha");
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  ASSERT_NE(a->Malloc(3 << 20), 0u);
  v1::Hello l;
  l.mutable_quota()->set_priority("low");
  l.mutable_quota()->set_gpu_compute_limit(0.2);
  l.set_program("beta");
  auto b = Client::Connect(path_, l);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->welcome_status(), 0);
  v1::Hello admin;
  admin.set_admin(true);
  auto c = Client::Connect(path_, admin);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  v1::TenantList list;
  ASSERT_EQ(c->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  ASSERT_EQ(list.tenants_size(), 2) << list.ShortDebugString();
  EXPECT_NEAR(static_cast<double>(list.usable_memory()),
              4.0 * static_cast<double>(a->welcome().memory_limit()), 8)
      << "a's limit is 0.25 of usable";
  std::map<std::string, v1::TenantRow> rows;
  for (const auto& r : list.tenants()) rows[r.tenant().substr(0, 5)] = r;
  ASSERT_EQ(rows.count("alpha"), 1u);
  ASSERT_EQ(rows.count("beta-"), 1u);
  const v1::TenantRow& ra = rows["alpha"];
  EXPECT_EQ(ra.priority(), "normal");
  EXPECT_EQ(ra.status(), "running");
  EXPECT_EQ(ra.memory_request(), a->welcome().memory_request());
  EXPECT_EQ(ra.memory_used(), 3u << 20);
  EXPECT_EQ(ra.memory_borrowed(), 0u);
  EXPECT_DOUBLE_EQ(ra.compute_request(), 0.5);
  const v1::TenantRow& rb = rows["beta-"];
  EXPECT_EQ(rb.priority(), "low");
  EXPECT_DOUBLE_EQ(rb.compute_limit(), 0.2);
  EXPECT_EQ(rb.memory_request(), 0u);
  // Targets: alpha alone in its class; beta, a class below, gets what alpha
  // leaves (all: it ran nothing yet) within its cap.
  EXPECT_NEAR(ra.target_share(), 1.0, 1e-9);
  EXPECT_NEAR(rb.target_share(), 0.2, 1e-9);
  // The administration session holds nothing and may do nothing else; tenants may not list.
  v1::MallocRequest m;
  m.set_size(64);
  EXPECT_EQ(c->Call(CallId::kMalloc, m), err::kNotPermitted);
  EXPECT_EQ(a->Call(CallId::kListTenants, v1::Empty(), &list), err::kNotPermitted);
  // remora evict: by name when one session has it, else refused; the tenant is told.
  v1::EvictRequest e;
  e.set_tenant("nobody");
  EXPECT_EQ(c->Call(CallId::kEvictTenant, e), err::kInvalidValue);
  EXPECT_EQ(a->Call(CallId::kEvictTenant, e), err::kNotPermitted);
  e.set_tenant(rb.tenant());
  EXPECT_EQ(c->Call(CallId::kEvictTenant, e), 0) << c->last().message();
  EXPECT_NE(b->WaitEvicted().find("administrator"), std::string::npos);
  ASSERT_EQ(c->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  std::vector<std::string> running;  // the evicted one is gone, or shown as ending
  for (const auto& r : list.tenants())
    if (r.status() == "running") running.push_back(r.tenant());
  EXPECT_EQ(running, std::vector<std::string>{ra.tenant()});
  EXPECT_NE(a->Malloc(1 << 20), 0u);  // the other tenant is untouched
}

TEST_F(ServerTest, QuotaLimitIsEnforcedAndShownByMemGetInfo) {
  v1::Hello h;
  h.mutable_quota()->set_gpu_memory(1 << 20);
  h.mutable_quota()->set_gpu_memory_limit(2 << 20);
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  EXPECT_EQ(a->welcome().memory_limit(), 2u << 20);
  v1::MemGetInfoReply info;
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.total(), 2u << 20);
  // The device's properties show the slice too (cudaGetDeviceProperties' totalGlobalMem).
  EXPECT_EQ(a->welcome().device().total_mem(), 2u << 20);
  EXPECT_EQ(info.free(), 2u << 20);
  EXPECT_NE(a->Malloc(1536 << 10), 0u);
  v1::MallocRequest r;
  r.set_size(1 << 20);
  EXPECT_EQ(a->Call(CallId::kMalloc, r), err::kMemoryAllocation);
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.free(), (2u << 20) - (1536u << 10));
}

TEST_F(ServerTest, AdmissionRefusesRequestsBeyondTheDevice) {
  v1::Hello h;
  h.mutable_quota()->set_gpu_fraction(0.7);
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->welcome_status(), 0);
  auto b = Client::Connect(path_, h);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->welcome_status(), err::kMemoryAllocation);
  // A NaN fraction is no quota at all, not an unlimited one.
  v1::Hello nan;
  nan.mutable_quota()->set_gpu_fraction(std::numeric_limits<double>::quiet_NaN());
  auto c = Client::Connect(path_, nan);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->welcome_status(), err::kInvalidValue);
}

// One thread mallocs `bytes` on the device and stores the pointer (null if the heap cannot).
constexpr char kGrabPtx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);\n"
    ".visible .entry grab(.param .u64 bytes, .param .u64 out)\n{\n"
    ".reg .b64 %rd<5>;\n"
    "ld.param.u64 %rd1, [bytes];\nld.param.u64 %rd2, [out];\n"
    "{\n.param .b64 p0;\nst.param.b64 [p0], %rd1;\n.param .b64 r0;\n"
    "call.uni (r0), malloc, (p0);\nld.param.b64 %rd3, [r0];\n}\n"
    "cvta.to.global.u64 %rd4, %rd2;\nst.global.u64 [%rd4], %rd3;\nret;\n}\n";

// Grabs `bytes` of `c`'s device heap; the pointer, 0 if malloc returned null, or ~0 if the
// launch or read-back failed.
uint64_t Grab(Client& c, uint64_t kernel, uint64_t out, uint64_t bytes) {
  std::string params(16, '\0');
  std::memcpy(params.data(), &bytes, 8);
  std::memcpy(params.data() + 8, &out, 8);
  c.Post(CallId::kLaunchKernel, OneThread(kernel, params));
  v1::MemcpyDtoHRequest d;
  d.set_src(out);
  d.set_size(8);
  v1::MemcpyDtoHReply back;
  if (c.Call(CallId::kMemcpyDtoH, d, &back) != 0 || back.data().size() != 8) return ~0ull;
  uint64_t p = 0;
  std::memcpy(&p, back.data().data(), 8);
  return p;
}

v1::LimitRequest HeapLimit(uint64_t bytes) {
  v1::LimitRequest r;
  r.set_limit(CU_LIMIT_MALLOC_HEAP_SIZE);
  r.set_value(bytes);
  return r;
}

// On the emulated GPU each tenant's device-side malloc draws on a heap of its own: a heap it
// sizes is charged to its quota (refused past its limit), fixed once its kernels used it, apart
// from every other tenant's, and given back with everything in it when the tenant goes.
TEST_F(ServerTest, EachTenantsDeviceHeapIsItsOwnAndGoesWithIt) {
  v1::Hello h;
  h.mutable_quota()->set_gpu_memory_limit(48 << 20);
  auto a = Client::Connect(path_, h);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->welcome_status(), 0);
  EXPECT_EQ(a->Call(CallId::kDeviceSetLimit, HeapLimit(64 << 20)), err::kMemoryAllocation)
      << "a heap past the tenant's memory limit";
  EXPECT_EQ(a->Call(CallId::kDeviceSetLimit, HeapLimit(0)), err::kInvalidValue);
  ASSERT_EQ(a->Call(CallId::kDeviceSetLimit, HeapLimit(24 << 20)), 0) << a->last().message();
  ASSERT_EQ(a->Call(CallId::kDeviceSetLimit, HeapLimit(32 << 20)), 0) << a->last().message();
  v1::MemGetInfoReply info;
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.free(), 16u << 20) << "the heap set last is charged, the one before given back";

  auto b = Client::Connect(path_);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->welcome_status(), 0);
  const uint64_t ka = LoadKernel(*a, kGrabPtx, sizeof kGrabPtx, "grab");
  const uint64_t kb = LoadKernel(*b, kGrabPtx, sizeof kGrabPtx, "grab");
  ASSERT_NE(ka, 0u);
  ASSERT_NE(kb, 0u);
  const uint64_t out_a = a->Malloc(8), out_b = b->Malloc(8);
  // a's 30 MiB fit its 32 MiB heap; b's default heap (8 MiB) holds 6 MiB but not 9.
  const uint64_t pa = Grab(*a, ka, out_a, 30 << 20);
  EXPECT_NE(pa, 0u);
  EXPECT_NE(pa, ~0ull);
  EXPECT_EQ(Grab(*b, kb, out_b, 9 << 20), 0u);
  const uint64_t pb = Grab(*b, kb, out_b, 6 << 20);
  EXPECT_NE(pb, 0u);
  EXPECT_NE(pb, ~0ull);
  EXPECT_TRUE(pb + (6 << 20) <= pa || pa + (30 << 20) <= pb) << "the two heaps overlap";
  EXPECT_EQ(a->Call(CallId::kDeviceSetLimit, HeapLimit(40 << 20)), err::kInvalidValue)
      << "a heap in use keeps its size, as on a GPU";
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.free(), (16u << 20) - 256) << "the refused size charged nothing";

  // a leaves without freeing; c, with a's quota, gets all of it back, heap and memory.
  a.reset();
  ASSERT_TRUE(WaitForSessions(1, 5s));
  auto c = Client::Connect(path_, h);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->welcome_status(), 0);
  ASSERT_EQ(c->Call(CallId::kMemGetInfo, v1::Empty(), &info), 0);
  EXPECT_EQ(info.free(), 48u << 20);
  ASSERT_EQ(c->Call(CallId::kDeviceSetLimit, HeapLimit(40 << 20)), 0) << c->last().message();
  const uint64_t kc = LoadKernel(*c, kGrabPtx, sizeof kGrabPtx, "grab");
  const uint64_t pc = Grab(*c, kc, c->Malloc(8), 38 << 20);
  EXPECT_NE(pc, 0u);
  EXPECT_NE(pc, ~0ull);
}

// A tenant that sends calls and never reads the replies fills its reply ring: the thread
// replying gives up on it after Session::kReplyTimeout and closes it, and every other tenant
// goes on being served, during the flood and after it.
TEST_F(ServerTest, ATenantThatStopsReadingItsRepliesIsClosedAndOthersGoOn) {
  auto flood = Client::Connect(path_);
  auto other = Client::Connect(path_);
  ASSERT_TRUE(flood && other);
  ASSERT_EQ(flood->welcome_status(), 0);
  ASSERT_EQ(other->welcome_status(), 0);
  std::thread sender([&] {
    v1::StreamRequest q;  // the default stream: answered at once
    for (int i = 0; i < 80000; ++i) flood->Post(CallId::kStreamQuery, q);  // 1 MiB of replies
  });
  const uint64_t p = other->Malloc(4096);
  EXPECT_NE(p, 0u);
  sender.join();
  ASSERT_TRUE(WaitForSessions(1, 10s)) << "the flooding session was not closed";
  v1::StreamRequest q;
  EXPECT_LT(flood->Call(CallId::kStreamQuery, q), 0) << "its channel is closed";
  EXPECT_EQ(other->Call(CallId::kStreamQuery, q), 0);
  v1::FreeRequest f;
  f.set_dptr(p);
  EXPECT_EQ(other->Call(CallId::kFree, f), 0);
}

}  // namespace
}  // namespace remora
