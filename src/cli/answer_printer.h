// cli/answer_printer: one answer's parser deltas on a terminal.
// Contract: show() streams "[think] …" (dim on a colour terminal) closed by "[/think]", then
// the response, then one "[tool call] name(args)" line per call; end() closes what is open and
// ends the line. With `sanitize`, bytes a terminal would act on (ESC sequences, carriage
// returns, C1 controls) are shown as U+FFFD (terminal_safe), so model output can never move
// the cursor, retitle the window or change colours. Output goes to `out` (stdout by default).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "text/output_parser.h"

namespace k3::cli {

std::string terminal_safe(std::string_view s);

class AnswerPrinter {
 public:
  AnswerPrinter(bool color, bool sanitize, std::FILE* out = stdout)
      : color_(color), sanitize_(sanitize), out_(out) {}
  void show(const text::ParseDelta& d);
  void end();

 private:
  enum class Mode { None, Think, Content };
  void out(std::string_view s);
  void style(const char* sgr);  // our own SGR sequences, which must not go through terminal_safe()
  void newline();
  void close_think();
  bool color_, sanitize_;
  std::FILE* out_;
  Mode mode_ = Mode::None;
  bool at_line_start_ = true;
};

}  // namespace k3::cli
