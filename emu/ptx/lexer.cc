// emu/ptx/lexer.cc - PTX tokenizer.
#include "emu/ptx/lexer.h"

namespace remora::emu::ptx {

std::vector<Token> Tokenize(std::string_view s) {
  std::vector<Token> out;
  out.reserve(s.size() / 4);
  uint32_t line = 1;
  size_t i = 0, n = s.size();
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\0') {
      ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) {
        if (s[i] == '\n') ++line;
        ++i;
      }
      i += 2;
    } else if (c == '"') {
      size_t b = i++;
      while (i < n && s[i] != '"') i += (s[i] == '\\') ? 2 : 1;
      ++i;
      out.push_back({Token::kString, s.substr(b, i - b), line});
    } else if (IsIdentStart(c)) {
      size_t b = i++;
      while (i < n && (IsIdentChar(s[i]) || (s[i] == ':' && i + 1 < n && s[i + 1] == ':'))) {
        i += (s[i] == ':') ? 2 : 1;
      }
      out.push_back({Token::kIdent, s.substr(b, i - b), line});
    } else if (c >= '0' && c <= '9') {
      size_t b = i++;
      while (i < n && (IsIdentChar(s[i]) && s[i] != '%' && s[i] != '$')) ++i;
      out.push_back({Token::kNumber, s.substr(b, i - b), line});
    } else {
      out.push_back({Token::kPunct, s.substr(i, 1), line});
      ++i;
    }
  }
  out.push_back({Token::kEnd, std::string_view(), line});
  return out;
}

}  // namespace remora::emu::ptx
