// core/thread_pool: persistent workers with low-latency dispatch.
// A job is published by bumping an atomic generation counter; workers spin on it for a short
// while (decode issues hundreds of small jobs per token, and a futex wake costs more than the
// job) and then fall back to sleeping on a condition variable, so an idle pool costs nothing.
// The caller runs chunk 0 itself and then waits (spin, then sleep) for the remaining-count to
// reach zero.
#include "core/thread_pool.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace k3 {

namespace {

using Clock = std::chrono::steady_clock;
// Long enough to bridge the gap between consecutive kernels of one decode step, short enough
// that an idle or oversubscribed pool gives its cores back quickly.
constexpr auto kSpinTime = std::chrono::microseconds(50);

// Spins until pred() or the spin time is over; true if pred() held.
template <class Pred>
bool spin_until(Pred pred) {
  const auto deadline = Clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      _mm_pause();
    }
    if (Clock::now() > deadline) return pred();
  }
}

}  // namespace

struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> remaining{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> busy{false};
  std::mutex mu;
  std::condition_variable cv;            // workers sleep here between jobs
  std::mutex done_mu;
  std::condition_variable done_cv;       // the caller sleeps here if a job runs long
  // Job description, written before generation is bumped (release) and read after (acquire).
  const RangeFn* fn = nullptr;
  int64_t n = 0;
  int n_chunks = 0;

  void run_chunk(int idx) const {
    const int64_t begin = n * idx / n_chunks, end = n * (idx + 1) / n_chunks;
    if (begin < end) (*fn)(begin, end, idx);
  }

  void worker(int idx) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation.load(std::memory_order_acquire);
      if (g == seen) {
        spin_until([&] { return generation.load(std::memory_order_acquire) != seen; });
        g = generation.load(std::memory_order_acquire);
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return generation.load(std::memory_order_acquire) != seen; });
        g = generation.load(std::memory_order_acquire);
      }
      if (stop.load(std::memory_order_acquire)) return;
      seen = g;
      if (idx < n_chunks) run_chunk(idx);
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lk(done_mu);  // orders with the caller's predicate check
        done_cv.notify_one();
      }
    }
  }

  void publish() {
    {
      // Under the mutex so a worker between its predicate check and its wait cannot miss it.
      std::lock_guard<std::mutex> lk(mu);
      generation.fetch_add(1, std::memory_order_acq_rel);
    }
    cv.notify_all();
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  n_threads_ = std::max(1, n_threads);
  for (int i = 1; i < n_threads_; ++i) impl_->workers.emplace_back([this, i] { impl_->worker(i); });
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true, std::memory_order_release);
  impl_->publish();
  for (auto& t : impl_->workers) t.join();
}

void ThreadPool::parallel_for(int64_t n, const RangeFn& fn, int64_t grain) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  const int chunks = static_cast<int>(std::min<int64_t>(n_threads_, max_chunks));
  bool expected = false;
  if (chunks <= 1 || !impl_->busy.compare_exchange_strong(expected, true)) {
    fn(0, n, 0);  // serial: tiny job, or a nested/concurrent call
    return;
  }
  Impl& s = *impl_;
  s.fn = &fn;
  s.n = n;
  s.n_chunks = chunks;
  s.remaining.store(n_threads_ - 1, std::memory_order_release);
  s.publish();
  s.run_chunk(0);
  auto done = [&] { return s.remaining.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lk(s.done_mu);
    s.done_cv.wait(lk, done);
  }
  s.busy.store(false, std::memory_order_release);
}

// Physical cores this process may run on: distinct (package, core) pairs among the CPUs in
// our affinity mask. SMT siblings share the load/store and FMA units that the kernels saturate.
int ThreadPool::default_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int logical = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (sched_getaffinity(0, sizeof(set), &set) == 0) logical = CPU_COUNT(&set);
  std::set<std::pair<int, int>> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pkg(base + "physical_package_id"), core(base + "core_id");
    int p = -1, c = -1;
    if (!(pkg >> p) || !(core >> c)) {
      cores.clear();
      break;
    }
    cores.insert({p, c});
  }
  const int physical = cores.empty() ? logical : static_cast<int>(cores.size());
  return std::clamp(physical, 1, 64);
}

}  // namespace k3
