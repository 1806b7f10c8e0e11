// emu/program_cache.cc - the process-wide cache of parsed PTX programs.
#include "emu/program_cache.h"

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "emu/image.h"
#include "emu/module.h"

namespace remora::emu {
namespace {

// The key: each source's length (u64) and bytes, in order, so boundaries count.
std::string KeyOf(std::span<const std::string> sources) {
  size_t total = 0;
  for (const auto& s : sources) total += sizeof(uint64_t) + s.size();
  std::string key;
  key.reserve(total);
  for (const auto& s : sources) {
    const uint64_t len = s.size();
    key.append(reinterpret_cast<const char*>(&len), sizeof(len));
    key.append(s);
  }
  return key;
}

class ProgramCache {
 public:
  // Never destroyed: modules (and their entries) may outlive static destruction.
  static ProgramCache& Get() {
    static auto* cache = new ProgramCache;
    return *cache;
  }

  CUresult Find(std::span<const std::string> sources, const char* what,
                std::shared_ptr<const ParsedProgram>* out) {
    std::shared_ptr<const ParsedProgram> found;
    const CUresult r = FindOrParse(sources, what, &found);
    *out = std::move(found);  // outside mu_: the old value may be a last reference
    return r;
  }

  ProgramCacheStats Stats() {
    std::lock_guard lock(mu_);
    ProgramCacheStats s;
    s.parses = parses_;
    for (const auto& [k, slot] : slots_) s.entries += slot->value.expired() ? 0 : 1;
    return s;
  }

 private:
  struct Slot {
    std::string key;                           // what slots_ is keyed by (a view of it)
    std::weak_ptr<const ParsedProgram> value;  // the live entry, if any
    bool building = false;                     // a Find is parsing this key
    int users = 0;                             // Finds holding this slot
  };

  // REQUIRES: *out is null (nothing is released under mu_: the deleter locks it).
  CUresult FindOrParse(std::span<const std::string> sources, const char* what,
                       std::shared_ptr<const ParsedProgram>* out) {
    std::string key = KeyOf(sources);
    std::unique_lock lock(mu_);
    std::shared_ptr<Slot> slot;
    if (auto it = slots_.find(key); it != slots_.end()) {
      slot = it->second;
    } else {
      slot = std::make_shared<Slot>();
      slot->key = std::move(key);
      slots_.emplace(slot->key, slot);
    }
    ++slot->users;
    // One parse per key at a time: later finders wait for its outcome.
    for (;;) {
      if ((*out = slot->value.lock())) {
        --slot->users;
        return CUDA_SUCCESS;
      }
      if (!slot->building) break;
      built_.wait(lock);
    }
    slot->building = true;
    lock.unlock();
    CUresult r;
    try {
      r = Parse(sources, what, slot, out);
    } catch (...) {  // bad_alloc: let waiters try themselves instead of waiting forever
      lock.lock();
      slot->building = false;
      --slot->users;
      EraseIfUnusedLocked(slot);
      built_.notify_all();
      throw;
    }
    lock.lock();
    slot->building = false;
    --slot->users;
    if (r == CUDA_SUCCESS) {
      slot->value = *out;
      ++parses_;
    } else {
      EraseIfUnusedLocked(slot);  // waiters (users > 0) keep it and parse themselves
    }
    built_.notify_all();
    return r;
  }

  // Runs when the last holder of an entry drops it.
  void Release(const std::weak_ptr<Slot>& weak) {
    std::lock_guard lock(mu_);
    if (auto slot = weak.lock()) EraseIfUnusedLocked(slot);
  }

  // Evicts `slot` unless it is no longer the map's entry for its key, holds a
  // live value, or a Find is using it.
  void EraseIfUnusedLocked(const std::shared_ptr<Slot>& slot) {
    if (!slot->value.expired() || slot->building || slot->users > 0) return;
    auto it = slots_.find(slot->key);
    if (it != slots_.end() && it->second == slot) slots_.erase(it);
  }

  // Parses `sources` into *out, whose deleter evicts `slot` once unused.
  static CUresult Parse(std::span<const std::string> sources, const char* what,
                        const std::shared_ptr<Slot>& slot,
                        std::shared_ptr<const ParsedProgram>* out) {
    for (const auto& src : sources) {
      if (CUresult r = CheckPtxHeader(src); r != CUDA_SUCCESS) return r;
    }
    auto program = ptx::Load(sources);
    if (!program.ok()) {
      // The reason (module, line, token): the JIT error log's, and stderr's.
      SetJitError(std::string(program.status().message()));
      std::fprintf(stderr, "remora-emu: %s: %s\n", what, JitError().c_str());
      return ToCuResult(program.status());
    }
    auto parsed = std::make_unique<ParsedProgram>();
    parsed->program = std::move(program).value();
    for (const auto& src : sources) {
      const int t = PtxTarget(src);
      if (t && (!parsed->ptx_target || t < parsed->ptx_target)) parsed->ptx_target = t;
    }
    std::weak_ptr<Slot> weak = slot;
    out->reset(parsed.release(), [weak](const ParsedProgram* p) {
      delete p;
      Get().Release(weak);
    });
    return CUDA_SUCCESS;
  }

  std::mutex mu_;  // guards everything below and every Slot's fields
  std::condition_variable built_;
  std::unordered_map<std::string_view, std::shared_ptr<Slot>> slots_;
  uint64_t parses_ = 0;
};

}  // namespace

CUresult GetProgram(std::span<const std::string> sources, const char* what,
                    std::shared_ptr<const ParsedProgram>* out) {
  return ProgramCache::Get().Find(sources, what, out);
}

ProgramCacheStats GetProgramCacheStats() {
  return ProgramCache::Get().Stats();
}

}  // namespace remora::emu
