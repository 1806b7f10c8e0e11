// emu/ptx/printf.cc - device printf: the format string plus nvcc's packed argument buffer.
//
// nvcc packs each argument at the next offset aligned to its size: int-sized conversions take
// 4 bytes (8 with l/ll/j/z/t), floating conversions take a double, %s and %p a pointer.
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#include "emu/ptx/exec.h"

namespace remora::emu::ptx {

bool FormatPrintf(const std::string& fmt, uint64_t args, ReadMemFn read, ReadStrFn read_str,
                  void* ctx, std::string* out) {
  out->clear();
  uint64_t off = 0;
  auto fetch = [&](size_t n, void* dst) {
    off = (off + n - 1) / n * n;
    bool ok = read(ctx, args + off, dst, n);
    off += n;
    return ok;
  };
  char buf[512];
  for (size_t i = 0; i < fmt.size();) {
    char ch = fmt[i];
    if (ch != '%') {
      out->push_back(ch);
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out->push_back('%');
      i += 2;
      continue;
    }
    size_t start = i++;
    // The spec rebuilt for the host's printf: flags, then width and precision, each digits or
    // '*', which takes the next int argument (a negative width left-justifies; a negative
    // precision is none).
    std::string base = "%";
    while (i < fmt.size() && std::strchr("-+ #0", fmt[i])) base.push_back(fmt[i++]);
    auto number = [&](bool precision) {
      if (i < fmt.size() && fmt[i] == '*') {
        ++i;
        int32_t v;
        if (!fetch(4, &v)) return false;
        if (precision && v < 0)
          base.pop_back();  // the '.'
        else
          base += std::to_string(v);
        return true;
      }
      while (i < fmt.size() && std::isdigit(uint8_t(fmt[i]))) base.push_back(fmt[i++]);
      return true;
    };
    if (!number(false)) return false;
    if (i < fmt.size() && fmt[i] == '.') {
      base.push_back(fmt[i++]);
      if (!number(true)) return false;
    }
    int longs = 0;
    bool half = false;
    while (i < fmt.size() && std::strchr("hljztL", fmt[i])) {
      if (fmt[i] == 'l' || fmt[i] == 'j' || fmt[i] == 'z' || fmt[i] == 't' || fmt[i] == 'L')
        ++longs;
      if (fmt[i] == 'h') half = true;
      ++i;
    }
    if (i >= fmt.size()) {
      out->append(fmt, start, std::string::npos);
      break;
    }
    char conv = fmt[i++];
    const std::string spec = fmt.substr(start, i - start);
    switch (conv) {
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'c': {
        bool is_signed = conv == 'd' || conv == 'i';
        long long v;
        if (longs > 0) {
          int64_t t;
          if (!fetch(8, &t)) return false;
          v = t;
        } else {
          int32_t t;
          if (!fetch(4, &t)) return false;
          v = is_signed ? int64_t(t) : int64_t(uint32_t(t));
          if (half) v = is_signed ? int64_t(int16_t(t)) : int64_t(uint16_t(t));
        }
        if (conv == 'c') {
          std::snprintf(buf, sizeof buf, (base + "c").c_str(), int(v));
        } else {
          std::snprintf(buf, sizeof buf, (base + "ll" + conv).c_str(), v);
        }
        out->append(buf);
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
      case 'a':
      case 'A': {
        double v;
        if (!fetch(8, &v)) return false;
        std::snprintf(buf, sizeof buf, (base + conv).c_str(), v);
        out->append(buf);
        break;
      }
      case 's': {
        uint64_t p;
        if (!fetch(8, &p)) return false;
        std::string s;
        if (p == 0)
          s = "(null)";
        else if (!read_str(ctx, p, &s))
          return false;
        std::snprintf(buf, sizeof buf, (base + "s").c_str(), s.c_str());
        out->append(buf);
        break;
      }
      case 'p': {
        uint64_t p;
        if (!fetch(8, &p)) return false;
        std::snprintf(buf, sizeof buf, (base + "p").c_str(), reinterpret_cast<void*>(p));
        out->append(buf);
        break;
      }
      default:
        out->append(spec);
        break;
    }
  }
  return true;
}

}  // namespace remora::emu::ptx
