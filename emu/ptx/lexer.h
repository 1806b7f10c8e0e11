// emu/ptx/lexer.h - splits PTX text into tokens (identifiers keep their dots: "ld.global.u32").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace remora::emu::ptx {

struct Token {
  enum Kind : uint8_t { kIdent, kNumber, kString, kPunct, kEnd } kind;
  std::string_view text;
  uint32_t line;
};

// Whether `c` may start a PTX identifier (directives and registers included), or continue one.
inline bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%' ||
         c == '.';
}
inline bool IsIdentChar(char c) {
  return IsIdentStart(c) || (c >= '0' && c <= '9');
}

// Tokenizes `src`, dropping // and /* */ comments. Never fails: an unexpected byte becomes a
// one-character punctuation token the parser rejects with its line.
std::vector<Token> Tokenize(std::string_view src);

}  // namespace remora::emu::ptx
