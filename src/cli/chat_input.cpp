// cli/chat_input: see chat_input.h.
#include "cli/chat_input.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace k3::cli {

LineReader::Status LineReader::read_line(std::string& out) {
  for (;;) {
    if (size_t nl = buf_.find('\n'); nl != std::string::npos) {
      out = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (!out.empty() && out.back() == '\r') out.pop_back();
      return Status::Line;
    }
    if (eof_) {
      if (buf_.empty()) return Status::Eof;
      out = std::move(buf_);
      buf_.clear();
      if (!out.empty() && out.back() == '\r') out.pop_back();
      return Status::Line;
    }
    if (interrupted_ && interrupted_()) return Status::Interrupted;
    // A short poll rather than a blocking read: the SIGINT may land on another thread, in
    // which case no read would return EINTR and the prompt would not notice the Ctrl-C.
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, 100);
    if (r < 0) {
      if (errno == EINTR) continue;
      eof_ = true;
      continue;
    }
    if (r == 0) continue;
    char tmp[4096];
    ssize_t n = ::read(fd_, tmp, sizeof tmp);
    if (n > 0) {
      buf_.append(tmp, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      eof_ = true;  // end of input, or an error that no retry fixes (a hung-up terminal)
    }
  }
}

std::string MultiLine::take() {
  std::string s;
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (i) s += '\n';
    s += parts_[i];
  }
  clear();
  return s;
}

std::optional<std::string> MultiLine::feed(const std::string& line) {
  static const std::string q = "\"\"\"";
  if (in_block_) {
    if (line.ends_with(q)) {
      parts_.push_back(line.substr(0, line.size() - 3));
      // The closing quotes usually stand alone: their empty line is not part of the text.
      if (parts_.back().empty()) parts_.pop_back();
      return take();
    }
    parts_.push_back(line);
    return std::nullopt;
  }
  if (parts_.empty() && line.starts_with(q)) {
    std::string rest = line.substr(3);
    if (rest.ends_with(q)) {
      parts_.push_back(rest.substr(0, rest.size() - 3));  // """one line"""
      return take();
    }
    in_block_ = true;
    if (!rest.empty()) parts_.push_back(rest);
    return std::nullopt;
  }
  if (!line.empty() && line.back() == '\\') {
    parts_.push_back(line.substr(0, line.size() - 1));
    return std::nullopt;
  }
  parts_.push_back(line);
  return take();
}

}  // namespace k3::cli
