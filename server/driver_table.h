// server/driver_table.h - the driver API as a table of entry points.
//
// The server never calls a CUDA symbol directly: it loads NVIDIA's libcuda.so.1
// (a GPU is present) or Remora's emulated libcuda.so.1 with dlopen and calls
// through this table, so one code path serves both. Rows come from driver.def.
//
//   ASSIGN_OR_RETURN(DriverTable drv, DriverTable::Load(DeviceKind::kAuto, emu_dir));
//   CUresult r = drv.cuMemAlloc(&p, n);   // cuMemAlloc_v2 of the loaded library
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "proto/status.h"

namespace remora::server {

enum class DeviceKind { kAuto, kCuda, kEmu };

// Parses "auto", "cuda" or "emu". Errors: kInvalidValue.
Result<DeviceKind> ParseDeviceKind(const std::string& s);

// Optional emulator extensions (null on NVIDIA's driver).
using PrintfHandler = void (*)(void* user, CUstream stream, const char* text, size_t len);
using SetPrintfHandlerFn = CUresult (*)(PrintfHandler fn, void* user);
using StreamBusyTimeFn = CUresult (*)(CUstream s, unsigned long long* ns);
using FaultStreamFn = CUresult (*)(CUstream* s);
using CancelStreamFn = CUresult (*)(CUstream s);
using SetLaunchHeapOwnerFn = CUresult (*)(unsigned long long owner);
using HeapSetLimitFn = CUresult (*)(unsigned long long owner, size_t bytes);
using HeapReleaseFn = CUresult (*)(unsigned long long owner);
using TexObjectCreatePitchedFn = CUresult (*)(unsigned long long* out,
                                              const CUDA_RESOURCE_DESC* res, size_t slices,
                                              size_t slice_pitch, unsigned layout,
                                              const CUDA_TEXTURE_DESC* tex);

struct DriverTable {
#define DRIVER_FN(name) decltype(&::name) name = nullptr;
#include "server/driver.def"
  SetPrintfHandlerFn remoraEmuSetPrintfHandler = nullptr;
  StreamBusyTimeFn remoraEmuGetStreamBusyTime = nullptr;
  FaultStreamFn remoraEmuGetFaultStream = nullptr;  // the stream whose work broke the context
  CancelStreamFn remoraEmuCancelStream = nullptr;   // drop a stream's work, stop its kernel
  // Device-side heaps kept apart by owner (emu/context.h): the heap of the launches the
  // calling thread enqueues next, an owner's heap's size, and forgetting an owner's heap.
  SetLaunchHeapOwnerFn remoraEmuSetLaunchHeapOwner = nullptr;
  HeapSetLimitFn remoraEmuHeapSetLimit = nullptr;
  HeapReleaseFn remoraEmuHeapRelease = nullptr;
  // A texture or surface over slices of pitched memory: 3-D, layered, cubemap (emu/texture.h).
  TexObjectCreatePitchedFn remoraEmuTexObjectCreatePitched = nullptr;

  std::string library;  // path or soname that was loaded
  bool emulated = false;

  // Loads the driver: kCuda dlopens NVIDIA's libcuda.so.1, kEmu the emulator in
  // `emu_dir`, kAuto tries NVIDIA's and falls back to the emulator when it is
  // absent or reports no device. cuInit(0) has succeeded on the result. Rows
  // the library lacks point at a stub returning CUDA_ERROR_NOT_SUPPORTED.
  // Errors: kInitializationError naming the library and dlerror/CUresult.
  static Result<std::shared_ptr<DriverTable>> Load(DeviceKind kind, const std::string& emu_dir);

  // "CUDA_ERROR_INVALID_VALUE: invalid argument" for logs.
  std::string Describe(CUresult r) const;

  struct Handle;
  std::shared_ptr<Handle> handle;  // keeps the library loaded
};

// The cudaError_t a tenant sees for a driver result.
int32_t ToCudaError(CUresult r);

}  // namespace remora::server
