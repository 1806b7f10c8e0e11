// proto/status.h - Status and Result<T>: Remora's error contract.
//
// Every fallible Remora function returns `Status` or `Result<T>`. An error
// carries the cudaError_t a tenant would see from a real GPU (the values in
// proto/errors.def) and a message for the log. Errors are wire contract: the
// server sends exactly this pair back to the stub.
//
//   Result<CUdeviceptr> Allocate(size_t n);
//   ASSIGN_OR_RETURN(CUdeviceptr p, Allocate(n));
//   RETURN_IF_ERROR(Check(p, n));
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace remora {

namespace err {
// Error codes as cudaError_t values, generated from errors.def.
enum Code : int32_t {
#define REMORA_ERROR(Name, value, sticky, when) k##Name = value,
#include "proto/errors.def"
};
}  // namespace err

// Returns the errors.def name of `code` ("InvalidValue"), or nullptr if it is
// not one of Remora's own codes.
const char* ErrorName(int32_t code);
// Returns true if errors.def marks `code` sticky.
bool ErrorIsSticky(int32_t code);

// An outcome: ok, or a cudaError_t code plus a message saying why.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(int32_t code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == 0; }
  int32_t code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidValue (1): <message>" for logs.
  std::string ToString() const;

 private:
  int32_t code_ = 0;
  std::string message_;
};

inline Status OkStatus() {
  return Status();
}
// Builds an error status. REQUIRES: code != 0 (debug assert).
inline Status Error(int32_t code, std::string message) {
  assert(code != 0);
  return Status(code, std::move(message));
}

// A value or an error Status. Reading value() of an error is a precondition
// violation (debug assert; release returns garbage-free default only for
// default-constructible T, so do not rely on it).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

namespace internal {
inline Status AsStatus(Status s) {
  return s;
}
template <typename T>
Status AsStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace remora

#define REMORA_CONCAT_INNER(a, b) a##b
#define REMORA_CONCAT(a, b) REMORA_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (a Status or Result) failed.
#define RETURN_IF_ERROR(expr)                                    \
  do {                                                           \
    auto&& remora_s_ = (expr);                                   \
    if (!remora_s_.ok()) [[unlikely]]                            \
      return ::remora::internal::AsStatus(std::move(remora_s_)); \
  } while (0)

// `ASSIGN_OR_RETURN(T x, ResultExpr)`: declares x from the value, or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  REMORA_ASSIGN_OR_RETURN_IMPL(REMORA_CONCAT(remora_r_, __LINE__), lhs, expr)
#define REMORA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) [[unlikely]]                        \
    return tmp.status();                             \
  lhs = std::move(tmp).value()
