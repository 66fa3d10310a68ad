// core/progress: stderr progress line (see progress.h).
#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace k3 {

namespace {

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string count_text(double n) {
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e4) return fmt::format("{:.1f}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string amount(double v, ProgressUnit unit) {
  switch (unit) {
    case ProgressUnit::bytes: return bytes_text(v);
    case ProgressUnit::tokens: return count_text(v);
    case ProgressUnit::items: return count_text(v);
  }
  return {};
}

std::string rate_text(double r, ProgressUnit unit) {
  switch (unit) {
    case ProgressUnit::bytes: return bytes_text(r) + "/s";
    case ProgressUnit::tokens: return fmt::format("{:.1f} tok/s", r);
    case ProgressUnit::items:
      return r >= 1 ? fmt::format("{:.1f}/s", r) : fmt::format("{:.1f} s each", r > 0 ? 1 / r : 0.0);
  }
  return {};
}

constexpr auto kTtyQuiet = std::chrono::seconds(2);  // nothing drawn before this on a terminal
constexpr auto kTtyRedraw = std::chrono::milliseconds(120);
constexpr auto kLogEvery = std::chrono::seconds(30);  // a plain line at least this often

}  // namespace

Progress::Progress(uint64_t total, std::string label, bool enabled, ProgressUnit unit)
    : total_(total), label_(std::move(label)), enabled_(enabled), unit_(unit) {
  tty_ = isatty(STDERR_FILENO) != 0;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (enabled_ && tty_ && drawn_ && !finished_) std::fputc('\n', stderr);
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

std::string Progress::render(uint64_t done, uint64_t total, double seconds, int width, ProgressUnit unit) {
  const double frac = total ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  const int fill = static_cast<int>(frac * width + 1e-9);
  std::string bar = "[" + std::string(static_cast<size_t>(fill), '#') +
                    std::string(static_cast<size_t>(width - fill), ' ') + "]";
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  std::string eta = "?";
  if (done >= total) eta = format_duration(0);
  else if (rate > 0) eta = format_duration(static_cast<double>(total - done) / rate);
  std::string of =
      unit == ProgressUnit::bytes
          ? fmt::format("{}/{}", bytes_text(static_cast<double>(done)),
                        bytes_text(static_cast<double>(total)))
          : fmt::format("{}/{}{}", amount(static_cast<double>(done), unit),
                        amount(static_cast<double>(total), unit), unit == ProgressUnit::tokens ? " tok" : "");
  return fmt::format("{} {:3.0f}% {} {} ETA {}", bar, frac * 100.0, of, rate_text(rate, unit), eta);
}

void Progress::advance(uint64_t delta, const std::string& item) { set(done_ + delta, item); }

void Progress::set(uint64_t done, const std::string& item) {
  done_ = done;
  if (!item.empty()) item_ = item;
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - start_ < kTtyQuiet) return;
    if (now - last_draw_ < kTtyRedraw && done_ < total_) return;
    last_draw_ = now;
    draw(false);
  } else {
    int decile = total_ ? static_cast<int>(10 * std::min(done_, total_) / total_) : 10;
    if (decile == last_decile_ && now - last_draw_ < kLogEvery) return;
    last_decile_ = decile;
    last_draw_ = now;
    draw(false);
  }
}

void Progress::draw(bool final) {
  std::string line = fmt::format("{}: {}", label_, render(done_, total_, elapsed_seconds(), 30, unit_));
  if (!final && !item_.empty()) line += "  " + item_;
  if (tty_) {
    if (line.size() > 118) line.resize(118);
    fmt::print(stderr, "\r{}\x1b[K", line);
    if (final) std::fputc('\n', stderr);
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  drawn_ = true;
  std::fflush(stderr);
}

void Progress::println(const std::string& line) {
  if (enabled_ && tty_ && drawn_ && !finished_) {
    fmt::print(stderr, "\r\x1b[K{}\n", line);
    draw(false);
    return;
  }
  fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  // On a terminal a run that never drew (under 2 s) stays silent; a log gets its 100 % line
  // from set() already.
  if (tty_ && drawn_) draw(true);
  finished_ = true;
}

}  // namespace k3
