// proto/quantity.h - the one grammar for byte quantities, everywhere a tenant or
// an operator writes one: `remora run --gpu-memory`, REMORA_GPU_MEMORY*, the
// tenant file, `remora-server --arena`.
//
// Kubernetes quantities: a non-negative decimal number with an optional suffix,
// k M G T P E (powers of 1000) or Ki Mi Gi Ti Pi Ei (powers of 1024), case as
// written here. "512Mi", "4G", "4Gi", "1.5Gi" and "1073741824" parse; "1GiB",
// "4gb", "1e9", "-1" and " 4G" do not.
//
//   ASSIGN_OR_RETURN(uint64_t bytes, ParseQuantity("512Mi"));  // 536870912
#pragma once

#include <cstdint>
#include <string_view>

#include "proto/status.h"

namespace remora {

// Bytes that `text` denotes, rounded to the nearest byte. Errors: kInvalidValue
// naming the accepted forms, for any other text or a value of 2^64 or more.
Result<uint64_t> ParseQuantity(std::string_view text);

}  // namespace remora
