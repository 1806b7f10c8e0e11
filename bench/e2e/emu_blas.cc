// bench/e2e/emu_blas.cc - the library baseline: SGEMM on the emulated GPU's cuBLAS, in-process.
//
// Runs in a child process (this binary with --e2e_child=emu_sgemm N) so the emulator
// never shares a process with the stub: the emulated libcublas.so.13 beside the emulated
// libcuda.so.1 (emu_library.h), three N x N matrices of ones, cublasCreate, then one
// cublasSgemm + cuCtxSynchronize per line read from stdin (ServeBaseline).
#include <cublas_v2.h>

#include "bench/e2e/children.h"
#include "bench/e2e/emu_library.h"

namespace remora::bench::e2e {

int RunEmuSgemmChild(int n) {
  EmuLibrary emu("emu_sgemm");
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSgemm_v2) sgemm;
  if (!emu.Open("libcublas.so.13") || !emu.Sym("cublasCreate_v2", &create) ||
      !emu.Sym("cublasSgemm_v2", &sgemm))
    return 1;
  const size_t bytes = size_t(n) * n * sizeof(float);
  const CUdeviceptr a = emu.Ones(bytes), b = emu.Ones(bytes), c = emu.Ones(bytes);
  cublasHandle_t h;
  if (!a || !b || !c || create(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const float alpha = 1, beta = 0;
  return ServeBaseline([&] {
    return sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, reinterpret_cast<const float*>(a), n,
                 reinterpret_cast<const float*>(b), n, &beta, reinterpret_cast<float*>(c),
                 n) == CUBLAS_STATUS_SUCCESS &&
           emu.Sync();
  });
}

}  // namespace remora::bench::e2e
