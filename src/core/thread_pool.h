// core/thread_pool: a persistent pool of worker threads for data-parallel loops.
// Contract: parallel_for(n, fn) calls fn(begin, end, thread_index) over disjoint ranges that
// cover [0, n) and returns when all are done; the calling thread takes part. [0, n) is cut
// into one run per thread (equal lengths), each run into at most chunks_per_thread ranges of
// halving length (1/2, 1/4, ... of the run, the last two equal), each at least `grain` long
// when there are several. thread_index (0 = the caller, < size()) names the thread running
// the range; one thread may run several ranges, one after another, if another thread is slow
// to start. Nested calls from inside fn run serially. size() counts the caller.
// The free parallel_for(pool, ...) is the one "on the pool if there is one" helper: with a null
// pool it calls fn(0, n, 0) on the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace k3 {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  using RangeFn = std::function<void(int64_t begin, int64_t end, int thread)>;
  // grain: the smallest range worth handing to one thread. chunks_per_thread > 1 cuts the
  // work finer, so that when a thread is preempted mid-job (a shared machine) the others take
  // over all but its current chunk instead of waiting for the rest of its share.
  void parallel_for(int64_t n, const RangeFn& fn, int64_t grain = 1, int chunks_per_thread = 1);

  // Thread time lost inside dispatches (`k3 bench --profile`). With it on, every
  // parallel_for that hands work to the workers adds size() × its wall time, and per thread
  // the time from the dispatch's start until that thread took part (a thread that never did
  // counts the whole dispatch) and from its last chunk to the dispatch's end. Off (the
  // default) it costs one relaxed load per dispatch and per thread. Call between dispatches.
  struct WaitStats {
    uint64_t dispatches = 0;
    double thread_seconds = 0;      // Σ dispatch wall time × size()
    double late_start_seconds = 0;  // Σ over threads: dispatch start → that thread's first claim
    double idle_end_seconds = 0;    // Σ over threads: its last chunk → the dispatch's end
    double lost_seconds() const { return late_start_seconds + idle_end_seconds; }
    WaitStats& operator+=(const WaitStats& o) {
      dispatches += o.dispatches;
      thread_seconds += o.thread_seconds;
      late_start_seconds += o.late_start_seconds;
      idle_end_seconds += o.idle_end_seconds;
      return *this;
    }
  };
  void set_wait_stats(bool on);
  WaitStats take_wait_stats();  // what was gathered since the last take; starts again at zero

  // Default thread count for this machine (physical cores, capped by what the
  // bandwidth-bound work can use).
  static int default_threads();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int n_threads_ = 1;
};

// fn over [0, n) on `pool` (ThreadPool::parallel_for), or in one call on this thread without one.
inline void parallel_for(ThreadPool* pool, int64_t n, const ThreadPool::RangeFn& fn, int64_t grain = 1,
                         int chunks_per_thread = 1) {
  if (pool) pool->parallel_for(n, fn, grain, chunks_per_thread);
  else fn(0, n, 0);
}

}  // namespace k3
