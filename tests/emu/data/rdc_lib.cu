// tests/emu/data/rdc_lib.cu - a device function another translation unit calls (-rdc).
__device__ int offset = 1000;

__device__ int twicePlusOffset(int v) { return 2 * v + offset; }
