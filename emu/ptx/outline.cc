// emu/ptx/outline.cc - OutlinePtx and PrunePtx.
#include "emu/ptx/outline.h"

#include <algorithm>
#include <unordered_map>

#include "emu/ptx/lexer.h"

namespace remora::emu::ptx {
namespace {

// Walks a PTX text a lexical item at a time: comments and strings are skipped whole.
class Cursor {
 public:
  Cursor(std::string_view s, size_t at) : s_(s), i_(at) {}
  bool done() const { return i_ >= s_.size(); }
  size_t at() const { return i_; }
  char peek() const { return s_[i_]; }
  // Skips a comment or string starting here; true if there was one.
  bool SkipOpaque() {
    if (s_[i_] == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
      const size_t nl = s_.find('\n', i_);
      i_ = nl == std::string_view::npos ? s_.size() : nl;
      return true;
    }
    if (s_[i_] == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '*') {
      const size_t close = s_.find("*/", i_ + 2);
      i_ = close == std::string_view::npos ? s_.size() : close + 2;
      return true;
    }
    if (s_[i_] == '"') {
      for (++i_; i_ < s_.size() && s_[i_] != '"'; i_ += s_[i_] == '\\' ? 2 : 1) {
      }
      i_ = std::min(i_ + 1, s_.size());
      return true;
    }
    return false;
  }
  // The identifier starting here (empty if none), moved past.
  std::string_view Ident() {
    if (!IsIdentStart(s_[i_])) return {};
    const size_t b = i_;
    while (i_ < s_.size() && IsIdentChar(s_[i_])) ++i_;
    return s_.substr(b, i_ - b);
  }
  void Skip() { ++i_; }
  void SkipSpace() {
    while (!done() &&
           (SkipOpaque() || s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      if (!done() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
  }
  // Moves past the bracketed group opening here (`open` ... `close`, nested); false if it is
  // never closed.
  bool SkipGroup(char open, char close) {
    int depth = 0;
    while (!done()) {
      if (SkipOpaque()) continue;
      const char c = s_[i_++];
      if (c == open) ++depth;
      if (c == close && --depth == 0) return true;
    }
    return false;
  }

 private:
  std::string_view s_;
  size_t i_;
};

Status Malformed(const std::string& why) {
  return Error(err::kInvalidPtx, "PTX outline: " + why);
}

}  // namespace

Result<PtxOutline> OutlinePtx(std::string_view ptx) {
  PtxOutline out;
  std::unordered_map<std::string_view, size_t> seen;
  Cursor c(ptx, 0);
  size_t statement = 0;  // where the current top-level statement began
  size_t keyword_end = 0, keyword_line = 0;
  bool function = false, entry = false;
  while (!c.done()) {
    if (c.SkipOpaque()) continue;
    const char ch = c.peek();
    if (IsIdentStart(ch)) {
      const std::string_view w = c.Ident();
      if (w == ".entry" || w == ".func") {
        function = true;
        entry = w == ".entry";
        keyword_end = c.at();
        // Its text starts on the keyword's line (after `.visible`, `.weak`): directives without a
        // ';' (.version, .target, .file) on the lines before stay with the module.
        const size_t nl = ptx.rfind('\n', keyword_end - w.size());
        keyword_line = std::max(statement, nl == std::string_view::npos ? 0 : nl + 1);
      }
      continue;
    }
    if (ch == ';') {
      c.Skip();
      statement = c.at();
      function = false;
      continue;
    }
    if (ch == '(' || ch == '[') {
      if (!c.SkipGroup(ch, ch == '(' ? ')' : ']')) return Malformed("a bracket is never closed");
      continue;
    }
    if (ch != '{') {
      c.Skip();
      continue;
    }
    if (!function) {  // an initialiser
      if (!c.SkipGroup('{', '}')) return Malformed("a brace is never closed");
      continue;
    }
    if (!c.SkipGroup('{', '}')) return Malformed("a function body is never closed");
    Cursor n(ptx, keyword_end);
    n.SkipSpace();
    if (!n.done() && n.peek() == '(' && !n.SkipGroup('(', ')'))
      return Malformed("a return parameter list is never closed");
    n.SkipSpace();
    const std::string_view name = n.done() ? std::string_view() : n.Ident();
    if (name.empty()) return Malformed("a function definition has no name");
    if (!seen.emplace(name, out.definitions.size()).second)
      return Malformed("two definitions of " + std::string(name));
    out.definitions.push_back({std::string(name), entry, keyword_line, c.at()});
    statement = c.at();
    function = false;
  }
  return out;
}

std::string PrunePtx(std::string_view ptx, const PtxOutline& outline,
                     std::span<const std::string> kernels, size_t* kept) {
  const auto& defs = outline.definitions;
  std::unordered_map<std::string_view, size_t> by_name;
  for (size_t i = 0; i < defs.size(); ++i) by_name.emplace(defs[i].name, i);
  std::vector<bool> keep(defs.size(), false);
  std::vector<size_t> work;
  const auto want = [&](std::string_view name) {
    auto it = by_name.find(name);
    if (it != by_name.end() && !keep[it->second]) {
      keep[it->second] = true;
      work.push_back(it->second);
    }
  };
  // Every function named in `text`.
  const auto scan = [&](size_t begin, size_t end) {
    Cursor c(ptx.substr(0, end), begin);
    while (!c.done()) {
      if (c.SkipOpaque()) continue;
      if (IsIdentStart(c.peek()))
        want(c.Ident());
      else
        c.Skip();
    }
  };
  for (const std::string& k : kernels)
    if (auto it = by_name.find(k); it != by_name.end() && defs[it->second].entry) want(k);
  size_t at = 0;
  for (const auto& d : defs) {  // what stays whatever is asked: the text between definitions
    scan(at, d.begin);
    at = d.end;
  }
  scan(at, ptx.size());
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    scan(defs[i].begin, defs[i].end);
  }
  std::string out;
  at = 0;
  for (size_t i = 0; i < defs.size(); ++i) {
    out.append(ptx.substr(at, defs[i].begin - at));
    const std::string_view text = ptx.substr(defs[i].begin, defs[i].end - defs[i].begin);
    if (keep[i])
      out.append(text);
    else
      out.append(size_t(std::count(text.begin(), text.end(), '\n')), '\n');
    at = defs[i].end;
  }
  out.append(ptx.substr(at));
  if (kept) *kept = size_t(std::count(keep.begin(), keep.end(), true));
  return out;
}

}  // namespace remora::emu::ptx
