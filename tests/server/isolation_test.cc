// tests/server/isolation_test.cc - tenants cannot reach each other: handles, memory, kernels,
// events and the libraries' pointers of another tenant are refused, over shm and over gRPC.
#include "tests/server/harness.h"

namespace remora {
namespace {

using namespace server_test;

INSTANTIATE_TEST_SUITE_P(Transports, IsolationTest, ::testing::Values("shm", "grpc"),
                         [](const auto& info) { return info.param; });

TEST_P(IsolationTest, RefusesOtherTenantsHandles) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::HandleReply s, e;
  ASSERT_EQ(a->Call(CallId::kStreamCreate, v1::StreamCreateRequest(), &s), 0);
  ASSERT_EQ(a->Call(CallId::kEventCreate, v1::EventCreateRequest(), &e), 0);
  v1::StreamRequest sr;
  sr.set_stream(s.handle());
  EXPECT_EQ(b->Call(CallId::kStreamSynchronize, sr), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kStreamSynchronize, sr), 0);
  v1::EventRequest er;
  er.set_event(e.handle());
  EXPECT_EQ(b->Call(CallId::kEventQuery, er), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kEventDestroy, er), 0);
  EXPECT_EQ(a->Call(CallId::kEventDestroy, er), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kStreamDestroy, sr), 0);
  EXPECT_EQ(a->Call(CallId::kStreamDestroy, sr), err::kInvalidResourceHandle);
}

// cuBLAS: every pointer a routine reaches, directly or through a pointer
// array, is checked against the tenant's allocations; handles are per tenant;
// a handle's workspace is charged to the tenant and given back with it.
TEST_P(IsolationTest, CublasChecksEveryPointerAndHandle) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::MemGetInfoReply before, during, after;
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &before), 0);
  v1::HandleReply h;
  ASSERT_EQ(a->Call(CallId::kBlasCreate, v1::Empty(), &h), 0) << a->last().message();
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &during), 0);
  EXPECT_GE(before.free() - during.free(), 4u << 20);
  const uint64_t pa = a->Malloc(4096), pb = b->Malloc(4096);
  // x = 1..8 as floats, then x.x through BlasSync (host-mode result).
  std::string x;
  for (int i = 1; i <= 8; ++i) {
    float f = static_cast<float>(i);
    x.append(reinterpret_cast<const char*>(&f), 4);
  }
  v1::MemcpyHtoDRequest up;
  up.set_dst(pa);
  up.set_size(x.size());
  up.mutable_src()->set_data(x);
  ASSERT_EQ(a->Call(CallId::kMemcpyHtoD, up), 0);
  auto dot = [&](uint64_t handle, uint64_t px, uint64_t py) {
    v1::BlasRequest r;
    r.set_op(3);  // Sdot: n incx incy | x y -> result
    r.set_handle(handle);
    for (int64_t v : {8, 1, 1}) r.add_ints(v);
    r.add_ptrs(px);
    r.add_ptrs(py);
    return r;
  };
  v1::BlasReply rep;
  ASSERT_EQ(a->Call(CallId::kBlasSync, dot(h.handle(), pa, pa), &rep), 0) << a->last().message();
  ASSERT_EQ(rep.result().size(), 4u);
  float got = 0;
  std::memcpy(&got, rep.result().data(), 4);
  EXPECT_EQ(got, 204.0f);
  // b's memory, a range running past the end, b using a's handle.
  EXPECT_EQ(a->Call(CallId::kBlasSync, dot(h.handle(), pa, pb)), err::kInvalidValue);
  EXPECT_NE(a->last().message().find("outside this tenant's allocations"), std::string::npos)
      << a->last().message();
  EXPECT_EQ(a->Call(CallId::kBlasSync, dot(h.handle(), pa + 4080, pa)), err::kInvalidValue);
  EXPECT_EQ(b->Call(CallId::kBlasSync, dot(h.handle(), pb, pb)), err::kInvalidResourceHandle);
  // A result routine without a host result must not be ORDERED (and vice versa).
  a->Post(CallId::kBlas, dot(h.handle(), pa, pa));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // Wrong arity, an unknown routine, bad dimensions.
  v1::BlasRequest bad = dot(h.handle(), pa, pa);
  bad.add_ints(3);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kInvalidValue);
  bad = dot(h.handle(), pa, pa);
  bad.add_ptrs(pa);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kInvalidValue);
  bad.set_op(9999);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kNotSupported);
  bad = dot(h.handle(), pa, pa);
  bad.set_ints(0, -5);
  EXPECT_EQ(a->Call(CallId::kBlasSync, bad), err::kInvalidValue);
  // SgemmBatched whose pointer array names b's matrix: refused at the next sync.
  v1::BlasRequest g;
  g.set_op(97);  // transa transb m n k lda ldb ldc batch | A[] B[] C[] | alpha beta
  g.set_handle(h.handle());
  for (int64_t v : {0, 0, 4, 4, 4, 4, 4, 4, 2}) g.add_ints(v);
  for (int i = 0; i < 3; ++i) g.add_ptrs(pa);
  const float one = 1, zero = 0;
  g.mutable_scalars()->append(reinterpret_cast<const char*>(&one), 4);
  g.mutable_scalars()->append(reinterpret_cast<const char*>(&zero), 4);
  for (uint64_t p : {pa, pa + 64, pa, pa + 64, pa + 128, pb}) g.add_arrays(p);
  a->Post(CallId::kBlas, g);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  g.set_arrays(5, pa + 192);
  a->Post(CallId::kBlas, g);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0) << a->last().message();
  g.mutable_arrays()->RemoveLast();  // one pointer short
  a->Post(CallId::kBlas, g);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // The handle goes, with its workspace; then it is unknown.
  v1::BlasHandleRequest d;
  d.set_handle(h.handle());
  EXPECT_EQ(b->Call(CallId::kBlasDestroy, d), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kBlasDestroy, d), 0);
  EXPECT_EQ(a->Call(CallId::kBlasDestroy, d), err::kInvalidResourceHandle);
  // Only pa and b's pb are still held once the server's copies of the pointer
  // arrays went back, which happens when the work that read them is done.
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &after), 0);
    if (after.free() + 2 * 4096 == before.free()) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(after.free() + 2 * 4096, before.free());
}

TEST_P(IsolationTest, CublasLtChecksEveryPointerAndHandle) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::HandleReply h;
  ASSERT_EQ(a->Call(CallId::kBlasLtCreate, v1::Empty(), &h), 0) << a->last().message();
  const uint64_t pa = a->Malloc(4096), pb = b->Malloc(4096);
  // D = A * B + bias for 4x4 FP32 matrices at pa, A = B = I (C = D, beta 0).
  std::string m(4096, '\0');
  for (int i = 0; i < 4; ++i) {
    const float one = 1;
    std::memcpy(&m[(i * 4 + i) * 4], &one, 4);
    std::memcpy(&m[64 + (i * 4 + i) * 4], &one, 4);
    const float bias = static_cast<float>(i + 1);
    std::memcpy(&m[192 + i * 4], &bias, 4);
  }
  v1::MemcpyHtoDRequest up;
  up.set_dst(pa);
  up.set_size(m.size());
  up.mutable_src()->set_data(m);
  ASSERT_EQ(a->Call(CallId::kMemcpyHtoD, up), 0);
  auto matmul = [&](uint64_t handle, uint64_t A, uint64_t D) {
    v1::BlasLtMatmulRequest r;
    r.set_handle(handle);
    r.set_compute_type(68);  // CUBLAS_COMPUTE_32F
    r.set_scale_type(0);
    r.set_epilogue(4);  // BIAS
    r.set_bias(pa + 192);
    r.set_bias_type(-1);
    for (int i = 0; i < 4; ++i) {
      v1::BlasLtMatmulRequest::Layout* l = r.add_layouts();
      l->set_rows(4);
      l->set_cols(4);
      l->set_ld(4);
      l->set_batch(1);
    }
    for (uint64_t p : {A, pa + 64, D, D}) r.add_ptrs(p);
    const float one = 1, zero = 0;
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&one), 4);
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&zero), 4);
    return r;
  };
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pa, pa + 128));
  v1::MemcpyDtoHRequest down;
  down.set_src(pa + 128);
  down.set_size(64);
  v1::MemcpyDtoHReply got;
  ASSERT_EQ(a->Call(CallId::kMemcpyDtoH, down, &got), 0) << a->last().message();
  ASSERT_EQ(got.data().size(), 64u);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) {
      float v = 0;
      std::memcpy(&v, got.data().data() + (j * 4 + i) * 4, 4);
      EXPECT_EQ(v, (i == j ? 1.0f : 0.0f) + static_cast<float>(i + 1)) << i << "," << j;
    }
  // b's memory, a matrix running past the end, a bias outside, b using a's handle.
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pb, pa + 128));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pa, pa + 4096 - 32));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  v1::BlasLtMatmulRequest bad = matmul(h.handle(), pa, pa + 128);
  bad.set_bias(pb);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  b->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pb, pb));
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  // Device scalars and the workspace are checked too; layouts must be four.
  bad = matmul(h.handle(), pa, pa + 128);
  bad.set_pointer_mode(1);
  bad.add_scalar_ptrs(pa);
  bad.add_scalar_ptrs(pb);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = matmul(h.handle(), pa, pa + 128);
  bad.set_workspace(pa);
  bad.set_workspace_size(8192);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = matmul(h.handle(), pa, pa + 128);
  bad.mutable_layouts()->RemoveLast();
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // A bad layout and a type not forwarded, as the stub would have refused them.
  bad = matmul(h.handle(), pa, pa + 128);
  bad.mutable_layouts(0)->set_ld(2);
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = matmul(h.handle(), pa, pa + 128);
  bad.set_compute_type(70);  // CUBLAS_COMPUTE_64F
  a->Post(CallId::kBlasLtMatmul, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kNotSupported);
  // The handle goes; then it is unknown.
  v1::BlasHandleRequest d;
  d.set_handle(h.handle());
  EXPECT_EQ(b->Call(CallId::kBlasLtDestroy, d), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kBlasLtDestroy, d), 0);
  EXPECT_EQ(a->Call(CallId::kBlasLtDestroy, d), err::kInvalidResourceHandle);
  a->Post(CallId::kBlasLtMatmul, matmul(h.handle(), pa, pa + 128));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
}

// cuDNN: descriptors come by value and every pointer's reach (from them) and
// the workspace are checked against the tenant's allocations; handles are per tenant.
TEST_P(IsolationTest, CudnnChecksDescriptorsPointersAndHandles) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  v1::HandleReply h;
  ASSERT_EQ(a->Call(CallId::kDnnCreate, v1::Empty(), &h), 0) << a->last().message();
  const uint64_t pa = a->Malloc(4096), pb = b->Malloc(4096);
  // ActivationForward (op 32): act | x y | alpha beta, on 1x2x4x4 float tensors (128 bytes).
  auto relu = [&](uint64_t handle, uint64_t x, uint64_t y) {
    v1::DnnRequest r;
    r.set_op(32);
    r.set_handle(handle);
    for (int t = 0; t < 2; ++t) {
      v1::DnnRequest::Tensor* d = r.add_tensors();
      d->set_dtype(0);
      for (int v : {1, 2, 4, 4}) d->add_dims(v);
      for (int v : {32, 16, 4, 1}) d->add_strides(v);
    }
    r.mutable_activation()->set_mode(1);  // RELU
    r.add_ptrs(x);
    r.add_ptrs(y);
    const float one = 1, zero = 0;
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&one), 4);
    r.mutable_scalars()->append(reinterpret_cast<const char*>(&zero), 4);
    return r;
  };
  a->Post(CallId::kDnn, relu(h.handle(), pa, pa + 128));
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), 0) << a->last().message();
  a->Post(CallId::kDnn, relu(h.handle(), pa, pb));  // b's memory
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  EXPECT_NE(a->last().deferred_message().find("outside this tenant's allocations"),
            std::string::npos)
      << a->last().deferred_message();
  a->Post(CallId::kDnn, relu(h.handle(), pa + 4000, pa));  // runs past the end
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  b->Post(CallId::kDnn, relu(h.handle(), pb, pb));  // a's handle
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  // A stride that makes the tensor reach past the allocation, a negative dimension,
  // a missing descriptor, scaling parameters of the wrong size.
  v1::DnnRequest bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_tensors(0)->set_strides(1, 1 << 20);
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_tensors(1)->set_dims(1, -2);
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_tensors()->RemoveLast();
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  bad = relu(h.handle(), pa, pa + 128);
  bad.mutable_scalars()->resize(12);
  a->Post(CallId::kDnn, bad);
  EXPECT_EQ(a->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidValue);
  // A query goes through DnnSync only; an operation through Dnn only.
  EXPECT_EQ(a->Call(CallId::kDnnSync, relu(h.handle(), pa, pa + 128)), err::kInvalidValue);
  v1::DnnHandleRequest d;
  d.set_handle(h.handle());
  EXPECT_EQ(b->Call(CallId::kDnnDestroy, d), err::kInvalidResourceHandle);
  EXPECT_EQ(a->Call(CallId::kDnnDestroy, d), 0);
  EXPECT_EQ(a->Call(CallId::kDnnDestroy, d), err::kInvalidResourceHandle);
}

// SIGTERM's drain (server/main.cc times it): newcomers are refused saying why,
// open sessions keep being served, and when ended they are told why.
TEST_P(IsolationTest, DrainRefusesNewcomersServesTheOpenAndEndsThemSayingWhy) {
  auto open = Connect();
  ASSERT_TRUE(open);
  ASSERT_EQ(open->welcome_status(), 0);
  ASSERT_NE(open->Malloc(1 << 20), 0u);
  EXPECT_FALSE(server_->draining());
  server_->Drain();
  EXPECT_TRUE(server_->draining());
  auto late = Connect();
  ASSERT_TRUE(late);
  EXPECT_EQ(late->welcome_status(), err::kDevicesUnavailable);
  EXPECT_NE(late->last().message().find("shutting down"), std::string::npos)
      << late->last().message();
  EXPECT_NE(open->Malloc(1 << 20), 0u);  // still served
  v1::Hello admin;
  admin.set_admin(true);
  auto root = Connect(admin);  // remora list still works, and the drain does not wait for it
  ASSERT_TRUE(root);
  EXPECT_EQ(root->welcome_status(), 0);
  v1::TenantList list;
  EXPECT_EQ(root->Call(CallId::kListTenants, v1::Empty(), &list), 0);
  EXPECT_EQ(list.tenants_size(), 1);
  EXPECT_EQ(server_->tenant_sessions(), 1u);
  server_->EndSessions("remora-server is shutting down (drain test)", 5s);
  EXPECT_TRUE(WaitForSessions(0, 5s));
  EXPECT_NE(open->WaitEvicted().find("shutting down (drain test)"), std::string::npos);
  EXPECT_LT(open->Call(CallId::kDeviceSynchronize, v1::Empty()), 0);  // the session is over
}

// b never reaches a's memory, kernels or events, by any call that names them;
// a's memory is unchanged afterwards.
TEST_P(IsolationTest, NoCallReachesAnotherTenantsMemoryKernelsOrEvents) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  const uint64_t pa = a->Malloc(64), pb = b->Malloc(64);
  v1::MemsetRequest fill;
  fill.set_dst(pa);
  fill.set_size(64);
  fill.set_value(0x11);
  ASSERT_EQ(a->Call(CallId::kMemset, fill), 0);
  v1::RegisterModuleRequest reg;
  reg.add_images(std::string(kAddPtx, sizeof kAddPtx));
  reg.set_hash(Digest(reg));
  reg.add_kernels("_Z3addPi");
  v1::RegisterModuleReply mod;
  ASSERT_EQ(a->Call(CallId::kRegisterModule, reg, &mod), 0);
  ASSERT_EQ(mod.kernels_size(), 1);
  v1::HandleReply ev;
  ASSERT_EQ(a->Call(CallId::kEventCreate, v1::EventCreateRequest(), &ev), 0);

  v1::MemcpyHtoDRequest h;  // host to a's memory, inline bytes
  h.set_dst(pa);
  h.set_size(4);
  h.mutable_src()->set_data("evil");
  EXPECT_EQ(b->Call(CallId::kMemcpyHtoD, h), err::kInvalidValue);
  v1::MemcpyDtoDRequest d;  // b's memory to a's, and a's to b's
  d.set_dst(pa);
  d.set_src(pb);
  d.set_size(16);
  EXPECT_EQ(b->Call(CallId::kMemcpyDtoD, d), err::kInvalidValue);
  d.set_dst(pb);
  d.set_src(pa);
  EXPECT_EQ(b->Call(CallId::kMemcpyDtoD, d), err::kInvalidValue);
  std::string param(8, '\0');
  std::memcpy(param.data(), &pb, sizeof pb);
  EXPECT_EQ(b->Call(CallId::kFuncSetAttribute,
                    [&] {
                      v1::FuncAttributeRequest r;
                      r.set_kernel(mod.kernels(0).handle());
                      return r;
                    }()),
            err::kInvalidDeviceFunction);
  b->Post(CallId::kLaunchKernel, OneThread(mod.kernels(0).handle(), param));
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidDeviceFunction);
  v1::StreamWaitEventRequest w;
  w.set_event(ev.handle());
  b->Post(CallId::kStreamWaitEvent, w);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  v1::EventRecordRequest rec;
  rec.set_event(ev.handle());
  b->Post(CallId::kEventRecord, rec);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);
  v1::UnregisterModuleRequest un;
  un.set_module(mod.module());
  b->Post(CallId::kUnregisterModule, un);
  EXPECT_EQ(b->Call(CallId::kDeviceSynchronize, v1::Empty()), err::kInvalidResourceHandle);

  // a's memory, kernel and event are untouched and still work for a.
  v1::MemcpyDtoHRequest back;
  back.set_src(pa);
  back.set_size(64);
  v1::MemcpyDtoHReply got;
  ASSERT_EQ(a->Call(CallId::kMemcpyDtoH, back, &got), 0);
  EXPECT_EQ(got.data(), std::string(64, '\x11'));
  std::memcpy(param.data(), &pa, sizeof pa);
  a->Post(CallId::kLaunchKernel, OneThread(mod.kernels(0).handle(), param));
  v1::EventRecordRequest mine;
  mine.set_event(ev.handle());
  a->Post(CallId::kEventRecord, mine);
  v1::EventRequest sync;
  sync.set_event(ev.handle());
  EXPECT_EQ(a->Call(CallId::kEventSynchronize, sync), 0);
}

// Virtual memory management: a tenant maps only its own allocations into its own reservations,
// and its mappings are no other tenant's memory.
TEST_P(IsolationTest, VirtualMemoryIsEachTenantsOwn) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  constexpr uint64_t kG = 2 << 20;  // the emulated GPU's granularity
  auto reserve = [](Client& c, uint64_t size) {
    v1::MemReserveRequest r;
    r.set_size(size);
    v1::MallocReply rep;
    EXPECT_EQ(c.Call(CallId::kMemAddressReserve, r, &rep), 0) << c.last().message();
    return rep.dptr();
  };
  auto create = [](Client& c) {
    v1::MemCreateRequest r;
    r.set_size(kG);
    v1::HandleReply rep;
    EXPECT_EQ(c.Call(CallId::kMemCreate, r, &rep), 0) << c.last().message();
    return rep.handle();
  };
  auto map = [](Client& c, uint64_t ptr, uint64_t handle) {
    v1::MemMapRequest r;
    r.set_ptr(ptr);
    r.set_size(kG);
    r.set_handle(handle);
    return c.Call(CallId::kMemMap, r);
  };
  auto access = [](Client& c, uint64_t ptr, uint64_t size) {
    v1::MemSetAccessRequest r;
    r.set_ptr(ptr);
    r.set_size(size);
    r.set_read_write(true);
    return c.Call(CallId::kMemSetAccess, r);
  };
  auto copy_in = [](Client& c, uint64_t dst, uint64_t n) {
    v1::MemcpyHtoDRequest r;
    r.set_dst(dst);
    r.set_size(n);
    r.mutable_src()->set_data(std::string(n, 'x'));
    return c.Call(CallId::kMemcpyHtoD, r);
  };
  v1::MemGetInfoReply before, held, after;
  const uint64_t ra = reserve(*a, 4 * kG), rb = reserve(*b, 2 * kG);
  const uint64_t hb = create(*b);
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &before), 0);
  const uint64_t spare = create(*a), ha = create(*a);  // ha: an id b does not have
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &held), 0);
  EXPECT_EQ(before.free() - held.free(), 2 * kG);  // charged as cudaMalloc is
  EXPECT_EQ(map(*b, rb, ha), err::kInvalidValue);  // a's allocation
  EXPECT_EQ(map(*b, ra, hb), err::kInvalidValue);  // into a's reservation
  ASSERT_EQ(map(*a, ra, ha), 0) << a->last().message();
  ASSERT_EQ(map(*a, ra + kG, ha), 0);                  // the same allocation twice, side by side
  EXPECT_EQ(copy_in(*a, ra, 16), err::kInvalidValue);  // mapped, not yet accessible
  EXPECT_EQ(access(*b, ra, 2 * kG), err::kInvalidValue);
  ASSERT_EQ(access(*a, ra, 2 * kG), 0) << a->last().message();
  EXPECT_EQ(copy_in(*a, ra + kG - 8, 16), 0) << a->last().message();  // across the seam
  EXPECT_EQ(copy_in(*a, ra + 2 * kG - 8, 16), err::kInvalidValue);    // into nothing mapped
  EXPECT_EQ(copy_in(*b, ra, 16), err::kInvalidValue);                 // a's memory
  v1::MemSetAccessRequest none;  // access taken away, then given back
  none.set_ptr(ra);
  none.set_size(kG);
  ASSERT_EQ(a->Call(CallId::kMemSetAccess, none), 0) << a->last().message();
  EXPECT_EQ(copy_in(*a, ra, 16), err::kInvalidValue);
  EXPECT_EQ(copy_in(*a, ra + kG, 16), 0);  // the other mapping keeps its access
  ASSERT_EQ(access(*a, ra, kG), 0);
  EXPECT_EQ(copy_in(*a, ra + kG - 8, 16), 0);
  v1::MemRetainRequest retain;
  retain.set_ptr(ra);
  EXPECT_EQ(b->Call(CallId::kMemRetainHandle, retain), err::kInvalidValue);
  v1::MemRangeRequest whole;
  whole.set_ptr(ra);
  whole.set_size(2 * kG);
  EXPECT_EQ(b->Call(CallId::kMemUnmap, whole), err::kInvalidValue);
  v1::MemRangeRequest reservation;
  reservation.set_ptr(ra);
  reservation.set_size(4 * kG);
  EXPECT_EQ(b->Call(CallId::kMemAddressFree, reservation), err::kInvalidValue);
  EXPECT_EQ(a->Call(CallId::kMemAddressFree, reservation), err::kInvalidValue);  // still mapped
  v1::MemReleaseRequest release;
  release.set_handle(ha);
  EXPECT_EQ(b->Call(CallId::kMemRelease, release), err::kInvalidValue);
  ASSERT_EQ(a->Call(CallId::kMemRelease, release), 0);  // mapped: the memory stays
  EXPECT_EQ(copy_in(*a, ra, 16), 0);
  ASSERT_EQ(a->Call(CallId::kMemUnmap, whole), 0) << a->last().message();
  EXPECT_EQ(copy_in(*a, ra, 16), err::kInvalidValue);
  release.set_handle(spare);
  ASSERT_EQ(a->Call(CallId::kMemRelease, release), 0);  // never mapped: it goes at once
  ASSERT_EQ(a->Call(CallId::kMemGetInfo, v1::Empty(), &after), 0);
  EXPECT_EQ(after.free(), before.free());  // the last handles and mapping went
  EXPECT_EQ(a->Call(CallId::kMemAddressFree, reservation), 0);
  v1::MemReserveRequest too_much;  // a tenant's reservations are bounded
  too_much.set_size(uint64_t{1} << 50);
  EXPECT_EQ(a->Call(CallId::kMemAddressReserve, too_much), err::kMemoryAllocation);
}

// Texture and surface objects: made only over the tenant's own memory, destroyed only by it,
// one kind never destroyed as the other.
TEST_P(IsolationTest, TextureObjectsAreEachTenantsOwn) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a && b);
  const uint64_t pa = a->Malloc(4096);
  auto pitched = [](uint64_t ptr, uint64_t width, uint64_t height, uint64_t pitch, bool surface) {
    v1::TextureCreateRequest r;
    r.set_surface(surface);
    r.set_resource_type(CU_RESOURCE_TYPE_PITCH2D);
    r.set_ptr(ptr);
    r.set_format(CU_AD_FORMAT_FLOAT);
    r.set_channels(1);
    r.set_width(width);
    r.set_height(height);
    r.set_pitch(pitch);
    if (!surface) {
      for (int d = 0; d < 3; ++d) r.add_address_mode(CU_TR_ADDRESS_MODE_CLAMP);
      for (int c = 0; c < 4; ++c) r.add_border_color(0);
    }
    return r;
  };
  v1::HandleReply tex, surf;
  EXPECT_EQ(b->Call(CallId::kTextureCreate, pitched(pa, 16, 16, 64, false)), err::kInvalidValue);
  // 16 rows of 256 bytes run past a's 4 KiB by the last row's start.
  EXPECT_EQ(a->Call(CallId::kTextureCreate, pitched(pa, 64, 17, 256, false)), err::kInvalidValue);
  EXPECT_EQ(a->Call(CallId::kTextureCreate, pitched(pa, 64, 16, 128, false)), err::kInvalidValue)
      << "a pitch below a row";
  ASSERT_EQ(a->Call(CallId::kTextureCreate, pitched(pa, 64, 16, 256, false), &tex), 0)
      << a->last().message();
  ASSERT_EQ(a->Call(CallId::kTextureCreate, pitched(pa, 64, 16, 256, true), &surf), 0)
      << a->last().message();
  v1::TextureRequest destroy;
  destroy.set_handle(tex.handle());
  EXPECT_EQ(b->Call(CallId::kTextureDestroy, destroy), err::kInvalidValue);
  destroy.set_surface(true);
  EXPECT_EQ(a->Call(CallId::kTextureDestroy, destroy), err::kInvalidValue) << "not a surface";
  destroy.set_surface(false);
  EXPECT_EQ(a->Call(CallId::kTextureDestroy, destroy), 0);
  EXPECT_EQ(a->Call(CallId::kTextureDestroy, destroy), err::kInvalidValue) << "destroyed twice";
  v1::TextureCreateRequest odd = pitched(pa, 4, 4, 16, false);
  odd.set_channels(3);
  EXPECT_EQ(a->Call(CallId::kTextureCreate, odd), err::kInvalidValue);
  odd.set_channels(1);
  odd.set_resource_type(CU_RESOURCE_TYPE_ARRAY);
  EXPECT_EQ(a->Call(CallId::kTextureCreate, odd), err::kNotSupported);
  // The surface a leaves behind goes with its session.
}

// IPC: a handle opens in another process of the same tenant (both connect from this test's
// user and host), never in the exporter; an opening ends when the exporter frees the memory.
TEST_P(IsolationTest, IpcOpeningsEndWithTheExport) {
  v1::Hello from_here;  // both processes on one host, as a tenant's stub says
  from_here.set_client_host("isolation-test-host");
  auto a = Connect(from_here);
  auto b = Connect(from_here);
  ASSERT_TRUE(a && b);
  const uint64_t pa = a->Malloc(4096);
  v1::FreeRequest at;
  at.set_dptr(pa + 100);  // inside it: the handle names the whole allocation
  v1::IpcHandle h;
  ASSERT_EQ(a->Call(CallId::kIpcGetMemHandle, at, &h), 0) << a->last().message();
  EXPECT_EQ(a->Call(CallId::kIpcOpenMemHandle, h), err::kDeviceUninitialized);
  v1::IpcOpened o;
  ASSERT_EQ(b->Call(CallId::kIpcOpenMemHandle, h, &o), 0) << b->last().message();
  EXPECT_EQ(o.base(), pa);
  EXPECT_EQ(o.size(), 4096u);
  v1::MemsetRequest fill;
  fill.set_dst(pa);
  fill.set_size(4096);
  EXPECT_EQ(b->Call(CallId::kMemset, fill), 0) << b->last().message();
  fill.set_size(4097);
  EXPECT_EQ(b->Call(CallId::kMemset, fill), err::kInvalidValue);
  v1::FreeRequest free_a;
  free_a.set_dptr(pa);
  EXPECT_EQ(b->Call(CallId::kFree, free_a), err::kInvalidValue);  // not b's to free
  ASSERT_EQ(a->Call(CallId::kFree, free_a), 0);
  fill.set_size(16);
  EXPECT_EQ(b->Call(CallId::kMemset, fill), err::kInvalidValue);  // revoked with the free
  EXPECT_EQ(b->Call(CallId::kIpcOpenMemHandle, h), err::kInvalidResourceHandle);
  EXPECT_EQ(b->Call(CallId::kIpcCloseMemHandle, free_a), 0);
  // cudaDeviceReset gives up everything the exporter held: its exports go with it.
  const uint64_t pa2 = a->Malloc(4096);
  at.set_dptr(pa2);
  ASSERT_EQ(a->Call(CallId::kIpcGetMemHandle, at, &h), 0) << a->last().message();
  ASSERT_EQ(b->Call(CallId::kIpcOpenMemHandle, h, &o), 0) << b->last().message();
  fill.set_dst(pa2);
  EXPECT_EQ(b->Call(CallId::kMemset, fill), 0) << b->last().message();
  ASSERT_EQ(a->Call(CallId::kDeviceReset, v1::Empty()), 0) << a->last().message();
  EXPECT_EQ(b->Call(CallId::kMemset, fill), err::kInvalidValue);
  EXPECT_EQ(b->Call(CallId::kIpcOpenMemHandle, h), err::kInvalidResourceHandle);
}

}  // namespace
}  // namespace remora
