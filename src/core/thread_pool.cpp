#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace k3 {

// Workers sleep on a generation counter; each job is split into n_threads contiguous chunks.
struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable cv_start, cv_done;
  uint64_t generation = 0;
  int pending = 0;
  bool stop = false;
  const RangeFn* fn = nullptr;
  int64_t n = 0;
  int n_chunks = 0;
  std::atomic<bool> busy{false};

  void run_chunk(int idx) {
    int64_t begin = n * idx / n_chunks, end = n * (idx + 1) / n_chunks;
    if (begin < end) (*fn)(begin, end, idx);
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  n_threads_ = std::max(1, n_threads);
  for (int i = 1; i < n_threads_; ++i) {
    impl_->workers.emplace_back([this, i] {
      Impl& s = *impl_;
      uint64_t seen = 0;
      for (;;) {
        std::unique_lock<std::mutex> lk(s.mu);
        s.cv_start.wait(lk, [&] { return s.stop || s.generation != seen; });
        if (s.stop) return;
        seen = s.generation;
        lk.unlock();
        if (i < s.n_chunks) s.run_chunk(i);
        lk.lock();
        if (--s.pending == 0) s.cv_done.notify_one();
      }
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv_start.notify_all();
  for (auto& t : impl_->workers) t.join();
}

void ThreadPool::parallel_for(int64_t n, const RangeFn& fn, int64_t grain) {
  if (n <= 0) return;
  int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  int chunks = static_cast<int>(std::min<int64_t>(n_threads_, max_chunks));
  bool expected = false;
  if (chunks <= 1 || !impl_->busy.compare_exchange_strong(expected, true)) {
    fn(0, n, 0);  // serial: tiny job, or a nested call from inside a worker
    return;
  }
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.fn = &fn;
    s.n = n;
    s.n_chunks = chunks;
    s.pending = n_threads_ - 1;
    ++s.generation;
  }
  s.cv_start.notify_all();
  s.run_chunk(0);
  std::unique_lock<std::mutex> lk(s.mu);
  s.cv_done.wait(lk, [&] { return s.pending == 0; });
  s.busy.store(false);
}

int ThreadPool::default_threads() {
  unsigned hc = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(hc, 1, 8));
}

}  // namespace k3
