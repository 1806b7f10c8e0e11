// server/tables.h - typed per-tenant tables: what a tenant may name in a call.
//
// Every handle and pointer a tenant passes is looked up here before anything
// reaches the device; a miss is the CUDA error a GPU gives for it, with a
// message naming the handle. Handler families (runtime, and the libraries to
// come: cuBLAS and cuDNN handles and descriptors) keep their objects in these.
// Not thread-safe: used by the thread serving the session.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "proto/range_table.h"
#include "proto/status.h"

namespace remora::server {

// Tenant handles (ids the tenant sees) of one kind mapped to their objects.
template <typename T>
class HandleTable {
 public:
  // `kind` names the handle in errors ("stream"); a miss is `missing`
  // (a cudaError_t, e.g. kInvalidResourceHandle).
  HandleTable(const char* kind, int32_t missing) : kind_(kind), missing_(missing) {}

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
  std::unordered_map<uint64_t, T> items_;
};

}  // namespace remora::server
