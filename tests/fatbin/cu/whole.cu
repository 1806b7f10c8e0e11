// tests/fatbin/cu/whole.cu - a whole-program translation unit (registration wrapper v1).
__global__ void wholeKernel(int* out) { out[threadIdx.x] = threadIdx.x; }
