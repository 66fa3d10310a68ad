// store/reader: the shared queue and accounting (see reader.h); the two back ends live in
// reader_uring.cpp and reader_pread.cpp.
#include "store/reader.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace k3::store {

void Reader::submit(std::vector<Read> reads) {
  if (reads.empty()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (Read& r : reads) q_.push_back(r);
  }
  cv_.notify_all();
  wake();
}

size_t Reader::cancel(uint32_t tag) {
  std::lock_guard<std::mutex> lk(mu_);
  const size_t before = q_.size();
  q_.erase(std::remove_if(q_.begin(), q_.end(), [tag](const Read& r) { return r.tag == tag; }), q_.end());
  return before - q_.size();
}

std::vector<Read> Reader::take(size_t max, bool wait) {
  std::unique_lock<std::mutex> lk(mu_);
  if (wait) cv_.wait(lk, [&] { return stop_.load() || !q_.empty(); });
  std::vector<Read> out;
  if (stop_.load()) return out;
  while (!q_.empty() && out.size() < max) {
    out.push_back(q_.front());
    q_.pop_front();
  }
  // Submission order within a window follows the file, so the device sees ascending runs.
  std::sort(out.begin(), out.end(),
            [](const Read& a, const Read& b) { return a.fd != b.fd ? a.fd < b.fd : a.offset < b.offset; });
  if (!out.empty()) {
    if (inflight_ == 0) busy_since_ = std::chrono::steady_clock::now();
    inflight_ += static_cast<int64_t>(out.size());
  }
  return out;
}

void Reader::finished(const Read& r, bool ok, const std::string& error, uint64_t bytes) {
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  reads_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (--inflight_ == 0)
      busy_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
  }
  done_(r.tag, ok, error);
}

double Reader::busy_seconds() const {
  std::lock_guard<std::mutex> lk(mu_);
  double b = busy_;
  if (inflight_ > 0)
    b += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
  return b;
}

void Reader::request_stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  wake();
}

void Reader::raise_priority() {
  // Best effort: needs CAP_SYS_NICE; the thread does little CPU work, so this costs others nothing.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), -10);
}

}  // namespace k3::store
