// core/thread_pool: persistent workers with low-latency dispatch.
// A job is published by bumping an atomic generation counter; workers spin on it for a short
// while (decode issues hundreds of small jobs per token, and a futex wake costs more than the
// job) and then fall back to sleeping on a condition variable, so an idle pool costs nothing.
// Each thread owns a contiguous run of the chunks and claims them front to back; a thread
// whose run is done steals from the back of the fullest other run. Contiguous runs keep each
// thread's reads one stream (a matrix-vector product handed out chunk by chunk in claim
// order made each thread jump every chunk: 8 chunks per thread streamed at 70-80 % of the
// bandwidth of 1 per thread), while stealing still covers a preempted or sleeping thread.
// Within a run the chunks halve in size (1/2, 1/4, ... of the run, the last two equal), so
// what is left to steal near the end is small: with equal chunks, a thread that was slower
// than the other left it waiting for up to a whole chunk.
// The caller waits (spin, then sleep) until every chunk is finished.
#include "core/thread_pool.h"

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
// Long enough to bridge the gap between consecutive kernels of one decode step (the serial
// work between two dispatches, e.g. a KDA layer's gates, can pass 50 µs, and a sleeping
// worker in a VM takes tens of µs to wake: 250 µs measured +2 % decode over 50 µs on bench-m),
// short enough that an idle or oversubscribed pool gives its cores back quickly.
constexpr auto kSpinTime = std::chrono::microseconds(250);

// The CPU's spin-wait hint (x86 pause, Arm yield): it frees the sibling hyper-thread and
// avoids a memory-order flush on exit from the loop. A hint only: elsewhere nothing.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until pred() or the spin time is over; true if pred() held.
template <class Pred>
bool spin_until(Pred pred) {
  const auto deadline = Clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      cpu_relax();
    }
    if (Clock::now() > deadline) return pred();
  }
}

}  // namespace

struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  // The published job: generation (bits 32..63) and chunk count (0..31).
  std::atomic<uint64_t> state{0};
  // Per thread: generation (32..63), next chunk of its run (16..31), end of its run (0..15),
  // so a claim is one CAS that also proves it belongs to this generation's job. The owner
  // takes the front, thieves take the back.
  struct alignas(64) Run {
    std::atomic<uint64_t> w{0};
    // Wait statistics (stats_on only), written by the run's own thread: when it entered
    // run_chunks for generation in_gen, and when it left it for generation out_gen (each
    // generation stored after its time, with release).
    std::atomic<int64_t> stat_in{0}, stat_out{0};
    std::atomic<uint32_t> in_gen{0}, out_gen{0};
  };
  std::unique_ptr<Run[]> runs;
  int n_runs = 0;
  std::atomic<int> done{0};  // chunks finished in the current job
  std::atomic<bool> stop{false};
  std::atomic<bool> busy{false};
  std::atomic<bool> stats_on{false};
  WaitStats stats;  // updated by the caller of a dispatch only (one at a time: `busy`)
  std::mutex mu;
  std::condition_variable cv;  // workers sleep here between jobs
  std::mutex done_mu;
  std::condition_variable done_cv;  // the caller sleeps here if a job runs long
  // Job description, written before the state is published (release) and read only after the
  // new generation is seen (acquire).
  const RangeFn* fn = nullptr;
  int count = 0;
  std::vector<int64_t> bounds;  // chunk c covers [bounds[c], bounds[c + 1])

  static uint32_t gen_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
  static int front_of(uint64_t s) { return static_cast<int>((s >> 16) & 0xFFFF); }
  static int back_of(uint64_t s) { return static_cast<int>(s & 0xFFFF); }

  void run_chunk(int c, int thread) {
    const int64_t begin = bounds[static_cast<size_t>(c)], end = bounds[static_cast<size_t>(c) + 1];
    // Read before this chunk counts as done: once it does, the caller may return and publish
    // the next job, which rewrites count (a read after the fetch_add was a data race, found by
    // ThreadSanitizer in tests/core/thread_pool_stress_test.cpp).
    const int total = count;
    if (begin < end) (*fn)(begin, end, thread);
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == total) {
      std::lock_guard<std::mutex> lk(done_mu);  // orders with the caller's predicate check
      done_cv.notify_one();
    }
  }

  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

  // run_chunks_and_steal, timed for the wait statistics when they are on.
  void run_chunks(uint32_t gen, int thread) {
    if (!stats_on.load(std::memory_order_relaxed)) return run_chunks_and_steal(gen, thread);
    Run& r = runs[thread];
    r.stat_in.store(now_ns(), std::memory_order_relaxed);
    r.in_gen.store(gen, std::memory_order_release);  // before any claim: seen by the caller
    run_chunks_and_steal(gen, thread);
    r.stat_out.store(now_ns(), std::memory_order_relaxed);
    r.out_gen.store(gen, std::memory_order_release);
  }

  // The caller's part of the wait statistics, once every chunk of job `gen` (published at
  // `start`) is done. A thread that had not entered it never took part (the whole dispatch
  // counts as its late start); one that entered but has not stored its leaving time yet is
  // leaving just now (no idle time at the end).
  void add_wait_stats(uint32_t gen, int64_t start) {
    const int64_t end = now_ns();
    const double wall = 1e-9 * static_cast<double>(end - start);
    ++stats.dispatches;
    stats.thread_seconds += wall * n_runs;
    for (int t = 0; t < n_runs; ++t) {
      const Run& r = runs[t];
      if (r.in_gen.load(std::memory_order_acquire) != gen) {
        stats.late_start_seconds += wall;
        continue;
      }
      stats.late_start_seconds += 1e-9 * static_cast<double>(std::max<int64_t>(0, r.stat_in.load() - start));
      if (r.out_gen.load(std::memory_order_acquire) == gen)
        stats.idle_end_seconds += 1e-9 * static_cast<double>(std::max<int64_t>(0, end - r.stat_out.load()));
    }
  }

  // Runs this thread's chunks of job `gen`, then steals until no chunk is left.
  void run_chunks_and_steal(uint32_t gen, int thread) {
    std::atomic<uint64_t>& own = runs[thread].w;
    uint64_t s = own.load(std::memory_order_acquire);
    while (gen_of(s) == gen && front_of(s) < back_of(s)) {
      if (own.compare_exchange_weak(s, s + (uint64_t{1} << 16), std::memory_order_acq_rel,
                                    std::memory_order_acquire))
        run_chunk(front_of(s), thread);
    }
    for (;;) {
      int victim = -1, most = 0;
      for (int v = 0; v < n_runs; ++v) {
        const uint64_t r = runs[v].w.load(std::memory_order_acquire);
        if (gen_of(r) == gen && back_of(r) - front_of(r) > most) {
          most = back_of(r) - front_of(r);
          victim = v;
        }
      }
      if (victim < 0) return;
      std::atomic<uint64_t>& run = runs[victim].w;
      uint64_t r = run.load(std::memory_order_acquire);
      while (gen_of(r) == gen && front_of(r) < back_of(r)) {
        if (run.compare_exchange_weak(r, r - 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
          run_chunk(back_of(r) - 1, thread);
          break;
        }
      }
    }
  }

  void worker(int idx) {
    uint32_t seen = 0;
    auto fresh = [&] { return gen_of(state.load(std::memory_order_acquire)) != seen; };
    for (;;) {
      if (!fresh() && !spin_until(fresh)) {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, fresh);
      }
      // The generation first, then the flag: a stop published after the job this thread woke
      // for (the caller may have finished that job alone) is then either seen here or leaves
      // the generation fresh for the next turn. Read the other way round, a stop published
      // between the two reads was missed and the destructor waited for this thread forever.
      seen = gen_of(state.load(std::memory_order_acquire));
      if (stop.load(std::memory_order_acquire)) return;
      run_chunks(seen, idx);
    }
  }

  // Cuts [0, n) into `n_cut` runs (threads from n_cut on get an empty one) and each run into
  // up to `per_run` chunks of halving size, none shorter than `grain` (fewer chunks where the
  // run is too short for that). Fills `bounds` and first[t] .. first[t + 1], the chunks of
  // thread t's run; returns the chunk count.
  int cut(int64_t n, int n_cut, int64_t grain, int per_run, std::vector<int>& first) {
    bounds.assign(1, 0);
    first.assign(static_cast<size_t>(n_runs) + 1, 0);
    for (int t = 0; t < n_runs; ++t) {
      if (t < n_cut) {
        const int64_t e = n * (t + 1) / n_cut, len = e - n * t / n_cut;
        int c = per_run;
        while (c > 1 && (len >> (c - 1)) < grain) --c;
        // Chunk i (< c - 1) ends where len·2^-(i+1) of the run is left; the last ends it.
        for (int i = 0; i + 1 < c; ++i) bounds.push_back(e - (len >> (i + 1)));
        bounds.push_back(e);
      }
      first[static_cast<size_t>(t) + 1] = static_cast<int>(bounds.size()) - 1;
    }
    return static_cast<int>(bounds.size()) - 1;
  }

  // Publishes a job already cut into runs (thread t's chunks are first[t] .. first[t + 1];
  // an empty `first` is the stop signal); returns its generation.
  uint32_t publish(int chunks, const std::vector<int>& first) {
    uint32_t gen;
    {
      // Under the mutex so a worker between its predicate check and its wait cannot miss it.
      std::lock_guard<std::mutex> lk(mu);
      gen = gen_of(state.load(std::memory_order_relaxed)) + 1;
      count = chunks;
      for (int t = 0; t < n_runs; ++t) {
        const uint64_t b = first.empty() ? 0 : static_cast<uint64_t>(first[static_cast<size_t>(t)]);
        const uint64_t e = first.empty() ? 0 : static_cast<uint64_t>(first[static_cast<size_t>(t) + 1]);
        runs[t].w.store(static_cast<uint64_t>(gen) << 32 | b << 16 | e, std::memory_order_relaxed);
      }
      state.store(static_cast<uint64_t>(gen) << 32 | static_cast<uint64_t>(chunks),
                  std::memory_order_release);
    }
    cv.notify_all();
    return gen;
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  n_threads_ = std::clamp(n_threads, 1, 4096);
  impl_->n_runs = n_threads_;
  impl_->runs = std::make_unique<Impl::Run[]>(static_cast<size_t>(n_threads_));
  for (int i = 1; i < n_threads_; ++i) impl_->workers.emplace_back([this, i] { impl_->worker(i); });
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true, std::memory_order_release);
  impl_->publish(0, {});
  for (auto& t : impl_->workers) t.join();
}

void ThreadPool::parallel_for(int64_t n, const RangeFn& fn, int64_t grain, int chunks_per_thread) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  bool expected = false;
  if (n_threads_ < 2 || n < 2 * grain || !impl_->busy.compare_exchange_strong(expected, true)) {
    fn(0, n, 0);  // serial: tiny job, or a nested/concurrent call
    return;
  }
  Impl& s = *impl_;
  // Fewer runs than threads when n is short: every run at least one grain.
  thread_local std::vector<int> first;
  const int runs = static_cast<int>(std::min<int64_t>(n_threads_, n / grain));
  const int chunks =
      s.cut(n, runs, grain, std::clamp(chunks_per_thread, 1, std::min(16, 0xFFFF / runs)), first);
  s.fn = &fn;
  s.done.store(0, std::memory_order_relaxed);
  const bool stats = s.stats_on.load(std::memory_order_relaxed);
  const int64_t start = stats ? Impl::now_ns() : 0;
  const uint32_t gen = s.publish(chunks, first);
  s.run_chunks(gen, 0);
  auto finished = [&] { return s.done.load(std::memory_order_acquire) == chunks; };
  if (!spin_until(finished)) {
    std::unique_lock<std::mutex> lk(s.done_mu);
    s.done_cv.wait(lk, finished);
  }
  if (stats) s.add_wait_stats(gen, start);
  s.busy.store(false, std::memory_order_release);
}

void ThreadPool::set_wait_stats(bool on) { impl_->stats_on.store(on, std::memory_order_relaxed); }

ThreadPool::WaitStats ThreadPool::take_wait_stats() { return std::exchange(impl_->stats, WaitStats{}); }

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
