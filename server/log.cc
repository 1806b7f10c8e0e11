// server/log.cc - structured log lines on stderr.
#include "server/log.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

namespace remora::server {
namespace {

Level Threshold() {
  static const Level level = [] {
    const char* e = std::getenv("REMORA_LOG");
    std::string_view v = e ? e : "info";
    if (v == "debug") return Level::kDebug;
    if (v == "warn") return Level::kWarn;
    if (v == "error") return Level::kError;
    return Level::kInfo;
  }();
  return level;
}

const char* Name(Level l) {
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  return kNames[static_cast<int>(l)];
}

void Append(std::string& out, const LogValue& v) {
  bool needs_quotes = v.text.empty() || v.text.find_first_of(" \"=\t\n") != std::string::npos;
  if (!v.quoted || !needs_quotes) {
    out += v.text;
    return;
  }
  out += '"';
  for (char c : v.text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
}

}  // namespace

bool LogEnabled(Level level) {
  return level >= Threshold();
}

void Log(Level level, std::string_view component, std::initializer_list<LogField> fields) {
  if (!LogEnabled(level)) return;
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  std::string line = "ts=";
  line += ts;
  line += " level=";
  line += Name(level);
  line += " comp=";
  line += component;
  for (const LogField& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    Append(line, f.value);
  }
  line += '\n';
  // One write per line keeps concurrent lines whole.
  ssize_t rc = ::write(STDERR_FILENO, line.data(), line.size());
  (void)rc;
}

}  // namespace remora::server
