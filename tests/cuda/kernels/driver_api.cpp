// tests/cuda/kernels/driver_api.cpp - a program on the CUDA driver API alone, as driver-API
// samples are written: cuInit, a context, modules loaded at run time from a fat binary (in
// memory) and from PTX (a file), kernels found by name and launched with kernelParams and with
// a packed `extra` buffer, streams, events and copies; results checked against the CPU on
// random data, and the driver's errors for its common mistakes.
//
// Usage: driver_api [FATBIN [PTX]]   (driver_kernels.cu built with nvcc -fatbin and nvcc -ptx;
// by default the copies linked into the program)
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cu_check.h"
#include "driver_kernels_files.h"

static std::string ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::printf("FAIL: cannot read %s\n", path);
    std::exit(1);
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// y = a*x + y over n floats, with the module's saxpy, both ways of passing parameters.
static void Saxpy(CUfunction f, CUstream s, int n, std::mt19937& rng, bool packed) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(n), y(n), want(n), got(n);
  const float a = dist(rng);
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
    want[i] = a * x[i] + y[i];
  }
  CUdeviceptr dx = 0, dy = 0;
  CU_CHECK(cuMemAlloc(&dx, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&dy, n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoDAsync(dy, y.data(), n * sizeof(float), s));
  if (packed) {
    struct {
      int n;
      float a;
      CUdeviceptr x, y;  // 8-aligned, as the kernel's parameters are laid out
    } args{n, a, dx, dy};
    size_t size = sizeof args;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    CU_CHECK(cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, s, nullptr, extra));
  } else {
    void* params[] = {&n, const_cast<float*>(&a), &dx, &dy};
    CU_CHECK(cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, s, params, nullptr));
  }
  CU_CHECK(cuMemcpyDtoHAsync(got.data(), dy, n * sizeof(float), s));
  CU_CHECK(cuStreamSynchronize(s));
  for (int i = 0; i < n; ++i)
    if (std::fabs(got[i] - want[i]) > 1e-5f) {
      std::printf("FAIL: saxpy (%s) y[%d] = %f, expected %f\n", packed ? "extra" : "params", i,
                  got[i], want[i]);
      std::exit(1);
    }
  CU_CHECK(cuMemFree(dx));
  CU_CHECK(cuMemFree(dy));
}

int main(int argc, char** argv) {
  if (argc > 3) {
    std::printf("FAIL: usage: driver_api [FATBIN [PTX]]\n");
    return 2;
  }
  const DriverKernelFiles files = DriverKernelPaths(argc, argv);
  // Before cuInit every call fails so.
  int count = 0;
  CU_EXPECT(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CU_CHECK(cuInit(0));
  CU_CHECK(cuDeviceGetCount(&count));
  if (count < 1) {
    std::printf("FAIL: no device\n");
    return 1;
  }
  int version = 0;
  CU_CHECK(cuDriverGetVersion(&version));
  CUdevice dev = 0;
  CU_CHECK(cuDeviceGet(&dev, 0));
  CU_EXPECT(cuDeviceGet(&dev, count), CUDA_ERROR_INVALID_DEVICE);
  char name[256] = {};
  CU_CHECK(cuDeviceGetName(name, sizeof name, dev));
  int major = 0, sms = 0;
  CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU_CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  size_t total = 0;
  CU_CHECK(cuDeviceTotalMem(&total, dev));
  if (major < 1 || sms < 1 || total == 0 || name[0] == '\0') {
    std::printf("FAIL: device %s: cc %d, %d SMs, %zu bytes\n", name, major, sms, total);
    return 1;
  }

  // No context yet: device work is refused.
  CUdeviceptr early = 0;
  CU_EXPECT(cuMemAlloc(&early, 256), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = nullptr, current = nullptr;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_CHECK(cuCtxSetCurrent(ctx));
  CU_CHECK(cuCtxGetCurrent(&current));
  if (current != ctx) {
    std::printf("FAIL: the current context is not the one set\n");
    return 1;
  }
  // The private table NVIDIA's libraries (cuBLAS, cuFFT, cuSOLVER) ask their thread's context
  // of: its third entry answers the current context.
  {
    const CUuuid tools_tls = {{'\x42', '\xd8', '\x5a', '\x81', '\x23', '\xf6', '\xcb', '\x47',
                               '\x82', '\x98', '\xf6', '\xe7', '\x8a', '\x3a', '\xec', '\xdc'}};
    const void* table = nullptr;
    CU_CHECK(cuGetExportTable(&table, &tools_tls));
    auto thread_context =
        reinterpret_cast<CUresult (*)(CUcontext*)>(static_cast<void* const*>(table)[2]);
    CUcontext asked = nullptr;
    CU_CHECK(thread_context(&asked));
    if (asked != ctx) {
      std::printf("FAIL: the tools table answers context %p, not the current %p\n",
                  static_cast<void*>(asked), static_cast<void*>(ctx));
      return 1;
    }
  }
  size_t free_bytes = 0, total_bytes = 0;
  CU_CHECK(cuMemGetInfo(&free_bytes, &total_bytes));

  // What the driver says of pointers: device memory, page-locked host memory, and memory it
  // never saw.
  {
    CUdeviceptr d = 0;
    void* h = nullptr;
    CU_CHECK(cuMemAlloc(&d, 4096));
    CU_CHECK(cuMemAllocHost(&h, 4096));
    unsigned int type = 0;
    int ordinal = -1;
    CUcontext owner = nullptr;
    CU_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    CU_CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d + 100));
    CU_CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    if (type != CU_MEMORYTYPE_DEVICE || ordinal != 0 || owner != ctx) {
      std::printf("FAIL: device memory: type %u, ordinal %d\n", type, ordinal);
      return 1;
    }
    void* host = nullptr;
    CU_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   reinterpret_cast<CUdeviceptr>(h)));
    CU_CHECK(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                   reinterpret_cast<CUdeviceptr>(h)));
    if (type != CU_MEMORYTYPE_HOST || host != h) {
      std::printf("FAIL: page-locked memory: type %u\n", type);
      return 1;
    }
    int on_stack = 0;
    CU_EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    reinterpret_cast<CUdeviceptr>(&on_stack)),
              CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemFreeHost(h));
    CU_CHECK(cuMemFree(d));
  }

  std::mt19937 rng(7);
  // A fat binary in memory, as cuModuleLoadData takes it.
  const std::string fatbin = ReadFile(files.fatbin.c_str());
  CUmodule from_fatbin = nullptr;
  CU_CHECK(cuModuleLoadData(&from_fatbin, fatbin.data()));
  CUfunction saxpy = nullptr, sum64 = nullptr, missing = nullptr;
  CU_CHECK(cuModuleGetFunction(&saxpy, from_fatbin, "saxpy"));
  CU_CHECK(cuModuleGetFunction(&sum64, from_fatbin, "sum64"));
  CU_EXPECT(cuModuleGetFunction(&missing, from_fatbin, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  int max_threads = 0;
  CU_CHECK(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, saxpy));
  if (max_threads < 128) {
    std::printf("FAIL: saxpy allows %d threads a block\n", max_threads);
    return 1;
  }
  CUstream s = nullptr;
  CU_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  Saxpy(saxpy, s, 10000, rng, /*packed=*/false);
  Saxpy(saxpy, s, 777, rng, /*packed=*/true);

  // 64-bit values through shared memory and a 64-bit atomic, timed by events.
  const int n = 5000;
  std::vector<long long> v(n);
  std::uniform_int_distribution<long long> big(-(1ll << 40), 1ll << 40);
  unsigned long long want = 0;
  for (long long& x : v) {
    x = big(rng);
    want += static_cast<unsigned long long>(x);
  }
  CUdeviceptr dv = 0, dsum = 0;
  CU_CHECK(cuMemAlloc(&dv, n * sizeof(long long)));
  CU_CHECK(cuMemAlloc(&dsum, sizeof(unsigned long long)));
  CU_CHECK(cuMemcpyHtoD(dv, v.data(), n * sizeof(long long)));
  CU_CHECK(cuMemsetD32(dsum, 0, 2));
  CUevent start = nullptr, stop = nullptr;
  CU_CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CU_CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  CU_CHECK(cuEventRecord(start, s));
  int nn = n;
  void* params[] = {&dv, &nn, &dsum};
  CU_CHECK(cuLaunchKernel(sum64, 1, 1, 1, 256, 1, 1, 256 * sizeof(long long), s, params, nullptr));
  CU_CHECK(cuEventRecord(stop, s));
  CU_CHECK(cuEventSynchronize(stop));
  float ms = -1;
  CU_CHECK(cuEventElapsedTime(&ms, start, stop));
  unsigned long long got = 0;
  CU_CHECK(cuMemcpyDtoH(&got, dsum, sizeof got));
  if (got != want || ms < 0) {
    std::printf("FAIL: sum64 = %llu, expected %llu (%.3f ms)\n", got, want, ms);
    return 1;
  }

  // A 32-bit pattern whose bytes differ.
  std::vector<unsigned int> pattern(1000);
  CU_CHECK(cuMemsetD32(dv, 0xdeadbeefu, pattern.size()));
  CU_CHECK(cuMemcpyDtoH(pattern.data(), dv, pattern.size() * 4));
  for (unsigned int w : pattern)
    if (w != 0xdeadbeefu) {
      std::printf("FAIL: cuMemsetD32 wrote %08x\n", w);
      return 1;
    }

  // A module variable, set by the host.
  CUdeviceptr offset = 0;
  size_t offset_bytes = 0;
  CU_CHECK(cuModuleGetGlobal(&offset, &offset_bytes, from_fatbin, "offset_by"));
  CUdeviceptr nowhere = 0;
  CU_EXPECT(cuModuleGetGlobal(&nowhere, nullptr, from_fatbin, "no_such_variable"),
            CUDA_ERROR_NOT_FOUND);
  const float by = 2.5f;
  CU_CHECK(cuMemcpyHtoD(offset, &by, sizeof by));
  CUfunction add_offset = nullptr;
  CU_CHECK(cuModuleGetFunction(&add_offset, from_fatbin, "add_offset"));
  {
    const int m = 1000;
    std::vector<float> y(m), out(m);
    for (int i = 0; i < m; ++i) y[i] = static_cast<float>(i) * 0.5f;
    CUdeviceptr dy = 0;
    CU_CHECK(cuMemAlloc(&dy, m * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(dy, y.data(), m * sizeof(float)));
    int mm = m;
    void* p[] = {&mm, &dy};
    // Cooperative, both ways: the kernel needs no grid barrier, but every block must fit.
    int per_sm = 0;
    CU_CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, add_offset, 128, 0));
    if (per_sm < 1 || offset_bytes != sizeof(float)) {
      std::printf("FAIL: %d blocks per SM, a %zu-byte variable\n", per_sm, offset_bytes);
      return 1;
    }
    // Dynamic shared memory per block as the occupancy calculator gives it (NVIDIA's cuBLAS
    // and cuFFT ask it when they start): some for one block, at most the kernel's limit (48
    // KiB until raised, so one block and two get the same on an H200), and with 16 blocks
    // resident less, within a sixteenth of a multiprocessor's.
    size_t one_block = 0, two_blocks = 0, sixteen = 0;
    int per_mp = 0, limit = 0;
    CU_CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&one_block, add_offset, 1, 32));
    CU_CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&two_blocks, add_offset, 2, 32));
    CU_CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&sixteen, add_offset, 16, 32));
    CU_CHECK(
        cuFuncGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, add_offset));
    CU_CHECK(cuDeviceGetAttribute(&per_mp, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                                  dev));
    if (one_block == 0 || one_block > size_t(limit) || two_blocks > one_block ||
        sixteen >= one_block || sixteen > size_t(per_mp) / 16) {
      std::printf(
          "FAIL: available dynamic shared memory %zu, %zu, %zu (1, 2, 16 blocks; "
          "limit %d)\n",
          one_block, two_blocks, sixteen, limit);
      return 1;
    }
    CU_CHECK(cuLaunchCooperativeKernel(add_offset, 2, 1, 1, 128, 1, 1, 0, s, p));
    CUlaunchAttribute coop{};
    coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    coop.value.cooperative = 1;
    CUlaunchConfig config{};
    config.gridDimX = 2;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 128;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = s;
    config.attrs = &coop;
    config.numAttrs = 1;
    CU_CHECK(cuLaunchKernelEx(&config, add_offset, p, nullptr));
    // As Triton launches: a priority and a cluster of one block (no cluster at all).
    CUlaunchAttribute hints[2] = {};
    hints[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    hints[0].value.priority = 0;
    hints[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    hints[1].value.clusterDim.x = hints[1].value.clusterDim.y = hints[1].value.clusterDim.z = 1;
    config.attrs = hints;
    config.numAttrs = 2;
    CU_CHECK(cuLaunchKernelEx(&config, add_offset, p, nullptr));
    // A host function runs once the stream reaches it.
    static std::atomic<int> reached{0};
    CU_CHECK(cuLaunchHostFunc(
        s, [](void*) { reached.store(1); }, nullptr));
    CU_CHECK(cuMemcpyDtoHAsync(out.data(), dy, m * sizeof(float), s));
    CU_CHECK(cuStreamSynchronize(s));
    for (int i = 0; i < m; ++i)
      if (out[i] != y[i] + 3 * by) {
        std::printf("FAIL: add_offset y[%d] = %f, expected %f\n", i, out[i], y[i] + 3 * by);
        return 1;
      }
    if (reached.load() != 1) {
      std::printf("FAIL: the host function did not run\n");
      return 1;
    }
    CU_CHECK(cuMemFree(dy));
  }

  // A texture object over pitched memory, made with the driver's descriptors: point sampled
  // with clamping, against the image, and its descriptors read back as given.
  {
    const int w = 50, h = 20, n = 2000;
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> img(w * h), got(n);
    for (float& v : img) v = dist(rng);
    CUdeviceptr d_img = 0;
    size_t pitch = 0;
    CU_CHECK(cuMemAllocPitch(&d_img, &pitch, w * sizeof(float), h, sizeof(float)));
    CUDA_MEMCPY2D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_HOST;
    copy.srcHost = img.data();
    copy.srcPitch = w * sizeof(float);
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = d_img;
    copy.dstPitch = pitch;
    copy.WidthInBytes = w * sizeof(float);
    copy.Height = h;
    CU_CHECK(cuMemcpy2D(&copy));
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_PITCH2D;
    res.res.pitch2D.devPtr = d_img;
    res.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
    res.res.pitch2D.numChannels = 1;
    res.res.pitch2D.width = w;
    res.res.pitch2D.height = h;
    res.res.pitch2D.pitchInBytes = pitch;
    CUDA_TEXTURE_DESC td{};
    td.addressMode[0] = td.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    td.filterMode = CU_TR_FILTER_MODE_POINT;
    td.flags = CU_TRSF_READ_AS_INTEGER;
    CUtexObject tex = 0;
    CU_CHECK(cuTexObjectCreate(&tex, &res, &td, nullptr));
    CUDA_RESOURCE_DESC res_back{};
    CUDA_TEXTURE_DESC td_back{};
    CU_CHECK(cuTexObjectGetResourceDesc(&res_back, tex));
    CU_CHECK(cuTexObjectGetTextureDesc(&td_back, tex));
    if (res_back.resType != CU_RESOURCE_TYPE_PITCH2D || res_back.res.pitch2D.devPtr != d_img ||
        res_back.res.pitch2D.width != size_t(w) || res_back.res.pitch2D.pitchInBytes != pitch ||
        td_back.addressMode[1] != CU_TR_ADDRESS_MODE_CLAMP ||
        td_back.filterMode != CU_TR_FILTER_MODE_POINT) {
      std::printf("FAIL: texture descriptors read back differ\n");
      return 1;
    }
    std::vector<float> at(2 * n);
    std::uniform_int_distribution<int> xs(-4, w + 4), ys(-4, h + 4);
    for (int i = 0; i < n; ++i) {
      at[2 * i] = float(xs(rng)) + 0.5f;
      at[2 * i + 1] = float(ys(rng)) + 0.5f;
    }
    CUdeviceptr d_at = 0, d_out = 0;
    CU_CHECK(cuMemAlloc(&d_at, at.size() * sizeof(float)));
    CU_CHECK(cuMemAlloc(&d_out, n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(d_at, at.data(), at.size() * sizeof(float)));
    CUfunction sample = nullptr;
    CU_CHECK(cuModuleGetFunction(&sample, from_fatbin, "sample2d"));
    int nn = n;
    void* p[] = {&tex, &d_at, &d_out, &nn};
    CU_CHECK(cuLaunchKernel(sample, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, p, nullptr));
    CU_CHECK(cuStreamSynchronize(s));
    CU_CHECK(cuMemcpyDtoH(got.data(), d_out, n * sizeof(float)));
    for (int i = 0; i < n; ++i) {
      const int x = std::min(std::max(int(std::floor(at[2 * i])), 0), w - 1);
      const int y = std::min(std::max(int(std::floor(at[2 * i + 1])), 0), h - 1);
      if (got[i] != img[y * w + x]) {
        std::printf("FAIL: sample2d (%g, %g) = %g, expected %g\n", at[2 * i], at[2 * i + 1], got[i],
                    img[y * w + x]);
        return 1;
      }
    }
    CU_CHECK(cuTexObjectDestroy(tex));
    CU_CHECK(cuMemFree(d_img));
    CU_CHECK(cuMemFree(d_at));
    CU_CHECK(cuMemFree(d_out));
  }

  // Copies by unified address (host or device on either side, pinned or pageable) and
  // between contexts, which on one device are the one context; and what a stream, a function,
  // a kernel and the device's bus address say of where they belong.
  {
    const size_t m = 4096;
    std::vector<unsigned char> in(m), back(m, 0);
    for (unsigned char& b : in) b = static_cast<unsigned char>(rng());
    CUdeviceptr d1 = 0, d2 = 0;
    void* pinned = nullptr;
    CU_CHECK(cuMemAlloc(&d1, m));
    CU_CHECK(cuMemAlloc(&d2, m));
    CU_CHECK(cuMemAllocHost(&pinned, m));
    std::memcpy(pinned, in.data(), m);
    CU_CHECK(cuMemcpyAsync(d1, reinterpret_cast<CUdeviceptr>(pinned), m, s));
    CU_CHECK(cuMemcpyPeerAsync(d2, ctx, d1, ctx, m, s));
    CU_CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(back.data()), d2, m, s));
    CU_CHECK(cuStreamSynchronize(s));
    CU_CHECK(cuMemsetD8(d1, 0, m));
    CU_CHECK(cuMemcpyPeer(d1, ctx, d2, ctx, m / 2));
    std::vector<unsigned char> half(m);
    CU_CHECK(cuMemcpyDtoH(half.data(), d1, m));
    for (size_t i = 0; i < m; ++i)
      if (back[i] != in[i] || half[i] != (i < m / 2 ? in[i] : 0)) {
        std::printf("FAIL: unified and peer copies: byte %zu is %u and %u, expected %u\n", i,
                    back[i], half[i], in[i]);
        return 1;
      }
    const int sync_memops = 1;
    CU_CHECK(cuPointerSetAttribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d1));
    CU_CHECK(cuMemFreeHost(pinned));
    CU_CHECK(cuMemFree(d1));
    CU_CHECK(cuMemFree(d2));

    CUcontext stream_ctx = nullptr;
    CUgreenCtx green = reinterpret_cast<CUgreenCtx>(&stream_ctx);
    CU_CHECK(cuStreamGetCtx(s, &stream_ctx));
    if (stream_ctx != ctx) {
      std::printf("FAIL: the stream's context is not the one it was made in\n");
      return 1;
    }
    CU_CHECK(cuStreamGetCtx_v2(s, &stream_ctx, &green));
    CUmodule owner = nullptr;
    CU_CHECK(cuFuncGetModule(&owner, saxpy));
    CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
    CU_CHECK(cuFuncLoad(saxpy));
    CU_CHECK(cuFuncIsLoaded(&state, saxpy));
    if (stream_ctx != ctx || green != nullptr || owner != from_fatbin ||
        state != CU_FUNCTION_LOADING_STATE_LOADED) {
      std::printf("FAIL: stream context %p, green context %p, module %p, loading state %d\n",
                  static_cast<void*>(stream_ctx), static_cast<void*>(green),
                  static_cast<void*>(owner), static_cast<int>(state));
      return 1;
    }
    char bus[32] = {};
    CUdevice again = -1;
    CU_CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
    CU_CHECK(cuDeviceGetByPCIBusId(&again, bus));
    if (again != dev) {
      std::printf("FAIL: bus %s is device %d, not %d\n", bus, again, dev);
      return 1;
    }
    int p2p = -1;  // a device is not its own peer
    CU_EXPECT(cuDeviceGetP2PAttribute(&p2p, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev, dev),
              CUDA_ERROR_INVALID_DEVICE);
  }

  // A library: loaded with no context needed, its kernels usable as functions.
  CUlibrary library = nullptr;
  CU_CHECK(cuLibraryLoadData(&library, fatbin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel lib_saxpy = nullptr;
  CU_CHECK(cuLibraryGetKernel(&lib_saxpy, library, "saxpy"));
  CUfunction lib_fn = nullptr;
  CU_CHECK(cuKernelGetFunction(&lib_fn, lib_saxpy));
  CUlibrary lib_of = nullptr;
  CU_CHECK(cuKernelGetLibrary(&lib_of, lib_saxpy));
  if (lib_of != library) {
    std::printf("FAIL: the kernel's library is not the one it came from\n");
    return 1;
  }
  Saxpy(lib_fn, s, 513, rng, /*packed=*/false);
  // The library's kernels and the module's, listed: driver_kernels.cu defines four.
  {
    unsigned int count = 0;
    CU_CHECK(cuLibraryGetKernelCount(&count, library));
    std::vector<CUkernel> kernels(count);
    CU_CHECK(cuLibraryEnumerateKernels(kernels.data(), count, library));
    if (count != 4 || std::count(kernels.begin(), kernels.end(), lib_saxpy) != 1) {
      std::printf("FAIL: the library lists %u kernels, not its four\n", count);
      return 1;
    }
    CU_CHECK(cuModuleGetFunctionCount(&count, from_fatbin));
    std::vector<CUfunction> fns(count);
    CU_CHECK(cuModuleEnumerateFunctions(fns.data(), count, from_fatbin));
    std::vector<std::string> names;
    for (CUfunction f : fns) {
      const char* name = nullptr;
      CU_CHECK(cuFuncGetName(&name, f));
      names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    if (names != std::vector<std::string>{"add_offset", "sample2d", "saxpy", "sum64"}) {
      std::printf("FAIL: the module lists %u kernels, not its four by name\n", count);
      return 1;
    }
    for (CUfunction f : fns) {
      const char* name = nullptr;
      CU_CHECK(cuFuncGetName(&name, f));
      if (std::strcmp(name, "saxpy") == 0) Saxpy(f, s, 300, rng, /*packed=*/true);
    }
  }
  CU_CHECK(cuLibraryUnload(library));

  // A 1-D CUDA array filled and read back by byte offsets from host memory, device memory and
  // another array; a copy past its end is refused.
  {
    const int n = 1000;
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> v(n), got(n, 0.0f);
    for (float& x : v) x = dist(rng);
    CUDA_ARRAY_DESCRIPTOR desc{};
    desc.Width = n;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    CUarray a = nullptr, b = nullptr;
    CU_CHECK(cuArrayCreate(&a, &desc));
    CU_CHECK(cuArrayCreate(&b, &desc));
    const size_t half = n / 2 * sizeof(float);
    CUdeviceptr d = 0;
    CU_CHECK(cuMemAlloc(&d, n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(d, v.data(), n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoA(a, 0, v.data(), half));  // first half from the host
    CU_CHECK(cuMemcpyDtoA(a, half, d + half, n * sizeof(float) - half));  // second from the device
    CU_CHECK(cuMemcpyAtoA(b, 0, a, 0, n * sizeof(float)));
    CU_CHECK(cuMemsetD8(d, 0, n * sizeof(float)));
    CU_CHECK(cuMemcpyAtoD(d, b, 0, half));
    CU_CHECK(cuMemcpyAtoHAsync(got.data() + n / 2, b, half, n * sizeof(float) - half, s));
    CU_CHECK(cuStreamSynchronize(s));
    CU_CHECK(cuMemcpyDtoH(got.data(), d, half));
    if (got != v) {
      std::printf("FAIL: a 1-D array's copies by offset differ from what was written\n");
      return 1;
    }
    CU_CHECK(cuMemcpyHtoAAsync(a, 4, v.data(), 8, s));
    CU_CHECK(cuStreamSynchronize(s));
    float two[2] = {};
    CU_CHECK(cuMemcpyAtoH(two, a, 4, 8));
    if (two[0] != v[0] || two[1] != v[1]) {
      std::printf("FAIL: an array's bytes at an offset differ from what was written\n");
      return 1;
    }
    CU_EXPECT(cuMemcpyHtoA(a, half, v.data(), n * sizeof(float)), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuArrayDestroy(a));
    CU_CHECK(cuArrayDestroy(b));

    // A 2-D region copied between contexts, here both the one context: rows 2..5 of a
    // 10-row matrix of 100 floats a row.
    CU_CHECK(cuMemcpyHtoD(d, v.data(), n * sizeof(float)));
    CUdeviceptr e = 0;
    CU_CHECK(cuMemAlloc(&e, n * sizeof(float)));
    CU_CHECK(cuMemsetD32(e, 0, n));
    CUDA_MEMCPY3D_PEER peer{};
    peer.srcMemoryType = peer.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    peer.srcDevice = d + 20 * sizeof(float);
    peer.dstDevice = e;
    peer.srcPitch = peer.dstPitch = 100 * sizeof(float);
    peer.srcY = 2;
    peer.srcContext = peer.dstContext = ctx;
    peer.WidthInBytes = 50 * sizeof(float);
    peer.Height = 4;
    peer.Depth = 1;
    CU_CHECK(cuMemcpy3DPeerAsync(&peer, s));
    CU_CHECK(cuStreamSynchronize(s));
    CU_CHECK(cuMemcpyDtoH(got.data(), e, n * sizeof(float)));
    for (int row = 0; row < 10; ++row)
      for (int col = 0; col < 100; ++col) {
        const float want = row < 4 && col < 50 ? v[(row + 2) * 100 + 20 + col] : 0.0f;
        if (got[row * 100 + col] != want) {
          std::printf("FAIL: cuMemcpy3DPeerAsync: element (%d, %d) is %f, expected %f\n", row, col,
                      got[row * 100 + col], want);
          return 1;
        }
      }
    CU_CHECK(cuMemFree(d));
    CU_CHECK(cuMemFree(e));
  }

  // The device's memory pool named by its location (CUDA 13); the context's flags set and read
  // back.
  {
    CUmemoryPool by_device = nullptr, by_location = nullptr, current_pool = nullptr;
    CU_CHECK(cuDeviceGetDefaultMemPool(&by_device, dev));
    CUmemLocation at{};
    at.type = CU_MEM_LOCATION_TYPE_DEVICE;
    at.id = dev;
    CU_CHECK(cuMemGetDefaultMemPool(&by_location, &at, CU_MEM_ALLOCATION_TYPE_PINNED));
    CU_CHECK(cuMemGetMemPool(&current_pool, &at, CU_MEM_ALLOCATION_TYPE_PINNED));
    if (by_location != by_device || current_pool != by_device) {
      std::printf("FAIL: the device's pool by location is not its pool by device\n");
      return 1;
    }
    CU_CHECK(cuCtxSetFlags(CU_CTX_SCHED_BLOCKING_SYNC));
    unsigned int flags = 0;
    CU_CHECK(cuCtxGetFlags(&flags));
    if ((flags & CU_CTX_SCHED_MASK) != CU_CTX_SCHED_BLOCKING_SYNC) {
      std::printf("FAIL: the context's flags are %#x after setting blocking sync\n", flags);
      return 1;
    }
    CU_CHECK(cuCtxSetFlags(CU_CTX_SCHED_AUTO));
  }

  // A graph built from generic node parameters (cuGraphAddNode): y filled, y = a*x + y, y read
  // back by a copy node; then the kernel's `a` changed in the executable graph and the fill's
  // value in the graph.
  {
    const int n = 777;
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> x(n), got(n);
    for (float& v : x) v = dist(rng);
    CUdeviceptr dx = 0, dy = 0;
    CU_CHECK(cuMemAlloc(&dx, n * sizeof(float)));
    CU_CHECK(cuMemAlloc(&dy, n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
    CUgraph g = nullptr;
    CU_CHECK(cuGraphCreate(&g, 0));
    float one = 1.0f, a = dist(rng);
    unsigned int one_bits = 0;
    std::memcpy(&one_bits, &one, 4);
    CUgraphNodeParams fill{};
    fill.type = CU_GRAPH_NODE_TYPE_MEMSET;
    fill.memset.dst = dy;
    fill.memset.value = one_bits;
    fill.memset.elementSize = 4;
    fill.memset.width = n;
    fill.memset.height = 1;
    CUgraphNode fill_node = nullptr, kernel_node = nullptr, copy_node = nullptr;
    CU_CHECK(cuGraphAddNode(&fill_node, g, nullptr, nullptr, 0, &fill));
    int count = n;
    void* params[] = {&count, &a, &dx, &dy};
    CUgraphNodeParams kernel{};
    kernel.type = CU_GRAPH_NODE_TYPE_KERNEL;
    kernel.kernel.func = saxpy;
    kernel.kernel.gridDimX = 4;
    kernel.kernel.gridDimY = kernel.kernel.gridDimZ = 1;
    kernel.kernel.blockDimX = 128;
    kernel.kernel.blockDimY = kernel.kernel.blockDimZ = 1;
    kernel.kernel.kernelParams = params;
    CUgraphEdgeData plain{};  // a full dependency, as with no edge data
    CU_CHECK(cuGraphAddNode(&kernel_node, g, &fill_node, &plain, 1, &kernel));
    CUgraphNodeParams copy{};
    copy.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    copy.memcpy.copyCtx = ctx;
    copy.memcpy.copyParams.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.memcpy.copyParams.srcDevice = dy;
    copy.memcpy.copyParams.dstMemoryType = CU_MEMORYTYPE_HOST;
    copy.memcpy.copyParams.dstHost = got.data();
    copy.memcpy.copyParams.WidthInBytes = n * sizeof(float);
    copy.memcpy.copyParams.Height = copy.memcpy.copyParams.Depth = 1;
    CU_CHECK(cuGraphAddNode(&copy_node, g, &kernel_node, nullptr, 1, &copy));
    CUDA_MEMCPY3D back{};
    CU_CHECK(cuGraphMemcpyNodeGetParams(copy_node, &back));
    if (back.WidthInBytes != n * sizeof(float) || back.Height != 1 || back.Depth != 1) {
      std::printf("FAIL: a copy node's parameters read back differ\n");
      return 1;
    }
    CU_CHECK(cuGraphMemcpyNodeSetParams(copy_node, &back));  // what was read back describes it
    CUgraphExec exec = nullptr;
    CU_CHECK(cuGraphInstantiate(&exec, g, 0));
    auto check = [&](float filled, float scale, const char* what) {
      CU_CHECK(cuGraphLaunch(exec, s));
      CU_CHECK(cuStreamSynchronize(s));
      for (int i = 0; i < n; ++i)
        if (std::fabs(got[i] - (scale * x[i] + filled)) > 1e-5f) {
          std::printf("FAIL: generic graph nodes (%s): y[%d] = %f, expected %f\n", what, i, got[i],
                      scale * x[i] + filled);
          std::exit(1);
        }
    };
    check(1.0f, a, "as built");
    float b = 2 * a;
    void* b_params[] = {&count, &b, &dx, &dy};
    kernel.kernel.kernelParams = b_params;
    CU_CHECK(cuGraphExecNodeSetParams(exec, kernel_node, &kernel));
    check(1.0f, b, "the executable graph's kernel changed");
    float three = 3.0f;
    std::memcpy(&fill.memset.value, &three, 4);
    CU_CHECK(cuGraphNodeSetParams(fill_node, &fill));
    CU_EXPECT(cuGraphNodeSetParams(fill_node, &kernel), CUDA_ERROR_INVALID_VALUE);  // not its type
    CUgraphExecUpdateResultInfo info{};
    CU_CHECK(cuGraphExecUpdate(exec, g, &info));
    check(3.0f, a, "the graph's fill changed, then the executable graph updated");
    CU_CHECK(cuGraphExecDestroy(exec));
    CU_CHECK(cuGraphDestroy(g));
    CU_CHECK(cuMemFree(dx));
    CU_CHECK(cuMemFree(dy));
  }

  // Stream memory operations: a stream held on the device until another stream writes the
  // value it waits for, then its kernel runs; 64-bit values compared cyclically; a batch.
  {
    CUstream waiter = nullptr, writer = nullptr;
    CU_CHECK(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING));
    CU_CHECK(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
    CUdeviceptr flags_mem = 0;
    CU_CHECK(cuMemAlloc(&flags_mem, 64));
    CU_CHECK(cuMemsetD8(flags_mem, 0, 64));
    const int n = 500;
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> x(n), y(n), got(n);
    for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);
    CUdeviceptr dx = 0, dy = 0;
    CU_CHECK(cuMemAlloc(&dx, n * sizeof(float)));
    CU_CHECK(cuMemAlloc(&dy, n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
    CU_CHECK(cuStreamWaitValue32(waiter, flags_mem, 7, CU_STREAM_WAIT_VALUE_EQ));
    int count = n;
    float a = 3.0f;
    void* params[] = {&count, &a, &dx, &dy};
    CU_CHECK(cuLaunchKernel(saxpy, 4, 1, 1, 128, 1, 1, 0, waiter, params, nullptr));
    CU_CHECK(cuStreamWriteValue32(waiter, flags_mem + 4, 1, 0));  // the kernel is done
    CU_CHECK(cuStreamWriteValue32(writer, flags_mem, 6, 0));      // not yet the value
    CU_CHECK(cuStreamSynchronize(writer));
    CU_EXPECT(cuStreamQuery(waiter), CUDA_ERROR_NOT_READY);
    CU_CHECK(cuMemcpyDtoH(got.data(), dy, n * sizeof(float)));
    if (got != y) {
      std::printf("FAIL: a kernel behind a wait for a value ran before the value was written\n");
      return 1;
    }
    CU_CHECK(cuStreamWriteValue32(writer, flags_mem, 7, 0));
    CU_CHECK(cuStreamSynchronize(waiter));
    CU_CHECK(cuMemcpyDtoH(got.data(), dy, n * sizeof(float)));
    unsigned int done = 0;
    CU_CHECK(cuMemcpyDtoH(&done, flags_mem + 4, 4));
    for (int i = 0; i < n; ++i)
      if (std::fabs(got[i] - (a * x[i] + y[i])) > 1e-5f || done != 1) {
        std::printf("FAIL: after the wait: y[%d] = %f, expected %f (done %u)\n", i, got[i],
                    a * x[i] + y[i], done);
        return 1;
      }
    int wide = 0;
    CU_CHECK(cuDeviceGetAttribute(&wide, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
    if (wide) {
      // A wait for at least 2^64 - 8 from 2^64 - 16, met by 3: the comparison is of the
      // difference, as a counter that wraps needs.
      CU_CHECK(cuStreamWriteValue64(writer, flags_mem + 8, 0xFFFFFFFFFFFFFFF0ull, 0));
      CU_CHECK(cuStreamSynchronize(writer));
      CU_CHECK(cuStreamWaitValue64(waiter, flags_mem + 8, 0xFFFFFFFFFFFFFFF8ull,
                                   CU_STREAM_WAIT_VALUE_GEQ));
      CU_CHECK(cuStreamWriteValue64(waiter, flags_mem + 16, 0x123456789ull, 0));
      CUstreamBatchMemOpParams batch[2] = {};
      batch[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
      batch[0].writeValue.address = flags_mem + 8;
      batch[0].writeValue.value64 = 3;
      batch[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
      batch[1].writeValue.address = flags_mem + 24;
      batch[1].writeValue.value = 42;
      CU_CHECK(cuStreamBatchMemOp(writer, 2, batch, 0));
      CU_CHECK(cuStreamSynchronize(writer));
      CUresult waited = CUDA_ERROR_NOT_READY;
      for (int i = 0; i < 10000 && waited == CUDA_ERROR_NOT_READY; ++i) {
        waited = cuStreamQuery(waiter);
        if (waited == CUDA_ERROR_NOT_READY) usleep(1000);
      }
      if (waited != CUDA_SUCCESS) {  // release the wait before failing
        CU_CHECK(cuStreamWriteValue64(writer, flags_mem + 8, ~0ull, 0));
        std::printf("FAIL: a 64-bit wait met past the wrap still waits (%d)\n", int(waited));
        return 1;
      }
      CU_CHECK(cuStreamSynchronize(waiter));
      CU_CHECK(cuStreamSynchronize(writer));
      unsigned long long v64 = 0;
      unsigned int v32 = 0;
      CU_CHECK(cuMemcpyDtoH(&v64, flags_mem + 16, 8));
      CU_CHECK(cuMemcpyDtoH(&v32, flags_mem + 24, 4));
      if (v64 != 0x123456789ull || v32 != 42) {
        std::printf("FAIL: 64-bit and batched writes: %llx and %u\n", v64, v32);
        return 1;
      }
    }
    // The AND and NOR conditions: each held by a value that does not meet it, then met.
    struct Cond {
      unsigned op, want, before, after;
    };
    for (const Cond c : {Cond{CU_STREAM_WAIT_VALUE_AND, 0x30, 0x0F, 0x10},
                         Cond{CU_STREAM_WAIT_VALUE_NOR, 0xFFFF0000u, 0x0000FFFFu, 0x0000FFFEu}}) {
      CU_CHECK(cuStreamWriteValue32(writer, flags_mem + 28, c.before, 0));
      CU_CHECK(cuStreamSynchronize(writer));
      CU_CHECK(cuStreamWaitValue32(waiter, flags_mem + 28, c.want, c.op));
      usleep(2000);
      CU_EXPECT(cuStreamQuery(waiter), CUDA_ERROR_NOT_READY);
      CU_CHECK(cuStreamWriteValue32(writer, flags_mem + 28, c.after, 0));
      CU_CHECK(cuStreamSynchronize(waiter));
    }
    CU_EXPECT(cuStreamWriteValue32(writer, flags_mem + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuStreamDestroy(waiter));
    CU_CHECK(cuStreamDestroy(writer));
    CU_CHECK(cuMemFree(flags_mem));
    CU_CHECK(cuMemFree(dx));
    CU_CHECK(cuMemFree(dy));
  }

  // PTX from a file, JIT-compiled by whoever runs it.
  CUmodule from_ptx = nullptr;
  CU_CHECK(cuModuleLoad(&from_ptx, files.ptx.c_str()));
  CUfunction saxpy_ptx = nullptr;
  CU_CHECK(cuModuleGetFunction(&saxpy_ptx, from_ptx, "saxpy"));
  Saxpy(saxpy_ptx, nullptr, 3000, rng, /*packed=*/false);
  CU_CHECK(cuCtxSynchronize());

  CU_CHECK(cuEventDestroy(start));
  CU_CHECK(cuEventDestroy(stop));
  CU_CHECK(cuStreamDestroy(s));
  CU_CHECK(cuMemFree(dv));
  CU_CHECK(cuMemFree(dsum));
  CU_CHECK(cuModuleUnload(from_fatbin));
  CU_CHECK(cuModuleUnload(from_ptx));
  CU_CHECK(cuDevicePrimaryCtxRelease(dev));
  std::printf("PASS\n");
  return 0;
}
