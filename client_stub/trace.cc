// client_stub/trace.cc - formatting and printing REMORA_TRACE lines.
#include "client_stub/trace.h"

#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "client_stub/errors.h"

namespace remora::client_stub {
namespace {

constexpr size_t kMaxStringBytes = 96;
constexpr size_t kMaxLine = 2000;

// Byte fields (images, kernel parameters, data) print as their size; long
// strings (Thrust's kernel names) are cut short.
class Gist final : public google::protobuf::TextFormat::FastFieldValuePrinter {
 public:
  using Generator = google::protobuf::TextFormat::BaseTextGenerator;
  void PrintBytes(const std::string& val, Generator* out) const override {
    out->PrintString("<" + std::to_string(val.size()) + " bytes>");
  }
  void PrintString(const std::string& val, Generator* out) const override {
    if (val.size() <= kMaxStringBytes) return FastFieldValuePrinter::PrintString(val, out);
    FastFieldValuePrinter::PrintString(val.substr(0, kMaxStringBytes) + "...", out);
  }
};

std::string OneLine(const google::protobuf::Message& m) {
  google::protobuf::TextFormat::Printer p;
  p.SetSingleLineMode(true);
  p.SetDefaultFieldValuePrinter(std::make_unique<Gist>().release());  // p owns it
  std::string out;
  p.PrintToString(m, &out);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return "{" + out + "}";
}

std::string ErrorName(cudaError_t e) {
  const char* name = CudaErrorName(e);
  return name ? name : "cudaError(" + std::to_string(static_cast<int>(e)) + ")";
}

std::string_view Name(CallId id) {
  const CallInfo* info = FindCall(static_cast<uint32_t>(id));
  return info ? info->name : std::string_view("call?");
}

// One write per line, so lines from several threads never interleave.
void Emit(std::string line) {
  if (line.size() > kMaxLine) line = line.substr(0, kMaxLine) + "...";
  line = "remora[" + std::to_string(getpid()) + "] " + line + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

bool TraceEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("REMORA_TRACE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void TraceCall(CallId id, const google::protobuf::Message& req, cudaError_t result,
               const google::protobuf::Message* reply, std::string_view why) {
  std::string line = std::string(Name(id)) + " " + OneLine(req) + " -> " + ErrorName(result);
  if (result == cudaSuccess && reply && reply->ByteSizeLong() > 0) line += " " + OneLine(*reply);
  if (!why.empty()) line += " (" + std::string(why) + ")";
  Emit(std::move(line));
}

void TracePost(CallId id, const google::protobuf::Message& req, cudaError_t result) {
  Emit(std::string(Name(id)) + " " + OneLine(req) + " -> " +
       (result == cudaSuccess ? "posted" : ErrorName(result)));
}

void TraceLocal(std::string_view call, std::string_view what, cudaError_t result,
                std::string_view why) {
  std::string line =
      std::string(call) + " " + std::string(what) + " -> " + ErrorName(result) + " (not sent";
  if (!why.empty()) line += ": " + std::string(why);
  Emit(line + ")");
}

}  // namespace remora::client_stub
