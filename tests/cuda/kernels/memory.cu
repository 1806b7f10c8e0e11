// tests/cuda/kernels/memory.cu - allocation and copies of every kind, memset, pinned and registered
// host memory, 3-D: a pitched volume, a copy in, a memset of a box and a copy of a sub-volume
// out, and CUDA arrays: copies into, between and out of them, 2-D and 3-D.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common.h"

__global__ void Square(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i];
}

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
  // A kind that contradicts the pointers (SHOC's FFT copies device <- pinned with
  // cudaMemcpyDeviceToHost): undefined in CUDA, but unified addressing goes by the pointers and
  // the program gets its data, on every transport; the mirror case must not crash either.
  std::memset(pinned, 0x5a, n);
  CHECK(cudaMemset(a, 0, n));
  CHECK(cudaMemcpy(a, pinned, n, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(portable, a, n, cudaMemcpyDeviceToHost));
  expect(std::all_of(portable, portable + n, [](unsigned char v) { return v == 0x5a; }),
         "device <- pinned named DeviceToHost");
  std::memset(pinned, 0, n);
  const cudaError_t mirror = cudaMemcpy(pinned, a, n, cudaMemcpyHostToDevice);
  (void)cudaGetLastError();
  expect(mirror == cudaErrorInvalidValue ||
             (mirror == cudaSuccess &&
              std::all_of(pinned, pinned + n, [](unsigned char v) { return v == 0x5a; })),
         "pinned <- device named HostToDevice: the data or cudaErrorInvalidValue");
  // A kernel writing page-locked memory through its host pointer (BabelStream's dot does):
  // unified addressing makes it device memory (Remora's remote sessions mirror it).
  {
    const int count = 1000;
    int* in = nullptr;
    CHECK(cudaMalloc(&in, count * sizeof(int)));
    std::vector<int> values(count);
    for (int i = 0; i < count; ++i) values[i] = i - 500;
    CHECK(cudaMemcpy(in, values.data(), count * sizeof(int), cudaMemcpyHostToDevice));
    int* out = reinterpret_cast<int*>(portable);
    Square<<<(count + 255) / 256, 256>>>(in, out, count);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    bool ok = true;
    for (int i = 0; i < count; ++i) ok &= out[i] == values[i] * values[i];
    expect(ok, "a kernel writing page-locked memory through its host pointer");
    CHECK(cudaFree(in));
  }
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
  // A kernel given registered memory's host pointer: a device that can use it so (an H200
  // can) writes it; Remora's remote sessions cannot give kernels the tenant's own pages and
  // refuse the launch (cudaErrorNotSupported, not sticky: the tenant goes on).
  {
    int direct = 0;
    CHECK(cudaDeviceGetAttribute(&direct, cudaDevAttrCanUseHostPointerForRegisteredMem, 0));
    const char* server = std::getenv("REMORA_SERVER");
    const bool remote = server != nullptr && std::strncmp(server, "grpc", 4) == 0;
    const int count = static_cast<int>(reg_bytes / sizeof(int));
    if (direct || remote) {
      int* in = nullptr;
      CHECK(cudaMalloc(&in, reg_bytes));
      std::vector<int> values(count);
      for (int i = 0; i < count; ++i) values[i] = (i % 2000) - 1000;
      CHECK(cudaMemcpy(in, values.data(), reg_bytes, cudaMemcpyHostToDevice));
      int* out = static_cast<int*>(reg);
      Square<<<(count + 255) / 256, 256>>>(in, out, count);
      const cudaError_t e = cudaGetLastError();
      if (direct) {
        CHECK(e);
        CHECK(cudaDeviceSynchronize());
        bool ok = true;
        for (int i = 0; i < count; ++i) ok &= out[i] == values[i] * values[i];
        expect(ok, "a kernel writing registered memory through its host pointer");
      } else {
        expect(e == cudaErrorNotSupported, "a remote kernel given registered memory refused");
        CHECK(cudaDeviceSynchronize());
      }
      CHECK(cudaFree(in));
    }
  }
  CHECK(cudaHostUnregister(reg));
  munmap(reg, reg_bytes);

  // Many small allocations, freed in a different order.
  std::vector<void*> small(64);
  for (size_t i = 0; i < small.size(); ++i) CHECK(cudaMalloc(&small[i], 16 + i * 100));
  for (size_t i = 0; i < small.size(); i += 2) CHECK(cudaFree(small[i]));
  for (size_t i = 1; i < small.size(); i += 2) CHECK(cudaFree(small[i]));
  CHECK(cudaFree(nullptr));  // freeing null is a no-op

  // 3-D: a w x h x d volume of floats, pitched on the device.
  {
    const size_t w = 37, h = 5, d = 4;
    std::vector<float> vol(w * h * d), back(w * h * d, -1.0f);
    for (float& v : vol) v = rng.Uniform(-1, 1);
    cudaPitchedPtr dev;
    CHECK(cudaMalloc3D(&dev, make_cudaExtent(w * sizeof(float), h, d)));
    expect(dev.pitch >= w * sizeof(float) && dev.ysize == h, "cudaMalloc3D's pitch and ysize");
    cudaMemcpy3DParms in{};
    in.srcPtr = make_cudaPitchedPtr(vol.data(), w * sizeof(float), w, h);
    in.dstPtr = dev;
    in.extent = make_cudaExtent(w * sizeof(float), h, d);
    in.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&in));
    // Zero the bytes of rows 1..2 of slices 2..3 (a box), then read back all of it.
    cudaPitchedPtr box = dev;
    box.ptr = static_cast<char*>(dev.ptr) + 2 * dev.pitch * h + 1 * dev.pitch;
    CHECK(cudaMemset3D(box, 0, make_cudaExtent(w * sizeof(float), 2, 2)));
    cudaMemcpy3DParms out{};
    out.srcPtr = dev;
    out.dstPtr = make_cudaPitchedPtr(back.data(), w * sizeof(float), w, h);
    out.extent = make_cudaExtent(w * sizeof(float), h, d);
    out.kind = cudaMemcpyDeviceToHost;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMemcpy3DAsync(&out, s));
    CHECK(cudaStreamSynchronize(s));
    bool ok = true;
    for (size_t z = 0; z < d; ++z)
      for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < w; ++x) {
          const bool zeroed = z >= 2 && y >= 1 && y <= 2;
          const float want = zeroed ? 0.0f : vol[(z * h + y) * w + x];
          ok &= back[(z * h + y) * w + x] == want;
        }
    expect(ok, "3-D copy in, memset of a box, copy out");
    // A sub-volume at (x 3 floats, y 1, z 1) of 5 x 2 x 2 into a packed host buffer.
    std::vector<float> sub(5 * 2 * 2, -1.0f);
    cudaMemcpy3DParms part{};
    part.srcPtr = dev;
    part.srcPos = make_cudaPos(3 * sizeof(float), 1, 1);
    part.dstPtr = make_cudaPitchedPtr(sub.data(), 5 * sizeof(float), 5, 2);
    part.extent = make_cudaExtent(5 * sizeof(float), 2, 2);
    part.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&part));
    ok = true;
    for (size_t z = 0; z < 2; ++z)
      for (size_t y = 0; y < 2; ++y)
        for (size_t x = 0; x < 5; ++x) {
          const size_t vz = z + 1, vy = y + 1, vx = x + 3;
          const bool zeroed = vz >= 2 && vy >= 1 && vy <= 2;
          const float want = zeroed ? 0.0f : vol[(vz * h + vy) * w + vx];
          ok &= sub[(z * 2 + y) * 5 + x] == want;
        }
    expect(ok, "3-D copy of a sub-volume");
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(dev.ptr));
  }

  // CUDA arrays of float2: host -> array A, a block of A -> array B at an offset, B -> host.
  {
    const size_t w = 29, h = 6;
    std::vector<float2> img(w * h), back(w * h, make_float2(-1, -1));
    for (auto& v : img) v = make_float2(rng.Uniform(-1, 1), rng.Uniform(-1, 1));
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float2>();
    cudaArray_t arr_a, arr_b;
    CHECK(cudaMallocArray(&arr_a, &desc, w, h));
    CHECK(cudaMallocArray(&arr_b, &desc, w, h));
    cudaChannelFormatDesc got{};
    cudaExtent ext{};
    unsigned flags = 99;
    CHECK(cudaArrayGetInfo(&got, &ext, &flags, arr_a));
    expect(got.x == 32 && got.y == 32 && got.z == 0 && got.f == cudaChannelFormatKindFloat &&
               ext.width == w && ext.height == h && flags == 0,
           "cudaArrayGetInfo");
    const size_t row = w * sizeof(float2);
    CHECK(cudaMemcpy2DToArray(arr_a, 0, 0, img.data(), row, row, h, cudaMemcpyHostToDevice));
    std::vector<float2> zero(w * h, make_float2(0, 0));
    CHECK(cudaMemcpy2DToArray(arr_b, 0, 0, zero.data(), row, row, h, cudaMemcpyHostToDevice));
    // A's block of 10 x 3 elements at (2, 1) to B at (5, 2).
    CHECK(cudaMemcpy2DArrayToArray(arr_b, 5 * sizeof(float2), 2, arr_a, 2 * sizeof(float2), 1,
                                   10 * sizeof(float2), 3, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy2DFromArray(back.data(), row, arr_b, 0, 0, row, h, cudaMemcpyDeviceToHost));
    bool ok = true;
    for (size_t y = 0; y < h; ++y)
      for (size_t x = 0; x < w; ++x) {
        const bool in = x >= 5 && x < 15 && y >= 2 && y < 5;
        const float2 want = in ? img[(y - 1) * w + (x - 3)] : make_float2(0, 0);
        ok &= back[y * w + x].x == want.x && back[y * w + x].y == want.y;
      }
    expect(ok, "2-D copies into, between and out of arrays");
    // A 3-D array of ints: a whole-volume copy in, one slice out through cudaMemcpy3D.
    const size_t d = 3;
    std::vector<int> vol(w * h * d), slice(w * h, -1);
    for (int& v : vol) v = static_cast<int>(rng.Next() >> 40);
    cudaChannelFormatDesc idesc = cudaCreateChannelDesc<int>();
    cudaArray_t arr_c;
    CHECK(cudaMalloc3DArray(&arr_c, &idesc, make_cudaExtent(w, h, d)));
    cudaMemcpy3DParms in{};
    in.srcPtr = make_cudaPitchedPtr(vol.data(), w * sizeof(int), w, h);
    in.dstArray = arr_c;
    in.extent = make_cudaExtent(w, h, d);  // elements, with an array on a side
    in.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&in));
    cudaMemcpy3DParms out{};
    out.srcArray = arr_c;
    out.srcPos = make_cudaPos(0, 0, 2);
    out.dstPtr = make_cudaPitchedPtr(slice.data(), w * sizeof(int), w, h);
    out.extent = make_cudaExtent(w, h, 1);
    out.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&out));
    ok = true;
    for (size_t i = 0; i < w * h; ++i) ok &= slice[i] == vol[2 * w * h + i];
    expect(ok, "3-D copy into an array and a slice out");
    CHECK(cudaFreeArray(arr_a));
    CHECK(cudaFreeArray(arr_b));
    CHECK(cudaFreeArray(arr_c));
  }

  // Two copies in one batch.
  {
    std::vector<int> x(100), y(50), bx(100, 0), by(50, 0);
    for (int& v : x) v = static_cast<int>(rng.Next());
    for (int& v : y) v = static_cast<int>(rng.Next());
    int *dx, *dy;
    CHECK(cudaMalloc(&dx, sizeof(int) * 100));
    CHECK(cudaMalloc(&dy, sizeof(int) * 50));
    void* dsts[] = {dx, dy};
    const void* srcs[] = {x.data(), y.data()};
    size_t sizes[] = {sizeof(int) * 100, sizeof(int) * 50};
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx = 0;
    // Batches do not take the legacy default stream (NVIDIA's answer on an H200, CUDA 13.0).
    EXPECT_CUDA(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &idx, 1, nullptr),
                cudaErrorInvalidValue);
    EXPECT_CUDA(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &idx, 1, cudaStreamLegacy),
                cudaErrorInvalidValue);
    EXPECT_CUDA(cudaGetLastError(), cudaErrorInvalidValue);  // the last error, read and reset
    cudaStream_t batch;
    CHECK(cudaStreamCreateWithFlags(&batch, cudaStreamNonBlocking));
    CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &idx, 1, batch));
    CHECK(cudaStreamSynchronize(batch));
    CHECK(cudaMemcpy(bx.data(), dx, sizes[0], cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(by.data(), dy, sizes[1], cudaMemcpyDeviceToHost));
    expect(bx == x && by == y, "cudaMemcpyBatchAsync");

    // A 3-D batch: a 10 x 4 block of x (rows of 20) from the host into device memory with rows
    // of 12, read during the call; the same block from there into a 2-D array of ints at
    // (3, 1), in stream order. Extents count bytes between pointers and elements with arrays.
    const size_t w = 10, h = 4;
    int* dblock;
    CHECK(cudaMalloc(&dblock, sizeof(int) * 12 * h));
    CHECK(cudaMemset(dblock, 0, sizeof(int) * 12 * h));
    cudaChannelFormatDesc idesc = cudaCreateChannelDesc<int>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &idesc, 16, 8));
    std::vector<int> zero(16 * 8, 0), back(16 * 8, -1);
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, zero.data(), 16 * sizeof(int), 16 * sizeof(int), 8,
                              cudaMemcpyHostToDevice));
    cudaMemcpy3DBatchOp ops[2] = {};
    ops[0].src.type = ops[0].dst.type = cudaMemcpyOperandTypePointer;
    ops[0].src.op.ptr.ptr = x.data();
    ops[0].src.op.ptr.rowLength = 20 * sizeof(int);
    ops[0].dst.op.ptr.ptr = dblock;
    ops[0].dst.op.ptr.rowLength = 12 * sizeof(int);
    ops[0].extent = make_cudaExtent(w * sizeof(int), h, 1);
    ops[0].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    ops[1].src.type = cudaMemcpyOperandTypePointer;
    ops[1].src.op.ptr.ptr = dblock;
    ops[1].src.op.ptr.rowLength = 12;
    ops[1].dst.type = cudaMemcpyOperandTypeArray;
    ops[1].dst.op.array.array = arr;
    ops[1].dst.op.array.offset = {3, 1, 0};
    ops[1].extent = make_cudaExtent(w, h, 1);
    ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    CHECK(cudaMemcpy3DBatchAsync(1, ops, 0, batch));
    CHECK(cudaMemcpy3DBatchAsync(1, ops + 1, 0, batch));
    CHECK(cudaStreamSynchronize(batch));
    CHECK(cudaMemcpy2DFromArray(back.data(), 16 * sizeof(int), arr, 0, 0, 16 * sizeof(int), 8,
                                cudaMemcpyDeviceToHost));
    bool in_place = true;
    for (size_t r = 0; r < 8; ++r)
      for (size_t c = 0; c < 16; ++c) {
        const bool in = c >= 3 && c < 3 + w && r >= 1 && r < 1 + h;
        in_place &= back[r * 16 + c] == (in ? x[(r - 1) * 20 + (c - 3)] : 0);
      }
    expect(in_place, "cudaMemcpy3DBatchAsync: pointers and an array");
    ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
    EXPECT_CUDA(cudaMemcpy3DBatchAsync(2, ops, 0, batch), cudaErrorInvalidValue);
    EXPECT_CUDA(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK(cudaFreeArray(arr));
    CHECK(cudaFree(dblock));
    CHECK(cudaStreamDestroy(batch));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
  }

  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  size_t free_after = 0;
  CHECK(cudaMemGetInfo(&free_after, &total));
  expect(free_after <= total, "free <= total after freeing");
  return Finish(failures, "memory");
}
