// tests/emu_ptx/kernels/rdc_b.cu - device half of a -rdc pair.
__device__ int rdcScale = 1000;
__device__ int rdcTransform(int x) { return x * 3 - 1; }
