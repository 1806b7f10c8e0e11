// tests/deploy/json_patch.h - what the API server does with a webhook's answer, for
// tests: base64 decoding and RFC 6902 "add"/"replace" applied to a JSON document.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace remora::test {

// Decodes standard padded base64; throws std::runtime_error on any other text.
inline std::string DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) throw std::runtime_error("base64 length is not a multiple of 4");
  std::string out;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const bool last_quad = i + 4 == text.size();
      if (c == '=' && last_quad && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      const int d = value(c);
      if (d < 0 || pad) throw std::runtime_error("bad base64 character");
      v = v << 6 | static_cast<uint32_t>(d);
    }
    for (int k = 0; k < 3 - pad; ++k) out += static_cast<char>((v >> (16 - 8 * k)) & 0xff);
  }
  return out;
}

// Applies a JSON Patch of "add" and "replace" operations to `doc`, as RFC 6902
// says: the parent of an added member must exist, "-" appends to an array, a
// replaced member must exist. Throws std::runtime_error saying which op failed.
inline void ApplyPatch(nlohmann::json& doc, const nlohmann::json& patch) {
  if (!patch.is_array()) throw std::runtime_error("a patch is a JSON array");
  for (const nlohmann::json& op : patch) {
    const std::string kind = op.at("op").get<std::string>();
    const std::string path = op.at("path").get<std::string>();
    if (kind != "add" && kind != "replace") throw std::runtime_error("unsupported op " + kind);
    if (path.empty() || path[0] != '/') throw std::runtime_error("bad path '" + path + "'");
    const size_t slash = path.rfind('/');
    nlohmann::json::json_pointer parent_ptr(path.substr(0, slash));
    if (!doc.contains(parent_ptr)) throw std::runtime_error(kind + " " + path + ": no parent");
    nlohmann::json& parent = doc[parent_ptr];
    std::string token = path.substr(slash + 1);
    for (size_t p = 0; (p = token.find('~', p)) != std::string::npos; ++p)
      token.replace(p, 2, token.compare(p, 2, "~1") == 0 ? "/" : "~");
    if (parent.is_array()) {
      if (token == "-" && kind == "add") {
        parent.push_back(op.at("value"));
        continue;
      }
      const size_t index = std::stoul(token);
      if (kind == "add" ? index > parent.size() : index >= parent.size())
        throw std::runtime_error(kind + " " + path + ": index out of range");
      if (kind == "add")
        parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(index), op.at("value"));
      else
        parent[index] = op.at("value");
    } else if (parent.is_object()) {
      if (kind == "replace" && !parent.contains(token))
        throw std::runtime_error("replace " + path + ": no such member");
      parent[token] = op.at("value");
    } else {
      throw std::runtime_error(kind + " " + path + ": the parent is not a container");
    }
  }
}

}  // namespace remora::test
