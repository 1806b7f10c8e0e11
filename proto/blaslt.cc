// proto/blaslt.cc - the forwarded cuBLASLt matmul: checks and footprints.
#include "proto/blaslt.h"

#include <cstring>
#include <string>

namespace remora {
namespace {

// cuBLAS and cuBLASLt enum values (cublas_api.h, cublasLt.h, library_types.h),
// kept here so the stub's checks and the server's agree without either
// including the other's headers.
constexpr int32_t kR32F = 0, kR16F = 2, kR16BF = 14;  // cudaDataType
constexpr int32_t kOpN = 0, kOpC = 2;                 // cublasOperation_t
constexpr int32_t kOrderCol = 0;                      // cublasLtOrder_t
constexpr int32_t kPointerHost = 0, kPointerDevice = 1;
constexpr uint32_t kEpilogueDefault = 1, kRelu = 2, kBias = 4, kGelu = 32;
constexpr uint64_t kMaxBytes = 1ull << 56;  // beyond any device
constexpr uint64_t kMaxDim = 0x7fffffff;    // cuBLASLt takes int32 dimensions
constexpr const char* kNames[] = {"A", "B", "C", "D"};

Status Bad(const std::string& what) {
  return Error(err::kInvalidValue, "cublasLtMatmul: " + what);
}
Status Unsupported(const std::string& what) {
  return Error(err::kNotSupported, "cublasLtMatmul: " + what);
}

bool Fp32Compute(int32_t c) {
  // CUBLAS_COMPUTE_32F, _PEDANTIC, _FAST_16F, _FAST_16BF, _FAST_TF32
  return c == 68 || c == 69 || c == 74 || c == 75 || c == 77;
}

// Bytes layout `l` reaches: `batch` column-major matrices `stride` elements apart.
Result<uint64_t> Reach(const BlasLtLayout& l, const char* name) {
  const uint64_t elem = BlasLtElemBytes(l.type);
  if (l.rows == 0 || l.cols == 0 || l.batch == 0) return uint64_t{0};
  const unsigned __int128 one =
      static_cast<unsigned __int128>(l.cols - 1) * static_cast<uint64_t>(l.ld) + l.rows;
  const unsigned __int128 reach =
      (static_cast<unsigned __int128>(l.batch - 1) * static_cast<uint64_t>(l.stride) + one) * elem;
  if (reach > kMaxBytes)
    return Bad(std::string(name) + " reaches more bytes than any device holds");
  return static_cast<uint64_t>(reach);
}

// The checks each layout gets on its own.
Status CheckLayout(const BlasLtLayout& l, const char* name) {
  const std::string n = std::string("matrix ") + name;
  if (BlasLtElemBytes(l.type) == 0)
    return Unsupported(n + " type " + std::to_string(l.type) + " is not FP32, FP16 or BF16");
  if (l.order != kOrderCol)
    return Unsupported(n + " order " + std::to_string(l.order) + " is not CUBLASLT_ORDER_COL");
  if (l.rows > kMaxDim || l.cols > kMaxDim)
    return Bad(n + " has more rows or columns than an int holds");
  if (l.ld < static_cast<int64_t>(l.rows > 1 ? l.rows : 1))
    return Bad(n + " leading dimension " + std::to_string(l.ld) +
               " is less than max(1, rows = " + std::to_string(l.rows) + ")");
  if (l.batch < 1) return Bad(n + " batch count " + std::to_string(l.batch) + " is below 1");
  if (l.stride < 0) return Bad(n + " batch stride " + std::to_string(l.stride) + " is negative");
  if (l.unsupported >= 0)
    return Unsupported(n + " attribute " + std::to_string(l.unsupported) +
                       " (cublasLtMatrixLayoutAttribute_t) has a value not forwarded");
  return OkStatus();
}

}  // namespace

uint32_t BlasLtElemBytes(int32_t type) {
  switch (type) {
    case kR32F:
      return 4;
    case kR16F:
    case kR16BF:
      return 2;
    default:
      return 0;
  }
}

bool BlasLtHasBias(uint32_t epilogue) {
  return (epilogue & kBias) != 0;
}

Result<BlasLtPlan> PlanBlasLt(const BlasLtMatmul& m) {
  const BlasLtDesc& desc = m.desc;
  if (desc.unsupported >= 0)
    return Unsupported("matmul descriptor attribute " + std::to_string(desc.unsupported) +
                       " (cublasLtMatmulDescAttributes_t) has a value not forwarded");
  if (!Fp32Compute(desc.compute_type))
    return Unsupported("compute type " + std::to_string(desc.compute_type) +
                       " is not CUBLAS_COMPUTE_32F or one of its variants");
  if (desc.scale_type != kR32F)
    return Unsupported("scale type " + std::to_string(desc.scale_type) + " is not CUDA_R_32F");
  if (desc.pointer_mode != kPointerHost && desc.pointer_mode != kPointerDevice)
    return Unsupported("pointer mode " + std::to_string(desc.pointer_mode) +
                       " is not CUBLASLT_POINTER_MODE_HOST or _DEVICE");
  for (int32_t t : {desc.transa, desc.transb})
    if (t < kOpN || t > kOpC)
      return Bad("operation " + std::to_string(t) + " is not a cublasOperation_t");
  switch (desc.epilogue) {
    case kEpilogueDefault:
    case kRelu:
    case kBias:
    case kRelu | kBias:
    case kGelu:
    case kGelu | kBias:
      break;
    default:
      return Unsupported("epilogue " + std::to_string(desc.epilogue) + " is not forwarded");
  }
  for (int i = 0; i < 4; ++i) RETURN_IF_ERROR(CheckLayout(m.layouts[i], kNames[i]));
  const BlasLtLayout &a = m.layouts[kLtA], &b = m.layouts[kLtB], &c = m.layouts[kLtC],
                     &d = m.layouts[kLtD];
  // Types: A and B alike; C as D; D as A, or FP32.
  if (a.type != b.type || c.type != d.type || (d.type != a.type && d.type != kR32F))
    return Unsupported("types A " + std::to_string(a.type) + ", B " + std::to_string(b.type) +
                       ", C " + std::to_string(c.type) + ", D " + std::to_string(d.type) +
                       " are not a supported combination");
  BlasLtPlan p;
  p.m = static_cast<int64_t>(d.rows);
  p.n = static_cast<int64_t>(d.cols);
  const uint64_t ar = desc.transa == kOpN ? a.rows : a.cols,
                 ac = desc.transa == kOpN ? a.cols : a.rows;
  const uint64_t br = desc.transb == kOpN ? b.rows : b.cols,
                 bc = desc.transb == kOpN ? b.cols : b.rows;
  p.k = static_cast<int64_t>(ac);
  if (ar != d.rows || bc != d.cols || br != ac || c.rows != d.rows || c.cols != d.cols)
    return Bad("op(A) is " + std::to_string(ar) + "x" + std::to_string(ac) + ", op(B) " +
               std::to_string(br) + "x" + std::to_string(bc) + ", C " + std::to_string(c.rows) +
               "x" + std::to_string(c.cols) + ", D " + std::to_string(d.rows) + "x" +
               std::to_string(d.cols) + ": they do not multiply");
  for (const BlasLtLayout* l : {&a, &b, &c})
    if (l->batch != d.batch)
      return Bad("batch counts differ (" + std::to_string(l->batch) + " and D's " +
                 std::to_string(d.batch) + ")");
  p.batch = d.batch;
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(p.bytes[i], Reach(m.layouts[i], kNames[i]));
  }
  if (p.k == 0) p.bytes[kLtA] = p.bytes[kLtB] = 0;  // D = beta * C: A and B not read
  if (BlasLtHasBias(desc.epilogue)) {
    // The bias is of D's type: NVIDIA's exceptions are IMMA and FP8 matmuls, none of which is
    // forwarded. Another type is CUBLAS_STATUS_INVALID_VALUE, as NVIDIA's heuristic answers an
    // FP32 bias for FP16 D (seen on an H200, cuBLASLt 13.0).
    p.bias_type = desc.bias_type == -1 ? d.type : desc.bias_type;
    if (p.bias_type != d.type)
      return Bad("bias type " + std::to_string(p.bias_type) + " is not D's type " +
                 std::to_string(d.type));
    if (desc.bias_batch_stride < 0)
      return Bad("bias batch stride " + std::to_string(desc.bias_batch_stride) + " is negative");
    if (p.m > 0 && p.n > 0) {
      const unsigned __int128 reach = (static_cast<unsigned __int128>(p.batch - 1) *
                                           static_cast<uint64_t>(desc.bias_batch_stride) +
                                       static_cast<uint64_t>(p.m)) *
                                      BlasLtElemBytes(p.bias_type);
      if (reach > kMaxBytes) return Bad("the bias reaches more bytes than any device holds");
      p.bias_bytes = static_cast<uint64_t>(reach);
    }
  }
  return p;
}

}  // namespace remora

// ---- Descriptor attributes -----------------------------------------------------

namespace remora {
namespace {

constexpr int32_t kSuccess = 0, kInvalid = 7;  // cublasStatus_t

// One attribute of plain data: its field, if it has one.
template <typename T>
int32_t SetField(T& field, const void* buf, size_t size) {
  if (size != sizeof(T)) return kInvalid;
  std::memcpy(&field, buf, sizeof(T));
  return kSuccess;
}
template <typename T>
int32_t GetField(const T& field, void* buf, size_t size, size_t* written) {
  if (size == 0 && written) {
    *written = sizeof(T);
    return kSuccess;
  }
  if (!buf || size != sizeof(T)) return kInvalid;
  std::memcpy(buf, &field, sizeof(T));
  if (written) *written = sizeof(T);
  return kSuccess;
}
// An attribute not forwarded: its default (all zero, or -1 for a type) is
// accepted and changes nothing; another value makes the descriptor unsupported.
int32_t SetIgnored(int32_t& unsupported, int32_t attr, const void* buf, size_t size, size_t expect,
                   bool minus_one_default = false) {
  if (size != expect) return kInvalid;
  int64_t v = 0;
  std::memcpy(&v, buf, size);
  if (size == 4) v = static_cast<int32_t>(v);
  if (v != 0 && !(minus_one_default && v == -1) && unsupported < 0) unsupported = attr;
  return kSuccess;
}

}  // namespace

int32_t BlasLtSetDescAttribute(BlasLtDesc& d, int32_t attr, const void* buf, size_t size) {
  if (!buf) return kInvalid;
  switch (attr) {
    case 0:  // COMPUTE_TYPE
      return SetField(d.compute_type, buf, size);
    case 1:  // SCALE_TYPE
      return SetField(d.scale_type, buf, size);
    case 2:  // POINTER_MODE
      return SetField(d.pointer_mode, buf, size);
    case 3:  // TRANSA
      return SetField(d.transa, buf, size);
    case 4:  // TRANSB
      return SetField(d.transb, buf, size);
    case 5:  // TRANSC: only CUBLAS_OP_N
      return SetIgnored(d.unsupported, attr, buf, size, 4);
    case 6: {  // FILL_MODE: only CUBLAS_FILL_MODE_FULL (2)
      int32_t v = 0;
      if (int32_t s = SetField(v, buf, size)) return s;
      if (v != 2 && d.unsupported < 0) d.unsupported = attr;
      return kSuccess;
    }
    case 7:  // EPILOGUE
      return SetField(d.epilogue, buf, size);
    case 8:  // BIAS_POINTER
      return SetField(d.bias, buf, size);
    case 10:  // BIAS_BATCH_STRIDE
      return SetField(d.bias_batch_stride, buf, size);
    case 26:  // BIAS_DATA_TYPE
      return SetField(d.bias_type, buf, size);
    // Pointers and int64 strides not forwarded: null / 0 only.
    case 11:  // EPILOGUE_AUX_POINTER
    case 12:  // EPILOGUE_AUX_LD
    case 13:  // EPILOGUE_AUX_BATCH_STRIDE
    case 14:  // ALPHA_VECTOR_BATCH_STRIDE
    case 17:  // A_SCALE_POINTER
    case 18:  // B_SCALE_POINTER
    case 19:  // C_SCALE_POINTER
    case 20:  // D_SCALE_POINTER
    case 21:  // AMAX_D_POINTER
    case 23:  // EPILOGUE_AUX_SCALE_POINTER
    case 24:  // EPILOGUE_AUX_AMAX_POINTER
    case 36:  // D_OUT_SCALE_POINTER
    case 38:  // EMULATION_DESCRIPTOR
      return SetIgnored(d.unsupported, attr, buf, size, 8);
    // int32 settings not forwarded: 0 (or -1 for a type) only.
    case 25: {  // FAST_ACCUM (int8_t): leave to sum less precisely, so any value is served
      int8_t v = 0;
      return SetField(v, buf, size);
    }
    case 15:  // SM_COUNT_TARGET
    case 31:  // A_SCALE_MODE
    case 32:  // B_SCALE_MODE
    case 33:  // C_SCALE_MODE
    case 34:  // D_SCALE_MODE
    case 35:  // EPILOGUE_AUX_SCALE_MODE
    case 37:  // D_OUT_SCALE_MODE
      return SetIgnored(d.unsupported, attr, buf, size, 4);
    case 22:  // EPILOGUE_AUX_DATA_TYPE
      return SetIgnored(d.unsupported, attr, buf, size, 4, /*minus_one_default=*/true);
    default:
      return kInvalid;
  }
}

int32_t BlasLtGetDescAttribute(const BlasLtDesc& d, int32_t attr, void* buf, size_t size,
                               size_t* written) {
  switch (attr) {
    case 0:
      return GetField(d.compute_type, buf, size, written);
    case 1:
      return GetField(d.scale_type, buf, size, written);
    case 2:
      return GetField(d.pointer_mode, buf, size, written);
    case 3:
      return GetField(d.transa, buf, size, written);
    case 4:
      return GetField(d.transb, buf, size, written);
    case 7:
      return GetField(d.epilogue, buf, size, written);
    case 8:
      return GetField(d.bias, buf, size, written);
    case 10:
      return GetField(d.bias_batch_stride, buf, size, written);
    case 26:
      return GetField(d.bias_type, buf, size, written);
    default:
      return kInvalid;
  }
}

int32_t BlasLtSetLayoutAttribute(BlasLtLayout& l, int32_t attr, const void* buf, size_t size) {
  if (!buf) return kInvalid;
  switch (attr) {
    case 0:  // TYPE (uint32_t)
      return SetField(l.type, buf, size);
    case 1:  // ORDER
      return SetField(l.order, buf, size);
    case 2:  // ROWS
      return SetField(l.rows, buf, size);
    case 3:  // COLS
      return SetField(l.cols, buf, size);
    case 4:  // LD
      return SetField(l.ld, buf, size);
    case 5:  // BATCH_COUNT
      return SetField(l.batch, buf, size);
    case 6:  // STRIDED_BATCH_OFFSET
      return SetField(l.stride, buf, size);
    case 7:  // PLANE_OFFSET: interleaved only
      return SetIgnored(l.unsupported, attr, buf, size, 8);
    case 8:  // BATCH_MODE: strided only
      return SetIgnored(l.unsupported, attr, buf, size, 4);
    default:
      return kInvalid;
  }
}

int32_t BlasLtGetLayoutAttribute(const BlasLtLayout& l, int32_t attr, void* buf, size_t size,
                                 size_t* written) {
  switch (attr) {
    case 0:
      return GetField(l.type, buf, size, written);
    case 1:
      return GetField(l.order, buf, size, written);
    case 2:
      return GetField(l.rows, buf, size, written);
    case 3:
      return GetField(l.cols, buf, size, written);
    case 4:
      return GetField(l.ld, buf, size, written);
    case 5:
      return GetField(l.batch, buf, size, written);
    case 6:
      return GetField(l.stride, buf, size, written);
    default:
      return kInvalid;
  }
}

}  // namespace remora
