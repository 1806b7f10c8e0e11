// tests/cuda/kernels/driver_kernels_files.h - driver_kernels.cu as a fat binary and as PTX,
// linked into the programs that load it at run time (CMakeLists.txt: objcopy of both files),
// so that they also run with no arguments, as a GPU check runs every program: the paths the
// command line gives, or files written from the copies inside the program.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" const char _binary_driver_kernels_fatbin_start[], _binary_driver_kernels_fatbin_end[];
extern "C" const char _binary_driver_kernels_ptx_start[], _binary_driver_kernels_ptx_end[];

struct DriverKernelFiles {
  std::string fatbin, ptx;
};

// argv[1] and argv[2] where given (`given` of them), else temporary files removed at exit.
inline DriverKernelFiles DriverKernelPaths(int argc, char** argv) {
  static std::string written[2];
  auto write = [](int i, const char* begin, const char* end, const char* ext) {
    written[i] = "/tmp/remora-driver-kernels-" + std::to_string(getpid()) + ext;
    FILE* f = std::fopen(written[i].c_str(), "wb");
    if (f == nullptr || std::fwrite(begin, 1, size_t(end - begin), f) != size_t(end - begin) ||
        std::fclose(f) != 0) {
      std::printf("FAIL: cannot write %s\n", written[i].c_str());
      std::exit(1);
    }
    return written[i];
  };
  DriverKernelFiles files;
  files.fatbin = argc > 1 ? std::string(argv[1])
                          : write(0, _binary_driver_kernels_fatbin_start,
                                  _binary_driver_kernels_fatbin_end, ".fatbin");
  files.ptx =
      argc > 2 ? std::string(argv[2])
               : write(1, _binary_driver_kernels_ptx_start, _binary_driver_kernels_ptx_end, ".ptx");
  std::atexit([] {
    for (const std::string& p : written)
      if (!p.empty()) unlink(p.c_str());
  });
  return files;
}
