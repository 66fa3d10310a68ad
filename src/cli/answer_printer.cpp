// cli/answer_printer: see answer_printer.h.
#include "cli/answer_printer.h"

#include <fmt/format.h>

namespace k3::cli {

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    bool c0 = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    bool c1 = c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
              static_cast<unsigned char>(s[i + 1]) <= 0x9f;
    if (c0) {
      out += "\xef\xbf\xbd";
    } else if (c1) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

void AnswerPrinter::show(const text::ParseDelta& d) {
  if (!d.reasoning_content.empty()) {
    if (mode_ != Mode::Think) {
      if (mode_ == Mode::Content) newline();
      style("\x1b[2m");
      out("[think] ");
      mode_ = Mode::Think;
    }
    out(d.reasoning_content);
  }
  if (!d.content.empty()) {
    close_think();
    mode_ = Mode::Content;
    out(d.content);
  }
  for (const text::ToolCall& c : d.tool_calls) {
    close_think();
    newline();
    style("\x1b[1m");
    out(fmt::format("[tool call] {}({})", c.name, c.arguments));
    style("\x1b[22m");
    out("\n");
    at_line_start_ = true;
    mode_ = Mode::None;
  }
  std::fflush(out_);
}

void AnswerPrinter::end() {
  close_think();
  newline();
  std::fflush(out_);
}

void AnswerPrinter::out(std::string_view s) {
  if (s.empty()) return;
  std::string safe = sanitize_ ? terminal_safe(s) : std::string(s);
  std::fwrite(safe.data(), 1, safe.size(), out_);
  at_line_start_ = safe.back() == '\n';
}

void AnswerPrinter::style(const char* sgr) {
  if (color_) std::fputs(sgr, out_);
}

void AnswerPrinter::newline() {
  if (!at_line_start_) out("\n");
}

void AnswerPrinter::close_think() {
  if (mode_ != Mode::Think) return;
  newline();
  out("[/think]");
  style("\x1b[22m");
  out("\n");
  mode_ = Mode::None;
}

}  // namespace k3::cli
