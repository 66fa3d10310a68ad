// core/progress: a one-line progress bar with rate and ETA on stderr for long commands
// (quantize, imatrix, reap, convert, perplexity, synth, split/merge, niah, loading a trunk).
// Contract: advance() is cheap and may be called often; on a terminal the line is redrawn at
// most ~8 times a second; on a non-terminal (a log, CI) a plain line is printed every 10 %
// and at least every 30 s. Nothing is printed when disabled (--no-progress). Work under
// ~2 s prints nothing on a terminal, so quick runs stay quiet. Thread-compatible, not
// thread-safe: call from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace k3 {

enum class ProgressUnit { bytes, tokens, items };

class Progress {
 public:
  // total: the amount of work in `unit`; label: "quantize" etc.
  Progress(uint64_t total, std::string label, bool enabled, ProgressUnit unit = ProgressUnit::bytes);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void advance(uint64_t done_delta, const std::string& item = {});
  // Sets the amount done (for callers that count it themselves).
  void set(uint64_t done, const std::string& item = {});
  void finish();
  double elapsed_seconds() const;
  // Prints a line of its own on stderr above the bar (the bar is redrawn below it).
  void println(const std::string& line);

  // "1:02:03" / "4:05".
  static std::string format_duration(double seconds);
  // The bar text for a state (exposed for tests): "[#####     ]  50% 1.2/2.4 GB 10.0 MB/s ETA 0:02".
  static std::string render(uint64_t done, uint64_t total, double seconds, int width,
                            ProgressUnit unit = ProgressUnit::bytes);

 private:
  void draw(bool final);
  uint64_t total_, done_ = 0;
  std::string label_, item_;
  bool enabled_, tty_ = false, finished_ = false, drawn_ = false;
  ProgressUnit unit_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace k3
