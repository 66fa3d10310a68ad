// tools/progress: a one-line progress bar with throughput and ETA on stderr for long tools
// (quantize, split, merge).
// Contract: advance() is cheap and may be called often; the line is redrawn at most ~8 times
// a second on a terminal, and on a non-terminal a plain line is printed every 10 %. Nothing is
// printed when disabled. Thread-compatible, not thread-safe: call from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace k3::tools {

class Progress {
 public:
  // total: the amount of work (bytes); label: "quantize" etc.
  Progress(uint64_t total, std::string label, bool enabled);
  ~Progress();
  void advance(uint64_t done_delta, const std::string& item);
  void finish();
  double elapsed_seconds() const;

  // "1:02:03" / "4:05".
  static std::string format_duration(double seconds);
  // The bar text for a state (exposed for tests): "[#####     ]  50% 1.2/2.4 GB 10.0 MB/s ETA 0:02".
  static std::string render(uint64_t done, uint64_t total, double seconds, int width);

 private:
  void draw(bool final);
  uint64_t total_, done_ = 0;
  std::string label_, item_;
  bool enabled_, tty_ = false, finished_ = false;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace k3::tools
