// tests/fatbin/cu/rdc_b.cu - -rdc unit defining the __device__ function rdc_a.cu calls.
__device__ int twice(int v) { return 2 * v; }

__global__ void rdcOther(int* out) { out[0] = twice(21); }
