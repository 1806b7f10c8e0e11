// client_stub/nvidia_library.h - finding NVIDIA's own copy of a library a Remora stub stands in
// for (libcurand.so.10, libcufft.so.12), and knowing whether the device is the emulated GPU.
#pragma once

namespace remora::client_stub {

// Opens NVIDIA's `soname` with RTLD_DEEPBIND (its calls to its own entry points stay inside it):
// the path in environment variable `env` if set, else the first found in LD_LIBRARY_PATH's
// directories, the toolkit's, or beside the libraries loaded now and in their wheel layout's
// `wheel_dir` (site-packages/torch/lib beside site-packages/<wheel_dir>), skipping the library
// that contains `self`. Returns null if none, after one line on stderr ending with
// `consequence`.
void* OpenNvidiaLibrary(const char* soname, const char* env, const char* wheel_dir,
                        const void* self, const char* consequence);

// `name` in `lib` (OpenNvidiaLibrary's), or null if lib is null or lacks it.
void* NvidiaSymbol(void* lib, const char* name);

// True if the current device is Remora's emulated GPU (by its name), asked once per library:
// there a stub serves on the host what NVIDIA's library would run on the device.
bool OnEmulatedGpu();

}  // namespace remora::client_stub

// Calls NVIDIA's `name`, found in the library `lib()` returns and declared as this library
// declares it, with the arguments that follow; `failed` where it is missing.
#define REMORA_CALL_NVIDIA(lib, failed, name, ...)                                              \
  [&]() {                                                                                       \
    static const auto fn =                                                                      \
        reinterpret_cast<decltype(&::name)>(::remora::client_stub::NvidiaSymbol(lib(), #name)); \
    return fn ? fn(__VA_ARGS__) : failed;                                                       \
  }()
