// bench/e2e/emu_dnn.cc - the library baseline: a convolution on the emulated GPU's cuDNN,
// in-process.
//
// Runs in a child process (this binary with --e2e_child=emu_conv) so the emulator never
// shares a process with the stub: the emulated libcudnn.so.9 beside the emulated
// libcuda.so.1 (emu_library.h), conv_problem.h's convolution set up through it, then one
// cudnnConvolutionForward + cuCtxSynchronize per line read from stdin (ServeBaseline).
#include "bench/e2e/children.h"
#include "bench/e2e/conv_problem.h"
#include "bench/e2e/emu_library.h"

namespace remora::bench::e2e {

int RunEmuConvChild() {
  EmuLibrary emu("emu_conv");
  ConvApi api;
  if (!emu.Open("libcudnn.so.9") || !emu.Sym("cudnnCreate", &api.create) ||
      !emu.Sym("cudnnCreateTensorDescriptor", &api.tensor) ||
      !emu.Sym("cudnnSetTensorNdDescriptor", &api.set_tensor) ||
      !emu.Sym("cudnnCreateFilterDescriptor", &api.filter) ||
      !emu.Sym("cudnnSetFilterNdDescriptor", &api.set_filter) ||
      !emu.Sym("cudnnCreateConvolutionDescriptor", &api.conv) ||
      !emu.Sym("cudnnSetConvolutionNdDescriptor", &api.set_conv) ||
      !emu.Sym("cudnnConvolutionForward", &api.forward))
    return 1;
  const ConvShape s;
  const CUdeviceptr x = emu.Ones(s.XBytes()), w = emu.Ones(s.WBytes()), y = emu.Ones(s.YBytes());
  ConvProblem p;
  if (!x || !w || !y ||
      !p.Setup(api, reinterpret_cast<void*>(x), reinterpret_cast<void*>(w),
               reinterpret_cast<void*>(y)))
    return 1;
  return ServeBaseline([&] { return p.Run() && emu.Sync(); });
}

}  // namespace remora::bench::e2e
