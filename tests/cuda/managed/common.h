// tests/cuda/managed/common.h - what the managed and zero-copy programs share.
//
// Managed and mapped host memory must work wherever the device says it has them.
// Unsupported() decides the verdict when an allocation says it does not.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <vector>

#include "../kernels/common.h"

// True when the tenant talks to the server over a local socket (shm).
inline bool LocalSession() {
  const char* s = std::getenv("REMORA_SERVER");
  return s && std::strncmp(s, "unix:", 5) == 0;
}

// Called when the feature's allocation returned cudaErrorNotSupported: honest
// on a remote session whose device does not claim the feature, else a failure.
// Never returns.
[[noreturn]] inline void Unsupported(const char* what, int device_attr) {
  int v = -1;
  cudaDeviceGetAttribute(&v, static_cast<cudaDeviceAttr>(device_attr), 0);
  if (LocalSession() || v != 0) {
    std::printf("FAIL: %s is not supported on a local session (attribute says %d)\n", what, v);
    std::exit(1);
  }
  std::printf("PASS (not supported on this transport)\n");
  std::exit(0);
}
