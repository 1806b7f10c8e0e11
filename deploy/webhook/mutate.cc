// deploy/webhook/mutate.cc - remora.io/ annotations to resources, env, the stub mount.
#include "deploy/webhook/mutate.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

#include "proto/quantity.h"

namespace remora::webhook {
namespace {

using nlohmann::json;

constexpr std::string_view kPrefix = "remora.io/";
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kWhole = 1'000'000'000;  // a fraction in parts per billion
constexpr std::string_view kKeys[] = {"gpu-fraction",     "gpu-fraction-limit", "gpu-memory",
                                      "gpu-memory-limit", "gpu-compute",        "gpu-compute-limit",
                                      "priority",         "containers"};

Status Invalid(std::string message) {
  return Error(err::kInvalidValue, std::move(message));
}

std::string Name(std::string_view key) {
  return std::string(kPrefix) + std::string(key);
}

// "0.25" -> 250000000 parts per billion; nullopt unless DIGITS[.DIGITS] in (0, 1]
// with at most nine decimals (exact, so 0.3 of 80000 MiB is 24000, not 23999).
std::optional<uint64_t> ParseFraction(std::string_view text) {
  size_t i = 0;
  uint64_t whole = 0, ppb = 0, digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
    if (whole > 1) return std::nullopt;
  }
  if (i < text.size() && text[i] == '.') {
    uint64_t scale = kWhole;
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      scale /= 10;
      if (scale == 0) return std::nullopt;
      ppb += static_cast<uint64_t>(text[i] - '0') * scale;
    }
  }
  if (digits == 0 || i != text.size()) return std::nullopt;
  ppb += whole * kWhole;
  if (ppb == 0 || ppb > kWhole) return std::nullopt;
  return ppb;
}

Result<uint64_t> Fraction(const std::map<std::string, std::string>& a, std::string_view key) {
  const std::string& text = a.at(Name(key));
  if (std::optional<uint64_t> f = ParseFraction(text)) return *f;
  return Invalid(Name(key) + ": '" + text +
                 "' is not a fraction of a GPU: write a decimal in (0, 1] with at most "
                 "nine decimals, e.g. 0.5");
}

Result<uint64_t> Bytes(const std::map<std::string, std::string>& a, std::string_view key) {
  const std::string& text = a.at(Name(key));
  Result<uint64_t> bytes = ParseQuantity(text);
  if (!bytes.ok()) return Invalid(Name(key) + ": " + bytes.status().message());
  if (*bytes == 0) return Invalid(Name(key) + ": '" + text + "' is zero; ask for some memory");
  return *bytes;
}

std::string Mib(uint64_t mib) {
  return std::to_string(mib) + " MiB";
}

// JSON Pointer escaping of one reference token (RFC 6901).
std::string Escape(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

// The member `key` of `j`, or nullptr when `j` is no object or lacks it.
const json* Field(const json* j, std::string_view key) {
  if (!j || !j->is_object()) return nullptr;
  auto it = j->find(key);
  return it == j->end() ? nullptr : &*it;
}

std::string Str(const json* j) {
  return j && j->is_string() ? j->get<std::string>() : std::string();
}

// The element of array `list` whose "name" is `name`, or -1.
int FindNamed(const json& list, std::string_view name) {
  for (size_t i = 0; i < list.size(); ++i)
    if (Str(Field(&list[i], "name")) == name) return static_cast<int>(i);
  return -1;
}

// A resource quantity as Kubernetes writes it (a string, sometimes a number) in units.
std::optional<uint64_t> Units(const json& q) {
  if (q.is_number_unsigned()) return q.get<uint64_t>();
  if (!q.is_string()) return std::nullopt;
  Result<uint64_t> v = ParseQuantity(q.get<std::string>());
  return v.ok() ? std::optional<uint64_t>(*v) : std::nullopt;
}

void Add(json& ops, const std::string& path, json value) {
  ops.push_back({{"op", "add"}, {"path", path}, {"value", std::move(value)}});
}

Status PatchResources(const json& c, const std::string& cname, const std::string& base,
                      const PodQuota& q, uint64_t unit_mib, json& ops) {
  json want = json::object();
  // Whole units of the device plugin's, rounded up: never less than asked for.
  if (q.memory_mib)
    want[kMemoryResource] = std::to_string((q.memory_mib + unit_mib - 1) / unit_mib);
  if (q.compute_permille) want[kComputeResource] = std::to_string(q.compute_permille);
  const json* res = Field(&c, "resources");
  if (!res) {
    Add(ops, base + "/resources", {{"limits", want}});
    return OkStatus();
  }
  if (!res->is_object()) return Invalid("container '" + cname + "': resources is not an object");
  for (const char* kind : {"limits", "requests"}) {
    const json* set = Field(res, kind);
    if (set && !set->is_object())
      return Invalid("container '" + cname + "': resources." + kind + " is not an object");
    for (const auto& [key, value] : want.items()) {
      const json* have = Field(set, key);
      if (!have) continue;
      const std::optional<uint64_t> units = Units(*have);
      if (!units || std::to_string(*units) != value.get<std::string>())
        return Invalid("container '" + cname + "' already sets resources." + kind + "[" + key +
                       "] to " + have->dump() + ", but the remora.io/ annotations ask for " +
                       value.get<std::string>());
    }
  }
  const json* limits = Field(res, "limits");
  if (!limits) {
    Add(ops, base + "/resources/limits", want);
    return OkStatus();
  }
  for (const auto& [key, value] : want.items())
    if (!Field(limits, key)) Add(ops, base + "/resources/limits/" + Escape(key), value);
  return OkStatus();
}

// The loader variables `remora run` sets (cli/run.cc): the stub directory first on the library
// path, and the audit module that keeps every CUDA driver library the container loads Remora's.
std::vector<std::pair<std::string, std::string>> PrependedVariables() {
  const std::string stub(kStubMountPath);
  return {{"LD_LIBRARY_PATH", stub}, {"LD_AUDIT", stub + "/libremora_confine.so"}};
}

Status PatchEnv(const json& c, const std::string& cname, const std::string& base, const PodQuota& q,
                json& ops) {
  const std::string stub(kStubMountPath);
  std::vector<std::pair<std::string, std::string>> fixed = q.env;
  fixed.emplace_back("REMORA_STUB_DIR", stub);
  const json* env = Field(&c, "env");
  if (!env) {
    json all = json::array();
    for (const auto& [name, value] : fixed) all.push_back({{"name", name}, {"value", value}});
    for (const auto& [name, first] : PrependedVariables())
      all.push_back({{"name", name}, {"value", first}});
    Add(ops, base + "/env", std::move(all));
    return OkStatus();
  }
  if (!env->is_array()) return Invalid("container '" + cname + "': env is not a list");
  for (const auto& [name, value] : fixed) {
    const int i = FindNamed(*env, name);
    if (i < 0) {
      Add(ops, base + "/env/-", {{"name", name}, {"value", value}});
      continue;
    }
    const json& have = (*env)[static_cast<size_t>(i)];
    if (Field(&have, "valueFrom") || Str(Field(&have, "value")) != value)
      return Invalid("container '" + cname + "' already sets env " + name + " to " + have.dump() +
                     ", but the remora.io/ annotations ask for '" + value + "'");
  }
  for (const auto& [name, first] : PrependedVariables()) {
    const int at = FindNamed(*env, name);
    if (at < 0) {
      Add(ops, base + "/env/-", {{"name", name}, {"value", first}});
      continue;
    }
    const json& have = (*env)[static_cast<size_t>(at)];
    if (Field(&have, "valueFrom"))
      return Invalid("container '" + cname + "' sets " + name +
                     " with valueFrom; Remora must put " + first +
                     " first in it, so give it as a plain value");
    const std::string old = Str(Field(&have, "value"));
    if (old == first || old.starts_with(first + ":")) continue;
    ops.push_back({{"op", Field(&have, "value") ? "replace" : "add"},
                   {"path", base + "/env/" + std::to_string(at) + "/value"},
                   {"value", old.empty() ? first : first + ":" + old}});
  }
  return OkStatus();
}

Status PatchMount(const json& c, const std::string& cname, const std::string& base, json& ops) {
  const json want = {{"name", kStubVolume}, {"mountPath", kStubMountPath}, {"readOnly", true}};
  const json* mounts = Field(&c, "volumeMounts");
  if (!mounts) {
    Add(ops, base + "/volumeMounts", json::array({want}));
    return OkStatus();
  }
  if (!mounts->is_array()) return Invalid("container '" + cname + "': volumeMounts is not a list");
  for (const json& m : *mounts) {
    const bool same_name = Str(Field(&m, "name")) == kStubVolume;
    const bool same_path = Str(Field(&m, "mountPath")) == kStubMountPath;
    if (same_name && m == want) return OkStatus();
    if (same_name || same_path)
      return Invalid("container '" + cname + "' already mounts " + m.dump() +
                     ", which clashes with the Remora stub mount " + want.dump());
  }
  Add(ops, base + "/volumeMounts/-", want);
  return OkStatus();
}

// The JSONPatch that applies `q` to `pod`, or why it cannot.
Result<json> BuildPatch(const json& pod, const PodQuota& q, const Config& cfg) {
  const json* spec = Field(&pod, "spec");
  const json* containers = Field(spec, "containers");
  if (!containers || !containers->is_array() || containers->empty())
    return Invalid("the pod has no spec.containers list");
  for (const json& c : *containers)
    if (Str(Field(&c, "name")).empty()) return Invalid("the pod has a container without a name");
  std::vector<size_t> targets;
  for (const std::string& name : q.containers) {
    const int i = FindNamed(*containers, name);
    if (i < 0) {
      std::string names;
      for (const json& c : *containers)
        names += (names.empty() ? "" : ", ") + Str(Field(&c, "name"));
      return Invalid(Name("containers") + ": '" + name +
                     "' is not a container of this pod (it has: " + names + ")");
    }
    targets.push_back(static_cast<size_t>(i));
  }
  if (targets.empty()) targets.push_back(0);

  json ops = json::array();
  const json volume = {{"name", kStubVolume},
                       {"hostPath", {{"path", cfg.stub_host_dir}, {"type", "Directory"}}}};
  const json* volumes = Field(spec, "volumes");
  if (!volumes) {
    Add(ops, "/spec/volumes", json::array({volume}));
  } else if (!volumes->is_array()) {
    return Invalid("the pod's spec.volumes is not a list");
  } else if (const int i = FindNamed(*volumes, kStubVolume); i < 0) {
    Add(ops, "/spec/volumes/-", volume);
  } else if ((*volumes)[static_cast<size_t>(i)] != volume) {
    return Invalid("the pod already has a volume named " + std::string(kStubVolume) + " (" +
                   (*volumes)[static_cast<size_t>(i)].dump() + ") that differs from Remora's " +
                   volume.dump());
  }
  for (size_t i : targets) {
    const json& c = (*containers)[i];
    const std::string cname = Str(Field(&c, "name"));
    const std::string base = "/spec/containers/" + std::to_string(i);
    RETURN_IF_ERROR(
        PatchResources(c, cname, base, q, std::max<uint64_t>(cfg.memory_unit_mib, 1), ops));
    RETURN_IF_ERROR(PatchEnv(c, cname, base, q, ops));
    RETURN_IF_ERROR(PatchMount(c, cname, base, ops));
  }
  return ops;
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

Answer BadBody(const std::string& why) {
  return {400, "not an AdmissionReview v1: " + why + "\n",
          "allowed=none http=400 reason=" + Quoted(why)};
}

}  // namespace

Result<PodQuota> ParseAnnotations(const std::map<std::string, std::string>& annotations,
                                  const Config& cfg) {
  std::map<std::string, std::string> a;
  for (const auto& [key, value] : annotations) {
    if (!key.starts_with(kPrefix)) continue;
    const std::string_view rest = std::string_view(key).substr(kPrefix.size());
    if (std::find(std::begin(kKeys), std::end(kKeys), rest) == std::end(kKeys)) {
      std::string known;
      for (std::string_view k : kKeys) known += (known.empty() ? "" : ", ") + std::string(k);
      return Invalid(key + " is not a Remora annotation (known under remora.io/: " + known + ")");
    }
    a[key] = value;
  }
  auto has = [&](std::string_view k) { return a.count(Name(k)) > 0; };
  if ((has("gpu-fraction") || has("gpu-fraction-limit")) &&
      (has("gpu-memory") || has("gpu-memory-limit")))
    return Invalid(
        "remora.io/gpu-fraction* and remora.io/gpu-memory* conflict: ask for memory as a "
        "fraction or in bytes, not both");
  for (std::string_view k : {"gpu-fraction", "gpu-memory", "gpu-compute"}) {
    const std::string limit = std::string(k) + "-limit";
    if (has(limit) && !has(k) && !(k == "gpu-compute" && has("gpu-fraction")))
      return Invalid(Name(limit) + " is given without " + Name(k) +
                     ": a limit needs a request to go with it");
  }

  PodQuota q;
  uint64_t compute_ppb = 0;
  if (has("gpu-fraction")) {
    ASSIGN_OR_RETURN(const uint64_t f, Fraction(a, "gpu-fraction"));
    q.memory_mib = f * cfg.gpu_memory_mib / kWhole;
    if (q.memory_mib == 0)
      return Invalid(Name("gpu-fraction") + ": " + a[Name("gpu-fraction")] + " of " +
                     Mib(cfg.gpu_memory_mib) + " is less than 1 MiB");
    compute_ppb = f;
    if (has("gpu-fraction-limit")) {
      ASSIGN_OR_RETURN(const uint64_t l, Fraction(a, "gpu-fraction-limit"));
      if (l < f)
        return Invalid(Name("gpu-fraction-limit") + " " + a[Name("gpu-fraction-limit")] +
                       " is below " + Name("gpu-fraction") + " " + a[Name("gpu-fraction")]);
      q.env.emplace_back("REMORA_GPU_MEMORY_LIMIT",
                         std::to_string(l * cfg.gpu_memory_mib / kWhole * kMiB));
    }
  }
  if (has("gpu-memory")) {
    ASSIGN_OR_RETURN(const uint64_t bytes, Bytes(a, "gpu-memory"));
    q.memory_mib = bytes / kMiB + (bytes % kMiB != 0);
    if (q.memory_mib > cfg.gpu_memory_mib)
      return Invalid(Name("gpu-memory") + " " + a[Name("gpu-memory")] + " (" + Mib(q.memory_mib) +
                     ") is more than one GPU has (" + Mib(cfg.gpu_memory_mib) + ")");
    if (has("gpu-memory-limit")) {
      ASSIGN_OR_RETURN(const uint64_t limit, Bytes(a, "gpu-memory-limit"));
      if (limit < bytes)
        return Invalid(Name("gpu-memory-limit") + " " + a[Name("gpu-memory-limit")] + " is below " +
                       Name("gpu-memory") + " " + a[Name("gpu-memory")]);
      if (limit / kMiB + (limit % kMiB != 0) > cfg.gpu_memory_mib)
        return Invalid(Name("gpu-memory-limit") + " " + a[Name("gpu-memory-limit")] +
                       " is more than one GPU has (" + Mib(cfg.gpu_memory_mib) + ")");
      q.env.emplace_back("REMORA_GPU_MEMORY_LIMIT", std::to_string(limit));
    }
  }
  if (has("gpu-compute")) {
    ASSIGN_OR_RETURN(compute_ppb, Fraction(a, "gpu-compute"));
    if ((compute_ppb + 500'000) / 1'000'000 == 0)
      return Invalid(Name("gpu-compute") + ": " + a[Name("gpu-compute")] +
                     " is below 0.001 of a GPU, the smallest share");
  }
  if (compute_ppb) q.compute_permille = std::max<uint64_t>(1, (compute_ppb + 500'000) / 1'000'000);
  if (has("gpu-compute-limit")) {
    ASSIGN_OR_RETURN(const uint64_t l, Fraction(a, "gpu-compute-limit"));
    if (l < compute_ppb)
      return Invalid(Name("gpu-compute-limit") + " " + a[Name("gpu-compute-limit")] +
                     " is below the compute request (" +
                     (has("gpu-compute") ? Name("gpu-compute") : Name("gpu-fraction")) + ")");
    q.env.emplace_back("REMORA_GPU_COMPUTE_LIMIT", a[Name("gpu-compute-limit")]);
  }
  if (has("priority")) {
    const std::string& p = a[Name("priority")];
    if (p != "high" && p != "normal" && p != "low")
      return Invalid(Name("priority") + ": expected high, normal or low, got '" + p + "'");
    q.env.emplace_back("REMORA_PRIORITY", p);
  }
  if (!q.memory_mib && !q.compute_permille)
    return Invalid(
        "the remora.io/ annotations ask for no GPU: add remora.io/gpu-fraction, "
        "remora.io/gpu-memory or remora.io/gpu-compute");
  if (has("containers")) {
    const std::string& list = a[Name("containers")];
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      std::string name = list.substr(start, end - start);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (name.empty())
        return Invalid(Name("containers") + ": '" + list +
                       "' has an empty name; write container names separated by commas");
      if (std::find(q.containers.begin(), q.containers.end(), name) == q.containers.end())
        q.containers.push_back(name);
      start = end + 1;
    }
  }
  return q;
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k)
      v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

Answer Review(std::string_view body, const Config& cfg) {
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return BadBody("the body is not JSON");
  if (!doc.is_object()) return BadBody("the body is not a JSON object");
  if (Str(Field(&doc, "apiVersion")) != "admission.k8s.io/v1" ||
      Str(Field(&doc, "kind")) != "AdmissionReview")
    return BadBody("apiVersion must be admission.k8s.io/v1 and kind AdmissionReview");
  const json* req = Field(&doc, "request");
  if (!req || !req->is_object()) return BadBody("it has no request object");
  const std::string uid = Str(Field(req, "uid"));
  if (uid.empty()) return BadBody("request.uid is missing");

  const json* object = Field(req, "object");
  const json* meta = Field(object, "metadata");
  std::string ns = Str(Field(req, "namespace")), name = Str(Field(meta, "name"));
  if (ns.empty()) ns = Str(Field(meta, "namespace"));
  if (name.empty()) name = Str(Field(req, "name"));
  if (name.empty()) name = Str(Field(meta, "generateName")) + "*";

  json response = {{"uid", uid}, {"allowed", true}};
  Answer answer;
  answer.summary = "uid=" + uid + " pod=" + Quoted(ns + "/" + name);
  auto finish = [&](const std::string& note) {
    answer.body = json{
        {"apiVersion", "admission.k8s.io/v1"},
        {"kind", "AdmissionReview"},
        {"response",
         response}}.dump();
    answer.summary += note;
    return answer;
  };
  auto refuse = [&](const std::string& why) {
    response["allowed"] = false;
    response["status"] = {{"code", 400}, {"reason", "BadRequest"}, {"message", why}};
    return finish(" allowed=false reason=" + Quoted(why));
  };

  const json* kind = Field(req, "kind");
  if (Str(Field(kind, "kind")) != "Pod" || !Str(Field(kind, "group")).empty() ||
      Str(Field(req, "operation")) != "CREATE" || !Str(Field(req, "subResource")).empty())
    return finish(" allowed=true patch=none reason=\"not a pod create\"");
  if (!object || !object->is_object()) return refuse("request.object is not a pod object");

  std::map<std::string, std::string> annotations;
  const json* ann = Field(meta, "annotations");
  if (ann && !ann->is_object()) return refuse("metadata.annotations is not a map");
  bool ours = false;
  if (ann) {
    for (const auto& [key, value] : ann->items()) {
      if (!key.starts_with(kPrefix)) continue;
      if (!value.is_string()) return refuse(key + ": the value must be a string");
      annotations[key] = value.get<std::string>();
      ours = true;
    }
  }
  if (!ours) return finish(" allowed=true patch=none reason=\"no remora.io/ annotations\"");

  Result<PodQuota> quota = ParseAnnotations(annotations, cfg);
  if (!quota.ok()) return refuse(quota.status().message());
  Result<json> ops = BuildPatch(*object, *quota, cfg);
  if (!ops.ok()) return refuse(ops.status().message());
  if (!ops->empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = Base64(ops->dump());
  }
  return finish(" allowed=true memory_mib=" + std::to_string(quota->memory_mib) +
                " compute_permille=" + std::to_string(quota->compute_permille) +
                " ops=" + std::to_string(ops->size()));
}

}  // namespace remora::webhook
