// tests/emu_ptx/harness.h - test device memory over std::vector buffers and a launch helper.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "emu/ptx/interp.h"
#include "emu/ptx/ir.h"
#include "emu/ptx/ptx.h"

namespace remora::emu::ptx::testing {

// Device memory: each allocation is a vector; Lookup finds the one holding an address.
class TestMemory : public AddressSpace {
 public:
  template <class T>
  T* Alloc(size_t n) {
    bufs_.push_back(std::make_unique<std::vector<uint64_t>>((n * sizeof(T) + 7) / 8 + 1));
    sizes_.push_back(n * sizeof(T));
    return reinterpret_cast<T*>(bufs_.back()->data());
  }
  template <class T>
  T* Upload(const std::vector<T>& v) {
    T* p = Alloc<T>(v.size());
    std::memcpy(p, v.data(), v.size() * sizeof(T));
    return p;
  }
  bool Lookup(uint64_t addr, uint64_t* base, uint64_t* size) const override {
    for (size_t i = 0; i < bufs_.size(); ++i) {
      uint64_t b = reinterpret_cast<uint64_t>(bufs_[i]->data());
      if (addr >= b && addr < b + sizes_[i]) {
        *base = b;
        *size = sizes_[i];
        return true;
      }
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<std::vector<uint64_t>>> bufs_;
  std::vector<uint64_t> sizes_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string KernelPtx(const std::string& name) {
  return ReadFile(std::string(REMORA_PTX_DIR) + "/" + name + ".ptx");
}

// Packs arguments into the kernel's parameter layout; each must match its declared size.
class Params {
 public:
  explicit Params(const KernelInfo& k) : k_(k), buf_(k.param_bytes) {}
  template <class T>
  Params& Add(const T& v) {
    EXPECT_LT(n_, k_.params.size()) << "too many arguments for " << k_.name;
    if (n_ >= k_.params.size()) return *this;
    EXPECT_EQ(sizeof(T), k_.params[n_].size) << "argument " << n_ << " of " << k_.name;
    std::memcpy(buf_.data() + k_.params[n_].offset, &v,
                std::min<size_t>(sizeof(T), k_.params[n_].size));
    ++n_;
    return *this;
  }
  std::span<const std::byte> span() const { return buf_; }

 private:
  const KernelInfo& k_;
  std::vector<std::byte> buf_;
  size_t n_ = 0;
};

struct Dims {
  uint32_t x = 1, y = 1, z = 1;
};

// Runs kernel `name` of `prog` with `params` over grid x block.
inline Status RunKernel(const Program& prog, const std::string& name, Dims grid, Dims block,
                        const std::function<void(Params&)>& args, const AddressSpace* mem,
                        uint32_t shmem = 0, std::function<void(std::string_view)> sink = nullptr,
                        LaunchStats* stats = nullptr, unsigned workers = 0, int priority = 0) {
  auto k = prog.FindKernel(name);
  if (!k) return Error(err::kInvalidDeviceFunction, "no kernel " + name);
  Params p(prog.kernels()[*k]);
  args(p);
  LaunchConfig cfg;
  cfg.grid[0] = grid.x;
  cfg.grid[1] = grid.y;
  cfg.grid[2] = grid.z;
  cfg.block[0] = block.x;
  cfg.block[1] = block.y;
  cfg.block[2] = block.z;
  cfg.dynamic_shared_bytes = shmem;
  cfg.params = p.span();
  cfg.memory = mem;
  cfg.printf_sink = std::move(sink);
  cfg.workers = workers;
  cfg.priority = priority;
  return LaunchWithStats(prog, *k, cfg, stats);
}

inline std::shared_ptr<const Program> MustLoad(std::vector<std::string> sources) {
  auto r = Load(sources);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// The Program for kernels/<name>.cu, loaded once per test binary. Not thread-safe.
inline std::shared_ptr<const Program> CachedKernel(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Program>> cache;
  auto& p = cache[name];
  if (!p) p = MustLoad({KernelPtx(name)});
  return p;
}

// Each thread loads three b32 inputs into %r1..%r3, runs BODY, stores %r4 and %r5.
inline std::string Wrap(const std::string& body) {
  return R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_in, .param .u64 k_out) {
  .reg .b32 %r<12>; .reg .b64 %rd<12>; .reg .f32 %f<12>; .reg .f64 %fd<8>; .reg .pred %p<6>;
  .reg .b16 %h<4>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  mov.u32 %r9, %tid.x;
  mul.wide.u32 %rd3, %r9, 12;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r1, [%rd4];  // 12-byte records: a v2 load of one would be misaligned
  ld.global.u32 %r2, [%rd4+4];
  ld.global.u32 %r3, [%rd4+8];
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
)" + body +
         R"(
  mul.wide.u32 %rd5, %r9, 8;
  add.s64 %rd6, %rd2, %rd5;
  st.global.v2.u32 [%rd6], {%r4, %r5};
  ret;
})";
}

}  // namespace remora::emu::ptx::testing
