// tools/progress: stderr progress line (see progress.h).
#include "tools/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace k3::tools {

namespace {

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

}  // namespace

Progress::Progress(uint64_t total, std::string label, bool enabled)
    : total_(total), label_(std::move(label)), enabled_(enabled) {
  tty_ = isatty(STDERR_FILENO) != 0;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (enabled_ && tty_ && !finished_) std::fputc('\n', stderr);
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::format_duration(double s) {
  if (!(s >= 0) || s > 1e8) return "?";
  auto t = static_cast<uint64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02d}:{:02d}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{}:{:02d}", t / 60, t % 60);
}

std::string Progress::render(uint64_t done, uint64_t total, double seconds, int width) {
  const double frac = total ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  const int fill = static_cast<int>(frac * width + 1e-9);
  std::string bar = "[" + std::string(static_cast<size_t>(fill), '#') +
                    std::string(static_cast<size_t>(width - fill), ' ') + "]";
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  std::string eta = "?";
  if (done >= total) eta = format_duration(0);
  else if (rate > 0) eta = format_duration(static_cast<double>(total - done) / rate);
  return fmt::format("{} {:3.0f}% {}/{} {}/s ETA {}", bar, frac * 100.0, bytes_text(static_cast<double>(done)),
                     bytes_text(static_cast<double>(total)), bytes_text(rate), eta);
}

void Progress::advance(uint64_t delta, const std::string& item) {
  done_ += delta;
  item_ = item;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(120) && done_ < total_) return;
    last_draw_ = now;
    draw(false);
  } else {
    int decile = total_ ? static_cast<int>(10 * std::min(done_, total_) / total_) : 10;
    if (decile == last_decile_) return;
    last_decile_ = decile;
    draw(false);
  }
}

void Progress::draw(bool final) {
  std::string line = fmt::format("{}: {}", label_, render(done_, total_, elapsed_seconds(), 30));
  if (!final && !item_.empty()) line += "  " + item_;
  if (tty_) {
    if (line.size() > 118) line.resize(118);
    fmt::print(stderr, "\r{}\x1b[K", line);
    if (final) std::fputc('\n', stderr);
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  if (tty_) draw(true);
  finished_ = true;
}

}  // namespace k3::tools
