// server/call_errors.cc - deferred and sticky call errors.
#include "server/call_errors.h"

#include <utility>

#include "proto/status.h"

namespace remora::server {

bool CallErrors::Record(const Status& st) {
  if (st.ok() || st.code() == err::kNotReady) return false;
  std::lock_guard lock(mu_);
  const bool first = deferred_.ok();
  if (first) deferred_ = st;
  if (ErrorIsSticky(st.code()) && sticky_.ok()) sticky_ = st;
  any_.store(true, std::memory_order_release);
  return first;
}

Status CallErrors::sticky() const {
  if (!any_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard lock(mu_);
  return sticky_;
}

Status CallErrors::TakeForReply(const Status& st) {
  const bool sticks = !st.ok() && st.code() != err::kNotReady && ErrorIsSticky(st.code());
  if (!sticks && !any_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard lock(mu_);
  if (sticks && sticky_.ok()) sticky_ = st;
  Status deferred = std::exchange(deferred_, OkStatus());
  any_.store(!sticky_.ok(), std::memory_order_release);
  return deferred;
}

void CallErrors::Lose(const Status& lost) {
  std::lock_guard lock(mu_);
  deferred_ = OkStatus();
  sticky_ = lost;
  any_.store(true, std::memory_order_release);
}

void CallErrors::Clear() {
  std::lock_guard lock(mu_);
  deferred_ = OkStatus();
  sticky_ = OkStatus();
  any_.store(false, std::memory_order_release);
}

void CallErrors::set_torn(const Status& st) {
  std::lock_guard lock(mu_);
  torn_ = st;
}

Status CallErrors::torn() const {
  std::lock_guard lock(mu_);
  return torn_;
}

}  // namespace remora::server
