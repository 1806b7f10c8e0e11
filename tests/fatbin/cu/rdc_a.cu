// tests/fatbin/cu/rdc_a.cu - -rdc unit calling a __device__ function defined in rdc_b.cu.
extern __device__ int twice(int v);

__global__ void rdcCaller(int* out) { out[threadIdx.x] = twice(threadIdx.x); }
