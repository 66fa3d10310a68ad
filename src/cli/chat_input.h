// cli/chat_input: how `k3 chat` reads what the user types (see docs/chat.md).
// Contract:
//  - LineReader reads lines from a file descriptor with read(2), never through stdio, so a
//    Ctrl-C can interrupt a wait at the prompt: read_line() polls in short steps and returns
//    Interrupted as soon as the caller's `interrupted` predicate turns true, whichever thread
//    the signal was delivered to. A last line without a newline is still a line; a trailing
//    '\r' is dropped (CRLF scripts).
//  - MultiLine assembles one message from several lines: a line ending in '\' continues on
//    the next (the backslash is dropped, the lines are joined with '\n'); a line starting with
//    """ opens a block that a line ending in """ closes (the quotes are dropped). feed()
//    returns the finished text, or nothing while more lines are wanted.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace k3::cli {

class LineReader {
 public:
  enum class Status { Line, Eof, Interrupted };
  LineReader(int fd, std::function<bool()> interrupted) : fd_(fd), interrupted_(std::move(interrupted)) {}
  Status read_line(std::string& out);

 private:
  int fd_;
  std::function<bool()> interrupted_;
  std::string buf_;
  bool eof_ = false;
};

class MultiLine {
 public:
  std::optional<std::string> feed(const std::string& line);
  // True while a continued line or a """ block waits for more.
  bool pending() const { return in_block_ || !parts_.empty(); }
  void clear() {
    parts_.clear();
    in_block_ = false;
  }

 private:
  std::string take();
  std::vector<std::string> parts_;
  bool in_block_ = false;
};

}  // namespace k3::cli
