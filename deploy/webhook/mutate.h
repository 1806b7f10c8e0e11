// deploy/webhook/mutate.h - the admission webhook's logic: pod annotations in,
// an AdmissionReview v1 answer with a JSONPatch out. Pure: no I/O, no clock.
//
//   Config cfg{.gpu_memory_mib = 81559};
//   Answer a = Review(body, cfg);   // a.http_status 200: a.body is an AdmissionReview
//   // a.http_status 400: a.body says why the body was not an AdmissionReview
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.h"

namespace remora::webhook {

struct Config {
  uint64_t gpu_memory_mib = 81559;  // one GPU of the cluster's nodes
  uint64_t memory_unit_mib = 1;     // MiB per remora.io/gpu-memory unit (the plugin's)
  std::string stub_host_dir = "/usr/local/lib/remora/stub";  // the node's stub libraries
};

// Where the stub libraries appear inside a container, and the names the webhook
// and the device plugin agree on.
inline constexpr std::string_view kStubMountPath = "/usr/local/remora/lib";
inline constexpr std::string_view kStubVolume = "remora-stub";
inline constexpr std::string_view kMemoryResource = "remora.io/gpu-memory";    // MiB
inline constexpr std::string_view kComputeResource = "remora.io/gpu-compute";  // per-mille

// What a pod's remora.io/ annotations ask of each container they cover.
struct PodQuota {
  uint64_t memory_mib = 0;                               // 0: no memory resource
  uint64_t compute_permille = 0;                         // 0: no compute resource
  std::vector<std::pair<std::string, std::string>> env;  // REMORA_* to set, in order
  std::vector<std::string> containers;                   // empty: the first container
};

// Reads the remora.io/ annotations (other keys are ignored). Errors:
// kInvalidValue naming the annotation and what is wrong with it (unknown key,
// bad number or quantity, fraction outside (0, 1], unknown priority, fraction
// mixed with memory, limit without or below its request, more than one GPU).
Result<PodQuota> ParseAnnotations(const std::map<std::string, std::string>& annotations,
                                  const Config& cfg);

// Bytes written as standard base64 with padding.
std::string Base64(std::string_view bytes);

struct Answer {
  int http_status = 200;
  std::string body;     // AdmissionReview JSON (200) or plain text (400)
  std::string summary;  // one log line's fields: uid, pod, allowed or why not
};

// Answers one POST /mutate body. A Pod CREATE with remora.io/ annotations is
// allowed with a patch or refused (status 400, message); anything else that is
// an AdmissionReview is allowed unchanged; anything else gets HTTP 400.
Answer Review(std::string_view body, const Config& cfg);

}  // namespace remora::webhook
