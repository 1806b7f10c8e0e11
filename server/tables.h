// server/tables.h - typed per-tenant tables: what a tenant may name in a call.
//
// Every handle and pointer a tenant passes is looked up here before anything
// reaches the device; a miss is the CUDA error a GPU gives for it, with a
// message naming the handle. Handler families (runtime, and the libraries to
// come: cuBLAS and cuDNN handles and descriptors) keep their objects in these.
// Not thread-safe: used by the thread serving the session.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proto/range_table.h"
#include "proto/status.h"

namespace remora::server {

// What a tenant's tables give up when it goes (or frees something): objects released once
// the tenant's work that may use them is done (Session::GiveBack), and never in another
// context than the one they live in.
struct Held {
  std::map<uint64_t, uint64_t> allocations;  // pointer -> charged bytes
  std::vector<CUmodule> modules;
  std::vector<CUevent> events;
  // What to undo (textures, mappings), only in the epoch it lives in.
  std::vector<std::function<void()>> destroy;
  // Library handles (cuBLAS, cuDNN) to destroy once the device is idle: their destroy frees
  // memory with cuMemFree, which waits for every tenant's work (Device::WhenIdle).
  std::vector<std::function<void()>> destroy_when_idle;
  std::shared_ptr<const void> keep;  // host memory the work still reads
  uint64_t charged = 0;
  uint64_t epoch = 0;  // the context they live in
};

// A table of a tenant's state that tears itself down: it registers with its session's
// TableSet when constructed, and the session walks the set when the context dies (Forget)
// or the tenant goes (Surrender). No list of tables is kept by hand.
class TenantTable {
 public:
  virtual ~TenantTable() = default;
  // The context is gone: drop every object without passing it to the driver.
  virtual void Forget() = 0;
  // The tenant goes: move every object into `held` (or keep it: the legacy stream).
  virtual void Surrender(Held& held) = 0;
};

class TableSet {
 public:
  void Add(TenantTable* t) { tables_.push_back(t); }
  void ForgetAll() {
    for (TenantTable* t : tables_) t->Forget();
  }
  void SurrenderAll(Held& held) {
    for (TenantTable* t : tables_) t->Surrender(held);
  }

 private:
  std::vector<TenantTable*> tables_;
};

// State a session keeps outside its tables (what it exported by IPC) that goes with them:
// `drop` runs when the context dies or the tenant gives everything up (teardown, reset).
class GoesWithTables : public TenantTable {
 public:
  GoesWithTables(TableSet& set, std::function<void()> drop) : drop_(std::move(drop)) {
    set.Add(this);
  }
  void Forget() override { drop_(); }
  void Surrender(Held&) override { drop_(); }

 private:
  std::function<void()> drop_;
};

// Tenant handles (ids the tenant sees) of one kind mapped to their objects.
template <typename T>
class HandleTable : public TenantTable {
 public:
  // Gives one object up into `held` when the tenant goes; true to keep it in the table.
  using Release = std::function<bool(uint64_t id, const T& object, Held& held)>;
  // `kind` names the handle in errors ("stream"); a miss is `missing`
  // (a cudaError_t, e.g. kInvalidResourceHandle). Registers with `set`; without `release`
  // objects are simply dropped when the tenant goes.
  HandleTable(TableSet& set, const char* kind, int32_t missing, Release release = nullptr)
      : kind_(kind), missing_(missing), release_(std::move(release)) {
    set.Add(this);
  }
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;

  void Forget() override { items_.clear(); }
  void Surrender(Held& held) override {
    if (release_)
      std::erase_if(items_, [&](auto& kv) { return !release_(kv.first, kv.second, held); });
    else
      items_.clear();
  }

  // The object behind `id`. Errors: `missing` naming the handle.
  Result<T*> Find(uint64_t id) {
    auto it = items_.find(id);
    if (it == items_.end()) return Miss(id);
    return &it->second;
  }
  // A copy of the object behind `id` (for handles such as CUevent).
  Result<T> Get(uint64_t id) const {
    auto it = items_.find(id);
    if (it == items_.end()) return Miss(id);
    return it->second;
  }
  Status Check(uint64_t id) const { return items_.count(id) ? OkStatus() : Miss(id); }
  T& Put(uint64_t id, T v) { return items_.insert_or_assign(id, std::move(v)).first->second; }
  bool Erase(uint64_t id) { return items_.erase(id) > 0; }
  size_t size() const { return items_.size(); }
  void clear() { items_.clear(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  template <typename Pred>
  void EraseIf(Pred pred) {
    std::erase_if(items_, [&](const auto& kv) { return pred(kv.second); });
  }

 private:
  Status Miss(uint64_t id) const {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(id));
    return Error(missing_, std::string(kind_) + " " + hex + " is not one of this tenant's");
  }
  const char* kind_;
  int32_t missing_;
  Release release_;
  std::unordered_map<uint64_t, T> items_;
};

// A RangeTable of the tenant's (allocations, symbols) registered like a HandleTable.
class OwnedRanges : public RangeTable, public TenantTable {
 public:
  // Gives one range up into `held` when the tenant goes (null: just dropped).
  using Release = std::function<void(uint64_t base, uint64_t size, Held& held)>;
  explicit OwnedRanges(TableSet& set, Release release = nullptr) : release_(std::move(release)) {
    set.Add(this);
  }
  void Forget() override { Clear(); }
  void Surrender(Held& held) override {
    if (release_)
      for (const auto& [base, size] : *this) release_(base, size, held);
    Clear();
  }

 private:
  Release release_;
};

}  // namespace remora::server
