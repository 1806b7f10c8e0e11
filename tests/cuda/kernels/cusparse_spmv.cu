// tests/cuda/kernels/cusparse_spmv.cu - NVIDIA's cuSPARSE in the tenant (-lcusparse): its
// generic API multiplies a random CSR matrix by a vector (SpMV), by a dense matrix (SpMM) and by
// another sparse matrix (SpGEMM, into a CSR matrix whose size cuSPARSE finds), solves a sparse
// lower-triangular system (SpSV, whose blocks wait on each other's rows) and transposes a CSR
// matrix (csr2csc), on a non-default stream, checked against host loops in double precision.
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
  int* d_offsets = ToDevice(offsets);
  int* d_columns = ToDevice(columns);
  float* d_values = ToDevice(values);
  float *d_x = ToDevice(x), *d_b = ToDevice(b), *d_y = ToDevice(y), *d_c = ToDevice(c);
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

  // SpGEMM: A (rows x cols) times a random sparse B (cols x n2), C = alpha A B in CSR. cuSPARSE
  // estimates the work, computes, reports C's size, and copies C into buffers sized by it.
  const int n2 = 150;
  std::vector<int> b_offsets(cols + 1, 0), b_columns;
  std::vector<float> b_values;
  for (int r = 0; r < cols; ++r) {
    for (int c2 = 0; c2 < n2; ++c2)
      if (rng.Int(0, 12) == 0) {
        b_columns.push_back(c2);
        b_values.push_back(rng.Uniform(-1, 1));
      }
    b_offsets[r + 1] = int(b_columns.size());
  }
  std::vector<double> want_g(size_t(rows) * n2, 0.0);  // dense, row-major
  for (int r = 0; r < rows; ++r)
    for (int e = offsets[r]; e < offsets[r + 1]; ++e)
      for (int f = b_offsets[columns[e]]; f < b_offsets[columns[e] + 1]; ++f)
        want_g[size_t(r) * n2 + b_columns[f]] += alpha * double(values[e]) * b_values[f];
  int* d_b_offsets = ToDevice(b_offsets);
  int* d_b_columns = ToDevice(b_columns);
  float* d_b_values = ToDevice(b_values);
  int* d_g_offsets;
  CHECK(cudaMalloc(&d_g_offsets, (rows + 1) * sizeof(int)));
  cusparseSpMatDescr_t sb, sg;
  SPARSE_OK(cusparseCreateCsr(&sb, cols, n2, int64_t(b_columns.size()), d_b_offsets, d_b_columns,
                              d_b_values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  SPARSE_OK(cusparseCreateCsr(&sg, rows, n2, 0, d_g_offsets, nullptr, nullptr, CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  cusparseSpGEMMDescr_t gemm;
  SPARSE_OK(cusparseSpGEMM_createDescr(&gemm));
  const float zero = 0.0f;
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t work_bytes = 0, compute_bytes = 0;
  void *work = nullptr, *compute = nullptr;
  SPARSE_OK(cusparseSpGEMM_workEstimation(h, op, op, &alpha, a, sb, &zero, sg, CUDA_R_32F,
                                          CUSPARSE_SPGEMM_DEFAULT, gemm, &work_bytes, nullptr));
  CHECK(cudaMalloc(&work, work_bytes ? work_bytes : 1));
  SPARSE_OK(cusparseSpGEMM_workEstimation(h, op, op, &alpha, a, sb, &zero, sg, CUDA_R_32F,
                                          CUSPARSE_SPGEMM_DEFAULT, gemm, &work_bytes, work));
  SPARSE_OK(cusparseSpGEMM_compute(h, op, op, &alpha, a, sb, &zero, sg, CUDA_R_32F,
                                   CUSPARSE_SPGEMM_DEFAULT, gemm, &compute_bytes, nullptr));
  CHECK(cudaMalloc(&compute, compute_bytes ? compute_bytes : 1));
  SPARSE_OK(cusparseSpGEMM_compute(h, op, op, &alpha, a, sb, &zero, sg, CUDA_R_32F,
                                   CUSPARSE_SPGEMM_DEFAULT, gemm, &compute_bytes, compute));
  int64_t g_rows = 0, g_cols = 0, g_nnz = 0;
  SPARSE_OK(cusparseSpMatGetSize(sg, &g_rows, &g_cols, &g_nnz));
  int* d_g_columns;
  float* d_g_values;
  CHECK(cudaMalloc(&d_g_columns, (g_nnz ? g_nnz : 1) * sizeof(int)));
  CHECK(cudaMalloc(&d_g_values, (g_nnz ? g_nnz : 1) * sizeof(float)));
  SPARSE_OK(cusparseCsrSetPointers(sg, d_g_offsets, d_g_columns, d_g_values));
  SPARSE_OK(cusparseSpGEMM_copy(h, op, op, &alpha, a, sb, &zero, sg, CUDA_R_32F,
                                CUSPARSE_SPGEMM_DEFAULT, gemm));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<int> g_offsets(rows + 1), g_columns(static_cast<size_t>(g_nnz));
  std::vector<float> g_values(static_cast<size_t>(g_nnz));
  CHECK(cudaMemcpy(g_offsets.data(), d_g_offsets, g_offsets.size() * sizeof(int),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(g_columns.data(), d_g_columns, g_columns.size() * sizeof(int),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(g_values.data(), d_g_values, g_values.size() * sizeof(float),
                   cudaMemcpyDeviceToHost));
  // Every structural nonzero of the product is stored once, in its row; the values, summed into
  // a dense matrix, are the product's.
  int64_t want_nnz = 0;
  std::vector<char> hit(size_t(rows) * n2, 0);
  for (int r = 0; r < rows; ++r)
    for (int e = offsets[r]; e < offsets[r + 1]; ++e)
      for (int f = b_offsets[columns[e]]; f < b_offsets[columns[e] + 1]; ++f)
        want_nnz += !hit[size_t(r) * n2 + b_columns[f]]++;
  if (g_rows != rows || g_cols != n2 || g_nnz != want_nnz || g_offsets[0] != 0 ||
      g_offsets[rows] != g_nnz) {
    std::printf(
        "FAIL SpGEMM: %lld x %lld with %lld nonzeros (offsets %d..%d), want %d x %d with %lld\n",
        (long long)g_rows, (long long)g_cols, (long long)g_nnz, g_offsets[0], g_offsets[rows], rows,
        n2, (long long)want_nnz);
    ++failures;
  } else {
    std::vector<float> got_g(want_g.size(), 0.0f);
    int misplaced = 0;
    for (int r = 0; r < rows; ++r)
      for (int e = g_offsets[r]; e < g_offsets[r + 1]; ++e) {
        const int c2 = g_columns[size_t(e)];
        if (c2 < 0 || c2 >= n2 || !hit[size_t(r) * n2 + c2]) {
          ++misplaced;
          continue;
        }
        got_g[size_t(r) * n2 + c2] += g_values[size_t(e)];
      }
    if (misplaced) {
      std::printf("FAIL SpGEMM: %d entries outside the product's nonzeros\n", misplaced);
      ++failures;
    }
    Compare("SpGEMM", got_g, want_g);
  }
  SPARSE_OK(cusparseSpGEMM_destroyDescr(gemm));
  SPARSE_OK(cusparseDestroySpMat(sb));
  SPARSE_OK(cusparseDestroySpMat(sg));
  for (void* p : {work, compute, static_cast<void*>(d_b_offsets), static_cast<void*>(d_b_columns),
                  static_cast<void*>(d_b_values), static_cast<void*>(d_g_offsets),
                  static_cast<void*>(d_g_columns), static_cast<void*>(d_g_values)})
    CHECK(cudaFree(p));

  // SpSV: L x = b for a random lower-triangular L, each row's diagonal dominant; then L's CSC
  // form (csr2csc), which must hold the same entries.
  const int tn = 400;
  std::vector<int> l_offsets(tn + 1, 0), l_columns;
  std::vector<float> l_values;
  for (int r = 0; r < tn; ++r) {
    for (int c = 0; c < r; ++c)
      if (rng.Int(0, 30) == 0) {
        l_columns.push_back(c);
        l_values.push_back(rng.Uniform(-0.2f, 0.2f));
      }
    l_columns.push_back(r);
    l_values.push_back(1.0f + rng.Uniform(0, 1));
    l_offsets[r + 1] = int(l_columns.size());
  }
  const int l_nnz = int(l_columns.size());
  std::vector<float> rhs(tn);
  for (float& v : rhs) v = rng.Uniform(-1, 1);
  int* d_l_offsets = ToDevice(l_offsets);
  int* d_l_columns = ToDevice(l_columns);
  float* d_l_values = ToDevice(l_values);
  float *d_rhs = ToDevice(rhs), *d_sol;
  CHECK(cudaMalloc(&d_sol, tn * sizeof(float)));
  cusparseSpMatDescr_t sl;
  SPARSE_OK(cusparseCreateCsr(&sl, tn, tn, l_nnz, d_l_offsets, d_l_columns, d_l_values,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                              CUDA_R_32F));
  cusparseFillMode_t fill = CUSPARSE_FILL_MODE_LOWER;
  cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
  SPARSE_OK(cusparseSpMatSetAttribute(sl, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof(fill)));
  SPARSE_OK(cusparseSpMatSetAttribute(sl, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof(diag)));
  cusparseDnVecDescr_t vrhs, vsol;
  SPARSE_OK(cusparseCreateDnVec(&vrhs, tn, d_rhs, CUDA_R_32F));
  SPARSE_OK(cusparseCreateDnVec(&vsol, tn, d_sol, CUDA_R_32F));
  cusparseSpSVDescr_t sv;
  SPARSE_OK(cusparseSpSV_createDescr(&sv));
  const float one = 1.0f;
  size_t sv_bytes = 0;
  SPARSE_OK(cusparseSpSV_bufferSize(h, op, &one, sl, vrhs, vsol, CUDA_R_32F,
                                    CUSPARSE_SPSV_ALG_DEFAULT, sv, &sv_bytes));
  void* sv_buffer;
  CHECK(cudaMalloc(&sv_buffer, sv_bytes ? sv_bytes : 1));
  SPARSE_OK(cusparseSpSV_analysis(h, op, &one, sl, vrhs, vsol, CUDA_R_32F,
                                  CUSPARSE_SPSV_ALG_DEFAULT, sv, sv_buffer));
  SPARSE_OK(
      cusparseSpSV_solve(h, op, &one, sl, vrhs, vsol, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT, sv));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> want_sol(tn);
  for (int r = 0; r < tn; ++r) {  // forward substitution; the diagonal is each row's last
    double acc = rhs[r];
    for (int e = l_offsets[r]; e < l_offsets[r + 1] - 1; ++e)
      acc -= l_values[e] * want_sol[l_columns[e]];
    want_sol[r] = acc / l_values[l_offsets[r + 1] - 1];
  }
  Compare("SpSV", FromDevice(d_sol, tn), want_sol);
  int *d_c_offsets, *d_c_rows;
  float* d_c_values;
  CHECK(cudaMalloc(&d_c_offsets, (tn + 1) * sizeof(int)));
  CHECK(cudaMalloc(&d_c_rows, l_nnz * sizeof(int)));
  CHECK(cudaMalloc(&d_c_values, l_nnz * sizeof(float)));
  size_t t_bytes = 0;
  SPARSE_OK(cusparseCsr2cscEx2_bufferSize(h, tn, tn, l_nnz, d_l_values, d_l_offsets, d_l_columns,
                                          d_c_values, d_c_offsets, d_c_rows, CUDA_R_32F,
                                          CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO,
                                          CUSPARSE_CSR2CSC_ALG1, &t_bytes));
  void* t_buffer;
  CHECK(cudaMalloc(&t_buffer, t_bytes ? t_bytes : 1));
  SPARSE_OK(cusparseCsr2cscEx2(h, tn, tn, l_nnz, d_l_values, d_l_offsets, d_l_columns, d_c_values,
                               d_c_offsets, d_c_rows, CUDA_R_32F, CUSPARSE_ACTION_NUMERIC,
                               CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, t_buffer));
  CHECK(cudaStreamSynchronize(stream));
  const std::vector<int> c_offsets = FromDevice(d_c_offsets, tn + 1);
  const std::vector<int> c_rows = FromDevice(d_c_rows, l_nnz);
  const std::vector<float> c_values = FromDevice(d_c_values, l_nnz);
  int moved = c_offsets[0] != 0 || c_offsets[tn] != l_nnz;  // entries not where CSR has them
  for (int c = 0; c < tn && !moved; ++c)
    for (int e = c_offsets[c]; e < c_offsets[c + 1]; ++e) {
      const int r = c_rows[e];
      bool found = false;
      for (int f = r >= 0 && r < tn ? l_offsets[r] : 0; r >= 0 && r < tn && f < l_offsets[r + 1];
           ++f)
        found |= l_columns[f] == c && l_values[f] == c_values[e];
      moved += !found;
    }
  if (moved) {
    std::printf("FAIL csr2csc: %d entries not the CSR matrix's\n", moved);
    ++failures;
  }
  SPARSE_OK(cusparseSpSV_destroyDescr(sv));
  SPARSE_OK(cusparseDestroySpMat(sl));
  SPARSE_OK(cusparseDestroyDnVec(vrhs));
  SPARSE_OK(cusparseDestroyDnVec(vsol));
  for (void* p :
       {sv_buffer, t_buffer, static_cast<void*>(d_l_offsets), static_cast<void*>(d_l_columns),
        static_cast<void*>(d_l_values), static_cast<void*>(d_rhs), static_cast<void*>(d_sol),
        static_cast<void*>(d_c_offsets), static_cast<void*>(d_c_rows),
        static_cast<void*>(d_c_values)})
    CHECK(cudaFree(p));

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
