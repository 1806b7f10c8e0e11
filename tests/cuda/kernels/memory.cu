// tests/cuda/kernels/memory.cu - allocation and copies of every kind, memset, pinned and registered
// host memory.
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "common.h"

int main(int argc, char** argv) {
  size_t n = static_cast<size_t>(Flag(argc, argv, "n", 1 << 20));
  Rng rng(Flag(argc, argv, "seed", 18));
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::printf("mismatch: %s\n", what);
    failures += !ok;
  };
  std::vector<unsigned char> src(n), dst(n);
  for (auto& b : src) b = static_cast<unsigned char>(rng.Next());

  size_t free_before = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_before, &total));
  std::printf("memory: %zu MiB free of %zu MiB\n", free_before >> 20, total >> 20);
  expect(total > 0 && free_before <= total, "cudaMemGetInfo: free <= total");

  unsigned char *a, *b;
  CHECK(cudaMalloc(&a, n));
  CHECK(cudaMalloc(&b, n));
  expect(reinterpret_cast<uintptr_t>(a) % 256 == 0, "cudaMalloc is 256-byte aligned");

  CHECK(cudaMemcpy(a, src.data(), n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy(dst.data(), b, n, cudaMemcpyDeviceToHost));
  expect(dst == src, "H2D, D2D, D2H round trip");

  // cudaMemcpyDefault infers the direction from the pointers (unified addressing).
  std::vector<unsigned char> back(n);
  CHECK(cudaMemset(a, 0, n));
  CHECK(cudaMemcpy(a + 100, src.data(), n - 100, cudaMemcpyDefault));
  CHECK(cudaMemcpy(back.data(), a, n, cudaMemcpyDefault));
  bool ok = true;
  for (size_t i = 0; i < n; ++i) ok = ok && back[i] == (i < 100 ? 0 : src[i - 100]);
  expect(ok, "cudaMemcpyDefault with an offset");
  CHECK(cudaMemcpy(dst.data(), src.data(), n, cudaMemcpyHostToHost));
  expect(dst == src, "H2H copy");

  // Memset of a sub-range leaves the rest untouched.
  CHECK(cudaMemcpy(b, src.data(), n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(b + 1000, 0xAB, 5000));
  CHECK(cudaMemcpy(back.data(), b, n, cudaMemcpyDeviceToHost));
  ok = true;
  for (size_t i = 0; i < n; ++i) ok = ok && back[i] == ((i >= 1000 && i < 6000) ? 0xAB : src[i]);
  expect(ok, "cudaMemset of a sub-range");

  // Pageable copies of many staging chunks (shm: 4 MiB slots, several in flight; gRPC:
  // 4 MiB frames) at an odd size and offset, and in stream order: a copy into pageable
  // memory returns with the data, after the work queued before it on its stream (the
  // legacy stream's: every blocking stream's).
  {
    const size_t big = (size_t{37} << 20) + 4099;
    std::vector<unsigned char> up(big), down(big);
    for (auto& x : up) x = static_cast<unsigned char>(rng.Next());
    unsigned char* c;
    CHECK(cudaMalloc(&c, big + 64));
    CHECK(cudaMemcpy(c + 3, up.data(), big, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(down.data(), c + 3, big, cudaMemcpyDeviceToHost));
    expect(down == up, "multi-chunk pageable round trip");
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    const size_t set_at = (size_t{9} << 20) + 5, set_n = size_t{11} << 20;
    CHECK(cudaMemsetAsync(c + 3 + set_at, 0x5C, set_n, s));
    CHECK(cudaMemcpyAsync(down.data(), c + 3, big, cudaMemcpyDeviceToHost, s));
    ok = true;
    for (size_t i = 0; i < big; ++i)
      ok = ok && down[i] == (i >= set_at && i < set_at + set_n ? 0x5C : up[i]);
    expect(ok, "multi-chunk pageable copy on a stream, after a memset on it");
    const size_t tail_at = big - (size_t{5} << 20) - 1;
    CHECK(cudaMemsetAsync(c + 3 + tail_at, 0xA7, big - tail_at, s));
    CHECK(cudaMemcpy(down.data(), c + 3, big, cudaMemcpyDeviceToHost));
    ok = true;
    for (size_t i = 0; i < big; ++i)
      ok = ok && down[i] == (i >= tail_at                        ? 0xA7
                             : i >= set_at && i < set_at + set_n ? 0x5C
                                                                 : up[i]);
    expect(ok, "multi-chunk pageable copy on the legacy stream, after a blocking stream's memset");
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(c));
  }

  // Pinned memory from cudaMallocHost and cudaHostAlloc.
  unsigned char *pinned, *portable;
  CHECK(cudaMallocHost(&pinned, n));
  CHECK(cudaHostAlloc(&portable, n, cudaHostAllocPortable));
  std::memcpy(pinned, src.data(), n);
  CHECK(cudaMemcpy(a, pinned, n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(portable, a, n, cudaMemcpyDeviceToHost));
  expect(std::memcmp(portable, src.data(), n) == 0, "pinned copies");
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFreeHost(portable));

  // Registered (page-locked after the fact) ordinary memory.
  long page = sysconf(_SC_PAGESIZE);
  size_t reg_bytes = (n + page - 1) / page * page;
  void* reg = mmap(nullptr, reg_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(reg != MAP_FAILED);
  CHECK(cudaHostRegister(reg, reg_bytes, cudaHostRegisterDefault));
  CHECK(cudaMemcpy(reg, b, n, cudaMemcpyDeviceToHost));
  expect(std::memcmp(reg, back.data(), n) == 0, "copy into registered memory");
  CHECK(cudaHostUnregister(reg));
  munmap(reg, reg_bytes);

  // Many small allocations, freed in a different order.
  std::vector<void*> small(64);
  for (size_t i = 0; i < small.size(); ++i) CHECK(cudaMalloc(&small[i], 16 + i * 100));
  for (size_t i = 0; i < small.size(); i += 2) CHECK(cudaFree(small[i]));
  for (size_t i = 1; i < small.size(); i += 2) CHECK(cudaFree(small[i]));
  CHECK(cudaFree(nullptr));  // freeing null is a no-op

  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  size_t free_after = 0;
  CHECK(cudaMemGetInfo(&free_after, &total));
  expect(free_after <= total, "free <= total after freeing");
  return Finish(failures, "memory");
}
