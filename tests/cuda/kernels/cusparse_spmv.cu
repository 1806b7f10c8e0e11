// tests/cuda/kernels/cusparse_spmv.cu - NVIDIA's cuSPARSE in the tenant (-lcusparse): its
// generic API multiplies a random CSR matrix by a vector (SpMV) and by a dense matrix (SpMM),
// on a non-default stream, checked against a host loop in double precision.
//
// cuSPARSE's kernels come with the library (machine code, and PTX for the newest GPUs only):
// a GPU runs the machine code, the emulated GPU that PTX.
#include <cusparse.h>

#include <cmath>
#include <vector>

#include "common.h"

namespace {

int failures = 0;

#define SPARSE_OK(call) STATUS_OK(call, CUSPARSE_STATUS_SUCCESS, cusparseGetErrorString)

template <class T>
T* Up(const std::vector<T>& v) {
  T* d;
  CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
  CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

void Compare(const char* what, const std::vector<float>& got, const std::vector<double>& want) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!Near(got[i], want[i], 1e-4) && bad++ < 3)
      std::printf("  %s[%zu] = %.7g, want %.7g\n", what, i, got[i], want[i]);
  if (bad) {
    std::printf("FAIL %s: %d of %zu wrong\n", what, bad, want.size());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Rng rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  const int rows = 300, cols = 200, k = 5;  // k: the dense matrix's columns
  // A random CSR matrix, about 5% full, some rows empty.
  std::vector<int> offsets(rows + 1, 0), columns;
  std::vector<float> values;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c)
      if (rng.Int(0, 20) == 0) {
        columns.push_back(c);
        values.push_back(rng.Uniform(-1, 1));
      }
    offsets[r + 1] = int(columns.size());
  }
  const int nnz = int(columns.size());
  std::vector<float> x(cols), b(size_t(cols) * k), y(rows), c(size_t(rows) * k);
  for (float& v : x) v = rng.Uniform(-1, 1);
  for (float& v : b) v = rng.Uniform(-1, 1);
  for (float& v : y) v = rng.Uniform(-1, 1);
  for (float& v : c) v = rng.Uniform(-1, 1);
  const float alpha = 1.5f, beta = -0.5f;
  std::vector<double> want_y(rows), want_c(size_t(rows) * k);
  for (int r = 0; r < rows; ++r) {
    double acc = 0;
    for (int e = offsets[r]; e < offsets[r + 1]; ++e) acc += double(values[e]) * x[columns[e]];
    want_y[r] = alpha * acc + beta * y[r];
    for (int j = 0; j < k; ++j) {  // column-major B (cols x k) and C (rows x k)
      double a = 0;
      for (int e = offsets[r]; e < offsets[r + 1]; ++e)
        a += double(values[e]) * b[size_t(j) * cols + columns[e]];
      want_c[size_t(j) * rows + r] = alpha * a + beta * c[size_t(j) * rows + r];
    }
  }

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cusparseHandle_t h;
  SPARSE_OK(cusparseCreate(&h));
  SPARSE_OK(cusparseSetStream(h, stream));
  int* d_offsets = Up(offsets);
  int* d_columns = Up(columns);
  float* d_values = Up(values);
  float *d_x = Up(x), *d_b = Up(b), *d_y = Up(y), *d_c = Up(c);
  cusparseSpMatDescr_t a;
  SPARSE_OK(cusparseCreateCsr(&a, rows, cols, nnz, d_offsets, d_columns, d_values,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                              CUDA_R_32F));
  cusparseDnVecDescr_t vx, vy;
  SPARSE_OK(cusparseCreateDnVec(&vx, cols, d_x, CUDA_R_32F));
  SPARSE_OK(cusparseCreateDnVec(&vy, rows, d_y, CUDA_R_32F));
  size_t bytes = 0;
  SPARSE_OK(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, vx, &beta, vy,
                                    CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes));
  void* buffer = nullptr;
  if (bytes) CHECK(cudaMalloc(&buffer, bytes));
  SPARSE_OK(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, vx, &beta, vy, CUDA_R_32F,
                         CUSPARSE_SPMV_ALG_DEFAULT, buffer));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> got_y(rows);
  CHECK(cudaMemcpy(got_y.data(), d_y, rows * sizeof(float), cudaMemcpyDeviceToHost));
  Compare("SpMV", got_y, want_y);

  cusparseDnMatDescr_t mb, mc;
  SPARSE_OK(cusparseCreateDnMat(&mb, cols, k, cols, d_b, CUDA_R_32F, CUSPARSE_ORDER_COL));
  SPARSE_OK(cusparseCreateDnMat(&mc, rows, k, rows, d_c, CUDA_R_32F, CUSPARSE_ORDER_COL));
  size_t mm_bytes = 0;
  SPARSE_OK(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                    CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, mb, &beta, mc,
                                    CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &mm_bytes));
  void* mm_buffer = nullptr;
  if (mm_bytes) CHECK(cudaMalloc(&mm_buffer, mm_bytes));
  SPARSE_OK(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                         &alpha, a, mb, &beta, mc, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT,
                         mm_buffer));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> got_c(c.size());
  CHECK(cudaMemcpy(got_c.data(), d_c, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
  Compare("SpMM", got_c, want_c);

  SPARSE_OK(cusparseDestroyDnMat(mb));
  SPARSE_OK(cusparseDestroyDnMat(mc));
  SPARSE_OK(cusparseDestroyDnVec(vx));
  SPARSE_OK(cusparseDestroyDnVec(vy));
  SPARSE_OK(cusparseDestroySpMat(a));
  SPARSE_OK(cusparseDestroy(h));
  for (void* p : {buffer, mm_buffer, static_cast<void*>(d_offsets), static_cast<void*>(d_columns),
                  static_cast<void*>(d_values), static_cast<void*>(d_x), static_cast<void*>(d_b),
                  static_cast<void*>(d_y), static_cast<void*>(d_c)})
    if (p) CHECK(cudaFree(p));
  CHECK(cudaStreamDestroy(stream));
  return Finish(failures, "cusparse_spmv");
}
