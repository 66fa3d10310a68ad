// server/stop_matcher: see stop_matcher.h.
#include "server/stop_matcher.h"

#include <algorithm>

namespace k3::server {

std::string StopMatcher::push(std::string_view bytes) {
  if (matched_) return {};
  if (stops_.empty()) return std::string(bytes);
  held_.append(bytes);
  size_t first = std::string::npos;
  for (const std::string& s : stops_) {
    if (s.empty()) continue;
    size_t p = held_.find(s);
    if (p != std::string::npos) first = std::min(first, p);
  }
  if (first != std::string::npos) {
    matched_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold the longest suffix that could still grow into a stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    size_t max_k = std::min(s.size() - (s.empty() ? 0 : 1), held_.size());
    for (size_t k = max_k; k > hold; --k) {
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return matched_ ? std::string() : out;
}

}  // namespace k3::server
