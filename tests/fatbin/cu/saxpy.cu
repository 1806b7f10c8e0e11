// tests/fatbin/cu/saxpy.cu - two kernels whose fat binary the fatbin tests read.
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scaleSum(int n, const double* in, double* out) {
  double s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += 2.0 * in[i];
  atomicAdd(out, s);
}
