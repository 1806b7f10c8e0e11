// server/log.h - structured logs: one line of key=value pairs per event.
//
//   Log(Level::kInfo, "session", {{"tenant", name}, {"event", "open"}, {"pid", pid}});
//   -> ts=2026-11-22T02:30:00.123Z level=info comp=session tenant=a event=open pid=42
// REMORA_LOG (debug|info|warn|error, default info) sets the threshold; lines go
// to stderr, written whole so concurrent threads never interleave within one.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace remora::server {

enum class Level { kDebug, kInfo, kWarn, kError };

// A value that prints as itself: text is quoted when it holds spaces or quotes.
struct LogValue {
  LogValue(std::string_view s) : text(s), quoted(true) {}
  LogValue(const char* s) : text(s ? s : ""), quoted(true) {}
  LogValue(const std::string& s) : text(s), quoted(true) {}
  template <typename T>
  requires std::is_arithmetic_v<T> LogValue(T v) : text(std::to_string(v)) {}
  std::string text;
  bool quoted = false;
};

struct LogField {
  std::string_view key;
  LogValue value;
};

// True if `level` passes the REMORA_LOG threshold. Thread-safe.
bool LogEnabled(Level level);
// Writes one line. Thread-safe.
void Log(Level level, std::string_view component, std::initializer_list<LogField> fields);

}  // namespace remora::server
