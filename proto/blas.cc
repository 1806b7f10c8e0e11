// proto/blas.cc - shapes of the forwarded cuBLAS routines: checks and footprints.
#include "proto/blas.h"

#include <string>
#include <string_view>

namespace remora {
namespace {

// cuBLAS enum values (cublas_api.h), kept here so the stub's checks and the
// server's agree without either including the other's headers.
constexpr int64_t kOpN = 0, kOpC = 2;       // cublasOperation_t: N, T, C
constexpr int64_t kRight = 1;               // cublasSideMode_t: LEFT, RIGHT
constexpr uint64_t kMaxBytes = 1ull << 56;  // beyond any device

constexpr BlasShapeInfo kInfo[] = {
    // ints ptrs scalars result
    {3, 2, 1, false},  // Axpy   n incx incy | x y | alpha
    {3, 2, 0, true},   // Dot    n incx incy | x y | -> result
    {2, 1, 0, true},   // Norm   n incx | x | -> result
    {2, 1, 0, true},   // Index  n incx | x | -> int result
    {2, 1, 1, false},  // Scal   n incx | x | alpha
    {3, 2, 0, false},  // Copy   n incx incy | x y
    {3, 2, 0, false},  // Swap   n incx incy | x y
    {3, 2, 2, false},  // Rot    n incx incy | x y | c s
    {6, 3, 2, false},  // Gemv   trans m n lda incx incy | A x y | alpha beta
    {5, 3, 1, false},  // Ger    m n incx incy lda | x y A | alpha
    {5, 3, 2, false},  // Symv   uplo n lda incx incy | A x y | alpha beta
    {6, 2, 0, false},  // Trsv   uplo trans diag n lda incx | A x
    {8, 3, 2, false},  // Gemm   transa transb m n k lda ldb ldc | A B C | alpha beta
    {7, 3, 2, false},  // Symm   side uplo m n lda ldb ldc | A B C | alpha beta
    {6, 2, 2, false},  // Syrk   uplo trans n k lda ldc | A C | alpha beta
    {8, 2, 1, false},  // Trsm   side uplo trans diag m n lda ldb | A B | alpha
    {9, 3, 1, false},  // Trmm   side uplo trans diag m n lda ldb ldc | A B C | alpha
    {7, 3, 2, false},  // Geam   transa transb m n lda ldb ldc | A B C | alpha beta
    {6, 3, 0, false},  // Dgmm   side m n lda incx ldc | A x C
    // GemmEx  transa transb m n k Atype lda Btype ldb Ctype ldc computeType algo | A B C
    {13, 3, 2, false},
    // GemmBatched  transa transb m n k lda ldb ldc batch | A[] B[] C[]
    {9, 3, 2, false},
    // GemmStrided  transa transb m n k lda strideA ldb strideB ldc strideC batch | A B C
    {12, 3, 2, false},
    // GemmBatchedEx  transa transb m n k Atype lda Btype ldb Ctype ldc batch computeType algo
    {14, 3, 2, false},
    // GemmStridedEx  transa transb m n k Atype lda strideA Btype ldb strideB Ctype ldc strideC
    //                batch computeType algo
    {17, 3, 2, false},
    {3, 3, 0, false},  // Getrf   n lda batch | A[] pivots info
    {6, 3, 0, true},   // Getrs   trans n nrhs lda ldb batch | A[] pivots B[] -> host info
    {4, 4, 0, false},  // Getri   n lda ldc batch | A[] pivots C[] info
    {4, 3, 0, false},  // Matinv  n lda lda_inv batch | A[] Ainv[] info
    {7, 2, 0, false},  // Tbsv    uplo trans diag n k lda incx | A x  (tbmv too)
    {5, 2, 0, false},  // Tpsv    uplo trans diag n incx | AP x  (tpmv too)
    {8, 3, 2, false},  // Gbmv    trans m n kl ku lda incx incy | A x y | alpha beta
    {6, 3, 2, false},  // Sbmv    uplo n k lda incx incy | A x y | alpha beta
    {4, 3, 2, false},  // Spmv    uplo n incx incy | AP x y | alpha beta
    {4, 2, 1, false},  // Syr     uplo n incx lda | x A | alpha
    {5, 3, 1, false},  // Syr2    uplo n incx incy lda | x y A | alpha
    {3, 2, 1, false},  // Spr     uplo n incx | x AP | alpha
    {4, 3, 1, false},  // Spr2    uplo n incx incy | x y AP | alpha
    {7, 3, 2, false},  // Syr2k   uplo trans n k lda ldb ldc | A B C | alpha beta  (syrkx too)
    {2, 1, 1, false},  // ScalReal  n incx | x | alpha, real (csscal, zdscal)
    {2, 1, 0, true},   // NormReal  n incx | x | -> real result (scasum, scnrm2)
    {7, 2, 0, true},   // DotEx   n xType incx yType incy resultType executionType | x y | -> result
    {7, 2, 1, false},  // AxpyEx  n alphaType xType incx yType incy executionType | x y | alpha
    {5, 1, 1, false},  // ScalEx  n alphaType xType incx executionType | x | alpha
    {5, 1, 0, true},   // NormEx  n xType incx resultType executionType | x | -> result
    {5, 2, 0, false},  // CopyEx  n xType incx yType incy | x y  (swap too)
    {9, 2, 1, false},  // TrsmBatched  side uplo trans diag m n lda ldb batch | A[] B[] | alpha
    {4, 2, 1, false},  // Her     uplo n incx lda | x A | alpha, real
    {3, 2, 1, false},  // Hpr     uplo n incx | x AP | alpha, real
    {6, 2, 2, false},  // Herk    uplo trans n k lda ldc | A C | alpha beta, both real
    {7, 3, 2, false},  // Her2k   uplo trans n k lda ldb ldc | A B C | alpha, beta real (herkx)
    {3, 2, 2, false},  // RotMixed  n incx incy | x y | c real, s complex (crot, zrot)
    {3, 2, 2, false},  // RotReal   n incx incy | x y | c s, real (csrot, zdrot)
    {3, 2, 1, false},  // Rotm    n incx incy | x y | param[5]
    {3, 2, 0, false},  // Tpttr   uplo n lda | AP A  (packed to full)
    {3, 2, 0, false},  // Trttp   uplo n lda | A AP  (full to packed)
    {0, 4, 0, false, true},  // Rotg    | a b c s  (c real)
    {0, 5, 0, false, true},  // Rotmg   | d1 d2 x1 y1 param[5]
};

constexpr BlasOp kOps[] = {
#define BLAS_OP(op, Name, Shape, Elem, Fn) \
  {op, #Name, BlasShape::k##Shape, Elem, &kInfo[static_cast<int>(BlasShape::k##Shape)]},
#include "proto/blas_ops.def"
};

Status Bad(const BlasOp& op, const std::string& what) {
  return Error(err::kInvalidValue, "cublas" + std::string(op.name) + ": " + what);
}

// Builds a plan while checking arguments; the first failure sticks.
class Planner {
 public:
  Planner(const BlasOp& op, std::span<const int64_t> a) : op_(op), a_(a) {}

  int64_t Dim(size_t i, const char* name) {
    if (a_[i] < 0) Fail(std::string(name) + " = " + std::to_string(a_[i]) + " is negative");
    return a_[i] < 0 ? 0 : a_[i];
  }
  int64_t Op(size_t i, const char* name, bool conj_ok = true) {
    if (a_[i] < kOpN || a_[i] > (conj_ok ? kOpC : kOpC - 1))
      Fail(std::string(name) + " = " + std::to_string(a_[i]) + " is not a cublasOperation_t");
    return a_[i];
  }
  int64_t Enum01(size_t i, const char* name) {
    if (a_[i] != 0 && a_[i] != 1)
      Fail(std::string(name) + " = " + std::to_string(a_[i]) + " is out of range");
    return a_[i];
  }
  // Bytes of a rows x cols column-major matrix with leading dimension a_[ld].
  uint64_t Mat(int64_t rows, int64_t cols, size_t ld, const char* name, uint64_t elem) {
    const int64_t l = a_[ld];
    if (l < (rows > 1 ? rows : 1)) {
      Fail(std::string(name) + " = " + std::to_string(l) + " is less than max(1, " +
           std::to_string(rows) + ")");
      return 0;
    }
    if (rows == 0 || cols == 0) return 0;
    return Bytes(static_cast<unsigned __int128>(cols - 1) * l + rows, elem);
  }
  // Bytes of an n-vector with increment a_[inc].
  uint64_t Vec(int64_t n, size_t inc, const char* name, uint64_t elem) {
    const int64_t s = a_[inc];
    if (s == 0) {
      Fail(std::string(name) + " is 0");
      return 0;
    }
    if (n == 0) return 0;
    const unsigned __int128 step = s < 0 ? -static_cast<__int128>(s) : s;
    return Bytes(static_cast<unsigned __int128>(n - 1) * step + 1, elem);
  }
  // Bytes of `batch` matrices `stride` elements apart, each `one` bytes.
  uint64_t Strided(uint64_t one, size_t stride, int64_t batch, uint64_t elem) {
    if (a_[stride] < 0) Fail("stride = " + std::to_string(a_[stride]) + " is negative");
    if (one == 0 || batch == 0 || a_[stride] < 0) return 0;
    const unsigned __int128 reach =
        static_cast<unsigned __int128>(batch - 1) * static_cast<uint64_t>(a_[stride]) * elem + one;
    return Cap(reach);
  }
  uint64_t Bytes(unsigned __int128 elems, uint64_t elem) { return Cap(elems * elem); }
  uint64_t Cap(unsigned __int128 b) {
    if (b > kMaxBytes) {
      Fail("the operands reach more bytes than any device holds");
      return 0;
    }
    return static_cast<uint64_t>(b);
  }
  // Element size of cudaDataType a_[i]; 0 (and a failure) for one not forwarded.
  uint64_t Type(size_t i, const char* name) {
    switch (a_[i]) {
      case 0:
        return 4;  // CUDA_R_32F
      case 1:
        return 8;  // CUDA_R_64F
      case 2:
        return 2;  // CUDA_R_16F
      case 14:
        return 2;  // CUDA_R_16BF
      default:
        Unsupported(std::string(name) + " = " + std::to_string(a_[i]) +
                    " is not a forwarded cudaDataType");
        return 0;
    }
  }
  // Scalar size for compute type a_[i] with output type a_[ctype].
  uint32_t ComputeScalar(size_t i, size_t ctype) {
    const bool complex = a_[ctype] == 4 || a_[ctype] == 5;
    uint32_t s = 0;
    switch (a_[i]) {
      case 64:
      case 65:
        s = 2;
        break;  // 16F
      case 68:
      case 69:
      case 74:
      case 75:
      case 77:
        s = 4;
        break;  // 32F
      case 70:
      case 71:
        s = 8;
        break;  // 64F
      case 0:
      case 4:
        return 4u * (a_[i] == 4 ? 2 : 1);  // legacy CUDA_R/C_32F
      case 1:
      case 5:
        return 8u * (a_[i] == 5 ? 2 : 1);  // legacy CUDA_R/C_64F
      case 2:
        return 2;  // legacy CUDA_R_16F
      default:
        Unsupported("computeType = " + std::to_string(a_[i]) + " is not forwarded");
        return 0;
    }
    return complex ? 2 * s : s;
  }
  void Fail(const std::string& why) {
    if (st_.ok()) st_ = Bad(op_, why);
  }
  void Unsupported(const std::string& why) {
    if (st_.ok()) st_ = Error(err::kNotSupported, "cublas" + std::string(op_.name) + ": " + why);
  }
  const Status& status() const { return st_; }

 private:
  const BlasOp& op_;
  std::span<const int64_t> a_;
  Status st_;
};

// op(X) is rows x cols: X itself is rows x cols, or cols x rows when transposed.
uint64_t OpMat(Planner& p, int64_t trans, int64_t rows, int64_t cols, size_t ld, const char* name,
               uint64_t elem) {
  return trans == kOpN ? p.Mat(rows, cols, ld, name, elem) : p.Mat(cols, rows, ld, name, elem);
}

// The complex cudaDataType values.
constexpr int64_t kC32F = 4, kC64F = 5;

// Checks a level-1 Ex call's types (the combinations cuBLAS documents) and plans it.
void PlanL1Ex(const BlasOp& op, Planner& p, std::span<const int64_t> a, BlasPlan& plan) {
  auto& b = plan.bytes;
  const int64_t n = p.Dim(0, "n");
  auto unsupported = [&](const std::string& what) {
    p.Unsupported("the type combination " + what + " is not one cuBLAS documents");
  };
  switch (op.shape) {
    case BlasShape::kDotEx: {  // n xType incx yType incy resultType executionType
      const int64_t t = a[1];
      const bool complex = t == kC32F || t == kC64F;
      if (BlasExElemBytes(t) == 0 || a[3] != t || a[5] != t || a[6] != BlasExExecution(t) ||
          (op.name == std::string_view("DotcEx") && !complex))
        unsupported("x " + std::to_string(t) + ", y " + std::to_string(a[3]) + ", result " +
                    std::to_string(a[5]) + ", execution " + std::to_string(a[6]));
      b[0] = p.Vec(n, 2, "incx", BlasExElemBytes(t));
      b[1] = p.Vec(n, 4, "incy", BlasExElemBytes(t));
      plan.result_bytes = static_cast<uint32_t>(BlasExElemBytes(t));
      break;
    }
    case BlasShape::kAxpyEx: {  // n alphaType xType incx yType incy executionType
      const int64_t t = a[2];
      if (BlasExElemBytes(t) == 0 || a[4] != t || a[6] != BlasExExecution(t) || a[1] != a[6])
        unsupported("alpha " + std::to_string(a[1]) + ", x " + std::to_string(t) + ", y " +
                    std::to_string(a[4]) + ", execution " + std::to_string(a[6]));
      b[0] = p.Vec(n, 3, "incx", BlasExElemBytes(t));
      b[1] = p.Vec(n, 5, "incy", BlasExElemBytes(t));
      plan.scalar_bytes[0] = static_cast<uint32_t>(BlasExElemBytes(a[1]));
      break;
    }
    case BlasShape::kScalEx: {  // n alphaType xType incx executionType
      const int64_t t = a[2];
      if (BlasExElemBytes(t) == 0 || a[4] != BlasExExecution(t) || a[1] != a[4])
        unsupported("alpha " + std::to_string(a[1]) + ", x " + std::to_string(t) + ", execution " +
                    std::to_string(a[4]));
      b[0] = a[3] > 0 ? p.Vec(n, 3, "incx", BlasExElemBytes(t)) : 0;
      plan.scalar_bytes[0] = static_cast<uint32_t>(BlasExElemBytes(a[1]));
      break;
    }
    case BlasShape::kNormEx: {  // n xType incx resultType executionType
      const int64_t t = a[1];
      const int64_t real = BlasExNormResult(t);
      if (BlasExElemBytes(t) == 0 || a[3] != real || a[4] != BlasExExecution(real))
        unsupported("x " + std::to_string(t) + ", result " + std::to_string(a[3]) + ", execution " +
                    std::to_string(a[4]));
      b[0] = a[2] > 0 ? p.Vec(n, 2, "incx", BlasExElemBytes(t)) : 0;
      plan.result_bytes = static_cast<uint32_t>(BlasExElemBytes(real));
      break;
    }
    default: {  // kCopyEx: n xType incx yType incy
      const int64_t t = a[1];
      if (BlasExElemBytes(t) == 0 || a[3] != t)
        unsupported("x " + std::to_string(t) + ", y " + std::to_string(a[3]));
      b[0] = p.Vec(n, 2, "incx", BlasExElemBytes(t));
      b[1] = p.Vec(n, 4, "incy", BlasExElemBytes(t));
      break;
    }
  }
}

// The trans argument (a[1]) of a rank-k update: a real one takes N, T or C; a complex
// symmetric one (csyrk, csyr2k, csyrkx) N or T; a Hermitian one (herk, her2k, herkx) N or C.
int64_t HermitianOp(Planner& p, const BlasOp& op) {
  const bool complex = op.name[0] == 'C' || op.name[0] == 'Z';
  const bool hermitian = op.shape == BlasShape::kHerk || op.shape == BlasShape::kHer2k;
  const int64_t t = p.Op(1, "trans", !complex || hermitian);
  if (hermitian && t == 1) p.Fail("trans = CUBLAS_OP_T is not a Hermitian product's");
  return t;
}

// Bytes of a packed triangular or symmetric n x n matrix: n(n+1)/2 elements.
uint64_t Packed(Planner& p, int64_t n, uint64_t elem) {
  return p.Bytes(static_cast<unsigned __int128>(n) * (n + 1) / 2, elem);
}

}  // namespace

const BlasOp* FindBlasOp(uint32_t op) {
  for (const BlasOp& o : kOps)
    if (o.op == op) return &o;
  return nullptr;
}

std::span<const BlasOp> BlasOps() {
  return kOps;
}

bool BlasResultOnHost(const BlasOp& op, bool device_scalars) {
  return op.info->result && (!device_scalars || op.shape == BlasShape::kGetrs);
}

Result<BlasPlan> PlanBlas(const BlasOp& op, std::span<const int64_t> a) {
  const BlasShapeInfo& info = *op.info;
  if (a.size() != info.ints)
    return Bad(op, "takes " + std::to_string(info.ints) + " integer arguments, not " +
                       std::to_string(a.size()));
  Planner p(op, a);
  BlasPlan plan;
  uint64_t e = op.elem;
  plan.scalar_bytes.fill(0);
  for (size_t i = 0; i < info.scalars; ++i) plan.scalar_bytes[i] = op.elem;
  auto& b = plan.bytes;
  switch (op.shape) {
    case BlasShape::kAxpy:
    case BlasShape::kCopy:
    case BlasShape::kSwap:
    case BlasShape::kRot:
    case BlasShape::kRotMixed:
    case BlasShape::kRotReal:
    case BlasShape::kRotm:
    case BlasShape::kDot: {
      const int64_t n = p.Dim(0, "n");
      b[0] = p.Vec(n, 1, "incx", e);
      b[1] = p.Vec(n, 2, "incy", e);
      if (op.shape == BlasShape::kDot) plan.result_bytes = e;
      if (op.shape == BlasShape::kRotMixed) plan.scalar_bytes[0] = e / 2;
      if (op.shape == BlasShape::kRotReal) plan.scalar_bytes = {uint32_t(e / 2), uint32_t(e / 2)};
      if (op.shape == BlasShape::kRotm) plan.scalar_bytes[0] = 5 * e;
      break;
    }
    case BlasShape::kNorm:
    case BlasShape::kNormReal:
    case BlasShape::kIndex:
    case BlasShape::kScal:
    case BlasShape::kScalReal: {
      const int64_t n = p.Dim(0, "n");
      // BLAS returns at once for incx <= 0 in these routines (result 0).
      b[0] = a[1] > 0 ? p.Vec(n, 1, "incx", e) : 0;
      if (op.shape == BlasShape::kNorm) plan.result_bytes = e;
      if (op.shape == BlasShape::kNormReal) plan.result_bytes = e / 2;
      if (op.shape == BlasShape::kScalReal) plan.scalar_bytes[0] = e / 2;
      if (op.shape == BlasShape::kIndex) plan.result_bytes = 4;
      break;
    }
    case BlasShape::kGemv: {
      const int64_t t = p.Op(0, "trans"), m = p.Dim(1, "m"), n = p.Dim(2, "n");
      b[0] = p.Mat(m, n, 3, "lda", e);
      b[1] = p.Vec(t == kOpN ? n : m, 4, "incx", e);
      b[2] = p.Vec(t == kOpN ? m : n, 5, "incy", e);
      break;
    }
    case BlasShape::kGer: {
      const int64_t m = p.Dim(0, "m"), n = p.Dim(1, "n");
      b[0] = p.Vec(m, 2, "incx", e);
      b[1] = p.Vec(n, 3, "incy", e);
      b[2] = p.Mat(m, n, 4, "lda", e);
      break;
    }
    case BlasShape::kSymv: {
      p.Enum01(0, "uplo");
      const int64_t n = p.Dim(1, "n");
      b[0] = p.Mat(n, n, 2, "lda", e);
      b[1] = p.Vec(n, 3, "incx", e);
      b[2] = p.Vec(n, 4, "incy", e);
      break;
    }
    case BlasShape::kTrsv: {
      p.Enum01(0, "uplo");
      p.Op(1, "trans");
      p.Enum01(2, "diag");
      const int64_t n = p.Dim(3, "n");
      b[0] = p.Mat(n, n, 4, "lda", e);
      b[1] = p.Vec(n, 5, "incx", e);
      break;
    }
    case BlasShape::kTbsv:
    case BlasShape::kTpsv: {
      p.Enum01(0, "uplo");
      p.Op(1, "trans");
      p.Enum01(2, "diag");
      const int64_t n = p.Dim(3, "n");
      if (op.shape == BlasShape::kTbsv) {
        const int64_t k = p.Dim(4, "k");
        b[0] = p.Mat(k + 1, n, 5, "lda", e);
        b[1] = p.Vec(n, 6, "incx", e);
      } else {
        b[0] = Packed(p, n, e);
        b[1] = p.Vec(n, 4, "incx", e);
      }
      break;
    }
    case BlasShape::kGbmv: {
      const int64_t t = p.Op(0, "trans"), m = p.Dim(1, "m"), n = p.Dim(2, "n");
      const int64_t kl = p.Dim(3, "kl"), ku = p.Dim(4, "ku");
      b[0] = p.Mat(kl + ku + 1, n, 5, "lda", e);
      b[1] = p.Vec(t == kOpN ? n : m, 6, "incx", e);
      b[2] = p.Vec(t == kOpN ? m : n, 7, "incy", e);
      break;
    }
    case BlasShape::kSbmv: {
      p.Enum01(0, "uplo");
      const int64_t n = p.Dim(1, "n"), k = p.Dim(2, "k");
      b[0] = p.Mat(k + 1, n, 3, "lda", e);
      b[1] = p.Vec(n, 4, "incx", e);
      b[2] = p.Vec(n, 5, "incy", e);
      break;
    }
    case BlasShape::kSpmv:
    case BlasShape::kSpr2: {
      p.Enum01(0, "uplo");
      const int64_t n = p.Dim(1, "n");
      const bool spmv = op.shape == BlasShape::kSpmv;
      b[spmv ? 0 : 2] = Packed(p, n, e);
      b[spmv ? 1 : 0] = p.Vec(n, 2, "incx", e);
      b[spmv ? 2 : 1] = p.Vec(n, 3, "incy", e);
      break;
    }
    case BlasShape::kSyr:
    case BlasShape::kSpr:
    case BlasShape::kHer:
    case BlasShape::kHpr: {
      p.Enum01(0, "uplo");
      const int64_t n = p.Dim(1, "n");
      const bool full = op.shape == BlasShape::kSyr || op.shape == BlasShape::kHer;
      b[0] = p.Vec(n, 2, "incx", e);
      b[1] = full ? p.Mat(n, n, 3, "lda", e) : Packed(p, n, e);
      if (op.shape == BlasShape::kHer || op.shape == BlasShape::kHpr) plan.scalar_bytes[0] = e / 2;
      break;
    }
    case BlasShape::kSyr2: {
      p.Enum01(0, "uplo");
      const int64_t n = p.Dim(1, "n");
      b[0] = p.Vec(n, 2, "incx", e);
      b[1] = p.Vec(n, 3, "incy", e);
      b[2] = p.Mat(n, n, 4, "lda", e);
      break;
    }
    case BlasShape::kSyr2k:
    case BlasShape::kHer2k: {
      p.Enum01(0, "uplo");
      const int64_t t = HermitianOp(p, op);
      if (op.shape == BlasShape::kHer2k) plan.scalar_bytes[1] = e / 2;
      const int64_t n = p.Dim(2, "n"), k = p.Dim(3, "k");
      b[0] = OpMat(p, t, n, k, 4, "lda", e);
      b[1] = OpMat(p, t, n, k, 5, "ldb", e);
      b[2] = p.Mat(n, n, 6, "ldc", e);
      break;
    }
    case BlasShape::kRotg: {
      const bool complex = op.name[0] == 'C' || op.name[0] == 'Z';
      b = {e, e, complex ? e / 2 : e, e};
      break;
    }
    case BlasShape::kRotmg:
      b = {e, e, e, e, 5 * e};
      break;
    case BlasShape::kTpttr:
    case BlasShape::kTrttp: {
      p.Enum01(0, "uplo");
      const int64_t n = p.Dim(1, "n");
      const bool to_full = op.shape == BlasShape::kTpttr;
      b[to_full ? 0 : 1] = Packed(p, n, e);
      b[to_full ? 1 : 0] = p.Mat(n, n, 2, "lda", e);
      break;
    }
    case BlasShape::kDotEx:
    case BlasShape::kAxpyEx:
    case BlasShape::kScalEx:
    case BlasShape::kNormEx:
    case BlasShape::kCopyEx:
      PlanL1Ex(op, p, a, plan);
      break;
    case BlasShape::kGemm:
    case BlasShape::kGemmBatched:
    case BlasShape::kGemmStrided:
    case BlasShape::kGemmEx:
    case BlasShape::kGemmBatchedEx:
    case BlasShape::kGemmStridedEx: {
      const bool ex = op.shape == BlasShape::kGemmEx || op.shape == BlasShape::kGemmBatchedEx ||
                      op.shape == BlasShape::kGemmStridedEx;
      const bool strided =
          op.shape == BlasShape::kGemmStrided || op.shape == BlasShape::kGemmStridedEx;
      const bool arrays =
          op.shape == BlasShape::kGemmBatched || op.shape == BlasShape::kGemmBatchedEx;
      const int64_t ta = p.Op(0, "transa"), tb = p.Op(1, "transb");
      const int64_t m = p.Dim(2, "m"), n = p.Dim(3, "n"), k = p.Dim(4, "k");
      // Where each matrix's integers sit: [type] ld [stride], per the layout above.
      size_t i = 5;
      uint64_t es[3];
      size_t ld[3], stride[3] = {0, 0, 0};
      for (int mtx = 0; mtx < 3; ++mtx) {
        es[mtx] = ex ? p.Type(i++, mtx == 0 ? "Atype" : mtx == 1 ? "Btype" : "Ctype") : e;
        ld[mtx] = i++;
        if (strided) stride[mtx] = i++;
      }
      const bool batched = strided || arrays;
      if (batched) plan.batch = p.Dim(i++, "batchCount");
      if (ex) {
        plan.scalar_bytes[0] = plan.scalar_bytes[1] = p.ComputeScalar(i, ld[2] - 1);
        const int64_t algo = a[i + 1];  // a hint: DEFAULT (-1), ALGO0..ALGO15_TENSOR_OP, AUTOTUNE
        if ((algo < -1 || algo > 115) && algo != 999) p.Fail("algo = " + std::to_string(algo));
      }
      b[0] = OpMat(p, ta, m, k, ld[0], "lda", es[0]);
      b[1] = OpMat(p, tb, k, n, ld[1], "ldb", es[1]);
      b[2] = p.Mat(m, n, ld[2], "ldc", es[2]);
      if (strided)
        for (int mtx = 0; mtx < 3; ++mtx)
          b[mtx] = p.Strided(b[mtx], stride[mtx], plan.batch, es[mtx]);
      if (arrays) plan.array = {true, true, true};
      break;
    }
    case BlasShape::kSymm: {
      const int64_t side = p.Enum01(0, "side");
      p.Enum01(1, "uplo");
      const int64_t m = p.Dim(2, "m"), n = p.Dim(3, "n");
      const int64_t ka = side == kRight ? n : m;
      b[0] = p.Mat(ka, ka, 4, "lda", e);
      b[1] = p.Mat(m, n, 5, "ldb", e);
      b[2] = p.Mat(m, n, 6, "ldc", e);
      break;
    }
    case BlasShape::kSyrk:
    case BlasShape::kHerk: {
      p.Enum01(0, "uplo");
      const int64_t t = HermitianOp(p, op);
      const int64_t n = p.Dim(2, "n"), k = p.Dim(3, "k");
      b[0] = OpMat(p, t, n, k, 4, "lda", e);
      b[1] = p.Mat(n, n, 5, "ldc", e);
      if (op.shape == BlasShape::kHerk) plan.scalar_bytes = {uint32_t(e / 2), uint32_t(e / 2)};
      break;
    }
    case BlasShape::kTrsm:
    case BlasShape::kTrmm:
    case BlasShape::kTrsmBatched: {
      const int64_t side = p.Enum01(0, "side");
      p.Enum01(1, "uplo");
      p.Op(2, "trans");
      p.Enum01(3, "diag");
      const int64_t m = p.Dim(4, "m"), n = p.Dim(5, "n");
      const int64_t ka = side == kRight ? n : m;
      b[0] = p.Mat(ka, ka, 6, "lda", e);
      b[1] = p.Mat(m, n, 7, "ldb", e);
      if (op.shape == BlasShape::kTrmm) b[2] = p.Mat(m, n, 8, "ldc", e);
      if (op.shape == BlasShape::kTrsmBatched) {  // ldc's place holds the batch count
        plan.batch = p.Dim(8, "batchCount");
        plan.array = {true, true};
      }
      break;
    }
    case BlasShape::kGeam: {
      const int64_t ta = p.Op(0, "transa"), tb = p.Op(1, "transb");
      const int64_t m = p.Dim(2, "m"), n = p.Dim(3, "n");
      b[0] = OpMat(p, ta, m, n, 4, "lda", e);
      b[1] = OpMat(p, tb, m, n, 5, "ldb", e);
      b[2] = p.Mat(m, n, 6, "ldc", e);
      break;
    }
    case BlasShape::kDgmm: {
      const int64_t side = p.Enum01(0, "mode");
      const int64_t m = p.Dim(1, "m"), n = p.Dim(2, "n");
      b[0] = p.Mat(m, n, 3, "lda", e);
      // dgmm allows incx == 0 (x[0] repeated).
      const int64_t len = side == kRight ? n : m;
      b[1] = a[4] == 0 ? (len ? e : 0) : p.Vec(len, 4, "incx", e);
      b[2] = p.Mat(m, n, 5, "ldc", e);
      break;
    }
    case BlasShape::kGetrf: {
      const int64_t n = p.Dim(0, "n");
      b[0] = p.Mat(n, n, 1, "lda", e);
      plan.batch = p.Dim(2, "batchSize");
      b[1] = p.Bytes(static_cast<unsigned __int128>(n) * plan.batch, 4);
      b[2] = p.Bytes(plan.batch, 4);
      plan.array[0] = true;
      plan.nullable[1] = true;
      break;
    }
    case BlasShape::kGetrs: {
      p.Op(0, "trans");
      const int64_t n = p.Dim(1, "n"), nrhs = p.Dim(2, "nrhs");
      b[0] = p.Mat(n, n, 3, "lda", e);
      b[2] = p.Mat(n, nrhs, 4, "ldb", e);
      plan.batch = p.Dim(5, "batchSize");
      b[1] = p.Bytes(static_cast<unsigned __int128>(n) * plan.batch, 4);
      plan.array[0] = plan.array[2] = true;
      plan.nullable[1] = true;
      plan.result_bytes = 4;
      break;
    }
    case BlasShape::kGetri: {
      const int64_t n = p.Dim(0, "n");
      b[0] = p.Mat(n, n, 1, "lda", e);
      b[2] = p.Mat(n, n, 2, "ldc", e);
      plan.batch = p.Dim(3, "batchSize");
      b[1] = p.Bytes(static_cast<unsigned __int128>(n) * plan.batch, 4);
      b[3] = p.Bytes(plan.batch, 4);
      plan.array[0] = plan.array[2] = true;
      plan.nullable[1] = true;
      break;
    }
    case BlasShape::kMatinv: {
      const int64_t n = p.Dim(0, "n");
      if (n > 32) p.Fail("n = " + std::to_string(n) + " exceeds 32");
      b[0] = p.Mat(n, n, 1, "lda", e);
      b[1] = p.Mat(n, n, 2, "lda_inv", e);
      plan.batch = p.Dim(3, "batchSize");
      b[2] = p.Bytes(plan.batch, 4);
      plan.array[0] = plan.array[1] = true;
      break;
    }
  }
  RETURN_IF_ERROR(p.status());
  // A batch of pointers must fit a frame: 8 bytes each, per array.
  if (plan.batch > (1 << 20))
    return Bad(op, "batchCount = " + std::to_string(plan.batch) + " exceeds 1048576");
  return plan;
}

namespace {
struct StatusPair {
  int32_t blas;
  int32_t cuda;
};
// cublasStatus_t <-> cudaError_t. The first row for a code wins each way.
constexpr StatusPair kStatusMap[] = {
    {0, 0},                            // SUCCESS
    {1, err::kInvalidResourceHandle},  // NOT_INITIALIZED: a bad or destroyed handle
    {1, err::kInitializationError},    //   no device, no library
    {3, err::kMemoryAllocation},       // ALLOC_FAILED
    {7, err::kInvalidValue},           // INVALID_VALUE
    {8, err::kNoKernelImage},          // ARCH_MISMATCH
    {11, err::kInvalidDevicePointer},  // MAPPING_ERROR
    {13, err::kLaunchFailure},         // EXECUTION_FAILED
    {14, err::kUnknown},               // INTERNAL_ERROR
    {15, err::kNotSupported},          // NOT_SUPPORTED
    {15, err::kNotPermitted},
    {16, err::kUnknown},  // LICENSE_ERROR
};
}  // namespace

int32_t BlasStatusToCuda(int32_t s) {
  for (const StatusPair& p : kStatusMap)
    if (p.blas == s) return p.cuda;
  return err::kUnknown;
}

int32_t CudaToBlasStatus(int32_t e) {
  for (const StatusPair& p : kStatusMap)
    if (p.cuda == e) return p.blas;
  // A device fault or a lost server: the routine did not run.
  return 13;
}

}  // namespace remora
