// tests/emu_ptx/texture_test.cc - tex, tld4, txq, suld, sust and suq as nvcc emits them for the
// texture and surface object API (kernels/texture.cu), against a CPU reference of the sampling
// rules (address modes, point and linear filtering with 8-bit weights, normalized coordinates,
// result conversion) on random data; and the faults: unknown handles, memory outside the address
// space, out-of-range .trap surface accesses, refused forms.
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

using Address = TextureView::Address;
using Kind = TextureView::Kind;

class FakeTextures : public TextureTable {
 public:
  uint64_t Add(const TextureView& v) {
    views_[next_] = v;
    return next_++;
  }
  bool Find(uint64_t handle, TextureView* out) const override {
    auto it = views_.find(handle);
    if (it == views_.end()) return false;
    *out = it->second;
    return true;
  }

 private:
  std::map<uint64_t, TextureView> views_;
  uint64_t next_ = 0x5eed0001;
};

Status RunTex(const std::string& kernel, uint32_t threads, const std::function<void(Params&)>& args,
              const AddressSpace* mem, const TextureTable* textures) {
  auto prog = CachedKernel("texture");
  if (!prog) return Error(err::kInvalidPtx, "texture.ptx did not load");
  auto k = prog->FindKernel(kernel);
  if (!k) return Error(err::kInvalidDeviceFunction, "no kernel " + kernel);
  Params p(prog->kernels()[*k]);
  args(p);
  LaunchConfig cfg;
  cfg.grid[0] = (threads + 63) / 64;
  cfg.block[0] = 64;
  cfg.params = p.span();
  cfg.memory = mem;
  cfg.textures = textures;
  return Launch(*prog, *k, cfg);
}

// ---- the reference ----

float HalfBits(uint16_t h) {
  const int e = h >> 10 & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return float((h & 0x8000) ? -v : v);  // the test data has no infinities or NaNs
}

bool FloatResults(const TextureView& v) {
  return v.kind == Kind::kFloat || (!v.read_as_integer && v.channel_bits < 32);
}

uint64_t Extent(const TextureView& v, int d) {
  return d == 0 ? v.width : d == 1 ? v.height : v.depth;
}

int64_t RefAddress(const TextureView& v, int d, int64_t i, bool* border) {
  const int64_t n = int64_t(Extent(v, d));
  Address m = v.address[d];
  if (!v.normalized_coords && (m == Address::kWrap || m == Address::kMirror)) m = Address::kClamp;
  switch (m) {
    case Address::kClamp:
      return i < 0 ? 0 : i >= n ? n - 1 : i;
    case Address::kBorder:
      if (i < 0 || i >= n) *border = true;
      return *border ? 0 : i;
    case Address::kWrap: {
      int64_t r = i % n;
      return r < 0 ? r + n : r;
    }
    case Address::kMirror: {
      int64_t r = i % (2 * n);
      if (r < 0) r += 2 * n;
      return r < n ? r : 2 * n - 1 - r;
    }
  }
  return 0;
}

// Channel c of the element at p: a float result, or an integer one (exact in a double).
double RefChannel(const TextureView& v, const uint8_t* p, int c) {
  const bool fr = FloatResults(v);
  if (v.kind == Kind::kFloat) {
    if (v.channel_bits == 16) {
      uint16_t h;
      std::memcpy(&h, p + 2 * c, 2);
      return HalfBits(h);
    }
    float f;
    std::memcpy(&f, p + 4 * c, 4);
    return f;
  }
  int64_t raw;
  const int bits = v.channel_bits;
  if (bits == 8) {
    raw = v.kind == Kind::kSigned ? int64_t(int8_t(p[c])) : int64_t(p[c]);
  } else if (bits == 16) {
    uint16_t u;
    std::memcpy(&u, p + 2 * c, 2);
    raw = v.kind == Kind::kSigned ? int64_t(int16_t(u)) : int64_t(u);
  } else {
    uint32_t u;
    std::memcpy(&u, p + 4 * c, 4);
    raw = v.kind == Kind::kSigned ? int64_t(int32_t(u)) : int64_t(u);
  }
  if (!fr) return double(raw);
  if (v.kind == Kind::kUnsigned) return double(raw) / double((1 << bits) - 1);
  return std::max(double(raw) / double((1 << (bits - 1)) - 1), -1.0);
}

// The border color as an integer texture read as normalized floats holds it: rounded to a
// step of the format, ties down (as an H200 reads 8-bit unsigned ones).
double RefBorder(const TextureView& v, int c) {
  if (v.kind == Kind::kFloat || (v.channel_bits != 8 && v.channel_bits != 16)) return v.border[c];
  const bool is_signed = v.kind == Kind::kSigned;
  // In f32, as the color is given: a product that lands on a tie in f32 rounds down.
  const float steps = is_signed ? (1 << (v.channel_bits - 1)) - 1 : (1 << v.channel_bits) - 1;
  const float b = std::clamp(v.border[c], is_signed ? -1.0f : 0.0f, 1.0f);
  return std::max(double(std::ceil(b * steps - 0.5f)) / steps, -1.0);
}

std::array<double, 4> RefTexel(const TextureView& v, int64_t i, int64_t j, int64_t k) {
  bool border = false;
  const int64_t c[3] = {RefAddress(v, 0, i, &border), RefAddress(v, 1, j, &border),
                        RefAddress(v, 2, k, &border)};
  std::array<double, 4> out = {0, 0, 0, 1};
  const uint8_t* p = reinterpret_cast<const uint8_t*>(
      v.base + c[2] * v.slice_pitch + c[1] * v.pitch + c[0] * (v.channels * v.channel_bits / 8));
  for (int ch = 0; ch < v.channels; ++ch)
    out[ch] = border ? (FloatResults(v) ? RefBorder(v, ch) : 0.0) : RefChannel(v, p, ch);
  return out;
}

float TexelSpace(const TextureView& v, int d, float u) {
  return v.normalized_coords ? u * float(Extent(v, d)) : u;
}

std::array<double, 4> RefSample(const TextureView& v, int dims, const float* coords) {
  float u[3] = {0, 0, 0};
  for (int d = 0; d < dims; ++d) u[d] = TexelSpace(v, d, coords[d]);
  if (!v.filter_linear || !FloatResults(v))
    return RefTexel(v, int64_t(std::floor(u[0])), int64_t(std::floor(u[1])),
                    int64_t(std::floor(u[2])));
  int64_t lo[3] = {0, 0, 0};
  double a[3] = {0, 0, 0};
  for (int d = 0; d < dims; ++d) {
    const float b = u[d] - 0.5f;
    lo[d] = int64_t(std::floor(b));
    a[d] = std::round((double(b) - std::floor(double(b))) * 256.0) / 256.0;  // 9-bit weights
  }
  std::array<double, 4> out = {0, 0, 0, 0};
  for (int corner = 0; corner < (1 << dims); ++corner) {
    double w = 1;
    int64_t c[3] = {0, 0, 0};
    for (int d = 0; d < dims; ++d) {
      const bool up = corner >> d & 1;
      c[d] = lo[d] + up;
      w *= up ? a[d] : 1 - a[d];
    }
    if (w == 0) continue;
    auto t = RefTexel(v, c[0], c[1], c[2]);
    for (int ch = 0; ch < 4; ++ch) out[ch] += w * t[ch];
  }
  return out;
}

// ---- test data ----

struct Format {
  Kind kind;
  int channels, bits;
  bool read_as_integer = false;
};

// A texture of random elements in a fresh allocation, rows padded past the element bytes.
TextureView MakeView(TestMemory& mem, std::mt19937& rng, int dims, uint64_t w, uint64_t h,
                     uint64_t d, Format f) {
  TextureView v;
  v.dims = uint32_t(dims);
  v.width = w;
  v.height = h;
  v.depth = d;
  v.kind = f.kind;
  v.channels = uint8_t(f.channels);
  v.channel_bits = uint8_t(f.bits);
  v.read_as_integer = f.read_as_integer;
  const uint64_t elem = uint64_t(f.channels * f.bits / 8);
  v.pitch = w * elem + (dims > 1 ? 24 : 0);
  v.slice_pitch = v.pitch * h + (dims > 2 ? 40 : 0);
  const uint64_t bytes = v.slice_pitch * d;
  uint8_t* p = mem.Alloc<uint8_t>(bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> val(-4.0f, 4.0f);
  for (uint64_t i = 0; i < bytes; ++i) p[i] = uint8_t(byte(rng));
  if (f.kind == Kind::kFloat) {  // finite values only
    for (uint64_t i = 0; i + f.bits / 8 <= bytes; i += f.bits / 8) {
      if (f.bits == 32) {
        float x = val(rng);
        std::memcpy(p + i, &x, 4);
      } else {
        uint16_t hbits =
            uint16_t((byte(rng) & 1) << 15 | (8 + byte(rng) % 14) << 10 | (byte(rng) << 2 & 1023));
        std::memcpy(p + i, &hbits, 2);
      }
    }
  }
  v.base = reinterpret_cast<uint64_t>(p);
  for (int c = 0; c < 4; ++c) v.border[c] = val(rng);
  return v;
}

// Coordinates around the texture: some outside it on each side, so address modes matter.
float RandomCoord(std::mt19937& rng, const TextureView& v, int d) {
  if (v.normalized_coords) return std::uniform_real_distribution<float>(-1.3f, 2.3f)(rng);
  const float n = float(Extent(v, d));
  return std::uniform_real_distribution<float>(-3.0f, n + 3.0f)(rng);
}

bool Near(double got, double want) {
  return std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want));
}

std::string Describe(const TextureView& v) {
  static const char* kModes[] = {"wrap", "clamp", "mirror", "border"};
  return std::string(kModes[int(v.address[0])]) + "/" + kModes[int(v.address[1])] + "/" +
         kModes[int(v.address[2])] + (v.filter_linear ? " linear" : " point") +
         (v.normalized_coords ? " normalized" : " unnormalized") +
         (v.read_as_integer ? " as-integer" : "") + " " + std::to_string(v.channels) + "x" +
         std::to_string(v.channel_bits) + "-bit kind " + std::to_string(int(v.kind));
}

// Every address mode, point and linear filtering, unnormalized and normalized coordinates.
std::vector<std::pair<std::array<Address, 3>, std::pair<bool, bool>>> SamplerConfigs() {
  std::vector<std::pair<std::array<Address, 3>, std::pair<bool, bool>>> out;
  const Address all[] = {Address::kWrap, Address::kClamp, Address::kMirror, Address::kBorder};
  for (Address m : all)
    for (bool linear : {false, true})
      for (bool norm : {false, true}) out.push_back({{m, m, m}, {linear, norm}});
  // Different modes per dimension.
  out.push_back({{Address::kWrap, Address::kBorder, Address::kMirror}, {true, true}});
  out.push_back({{Address::kBorder, Address::kMirror, Address::kClamp}, {false, true}});
  return out;
}

// Runs `kernel` (args: handle, coordinates, out, n) over n random coordinates of `dims` for
// each sampler configuration of a texture of `fmt`, checking the float results.
void CheckFloatSampling(const std::string& kernel, int dims, uint64_t w, uint64_t h, uint64_t d,
                        Format fmt, int out_components, uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto& [modes, flags] : SamplerConfigs()) {
    TestMemory mem;
    FakeTextures table;
    TextureView v = MakeView(mem, rng, dims, w, h, d, fmt);
    for (int k = 0; k < 3; ++k) v.address[k] = modes[k];
    v.filter_linear = flags.first;
    v.normalized_coords = flags.second;
    const uint64_t handle = table.Add(v);
    const int n = 300;
    const int stride = dims == 1 ? 1 : dims == 2 ? 2 : 4;  // float, float2, float4
    std::vector<float> coords(size_t(n) * stride, 0.0f);
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < dims; ++k) coords[size_t(i) * stride + k] = RandomCoord(rng, v, k);
    // A few exact texel centres and edges.
    for (int i = 0; i < 16; ++i)
      for (int k = 0; k < dims; ++k)
        coords[size_t(i) * stride + k] =
            v.normalized_coords ? float(i % 5) * 0.25f : float(i % 4) + (i & 1 ? 0.5f : 0.0f);
    float* dc = mem.Upload(coords);
    float* out = mem.Alloc<float>(size_t(n) * out_components);
    Status s = RunTex(
        kernel, n, [&](Params& p) { p.Add(handle).Add(dc).Add(out).Add(n); }, &mem, &table);
    ASSERT_TRUE(s.ok()) << s.ToString();
    int bad = 0;
    for (int i = 0; i < n && bad < 5; ++i) {
      auto want = RefSample(v, dims, &coords[size_t(i) * stride]);
      for (int c = 0; c < out_components; ++c) {
        const double got = out[size_t(i) * out_components + c];
        if (!Near(got, want[c])) {
          std::string at;
          for (int k = 0; k < dims; ++k) at += " " + std::to_string(coords[size_t(i) * stride + k]);
          ADD_FAILURE() << kernel << " " << Describe(v) << " thread " << i << " component " << c
                        << " at" << at << ": got " << got << " want " << want[c];
          ++bad;
        }
      }
    }
  }
}

// ---- sampling ----

TEST(Texture, Tex1DFetchFromLinearMemory) {
  std::mt19937 rng(1);
  TestMemory mem;
  FakeTextures table;
  TextureView v = MakeView(mem, rng, 1, 100, 1, 1, {Kind::kFloat, 1, 32});
  v.linear = true;
  v.address[0] = Address::kWrap;  // ignored by a linear-memory fetch
  const uint64_t handle = table.Add(v);
  const int n = 256;
  std::vector<int> idx(n);
  for (int i = 0; i < n; ++i) idx[i] = std::uniform_int_distribution<int>(-20, 120)(rng);
  int* di = mem.Upload(idx);
  float* out = mem.Alloc<float>(n);
  Status s = RunTex(
      "fetch1d", n, [&](Params& p) { p.Add(handle).Add(di).Add(out).Add(n); }, &mem, &table);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const float* data = reinterpret_cast<const float*>(v.base);
  for (int i = 0; i < n; ++i) {
    const float want = idx[i] >= 0 && idx[i] < 100 ? data[idx[i]] : 0.0f;
    ASSERT_EQ(out[i], want) << "index " << idx[i];
  }
}

// Integer coordinates on an array (not linear memory): that texel, through the address mode.
TEST(Texture, Tex1DFetchFromArrayAppliesAddressModes) {
  std::mt19937 rng(26);
  for (Address m : {Address::kWrap, Address::kClamp, Address::kMirror, Address::kBorder}) {
    for (bool norm : {false, true}) {
      TestMemory mem;
      FakeTextures table;
      TextureView v = MakeView(mem, rng, 1, 23, 1, 1, {Kind::kFloat, 1, 32});
      v.address[0] = m;
      v.normalized_coords = norm;
      v.filter_linear = true;  // integer coordinates are not filtered
      const uint64_t handle = table.Add(v);
      const int n = 128;
      std::vector<int> idx(n);
      for (int i = 0; i < n; ++i) idx[i] = std::uniform_int_distribution<int>(-60, 80)(rng);
      int* di = mem.Upload(idx);
      float* out = mem.Alloc<float>(n);
      Status s = RunTex(
          "fetch1d", n, [&](Params& p) { p.Add(handle).Add(di).Add(out).Add(n); }, &mem, &table);
      ASSERT_TRUE(s.ok()) << s.ToString();
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(double(out[i]), RefTexel(v, idx[i], 0, 0)[0]) << Describe(v) << " " << idx[i];
    }
  }
}

TEST(Texture, LinearMemoryTakesOnlyIntegerFetches) {
  std::mt19937 rng(27);
  TestMemory mem;
  FakeTextures table;
  TextureView v = MakeView(mem, rng, 1, 16, 1, 1, {Kind::kFloat, 1, 32});
  v.linear = true;
  const uint64_t handle = table.Add(v);
  float* dc = mem.Upload(std::vector<float>{2.5f});
  float* out = mem.Alloc<float>(1);
  Status s = RunTex(
      "tex1d_f", 1, [&](Params& p) { p.Add(handle).Add(dc).Add(out).Add(1); }, &mem, &table);
  EXPECT_EQ(s.code(), err::kIllegalAddress) << s.ToString();
  EXPECT_NE(s.message().find("linear memory"), std::string::npos) << s.ToString();
}

TEST(Texture, Tex1DFetchInt4) {
  std::mt19937 rng(2);
  TestMemory mem;
  FakeTextures table;
  TextureView v = MakeView(mem, rng, 1, 50, 1, 1, {Kind::kSigned, 4, 32, true});
  v.linear = true;
  const uint64_t handle = table.Add(v);
  const int n = 128;
  std::vector<int> idx(n);
  for (int i = 0; i < n; ++i) idx[i] = std::uniform_int_distribution<int>(-5, 55)(rng);
  int* di = mem.Upload(idx);
  int* out = mem.Alloc<int>(size_t(n) * 4);
  Status s = RunTex(
      "fetch1d_int4", n, [&](Params& p) { p.Add(handle).Add(di).Add(out).Add(n); }, &mem, &table);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const int* data = reinterpret_cast<const int*>(v.base);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 4; ++c)
      ASSERT_EQ(out[i * 4 + c], idx[i] >= 0 && idx[i] < 50 ? data[idx[i] * 4 + c] : 0)
          << "index " << idx[i] << " component " << c;
}

TEST(Texture, Tex1DFloat) {
  CheckFloatSampling("tex1d_f", 1, 37, 1, 1, {Kind::kFloat, 1, 32}, 1, 3);
}

TEST(Texture, Tex2DFloat4) {
  CheckFloatSampling("tex2d_f4", 2, 13, 9, 1, {Kind::kFloat, 4, 32}, 4, 4);
}

TEST(Texture, Tex2DFloat) {
  CheckFloatSampling("tex2d_f", 2, 17, 6, 1, {Kind::kFloat, 1, 32}, 1, 5);
}

TEST(Texture, Tex2DFloat2ReadsMissingChannelsAsZeroZeroOne) {
  CheckFloatSampling("tex2d_f4", 2, 11, 7, 1, {Kind::kFloat, 2, 32}, 4, 6);
}

TEST(Texture, Tex2DHalf) {
  CheckFloatSampling("tex2d_f", 2, 10, 12, 1, {Kind::kFloat, 1, 16}, 1, 7);
}

TEST(Texture, Tex2DUchar4AsNormalizedFloat) {
  CheckFloatSampling("tex2d_f4", 2, 9, 14, 1, {Kind::kUnsigned, 4, 8}, 4, 8);
}

TEST(Texture, Tex2DShort2AsNormalizedFloat) {
  CheckFloatSampling("tex2d_f4", 2, 8, 5, 1, {Kind::kSigned, 2, 16}, 4, 9);
}

TEST(Texture, Tex3DFloat) {
  CheckFloatSampling("tex3d_f", 3, 7, 5, 4, {Kind::kFloat, 1, 32}, 1, 10);
}

// Integer results: every channel as stored (linear filtering does not apply).
template <class Out>
void CheckIntegerSampling(const std::string& kernel, Format fmt, int comps, uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto& [modes, flags] : SamplerConfigs()) {
    TestMemory mem;
    FakeTextures table;
    TextureView v = MakeView(mem, rng, 2, 11, 6, 1, fmt);
    for (int k = 0; k < 3; ++k) v.address[k] = modes[k];
    v.filter_linear = flags.first;
    v.normalized_coords = flags.second;
    const uint64_t handle = table.Add(v);
    const int n = 200;
    std::vector<float> coords(size_t(n) * 2);
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < 2; ++k) coords[size_t(i) * 2 + k] = RandomCoord(rng, v, k);
    float* dc = mem.Upload(coords);
    Out* out = mem.Alloc<Out>(size_t(n) * comps);
    Status s = RunTex(
        kernel, n, [&](Params& p) { p.Add(handle).Add(dc).Add(out).Add(n); }, &mem, &table);
    ASSERT_TRUE(s.ok()) << s.ToString();
    TextureView point = v;
    point.filter_linear = false;
    for (int i = 0; i < n; ++i) {
      auto want = RefSample(point, 2, &coords[size_t(i) * 2]);
      for (int c = 0; c < comps; ++c)
        ASSERT_EQ(double(out[size_t(i) * comps + c]), want[c])
            << kernel << " " << Describe(v) << " thread " << i << " component " << c;
    }
  }
}

TEST(Texture, Tex2DUchar4AsInteger) {
  CheckIntegerSampling<uint8_t>("tex2d_uchar4", {Kind::kUnsigned, 4, 8, true}, 4, 11);
}

TEST(Texture, Tex2DInt) {
  CheckIntegerSampling<int>("tex2d_int", {Kind::kSigned, 1, 32, true}, 1, 12);
}

TEST(Texture, LevelAndGradientReadLevelZero) {
  std::mt19937 rng(13);
  TestMemory mem;
  FakeTextures table;
  TextureView v = MakeView(mem, rng, 2, 12, 12, 1, {Kind::kFloat, 1, 32});
  v.filter_linear = true;
  v.normalized_coords = true;
  v.address[0] = v.address[1] = Address::kWrap;
  const uint64_t handle = table.Add(v);
  const int n = 128;
  std::vector<float> coords(size_t(n) * 2);
  for (float& c : coords) c = RandomCoord(rng, v, 0);
  float* dc = mem.Upload(coords);
  float* out = mem.Alloc<float>(size_t(n) * 2);
  Status s = RunTex(
      "tex2d_lod_grad", n, [&](Params& p) { p.Add(handle).Add(dc).Add(out).Add(n); }, &mem, &table);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    const double want = RefSample(v, 2, &coords[size_t(i) * 2])[0];
    ASSERT_TRUE(Near(out[2 * i], want)) << "lod, thread " << i;
    ASSERT_TRUE(Near(out[2 * i + 1], want)) << "grad, thread " << i;
  }
}

TEST(Texture, Gather) {
  std::mt19937 rng(14);
  for (auto& [modes, flags] : SamplerConfigs()) {
    for (int comp = 0; comp < 4; ++comp) {
      TestMemory mem;
      FakeTextures table;
      // Three channels would not exist; a 2-channel texture gathers zeros for .b and .a.
      const int channels = comp % 2 ? 4 : 2;
      TextureView v = MakeView(mem, rng, 2, 9, 7, 1, {Kind::kFloat, channels, 32});
      for (int k = 0; k < 3; ++k) v.address[k] = modes[k];
      v.filter_linear = flags.first;  // tld4 does not filter either way
      v.normalized_coords = flags.second;
      const uint64_t handle = table.Add(v);
      const int n = 100;
      std::vector<float> coords(size_t(n) * 2);
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < 2; ++k) coords[size_t(i) * 2 + k] = RandomCoord(rng, v, k);
      float* dc = mem.Upload(coords);
      float* out = mem.Alloc<float>(size_t(n) * 4);
      Status s = RunTex(
          "gather", n, [&](Params& p) { p.Add(handle).Add(dc).Add(out).Add(n).Add(comp); }, &mem,
          &table);
      ASSERT_TRUE(s.ok()) << s.ToString();
      for (int i = 0; i < n; ++i) {
        const int64_t x0 = int64_t(std::floor(TexelSpace(v, 0, coords[2 * i]) - 0.5f));
        const int64_t y0 = int64_t(std::floor(TexelSpace(v, 1, coords[2 * i + 1]) - 0.5f));
        // Counter-clockwise from the lower left: (x0, y0+1), (x0+1, y0+1), (x0+1, y0), (x0, y0).
        const int64_t at[4][2] = {{x0, y0 + 1}, {x0 + 1, y0 + 1}, {x0 + 1, y0}, {x0, y0}};
        for (int k = 0; k < 4; ++k) {
          const double want = comp < channels ? RefTexel(v, at[k][0], at[k][1], 0)[comp] : 0.0;
          ASSERT_EQ(double(out[i * 4 + k]), want)
              << Describe(v) << " comp " << comp << " thread " << i << " texel " << k;
        }
      }
    }
  }
}

TEST(Texture, Query) {
  std::mt19937 rng(15);
  TestMemory mem;
  FakeTextures table;
  TextureView t = MakeView(mem, rng, 3, 21, 13, 5, {Kind::kFloat, 1, 32});
  TextureView s = MakeView(mem, rng, 2, 33, 4, 1, {Kind::kUnsigned, 4, 8});
  s.surface = true;
  const uint64_t ht = table.Add(t), hs = table.Add(s);
  int* out = mem.Alloc<int>(4);
  Status st = RunTex(
      "query", 1, [&](Params& p) { p.Add(ht).Add(hs).Add(out); }, &mem, &table);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out[0], 21);
  EXPECT_EQ(out[1], 13);
  EXPECT_EQ(out[2], 5);
  EXPECT_EQ(out[3], 33);
}

// ---- surfaces ----

struct Surface {
  TextureView v;
  uint64_t handle;
};

Surface MakeSurface(TestMemory& mem, FakeTextures& table, std::mt19937& rng, uint64_t w, uint64_t h,
                    Format f) {
  Surface s;
  s.v = MakeView(mem, rng, 2, w, h, 1, f);
  s.v.surface = true;
  s.handle = table.Add(s.v);
  return s;
}

template <class T>
T& At(const TextureView& v, int64_t x, int64_t y) {
  return *reinterpret_cast<T*>(v.base + uint64_t(y) * v.pitch + uint64_t(x) * sizeof(T));
}

// Each thread writes one element (a permutation of the surface), then each reads one back.
template <class T>
void CheckSurfaceRoundTrip(const std::string& suffix, Format f, const std::string& type,
                           uint32_t seed) {
  std::mt19937 rng(seed);
  TestMemory mem;
  FakeTextures table;
  const int w = 13, h = 7, n = w * h;
  Surface s = MakeSurface(mem, table, rng, w, h, f);
  std::vector<std::array<int, 2>> xy(n);
  for (int i = 0; i < n; ++i) xy[i] = {i % w, i / w};
  std::shuffle(xy.begin(), xy.end(), rng);
  std::vector<T> vals(n);
  for (auto& v : vals)
    for (size_t b = 0; b < sizeof(T); ++b) reinterpret_cast<uint8_t*>(&v)[b] = uint8_t(rng());
  auto* dxy = mem.Upload(xy);
  T* dv = mem.Upload(vals);
  Status s1 = RunTex(
      "surf_write_" + type + "_" + suffix, n,
      [&](Params& p) { p.Add(s.handle).Add(dxy).Add(dv).Add(n); }, &mem, &table);
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&At<T>(s.v, xy[i][0], xy[i][1]), &vals[i], sizeof(T)), 0)
        << "element (" << xy[i][0] << ", " << xy[i][1] << ")";
  std::shuffle(xy.begin(), xy.end(), rng);
  dxy = mem.Upload(xy);
  T* out = mem.Alloc<T>(n);
  Status s2 = RunTex(
      "surf_read_" + type + "_" + suffix, n,
      [&](Params& p) { p.Add(s.handle).Add(dxy).Add(out).Add(n); }, &mem, &table);
  ASSERT_TRUE(s2.ok()) << s2.ToString();
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&out[i], &At<T>(s.v, xy[i][0], xy[i][1]), sizeof(T)), 0)
        << "element (" << xy[i][0] << ", " << xy[i][1] << ")";
}

TEST(Texture, Surface2DFloatRoundTrip) {
  for (const char* mode : {"trap", "clamp", "zero"})
    CheckSurfaceRoundTrip<float>(mode, {Kind::kFloat, 1, 32}, "f", 16);
}

TEST(Texture, Surface2DUchar4RoundTrip) {
  for (const char* mode : {"trap", "clamp", "zero"})
    CheckSurfaceRoundTrip<uint32_t>(mode, {Kind::kUnsigned, 4, 8}, "u4", 17);
}

// Out-of-range coordinates: .clamp reads the nearest element, .zero reads zeros; stores go to
// the nearest element (.clamp) or nowhere (.zero).
template <class T>
void CheckSurfaceOutOfRange(Format f, const std::string& type, uint32_t seed) {
  std::mt19937 rng(seed);
  TestMemory mem;
  FakeTextures table;
  const int w = 6, h = 5, n = 200;
  Surface s = MakeSurface(mem, table, rng, w, h, f);
  std::vector<std::array<int, 2>> xy(n);
  for (auto& c : xy)
    c = {std::uniform_int_distribution<int>(-4, w + 4)(rng),
         std::uniform_int_distribution<int>(-4, h + 4)(rng)};
  auto* dxy = mem.Upload(xy);
  T* out = mem.Alloc<T>(n);
  for (std::string mode : {"clamp", "zero"}) {
    Status st = RunTex(
        "surf_read_" + type + "_" + mode, n,
        [&](Params& p) { p.Add(s.handle).Add(dxy).Add(out).Add(n); }, &mem, &table);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (int i = 0; i < n; ++i) {
      const int x = xy[i][0], y = xy[i][1];
      const bool in = x >= 0 && x < w && y >= 0 && y < h;
      T want{};
      if (in || mode == "clamp")
        want = At<T>(s.v, std::clamp(x, 0, w - 1), std::clamp(y, 0, h - 1));
      ASSERT_EQ(std::memcmp(&out[i], &want, sizeof(T)), 0) << mode << " (" << x << ", " << y << ")";
    }
  }
  // Stores: one thread per row/column edge position outside the surface, so no two threads
  // clamp onto the same element.
  std::vector<std::array<int, 2>> outside;
  for (int y = 0; y < h; ++y) outside.push_back({w + 1 + y % 3, y});   // right of each row
  for (int x = 0; x < w - 1; ++x) outside.push_back({x, -1 - x % 2});  // above each column
  const int m = int(outside.size());
  std::vector<T> vals(m);
  for (auto& v : vals)
    for (size_t b = 0; b < sizeof(T); ++b) reinterpret_cast<uint8_t*>(&v)[b] = uint8_t(rng());
  auto* dout = mem.Upload(outside);
  T* dv = mem.Upload(vals);
  std::vector<uint8_t> before(reinterpret_cast<uint8_t*>(s.v.base),
                              reinterpret_cast<uint8_t*>(s.v.base) + s.v.pitch * h);
  Status z = RunTex(
      "surf_write_" + type + "_zero", m,
      [&](Params& p) { p.Add(s.handle).Add(dout).Add(dv).Add(m); }, &mem, &table);
  ASSERT_TRUE(z.ok()) << z.ToString();
  ASSERT_EQ(std::memcmp(before.data(), reinterpret_cast<void*>(s.v.base), before.size()), 0)
      << ".zero stores outside the surface must be dropped";
  Status c = RunTex(
      "surf_write_" + type + "_clamp", m,
      [&](Params& p) { p.Add(s.handle).Add(dout).Add(dv).Add(m); }, &mem, &table);
  ASSERT_TRUE(c.ok()) << c.ToString();
  for (int i = 0; i < m; ++i) {
    const int x = std::clamp(outside[i][0], 0, w - 1), y = std::clamp(outside[i][1], 0, h - 1);
    ASSERT_EQ(std::memcmp(&At<T>(s.v, x, y), &vals[i], sizeof(T)), 0)
        << "clamped to " << x << ", " << y;
  }
}

TEST(Texture, Surface2DFloatClampAndZero) {
  CheckSurfaceOutOfRange<float>({Kind::kFloat, 1, 32}, "f", 18);
}

TEST(Texture, Surface2DUchar4ClampAndZero) {
  CheckSurfaceOutOfRange<uint32_t>({Kind::kUnsigned, 4, 8}, "u4", 19);
}

TEST(Texture, Surface1DWrite) {
  std::mt19937 rng(20);
  TestMemory mem;
  FakeTextures table;
  TextureView v = MakeView(mem, rng, 1, 70, 1, 1, {Kind::kFloat, 1, 32});
  v.surface = true;
  const uint64_t handle = table.Add(v);
  std::vector<float> vals(70);
  for (float& f : vals) f = std::uniform_real_distribution<float>(-9, 9)(rng);
  float* dv = mem.Upload(vals);
  Status s = RunTex(
      "surf1d_write", 70, [&](Params& p) { p.Add(handle).Add(dv).Add(70); }, &mem, &table);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < 70; ++i) ASSERT_EQ(reinterpret_cast<float*>(v.base)[i], vals[i] * 2.0f);
}

// ---- faults ----

TEST(Texture, UnknownHandleFaults) {
  TestMemory mem;
  FakeTextures table;
  std::mt19937 rng(21);
  TextureView v = MakeView(mem, rng, 1, 10, 1, 1, {Kind::kFloat, 1, 32});
  v.linear = true;
  table.Add(v);
  int* idx = mem.Upload(std::vector<int>(32, 1));
  float* out = mem.Alloc<float>(32);
  const uint64_t bogus = 0xdeadbeef;
  for (const TextureTable* t :
       {static_cast<const TextureTable*>(&table), static_cast<const TextureTable*>(nullptr)}) {
    Status s = RunTex(
        "fetch1d", 32, [&](Params& p) { p.Add(bogus).Add(idx).Add(out).Add(32); }, &mem, t);
    EXPECT_EQ(s.code(), err::kIllegalAddress) << s.ToString();
    EXPECT_NE(s.message().find("0xdeadbeef"), std::string::npos) << s.ToString();
  }
}

TEST(Texture, MemoryOutsideTheAddressSpaceFaults) {
  TestMemory mem;
  FakeTextures table;
  std::vector<float> unregistered(64, 1.0f);  // host memory the address space does not hold
  TextureView v;
  v.base = reinterpret_cast<uint64_t>(unregistered.data());
  v.dims = 2;
  v.width = 8;
  v.height = 8;
  v.pitch = 32;
  v.slice_pitch = 256;
  const uint64_t handle = table.Add(v);
  std::vector<float> coords = {1.5f, 2.5f};
  float* dc = mem.Upload(coords);
  float* out = mem.Alloc<float>(4);
  Status s = RunTex(
      "tex2d_f4", 1, [&](Params& p) { p.Add(handle).Add(dc).Add(out).Add(1); }, &mem, &table);
  EXPECT_EQ(s.code(), err::kIllegalAddress) << s.ToString();
  v.surface = true;
  const uint64_t sh = table.Add(v);
  std::vector<std::array<int, 2>> xy = {{1, 1}};
  auto* dxy = mem.Upload(xy);
  Status s2 = RunTex(
      "surf_read_f_trap", 1, [&](Params& p) { p.Add(sh).Add(dxy).Add(out).Add(1); }, &mem, &table);
  EXPECT_EQ(s2.code(), err::kIllegalAddress) << s2.ToString();
}

TEST(Texture, TrapOutOfRangeFaults) {
  std::mt19937 rng(22);
  TestMemory mem;
  FakeTextures table;
  Surface s = MakeSurface(mem, table, rng, 4, 4, {Kind::kFloat, 1, 32});
  float* out = mem.Alloc<float>(32);
  for (std::array<int, 2> c : {std::array<int, 2>{4, 0}, {0, 4}, {-1, 2}, {2, -3}}) {
    std::vector<std::array<int, 2>> xy(32, {1, 1});
    xy[7] = c;
    auto* dxy = mem.Upload(xy);
    Status st = RunTex(
        "surf_read_f_trap", 32, [&](Params& p) { p.Add(s.handle).Add(dxy).Add(out).Add(32); }, &mem,
        &table);
    EXPECT_EQ(st.code(), err::kIllegalAddress) << st.ToString();
    EXPECT_NE(st.message().find("surface access out of range"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("thread (7,0,0)"), std::string::npos) << st.ToString();
    std::vector<float> vals(32, 3.0f);
    float* dv = mem.Upload(vals);
    Status sw = RunTex(
        "surf_write_f_trap", 32, [&](Params& p) { p.Add(s.handle).Add(dxy).Add(dv).Add(32); }, &mem,
        &table);
    EXPECT_EQ(sw.code(), err::kIllegalAddress) << sw.ToString();
  }
}

TEST(Texture, MisalignedSurfaceAccessFaults) {
  std::mt19937 rng(23);
  TestMemory mem;
  FakeTextures table;
  Surface s = MakeSurface(mem, table, rng, 4, 4, {Kind::kFloat, 1, 32});
  float* out = mem.Alloc<float>(1);
  Status st = RunTex(
      "surf_misaligned", 1, [&](Params& p) { p.Add(s.handle).Add(out); }, &mem, &table);
  EXPECT_EQ(st.code(), err::kMisalignedAddress) << st.ToString();
}

TEST(Texture, TextureAndSurfaceHandlesAreNotInterchangeable) {
  std::mt19937 rng(24);
  TestMemory mem;
  FakeTextures table;
  Surface s = MakeSurface(mem, table, rng, 4, 4, {Kind::kFloat, 1, 32});
  TextureView t = MakeView(mem, rng, 2, 4, 4, 1, {Kind::kFloat, 1, 32});
  const uint64_t ht = table.Add(t);
  std::vector<float> coords = {1.5f, 2.5f};
  float* dc = mem.Upload(coords);
  float* out = mem.Alloc<float>(4);
  Status a = RunTex(
      "tex2d_f", 1, [&](Params& p) { p.Add(s.handle).Add(dc).Add(out).Add(1); }, &mem, &table);
  EXPECT_EQ(a.code(), err::kIllegalAddress) << a.ToString();
  EXPECT_NE(a.message().find("surface object"), std::string::npos) << a.ToString();
  std::vector<std::array<int, 2>> xy = {{1, 1}};
  auto* dxy = mem.Upload(xy);
  Status b = RunTex(
      "surf_read_f_trap", 1, [&](Params& p) { p.Add(ht).Add(dxy).Add(out).Add(1); }, &mem, &table);
  EXPECT_EQ(b.code(), err::kIllegalAddress) << b.ToString();
  EXPECT_NE(b.message().find("texture object"), std::string::npos) << b.ToString();
}

TEST(Texture, ALayeredFetchReadsItsLayerAndNeedsALayeredView) {
  std::mt19937 rng(25);
  TestMemory mem;
  FakeTextures table;
  // Three 4 x 4 layers, slice_pitch apart: tex2DLayered(t, 0.5, 0.5, 1) reads layer 1's first.
  TextureView t = MakeView(mem, rng, 3, 4, 4, 3, {Kind::kFloat, 1, 32});
  t.layout = TextureView::Layout::kLayered;
  t.dims = 2;
  const uint64_t ht = table.Add(t);
  float* out = mem.Alloc<float>(1);
  Status st = RunTex(
      "layered", 1, [&](Params& p) { p.Add(ht).Add(out); }, &mem, &table);
  ASSERT_TRUE(st.ok()) << st.ToString();
  float want;
  std::memcpy(&want, reinterpret_cast<const uint8_t*>(t.base) + t.slice_pitch, 4);
  EXPECT_EQ(out[0], want);

  // A plain 2-D texture is no layered one: the fetch faults naming why.
  TextureView plain = MakeView(mem, rng, 2, 4, 4, 1, {Kind::kFloat, 1, 32});
  const uint64_t hp = table.Add(plain);
  out[0] = 42.0f;
  st = RunTex(
      "layered", 1, [&](Params& p) { p.Add(hp).Add(out); }, &mem, &table);
  EXPECT_EQ(st.code(), err::kIllegalAddress) << st.ToString();
  EXPECT_NE(st.message().find("not a layered texture"), std::string::npos) << st.ToString();
  EXPECT_EQ(out[0], 42.0f);
}

}  // namespace
}  // namespace remora::emu::ptx::testing
