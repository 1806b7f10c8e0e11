// tests/emu_ptx/tensor_test.cc - warp-level matrix multiply (kernels/tensor.cu, compute_80 and
// compute_90): wmma for each shape and type, mma.sync / ldmatrix / movmatrix with the ISA's
// fragment layouts, against CPU references on random data; forms the interpreter does not
// implement load and are refused by name when reached.
//
// Floating-point references are exact sums in double of the inputs as the device sees them
// (.f16/.bf16 as stored, .tf32 rounded as cvt.rna rounds); results must lie within the error
// bound of f32 (or f64) recursive summation, (K + 1) u (|c| + sum |a b|), plus half an ulp of an
// .f16 result. A wrong fragment layout moves products between rows and columns and misses that
// by orders of magnitude. Integer results are exact.
#include <cmath>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

enum class El { kF16, kBF16, kTF32, kF32, kF64, kS8, kU8, kS32 };

int Size(El e) {
  switch (e) {
    case El::kS8:
    case El::kU8:
      return 1;
    case El::kF16:
    case El::kBF16:
      return 2;
    case El::kF64:
      return 8;
    default:
      return 4;
  }
}
bool IsInt(El e) {
  return e == El::kS8 || e == El::kU8 || e == El::kS32;
}

uint16_t BfBits(float f) {  // round to nearest even
  uint32_t u = std::bit_cast<uint32_t>(f);
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
// cvt.rna.tf32.f32 as the ISA defines it: nearest, ties away from zero, 10 mantissa bits kept.
float Tf32Rna(float f) {
  if (std::isnan(f)) return std::bit_cast<float>(0x7fffffffu);
  if (std::isinf(f) || f == 0) return f;
  int e = std::max(std::ilogb(f), -126);
  double q = std::ldexp(1.0, e - 10);
  double r = std::round(double(f) / q) * q;  // std::round: halfway cases away from zero
  return float(r);                           // exact, or beyond FLT_MAX: infinity
}

// A matrix in device memory, stored row- or column-major with leading dimension ld (padding
// filled with junk), and the value of each element as the device computes with it.
struct Matrix {
  int rows = 0, cols = 0, ld = 0;
  bool row = true;
  El el = El::kF32;
  std::vector<uint8_t> bytes;
  std::vector<double> value;  // row-major
  size_t Offset(int r, int c) const {
    return (row ? size_t(r) * ld + c : size_t(c) * ld + r) * size_t(Size(el));
  }
  double At(int r, int c) const { return value[size_t(r) * cols + c]; }
};

// Random elements in a range that keeps f16 sums finite; 8-bit integers cover their whole range.
Matrix Random(std::mt19937& rng, El el, int rows, int cols, bool row, int pad, double scale = 2) {
  Matrix m;
  m.rows = rows, m.cols = cols, m.row = row, m.el = el;
  m.ld = (row ? cols : rows) + pad;
  m.bytes.resize(size_t(m.ld) * (row ? rows : cols) * Size(el));
  for (auto& b : m.bytes) b = uint8_t(rng());
  m.value.resize(size_t(rows) * cols);
  std::uniform_real_distribution<double> u(-scale, scale);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      uint64_t raw = 0;
      double v = 0;
      switch (el) {
        case El::kF16: {
          _Float16 h = _Float16(u(rng));
          raw = std::bit_cast<uint16_t>(h);
          v = double(h);
          break;
        }
        case El::kBF16: {
          uint16_t b = BfBits(float(u(rng)));
          raw = b;
          v = std::bit_cast<float>(uint32_t(b) << 16);
          break;
        }
        case El::kTF32: {  // the kernels round with cvt.rna.tf32.f32 themselves
          float f = float(u(rng));
          raw = std::bit_cast<uint32_t>(f);
          v = Tf32Rna(f);
          break;
        }
        case El::kF32: {
          float f = float(u(rng));
          raw = std::bit_cast<uint32_t>(f);
          v = f;
          break;
        }
        case El::kF64:
          v = u(rng);
          raw = std::bit_cast<uint64_t>(v);
          break;
        case El::kS8:
          v = int8_t(rng());
          raw = uint8_t(int8_t(v));
          break;
        case El::kU8:
          v = uint8_t(rng());
          raw = uint64_t(v);
          break;
        case El::kS32:
          v = int32_t(rng() % 2000001) - 1000000;
          raw = uint32_t(int32_t(v));
          break;
      }
      std::memcpy(m.bytes.data() + m.Offset(r, c), &raw, size_t(Size(el)));
      m.value[size_t(r) * cols + c] = v;
    }
  }
  return m;
}

// An output matrix: bytes all 0xa5 (so a store outside the matrix shows), no values.
Matrix Output(El el, int rows, int cols, bool row, int pad) {
  Matrix m;
  m.rows = rows, m.cols = cols, m.row = row, m.el = el;
  m.ld = (row ? cols : rows) + pad;
  m.bytes.assign(size_t(m.ld) * (row ? rows : cols) * Size(el), 0xa5);
  return m;
}

double Read(const uint8_t* base, const Matrix& m, int r, int c) {
  uint64_t raw = 0;
  std::memcpy(&raw, base + m.Offset(r, c), size_t(Size(m.el)));
  switch (m.el) {
    case El::kF16:
      return double(std::bit_cast<_Float16>(uint16_t(raw)));
    case El::kF32:
      return std::bit_cast<float>(uint32_t(raw));
    case El::kF64:
      return std::bit_cast<double>(raw);
    default:  // .s32
      return int32_t(uint32_t(raw));
  }
}

// Checks device matrix `got` (image `dev` laid out as `out`) against D = A * B + C on every
// element, and that the padding between columns/rows of `out` was not written.
struct Reference {
  bool satfinite = false;
  double scale = 1, shift = 0;  // D = scale * (A * B + C) + shift (wmma_fill_scale_shared)
};
void CheckProduct(const Matrix& a, const Matrix& b, const Matrix& c, const Matrix& out,
                  const uint8_t* dev, const std::string& what, Reference ref = {}) {
  const int K = a.cols;
  const bool f64 = out.el == El::kF64;
  const double u = f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  for (int r = 0; r < out.rows; ++r) {
    for (int col = 0; col < out.cols; ++col) {
      double got = Read(dev, out, r, col);
      if (IsInt(out.el)) {
        int64_t acc = int64_t(c.At(r, col));
        for (int k = 0; k < K; ++k) acc += int64_t(a.At(r, k)) * int64_t(b.At(k, col));
        int32_t want = ref.satfinite ? int32_t(std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX))
                                     : int32_t(uint32_t(uint64_t(acc)));
        ASSERT_EQ(int32_t(got), want) << what << " D(" << r << "," << col << ")";
        continue;
      }
      double exact = c.At(r, col), mag = std::fabs(c.At(r, col));
      for (int k = 0; k < K; ++k) {
        exact += a.At(r, k) * b.At(k, col);
        mag += std::fabs(a.At(r, k) * b.At(k, col));
      }
      double tol = (K + 1) * u * mag;
      if (out.el == El::kF16) tol += std::ldexp(std::fabs(exact) + tol, -11) + std::ldexp(1.0, -25);
      double want = ref.scale * exact + ref.shift;
      tol = tol * ref.scale + std::ldexp(std::fabs(want), -23);
      ASSERT_NEAR(got, want, tol) << what << " D(" << r << "," << col << ")";
    }
  }
  // Padding: the leading dimension's extra elements must still hold the fill pattern.
  const int lead = out.row ? out.rows : out.cols, inner = out.row ? out.cols : out.rows;
  for (int l = 0; l < lead; ++l)
    for (size_t byte = size_t(inner) * Size(out.el); byte < size_t(out.ld) * Size(out.el); ++byte)
      ASSERT_EQ(dev[size_t(l) * out.ld * Size(out.el) + byte], 0xa5) << what << " wrote padding";
}

class Tensor : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    prog = CachedKernel(GetParam());
    ASSERT_TRUE(prog);
  }
  void* Put(const Matrix& m) { return mem.Upload(m.bytes); }
  std::shared_ptr<const Program> prog;
  std::mt19937 rng{2024};
  TestMemory mem;
};

// ---- wmma ----

struct WmmaCase {
  const char* kernel;
  int m, n, k;
  El in, acc;
  bool a_row, b_row;
};
constexpr WmmaCase kWmmaCases[] = {
    {"wmma_f16_f32_m16n16k16_rc", 16, 16, 16, El::kF16, El::kF32, true, false},
    {"wmma_f16_f32_m16n16k16_cr", 16, 16, 16, El::kF16, El::kF32, false, true},
    {"wmma_f16_f32_m32n8k16_rc", 32, 8, 16, El::kF16, El::kF32, true, false},
    {"wmma_f16_f32_m32n8k16_cr", 32, 8, 16, El::kF16, El::kF32, false, true},
    {"wmma_f16_f32_m8n32k16_rc", 8, 32, 16, El::kF16, El::kF32, true, false},
    {"wmma_f16_f32_m8n32k16_cr", 8, 32, 16, El::kF16, El::kF32, false, true},
    {"wmma_f16_f16_m16n16k16_rc", 16, 16, 16, El::kF16, El::kF16, true, false},
    {"wmma_f16_f16_m16n16k16_cr", 16, 16, 16, El::kF16, El::kF16, false, true},
    {"wmma_f16_f16_m32n8k16_rc", 32, 8, 16, El::kF16, El::kF16, true, false},
    {"wmma_f16_f16_m32n8k16_cr", 32, 8, 16, El::kF16, El::kF16, false, true},
    {"wmma_f16_f16_m8n32k16_rc", 8, 32, 16, El::kF16, El::kF16, true, false},
    {"wmma_f16_f16_m8n32k16_cr", 8, 32, 16, El::kF16, El::kF16, false, true},
    {"wmma_bf16_f32_m16n16k16_rc", 16, 16, 16, El::kBF16, El::kF32, true, false},
    {"wmma_bf16_f32_m16n16k16_cr", 16, 16, 16, El::kBF16, El::kF32, false, true},
    {"wmma_bf16_f32_m32n8k16_rc", 32, 8, 16, El::kBF16, El::kF32, true, false},
    {"wmma_bf16_f32_m32n8k16_cr", 32, 8, 16, El::kBF16, El::kF32, false, true},
    {"wmma_bf16_f32_m8n32k16_rc", 8, 32, 16, El::kBF16, El::kF32, true, false},
    {"wmma_bf16_f32_m8n32k16_cr", 8, 32, 16, El::kBF16, El::kF32, false, true},
    {"wmma_tf32_f32_m16n16k8_rc", 16, 16, 8, El::kTF32, El::kF32, true, false},
    {"wmma_tf32_f32_m16n16k8_cr", 16, 16, 8, El::kTF32, El::kF32, false, true},
    {"wmma_f64_f64_m8n8k4_rc", 8, 8, 4, El::kF64, El::kF64, true, false},
    {"wmma_f64_f64_m8n8k4_cr", 8, 8, 4, El::kF64, El::kF64, false, true},
    {"wmma_s8_s32_m16n16k16_rc", 16, 16, 16, El::kS8, El::kS32, true, false},
    {"wmma_u8_s32_m32n8k16_cr", 32, 8, 16, El::kU8, El::kS32, false, true},
};

TEST_P(Tensor, WmmaEveryShapeTypeAndLayout) {
  for (const WmmaCase& w : kWmmaCases) {
    // Both memory layouts of C and D; leading dimensions padded past the matrix.
    for (int c_row = 0; c_row < 2; ++c_row) {
      const int pad = IsInt(w.in) ? 16 : 8;
      Matrix a = Random(rng, w.in, w.m, w.k, w.a_row, pad);
      Matrix b = Random(rng, w.in, w.k, w.n, w.b_row, pad);
      Matrix c = Random(rng, w.acc, w.m, w.n, c_row, 8, 4);
      Matrix d = Output(w.acc, w.m, w.n, !c_row, 8);
      auto* dd = static_cast<uint8_t*>(Put(d));
      Status s = RunKernel(
          *prog, w.kernel, {1}, {32},
          [&](Params& p) {
            p.Add(Put(a)).Add(a.ld).Add(Put(b)).Add(b.ld).Add(Put(c)).Add(c.ld).Add(c_row);
            p.Add(static_cast<void*>(dd)).Add(d.ld).Add(int(d.row));
          },
          &mem);
      ASSERT_TRUE(s.ok()) << w.kernel << ": " << s.ToString();
      CheckProduct(a, b, c, d, dd, std::string(w.kernel) + (c_row ? " C row" : " C col"));
      if (HasFatalFailure()) return;
    }
  }
}

// A stride below the matrix's width overlaps its rows, and a GPU addresses them so: with
// stride 8, row r of a 16-wide A starts 8 elements after row r - 1 (the CUDA documentation asks
// only that the stride be a multiple of 8 for .f16).
TEST_P(Tensor, WmmaStrideBelowTheWidthOverlapsRows) {
  Matrix a = Random(rng, El::kF16, 16, 16, true, 0);
  a.ld = 8;
  a.bytes.resize(size_t(15 * 8 + 16) * Size(El::kF16));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) a.value[size_t(r) * 16 + c] = Read(a.bytes.data(), a, r, c);
  Matrix b = Random(rng, El::kF16, 16, 16, false, 8);
  Matrix c = Random(rng, El::kF32, 16, 16, true, 8, 4);
  Matrix d = Output(El::kF32, 16, 16, true, 8);
  auto* dd = static_cast<uint8_t*>(Put(d));
  Status s = RunKernel(
      *prog, "wmma_f16_f32_m16n16k16_rc", {1}, {32},
      [&](Params& p) {
        p.Add(Put(a)).Add(a.ld).Add(Put(b)).Add(b.ld).Add(Put(c)).Add(c.ld).Add(1);
        p.Add(static_cast<void*>(dd)).Add(d.ld).Add(int(d.row));
      },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  CheckProduct(a, b, c, d, dd, "A with stride 8");
}

TEST_P(Tensor, WmmaFillElementwiseAndSharedMemory) {
  Matrix a = Random(rng, El::kF16, 16, 16, true, 0);
  Matrix b = Random(rng, El::kF16, 16, 16, false, 0);
  Matrix c;  // the filled accumulator: 0.5 everywhere
  c.rows = c.cols = 16;
  c.value.assign(256, 0.5);
  Matrix d = Output(El::kF32, 16, 16, true, 0);
  auto* dd = static_cast<uint8_t*>(Put(d));
  Status s = RunKernel(
      *prog, "wmma_fill_scale_shared", {1}, {32},
      [&](Params& p) { p.Add(Put(a)).Add(Put(b)).Add(static_cast<void*>(dd)); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  CheckProduct(a, b, c, d, dd, "fill/scale", {.scale = 2, .shift = 1});
}

TEST_P(Tensor, WmmaTiledGemmOverManyWarps) {
  const int m = 64, n = 48, k = 64;
  Matrix a = Random(rng, El::kF16, m, k, true, 0);
  Matrix b = Random(rng, El::kF16, k, n, false, 0);
  Matrix c;
  c.rows = m, c.cols = n;
  c.value.assign(size_t(m) * n, 0.0);
  Matrix d = Output(El::kF32, m, n, true, 0);
  auto* dd = static_cast<uint8_t*>(Put(d));
  Status s = RunKernel(
      *prog, "wmma_gemm", {(m / 16) * (n / 16) / 4}, {128},
      [&](Params& p) {
        p.Add(Put(a)).Add(Put(b)).Add(static_cast<void*>(dd)).Add(m).Add(n).Add(k);
      },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  CheckProduct(a, b, c, d, dd, "wmma_gemm");
}

TEST_P(Tensor, Tf32RoundsToNearestTiesAway) {
  std::vector<float> in = {1.0f,
                           std::bit_cast<float>(0x3f801000u),  // a tie: away from zero
                           std::bit_cast<float>(0xbf801000u),
                           std::bit_cast<float>(0x3f800fffu),
                           std::bit_cast<float>(0x3f803000u),
                           std::bit_cast<float>(0x7f7fffffu),  // rounds up to infinity
                           std::bit_cast<float>(0x00000fffu),  // subnormals
                           std::bit_cast<float>(0x80001000u),
                           INFINITY,
                           -INFINITY,
                           NAN,
                           std::bit_cast<float>(0x7f800001u),  // a NaN with low payload only
                           -0.0f};
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  while (in.size() < 200) in.push_back(u(rng));
  float* din = mem.Upload(in);
  float* out = mem.Alloc<float>(in.size());
  Status s = RunKernel(
      *prog, "tf32_round", {1}, {256}, [&](Params& p) { p.Add(din).Add(out).Add(int(in.size())); },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(Tf32Rna(in[i])))
        << std::hexfloat << in[i];
}

// ---- mma.sync ----

struct MmaCase {
  const char* kernel;
  int m, n, k;
  El a, b, acc;
  bool satfinite;
};
constexpr MmaCase kMmaCases[] = {
    {"mma_f16_m16n8k16_f32", 16, 8, 16, El::kF16, El::kF16, El::kF32, false},
    {"mma_f16_m16n8k8_f32", 16, 8, 8, El::kF16, El::kF16, El::kF32, false},
    {"mma_f16_m16n8k16_f16", 16, 8, 16, El::kF16, El::kF16, El::kF16, false},
    {"mma_f16_m16n8k8_f16", 16, 8, 8, El::kF16, El::kF16, El::kF16, false},
    {"mma_bf16_m16n8k16_f32", 16, 8, 16, El::kBF16, El::kBF16, El::kF32, false},
    {"mma_bf16_m16n8k8_f32", 16, 8, 8, El::kBF16, El::kBF16, El::kF32, false},
    {"mma_tf32_m16n8k4", 16, 8, 4, El::kTF32, El::kTF32, El::kF32, false},
    {"mma_tf32_m16n8k8", 16, 8, 8, El::kTF32, El::kTF32, El::kF32, false},
    {"mma_f64_m8n8k4", 8, 8, 4, El::kF64, El::kF64, El::kF64, false},
    {"mma_s8_s8_m16n8k16", 16, 8, 16, El::kS8, El::kS8, El::kS32, false},
    {"mma_u8_u8_m16n8k16_sat", 16, 8, 16, El::kU8, El::kU8, El::kS32, true},
    {"mma_u8_s8_m16n8k32_sat", 16, 8, 32, El::kU8, El::kS8, El::kS32, true},
    {"mma_s8_u8_m16n8k32", 16, 8, 32, El::kS8, El::kU8, El::kS32, false},
};

TEST_P(Tensor, MmaFragmentsAsTheIsaLaysThemOut) {
  for (const MmaCase& mc : kMmaCases) {
    for (int rep = 0; rep < 3; ++rep) {
      Matrix a = Random(rng, mc.a, mc.m, mc.k, true, 0);
      Matrix b = Random(rng, mc.b, mc.k, mc.n, true, 0);
      Matrix c = Random(rng, mc.acc, mc.m, mc.n, true, 0, 4);
      if (mc.acc == El::kS32) {  // accumulators near the s32 limits: sums wrap or saturate
        for (int i = 0; i < mc.m * mc.n; ++i) {
          int32_t v = i % 3 == 0   ? INT32_MAX - int32_t(rng() % 300000)
                      : i % 3 == 1 ? INT32_MIN + int32_t(rng() % 300000)
                                   : int32_t(c.value[i]);
          c.value[i] = v;
          std::memcpy(c.bytes.data() + size_t(i) * 4, &v, 4);
        }
      }
      Matrix d = Output(mc.acc, mc.m, mc.n, true, 0);
      auto* dd = static_cast<uint8_t*>(Put(d));
      Status s = RunKernel(
          *prog, mc.kernel, {1}, {32},
          [&](Params& p) { p.Add(Put(a)).Add(Put(b)).Add(Put(c)).Add(static_cast<void*>(dd)); },
          &mem);
      ASSERT_TRUE(s.ok()) << mc.kernel << ": " << s.ToString();
      CheckProduct(a, b, c, d, dd, mc.kernel, {.satfinite = mc.satfinite});
      if (HasFatalFailure()) return;
    }
  }
}

// ---- ldmatrix and movmatrix ----

TEST_P(Tensor, LdmatrixEveryCountWithAndWithoutTranspose) {
  std::vector<uint16_t> in(4 * 64);
  for (auto& v : in) v = uint16_t(rng());
  auto at = [&](int j, int r, int c) { return uint32_t(in[(j * 8 + r) * 8 + c]); };
  uint16_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(128);
  const struct {
    int mode, num;
    bool trans;
  } kForms[] = {{0, 1, false}, {1, 2, false}, {2, 4, false}, {3, 4, true}, {4, 2, true}};
  for (auto f : kForms) {
    Status s = RunKernel(
        *prog, "ldmatrix_forms", {1}, {32}, [&](Params& p) { p.Add(din).Add(out).Add(f.mode); },
        &mem);
    ASSERT_TRUE(s.ok()) << "mode " << f.mode << ": " << s.ToString();
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      for (int j = 0; j < 4; ++j) {
        uint32_t want = 0;
        if (j < f.num)
          want = f.trans ? at(j, 2 * t, g) | at(j, 2 * t + 1, g) << 16
                         : at(j, g, 2 * t) | at(j, g, 2 * t + 1) << 16;
        ASSERT_EQ(out[l * 4 + j], want) << "mode " << f.mode << " lane " << l << " reg " << j;
      }
    }
  }
}

TEST_P(Tensor, MovmatrixTransposes) {
  std::vector<uint32_t> in(32);
  for (auto& v : in) v = uint32_t(rng());
  auto m = [&](int r, int c) { return (in[r * 4 + c / 2] >> (16 * (c % 2))) & 0xffff; };
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(32);
  Status s = RunKernel(
      *prog, "movmatrix_trans", {1}, {32}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    ASSERT_EQ(out[l], m(2 * t, g) | m(2 * t + 1, g) << 16) << "lane " << l;
  }
}

TEST_P(Tensor, LdmatrixFeedsMmaAsCutlassDoes) {
  Matrix a = Random(rng, El::kF16, 16, 32, true, 0);
  Matrix b = Random(rng, El::kF16, 32, 16, true, 0);
  Matrix c;
  c.rows = c.cols = 16;
  c.value.assign(256, 0.0);
  Matrix d = Output(El::kF32, 16, 16, true, 0);
  auto* dd = static_cast<uint8_t*>(Put(d));
  Status s = RunKernel(
      *prog, "ldmatrix_mma_gemm", {1}, {32},
      [&](Params& p) { p.Add(Put(a)).Add(Put(b)).Add(static_cast<void*>(dd)); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  CheckProduct(a, b, c, d, dd, "ldmatrix_mma_gemm");
}

TEST_P(Tensor, WarpCollectiveNeedsEveryLane) {
  // 48 threads: the second warp has 16 lanes, for which movmatrix.sync.aligned is undefined.
  std::vector<uint32_t> in(48, 7);
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(48);
  Status s = RunKernel(
      *prog, "movmatrix_trans", {1}, {48}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  EXPECT_EQ(s.code(), err::kLaunchFailure) << s.ToString();
  EXPECT_NE(s.message().find("16 of the warp's 32 lanes"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Arch, Tensor, ::testing::Values("tensor_80", "tensor_90"));

// ---- forms not implemented ----

TEST(TensorForms, UnimplementedFormsLoadAndAreRefusedByName) {
  const char* kForms[] = {
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%f0,%f1,%f2,%f3}, "
      "{%r0,%r1,%r2,%r3}, {%r4,%r5}, {%f4,%f5,%f6,%f7};",
      "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16 {%r0,%r1,%r2,%r3}, {%r4,%r5}, "
      "{%r6,%r7}, {%r8,%r9,%r10,%r11};",
      "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, "
      "{%r0,%r1,%r2,%r3}, {%r4,%r5,%r6,%r7}, {%f4,%f5,%f6,%f7}, %r8, 0x0;",
      "mma.sync.aligned.m8n8k4.row.col.rz.f64.f64.f64.f64 {%fd0,%fd1}, {%fd2}, {%fd3}, "
      "{%fd4,%fd5};",
      "wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32 {%r0,%r1}, {%r2}, {%r3}, {%r4,%r5};",
      "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r0,%r1}, [%rd0];",
      "wmma.load.a.sync.aligned.row.m16n16k8.global.f16 {%r0,%r1,%r2,%r3}, [%rd0], %r5;",
  };
  for (const char* form : kForms) {
    std::string ptx = std::string(R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_p) {
  .reg .b32 %r<16>; .reg .f32 %f<8>; .reg .f64 %fd<8>; .reg .b64 %rd<2>; .reg .pred %p<2>;
  ld.param.u64 %rd0, [k_p];
  mov.u32 %r9, %tid.x;
  setp.ne.u32 %p1, %r9, 99;
  @%p1 bra DONE;
  )") + form + R"(
DONE:
  ret;
}
)";
    auto prog = MustLoad({ptx});
    ASSERT_TRUE(prog) << form;
    TestMemory mem;
    uint64_t* p = mem.Alloc<uint64_t>(64);
    Status ok = RunKernel(
        *prog, "k", {1}, {32}, [&](Params& pp) { pp.Add(p); }, &mem);
    EXPECT_TRUE(ok.ok()) << form << ": " << ok.ToString();  // never reached: runs
    std::string name(form, std::string_view(form).find(' '));
    // Reached by lanes 96..127's warp: %tid.x == 99 falls through to the instruction.
    Status s = RunKernel(
        *prog, "k", {1}, {128}, [&](Params& pp) { pp.Add(p); }, &mem);
    EXPECT_EQ(s.code(), err::kLaunchFailure) << form;
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace remora::emu::ptx::testing
