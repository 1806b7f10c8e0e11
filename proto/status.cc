// proto/status.cc - names and stickiness of Remora's error codes.
#include "proto/status.h"

namespace remora {

const char* ErrorName(int32_t code) {
  switch (code) {
#define REMORA_ERROR(Name, value, sticky, when) \
  case value:                                   \
    return #Name;
#include "proto/errors.def"
  }
  return nullptr;
}

bool ErrorIsSticky(int32_t code) {
  switch (code) {
#define REMORA_ERROR(Name, value, sticky, when) \
  case value:                                   \
    return sticky;
#include "proto/errors.def"
  }
  return false;
}

std::string Status::ToString() const {
  const char* name = ErrorName(code_);
  std::string out = name ? name : "cudaError";
  out += " (" + std::to_string(code_) + ")";
  if (!message_.empty()) out += ": " + message_;
  return out;
}

}  // namespace remora
