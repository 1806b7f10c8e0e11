// client_stub/managed_advice.cc - ManagedAdvice's runs (managed_advice.h).
#include "client_stub/managed_advice.h"

#include <iterator>

namespace remora::client_stub {

cudaError_t ManagedAdvice::Check(const cudaMemLocation& at) {
  switch (at.type) {
    case cudaMemLocationTypeDevice:
      return at.id == 0 ? cudaSuccess : cudaErrorInvalidDevice;
    case cudaMemLocationTypeHost:
    case cudaMemLocationTypeHostNuma:
    case cudaMemLocationTypeHostNumaCurrent:
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}

ManagedAdvice::Location ManagedAdvice::Of(const cudaMemLocation& at) {
  const bool id_matters =
      at.type == cudaMemLocationTypeDevice || at.type == cudaMemLocationTypeHostNuma;
  return {static_cast<int>(at.type), id_matters ? at.id : 0};
}

void ManagedAdvice::Split(uint64_t at) {
  auto it = runs_.upper_bound(at);
  if (it == runs_.begin()) {
    runs_.emplace(at, Attrs{});
    return;
  }
  --it;
  if (it->first != at) runs_.emplace(at, it->second);
}

void ManagedAdvice::Coalesce(uint64_t lo, uint64_t hi) {
  auto it = runs_.lower_bound(lo);
  if (it != runs_.begin()) --it;
  const Attrs none{};
  while (it != runs_.end() && it->first <= hi) {
    auto next = std::next(it);
    const bool first = it == runs_.begin();
    const Attrs& before = first ? none : std::prev(it)->second;
    if (it->second == before) {
      runs_.erase(it);
    }
    it = next;
  }
}

void ManagedAdvice::Change(uint64_t lo, uint64_t hi, const std::function<void(Attrs&)>& change) {
  if (lo >= hi) return;
  Split(lo);
  Split(hi);
  for (auto it = runs_.find(lo); it != runs_.end() && it->first < hi; ++it) change(it->second);
  Coalesce(lo, hi);
}

void ManagedAdvice::Reset(uint64_t lo, uint64_t hi) {
  Change(lo, hi, [](Attrs& a) { a = Attrs{}; });
}

std::vector<ManagedAdvice::Attrs> ManagedAdvice::Over(uint64_t lo, uint64_t hi) const {
  std::vector<Attrs> out;
  if (lo >= hi) return out;
  auto it = runs_.upper_bound(lo);
  out.push_back(it == runs_.begin() ? Attrs{} : std::prev(it)->second);
  for (; it != runs_.end() && it->first < hi; ++it)
    if (!(it->second == out.back())) out.push_back(it->second);
  return out;
}

}  // namespace remora::client_stub
