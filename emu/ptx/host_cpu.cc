// emu/ptx/host_cpu.cc - whether this CPU runs the code the interpreter was built for.
//
// Built for the x86-64 baseline whatever the rest of the library is built for (CMakeLists.txt),
// so that a CPU without AVX2 gets a message naming what it lacks, not an illegal instruction.
#include "proto/status.h"

namespace remora::emu::ptx {

Status CheckHostCpu() {
#if defined(REMORA_EMU_X86_64_V3)
  static const bool runs = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  }();
  if (!runs)
    return Error(err::kNotSupported,
                 "the emulated GPU was built for x86-64-v3 (AVX2, BMI2, FMA) and this CPU lacks "
                 "it: rebuild with -DREMORA_EMU_X86_64_V3=OFF");
#endif
  return OkStatus();
}

}  // namespace remora::emu::ptx
